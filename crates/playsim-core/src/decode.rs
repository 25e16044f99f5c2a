//! The decoder seam: real CPU work that turns encoded bytes into canonical pixels.

use crate::DecodedFrame;

/// What went wrong while decoding one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The bytes are not a valid frame (truncated, wrong magic, inconsistent header).
    Malformed,
    /// Valid, but a variant this decoder does not handle.
    Unsupported,
    /// The header asks for more than playsim allows (absurd dimensions).
    Limit,
}

/// A frame could not be decoded. The engine adds the file and frame index.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    /// The kind of failure.
    pub kind: DecodeErrorKind,
    /// Lower-case, with the offending value or offset.
    pub message: String,
}

impl DecodeError {
    /// A malformed-input error.
    pub fn malformed(message: impl Into<String>) -> DecodeError {
        DecodeError { kind: DecodeErrorKind::Malformed, message: message.into() }
    }

    /// An unsupported-variant error.
    pub fn unsupported(message: impl Into<String>) -> DecodeError {
        DecodeError { kind: DecodeErrorKind::Unsupported, message: message.into() }
    }

    /// A limit-exceeded error.
    pub fn limit(message: impl Into<String>) -> DecodeError {
        DecodeError { kind: DecodeErrorKind::Limit, message: message.into() }
    }
}

/// A synchronous, CPU-bound frame decoder.
///
/// The engine calls it on its decode pool, one frame per call, possibly from
/// several threads at once. It must never panic on any input.
pub trait Decoder: Send + Sync + 'static {
    /// A short name for reports, e.g. "dpx".
    fn name(&self) -> &'static str;

    /// The decoder and its settings for the report, e.g. "exr: openexr 3.1.5, 1 codec thread".
    fn describe(&self) -> String {
        self.name().to_owned()
    }

    /// Decodes one encoded frame into `out`, reusing `out`'s allocation.
    ///
    /// For a source whose decoder has an [`in_order`](Decoder::in_order) form, this
    /// decodes a frame that stands alone (a keyframe) and fails on one that does not.
    fn decode(&self, encoded: &[u8], out: &mut DecodedFrame) -> Result<(), DecodeError>;

    /// A new decoder for one stream of a codec whose frames depend on earlier ones
    /// (long-GOP H.264, HEVC): the engine feeds it every packet in decode order, one
    /// stream per decoder. `None`, the default, means every frame decodes on its own,
    /// through [`decode`](Decoder::decode), on any thread of the pool.
    fn in_order(&self) -> Option<Box<dyn InOrderDecoder>> {
        None
    }

    /// Whether it makes pixels. `false` only for [`BytesOnly`]: the engine then neither
    /// queues the frame for a decode thread nor outputs it, and a frame is ready when read.
    fn decodes(&self) -> bool {
        true
    }
}

/// A stateful decoder that takes packets in decode order and gives pictures in
/// presentation order, like FFmpeg's send/receive API. It must never panic.
pub trait InOrderDecoder: Send + 'static {
    /// Pictures it may hold back before giving the first one out: frame threads
    /// and reordering. The engine's window must be deeper than this.
    fn max_delay(&self) -> u32;

    /// Feeds the next packet in decode order, or `None` at the end of the stream to
    /// drain the pictures still held.
    fn send(&mut self, packet: Option<&[u8]>) -> Result<(), DecodeError>;

    /// Writes the next picture, in presentation order, into `out`; `Ok(false)` when
    /// none is ready until more packets are sent (or, after the end, none is left).
    fn receive(&mut self, out: &mut DecodedFrame) -> Result<bool, DecodeError>;

    /// Forgets every packet and picture, to start again at a keyframe (looping).
    fn reset(&mut self);
}

/// A decoder that does no work: the frame's bytes are read and counted, and nothing is
/// decoded (frametest's semantics, and simulated storage serving raw bytes). Pair it with
/// no output stage, since there are no pixels to pack.
#[derive(Clone, Copy, Debug, Default)]
pub struct BytesOnly;

impl Decoder for BytesOnly {
    fn name(&self) -> &'static str {
        "none"
    }

    fn describe(&self) -> String {
        "none (bytes are read, not decoded)".to_owned()
    }

    fn decode(&self, _encoded: &[u8], out: &mut DecodedFrame) -> Result<(), DecodeError> {
        *out = DecodedFrame::default();
        Ok(())
    }

    fn decodes(&self) -> bool {
        false
    }
}
