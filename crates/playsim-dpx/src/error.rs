//! The one error type of this crate, and its mapping onto the core decode error.

use playsim_core::DecodeError;

/// What kind of problem a DPX [`Error`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes are not a valid DPX file: wrong magic, truncated header or
    /// image data, fields that contradict each other.
    Malformed,
    /// A valid DPX variant that this crate does not handle (a descriptor, bit
    /// depth, packing or encoding).
    Unsupported,
    /// The header asks for more than playsim allows (absurd dimensions).
    Limit,
    /// The frame handed to [`write_dpx`](crate::write_dpx) does not match its own
    /// geometry or format.
    InvalidInput,
}

/// A DPX file could not be read or written.
///
/// The message is lower-case and names the offending value and, for header
/// fields, the byte offset it was read from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }

    /// The kind of problem.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, as also shown by `Display`.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn malformed(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Malformed, message)
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Unsupported, message)
    }

    pub(crate) fn limit(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Limit, message)
    }

    pub(crate) fn invalid_input(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidInput, message)
    }
}

impl From<Error> for DecodeError {
    fn from(err: Error) -> DecodeError {
        match err.kind {
            ErrorKind::Unsupported => DecodeError::unsupported(err.message),
            ErrorKind::Limit => DecodeError::limit(err.message),
            ErrorKind::Malformed | ErrorKind::InvalidInput => DecodeError::malformed(err.message),
        }
    }
}
