//! The pure-Rust backend, on the `exr` crate. (Being written.)

use playsim_core::DecodedFrame;

use crate::{Error, ExrInfo, ExrOptions};

pub(crate) fn decode(
    _encoded: &[u8],
    _options: &ExrOptions,
    _out: &mut DecodedFrame,
) -> Result<ExrInfo, Error> {
    Err(Error::unsupported("the exrs backend is not written yet"))
}
