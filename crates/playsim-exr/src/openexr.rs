//! The OpenEXR C++ library backend, through playsim's shim. (Being written.)

use playsim_core::DecodedFrame;

use crate::{Error, ExrInfo, ExrOptions};

/// Whether the shim was compiled in (the library was found at build time).
pub(crate) const AVAILABLE: bool = false;

pub(crate) fn decode(
    _encoded: &[u8],
    _options: &ExrOptions,
    _out: &mut DecodedFrame,
) -> Result<ExrInfo, Error> {
    Err(Error::unsupported("the openexr backend is not in this build"))
}

pub(crate) fn version() -> Option<String> {
    None
}
