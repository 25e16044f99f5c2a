//! Media on disk for playsim: finding sequences, opening them, and making test content.
//!
//! - [`Sequence::discover`] finds a numbered image sequence from a directory,
//!   a pattern (`shot.%07d.dpx`, `shot.####.dpx`, `shot.@@@.dpx`) or one of
//!   its files, with its first and last frame numbers and its gaps.
//! - [`SequenceSource`] plays a sequence as a [`playsim_core::Source`]: one
//!   file per frame, gaps as [`playsim_core::FrameExtent::Missing`].
//! - [`open_source`] does both and picks the decoder from a table of
//!   [`formats`] by file extension, or by magic when the extension names none;
//!   [`open_location`] opens video containers from the same table, and
//!   [`probe_dimensions`] reads a source's frame size without decoding.
//! - [`render_frame`] paints synthetic frames that do not compress away and
//!   carry their index in the pixels ([`read_frame_index`]), and
//!   [`generate_sequence`] writes them to disk as a test sequence; [`VideoClip`] makes a
//!   clip of FFmpeg's test pictures with the `ffmpeg` command.
//! - [`MatrixVariant`]s, on the formats' entries, are the rows `playsim matrix` offers
//!   ([`parse_matrix_row`] reads a row's name).
//! - [`SimUrl`] parses a `sim://` URL and [`SimFrames`] makes its frames in memory, for
//!   simulated storage.
//!
//! ```
//! use playsim_core::DecodedFrame;
//! use playsim_media::{read_frame_index, render_frame};
//!
//! let mut frame = DecodedFrame::default();
//! render_frame(1920, 1080, 1001, false, &mut frame);
//! assert_eq!(frame.data.len(), 1920 * 1080 * 6);
//! assert_eq!(read_frame_index(&frame), Some(1001));
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

mod clip;
mod error;
mod generate;
mod matrix;
mod registry;
mod sequence;
mod sim;
mod sim_transport;
mod source;
mod synthetic;
mod writer;

pub use clip::{ffmpeg_command_version, shell_word, ProResProfile, VideoClip, VideoCodec};
pub use error::Error;
pub use generate::{generate_sequence, GenerateOptions, GenerateSummary, GENERATED_PADDING};
pub use matrix::{matrix_variants, parse_matrix_row, MatrixVariant, WriterSettings};
pub use registry::{
    format_for_extension, format_for_file, format_for_magic, formats, open_location, open_source,
    open_source_with, probe_dimensions, DecodeOptions, Format, FormatKind, MakeDecoder, OpenContainer,
    OpenFuture,
};
#[doc(hidden)]
pub use sequence::parse_pattern_parts;
pub use sequence::{Sequence, MAX_FRAME_RANGE};
pub use sim::{
    SimDist, SimFormat, SimFrame, SimFrames, SimUrl, DEFAULT_SIM_DISTINCT, DEFAULT_SIM_FRAMES,
    MAX_SIM_FRAMES, MAX_SIM_FRAME_BYTES, MAX_SIM_MEMORY, SIM_EXAMPLE, SIM_KEYS,
};
pub use sim_transport::{SimTransport, VerifyFrames};
pub use source::SequenceSource;
pub use synthetic::{
    read_frame_index, render_frame, render_frame_f32, GRAIN_F32, MIN_CODE_HEIGHT, MIN_CODE_WIDTH,
};
#[cfg(feature = "ffmpeg")]
pub use writer::PRORES_WRITER;
pub use writer::{
    writable_names, writers, ClipMuxer, FrameEncoder, FrameWriter, GenerateFormat, GenerateFormatError,
    OptionError, ParseOptions, WriterOption, DPX_WRITER, EXR_WRITER, TIFF_WRITER,
};
