//! Reading XDR (RFC 4506) words and opaques from a reply's bytes, never past their end: what
//! every decoder of the NFS client's replies reads with.

/// Reads XDR words and opaques from a byte slice, never past its end.
pub(crate) struct XdrReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> XdrReader<'a> {
    pub fn new(bytes: &'a [u8]) -> XdrReader<'a> {
        XdrReader { bytes, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn u32(&mut self) -> Option<u32> {
        let b = self.bytes.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes.get(self.pos..self.pos + n)?;
        self.pos += n;
        Some(())
    }

    /// A variable-length opaque: its bytes, with the padding skipped.
    pub fn opaque(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        let bytes = self.bytes.get(self.pos..self.pos.checked_add(len)?)?;
        self.pos += len + (4 - len % 4) % 4;
        (self.pos <= self.bytes.len()).then_some(bytes)
    }
}
