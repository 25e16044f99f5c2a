//! Core types and traits of playsim, with no I/O and no runtime.
//!
//! Every other crate builds on these: an exact [`FrameRate`], the frame
//! [`FramePreset`]s, the canonical [`DecodedFrame`], and the three seams the
//! engine is written against: [`Storage`] (where bytes come from), [`Decoder`]
//! (the real CPU work) and [`Clock`] (the only source of time).
//!
//! ```
//! use playsim_core::FrameRate;
//! let rate: FrameRate = "59.94".parse().unwrap();
//! assert_eq!((rate.num(), rate.den()), (60000, 1001));
//! // Frame 35,999 falls due 600.583 s after the start, exactly.
//! assert_eq!(rate.due_offset_ns(35_999), 600_583_316_666);
//! ```
// `unsafe` is allowed in one module, `malloc` (two `mallopt` calls), and denied elsewhere.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod buf;
mod clock;
mod decode;
mod drop_cause;
mod error;
mod format;
mod frame;
#[allow(unsafe_code)]
pub mod malloc;
mod mix;
mod preset;
mod rate;
mod source;
mod storage;
pub mod units;

pub use buf::{BufPool, IoBuf, PooledBuf, DIRECT_IO_ALIGN};
pub use clock::{Clock, SleepFuture};
pub use decode::{BytesOnly, DecodeError, DecodeErrorKind, Decoder, InOrderDecoder};
pub use drop_cause::{DropCause, DropCounters};
pub use error::ParseError;
pub use format::{FileBytes, FormatDescriptor, Probe};
pub use frame::{Chroma, DecodedFrame, ExternalPlanes, FrameIndexReader, PixelFormat, Plane, PlaneView};
pub use mix::{shuffle, splitmix64};
pub use preset::{FramePreset, MAX_DIMENSION};
pub use rate::{FrameRate, Pacing};
pub use source::{FrameExtent, Source, SourceInfo, WithoutDecode};
pub use storage::{frame_len, whole_read, MAX_FRAME_BYTES};
pub use storage::{
    DirEntry, EntryKind, MountLabel, Storage, StorageError, StorageErrorKind, StorageFile, StorageInfo,
    StorageStats, StorageWarning,
};
