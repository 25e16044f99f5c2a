//! The crate's one error type: every message names the path it is about.

use std::io;
use std::path::PathBuf;

/// What went wrong while finding, opening or generating a sequence.
///
/// Messages are lower-case and always name the path (file, directory or
/// pattern) concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O call failed.
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        /// What was being done, e.g. "list directory".
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The storage failed while finding the sequence (its message names the path).
    #[error("{0}")]
    Storage(playsim_core::StorageError),
    /// Nothing exists at the location and it is not a pattern.
    #[error("{} not found", .path.display())]
    NotFound {
        /// The location given.
        path: PathBuf,
    },
    /// The directory has no entries at all.
    #[error("directory {} is empty", .path.display())]
    EmptyDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// Entries exist but none is named like a frame of a sequence.
    #[error("no numbered files in {}{}", .path.display(), .detail)]
    NoNumberedFiles {
        /// The directory, pattern or file.
        path: PathBuf,
        /// Extra context, starting with a separator, or empty.
        detail: String,
    },
    /// The location can be read more than one way.
    #[error("{} is ambiguous: {reason}", .path.display())]
    Ambiguous {
        /// The location given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A pattern could not be parsed.
    #[error("invalid pattern {}: {reason}", .path.display())]
    InvalidPattern {
        /// The pattern given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The sequence's format has no decoder.
    #[error("unsupported format '{extension}' of {} (known formats: {known})", .path.display())]
    Unsupported {
        /// The sequence (its pattern).
        path: PathBuf,
        /// The extension found, or "none".
        extension: String,
        /// The known formats, comma-separated.
        known: String,
    },
    /// The format is known, but this build left out the cargo feature that plays it.
    #[error(
        "cannot open {}: {format} files need playsim built with the cargo feature '{feature}', \
         which this build leaves out (build playsim with it, for example \
         cargo build --release --features {feature})",
        .path.display()
    )]
    NeedsFeature {
        /// The location or sequence (its pattern).
        path: PathBuf,
        /// The format's name.
        format: String,
        /// The cargo feature.
        feature: String,
    },
    /// Numbered files of a container format were found where a sequence was expected.
    #[error("{}: {format} files each hold a whole clip; give one file, not a sequence of them", .path.display())]
    NotASequence {
        /// The sequence (its pattern).
        path: PathBuf,
        /// The format's name.
        format: String,
    },
    /// A value exceeds what playsim accepts.
    #[error("{}: {reason}", .path.display())]
    Limit {
        /// The sequence or file concerned.
        path: PathBuf,
        /// What limit, with the value.
        reason: String,
    },
    /// Options for the generator are not usable.
    #[error("cannot generate into {}: {reason}", .path.display())]
    InvalidOptions {
        /// The output directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A video file could not be opened (its message names the file).
    #[error(transparent)]
    Video(#[from] playsim_ffmpeg::Error),
    /// A clip could not be made by the `ffmpeg` command.
    #[error("{}: {reason}", .path.display())]
    MakeClip {
        /// The clip, or the directory it goes in.
        path: PathBuf,
        /// What failed, with the command's message.
        reason: String,
    },
    /// A frame could not be encoded.
    #[error("cannot encode {}: {message}", .path.display())]
    Encode {
        /// The file being written.
        path: PathBuf,
        /// The encoder's message.
        message: String,
    },
}

impl Error {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Error {
        Error::Io { action, path: path.into(), source }
    }
}
