//! The EXR error type.

use playsim_core::DecodeError;

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes are not a valid EXR file (truncated, corrupt table or data).
    Malformed,
    /// Valid, but not decodable here (compression, deep data, layer not found).
    Unsupported,
    /// The header asks for more than playsim allows (a huge data window).
    Limit,
}

/// An EXR error; the message is lower-case and says what and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }

    /// Malformed input.
    pub fn malformed(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Malformed, message)
    }

    /// Unsupported input.
    pub fn unsupported(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Unsupported, message)
    }

    /// A limit was exceeded.
    pub fn limit(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Limit, message)
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<Error> for DecodeError {
    fn from(e: Error) -> DecodeError {
        match e.kind {
            ErrorKind::Malformed => DecodeError::malformed(e.message),
            ErrorKind::Unsupported => DecodeError::unsupported(e.message),
            ErrorKind::Limit => DecodeError::limit(e.message),
        }
    }
}
