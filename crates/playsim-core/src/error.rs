//! The parse error shared by the core value types.

/// A value given by a user (a flag, a pattern) could not be parsed.
///
/// The message always shows an example of a valid value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} '{value}': {reason} (for example: {example})")]
pub struct ParseError {
    /// What was being parsed, e.g. "frame rate".
    pub what: &'static str,
    /// The text that was refused.
    pub value: String,
    /// Why it was refused.
    pub reason: String,
    /// A valid value of the same kind.
    pub example: &'static str,
}

impl ParseError {
    pub(crate) fn new(
        what: &'static str,
        value: &str,
        reason: impl Into<String>,
        example: &'static str,
    ) -> Self {
        ParseError { what, value: value.to_owned(), reason: reason.into(), example }
    }
}
