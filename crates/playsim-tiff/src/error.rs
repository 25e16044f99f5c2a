//! The one error type of this crate, and its mapping onto the core decode error.

use playsim_core::DecodeError;

/// What kind of problem a TIFF [`Error`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes are not a valid TIFF file: wrong magic, truncated directory or image data,
    /// fields that contradict each other, data that does not decompress.
    Malformed,
    /// A valid TIFF variant this crate does not play (a photometric interpretation, bit
    /// depth, sample format, compression or planar layout).
    Unsupported,
    /// The file asks for more than playsim allows (absurd dimensions).
    Limit,
    /// The frame or options handed to [`write_tiff`](crate::write_tiff) do not fit together.
    InvalidInput,
}

/// A TIFF file could not be read or written.
///
/// The message is lower-case where it is playsim's, and says what was being done and
/// what is wrong; the engine adds the file and the frame.
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

    /// The tiff crate's error while `doing` something, with the kind it amounts to.
    pub(crate) fn from_tiff(doing: &str, err: tiff::TiffError) -> Error {
        use tiff::TiffError;
        let kind = match &err {
            TiffError::UnsupportedError(_) => ErrorKind::Unsupported,
            TiffError::LimitsExceeded | TiffError::IntSizeError => ErrorKind::Limit,
            // A short read from an in-memory file is a truncated file.
            TiffError::IoError(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Error::malformed(format!("{doing}: truncated file (the data ends early: {e})"));
            }
            _ => ErrorKind::Malformed,
        };
        Error::new(kind, format!("{doing}: {err}"))
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
