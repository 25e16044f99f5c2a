//! The error of this crate: a transport that cannot be built as configured.
//!
//! Failures of the calls themselves (open, read, close) are
//! [`playsim_core::StorageError`]s, because they cross the `Storage` seam.

/// A transport could not be built from its options.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option is out of range, e.g. a zero block size, or a block size
    /// that O_DIRECT cannot use. The message says which option and why.
    #[error("invalid storage option: {0}")]
    InvalidOption(String),
}
