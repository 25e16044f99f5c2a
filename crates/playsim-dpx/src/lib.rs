//! DPX (SMPTE 268M) reading and writing. API stub; the bodies are being written.

use playsim_core::{DecodeError, DecodedFrame, Decoder};

/// Byte order of a DPX file: `SDPX` (big) or `XPDS` (little).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Endian {
    /// Big-endian, magic `SDPX`.
    #[default]
    Big,
    /// Little-endian, magic `XPDS`.
    Little,
}

/// How [`write_dpx`] encodes a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// 8, 10 or 16.
    pub bit_depth: u8,
    /// Byte order.
    pub endian: Endian,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions { bit_depth: 10, endian: Endian::Big }
    }
}

/// A DPX error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

/// Encodes a canonical frame (rgb48le or rgba64le) as a DPX file into `out`.
pub fn write_dpx(_frame: &DecodedFrame, _opts: &WriteOptions, _out: &mut Vec<u8>) -> Result<(), Error> {
    Err(Error("not written yet".into()))
}

/// The DPX decoder.
#[derive(Clone, Copy, Debug, Default)]
pub struct DpxDecoder;

impl Decoder for DpxDecoder {
    fn name(&self) -> &'static str {
        "dpx"
    }
    fn decode(&self, _encoded: &[u8], _out: &mut DecodedFrame) -> Result<(), DecodeError> {
        Err(DecodeError::unsupported("not written yet"))
    }
}
