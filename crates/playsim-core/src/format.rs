//! What a codec crate tells the format registry about its files: names, magic, and the frame size.

/// A file format as its codec crate describes it, with no I/O: how its files are named,
/// how their first bytes begin, and how to read the frame size from a few of their bytes.
///
/// Each image codec crate exports one (`playsim_dpx::FORMAT`, ...), and the registry in
/// `playsim-media` pairs it with the decoder it makes: the descriptor lives here, below both,
/// so that a codec crate does not depend on the registry that lists it.
#[derive(Clone, Copy, Debug)]
pub struct FormatDescriptor {
    /// The format's name, as in reports (`dpx`).
    pub name: &'static str,
    /// Lower-case file extensions, without the dot.
    pub extensions: &'static [&'static str],
    /// The byte strings a file of the format starts with (any one of them); empty when the
    /// format has none at offset 0.
    pub magic: &'static [&'static [u8]],
    /// Reads the frame size from the bytes of a frame file (see [`Probe`]).
    pub probe: fn(&FileBytes<'_>) -> Probe,
}

impl FormatDescriptor {
    /// True when `head`, a file's first bytes, starts with one of the format's magic strings.
    pub fn matches_magic(&self, head: &[u8]) -> bool {
        self.magic.iter().any(|m| head.starts_with(m))
    }

    /// True when `extension` (any case, no dot) is one of the format's.
    pub fn has_extension(&self, extension: &str) -> bool {
        self.extensions.iter().any(|e| e.eq_ignore_ascii_case(extension))
    }
}

/// What a probe found out about a frame's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The frame's width and height in pixels, as a decode would give them.
    Size {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// The size is stored further into the file, from this offset: ask again with the bytes
    /// there as well. (A TIFF file's directory may follow its pixels, as FFmpeg writes it.)
    ReadAt(u64),
    /// Not this format, or too damaged to tell.
    Unknown,
}

/// Some of a frame file's bytes, for a probe: its start, and any windows a probe asked for.
#[derive(Clone, Copy, Debug)]
pub struct FileBytes<'a> {
    /// The whole file's size in bytes.
    pub file_size: u64,
    windows: &'a [(u64, &'a [u8])],
}

impl<'a> FileBytes<'a> {
    /// The bytes of a `file_size`-byte file held in `windows`, each its offset and bytes.
    pub fn new(file_size: u64, windows: &'a [(u64, &'a [u8])]) -> FileBytes<'a> {
        FileBytes { file_size, windows }
    }

    /// `len` bytes at `offset`, when one window holds them all.
    pub fn get(&self, offset: u64, len: usize) -> Option<&'a [u8]> {
        self.windows.iter().find_map(|&(start, bytes)| {
            let from = usize::try_from(offset.checked_sub(start)?).ok()?;
            bytes.get(from..from.checked_add(len)?)
        })
    }

    /// The bytes held from offset 0 on (empty when no window starts there).
    pub fn head(&self) -> &'a [u8] {
        self.windows.iter().find(|(start, _)| *start == 0).map_or(&[], |&(_, bytes)| bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_bytes_answer_only_from_whole_windows() {
        let head = [1u8, 2, 3, 4];
        let tail = [9u8, 8, 7];
        let windows = [(0, &head[..]), (100, &tail[..])];
        let bytes = FileBytes::new(103, &windows);
        assert_eq!(bytes.head(), &head);
        assert_eq!(bytes.get(1, 3), Some(&head[1..]));
        assert_eq!(bytes.get(101, 2), Some(&tail[1..]));
        // Across a window's end, between windows, and at absurd offsets: nothing, no panic.
        assert_eq!(bytes.get(2, 3), None);
        assert_eq!(bytes.get(50, 1), None);
        assert_eq!(bytes.get(u64::MAX, usize::MAX), None);
        assert_eq!(FileBytes::new(0, &[]).head(), &[] as &[u8]);
    }

    #[test]
    fn magic_and_extensions() {
        let format = FormatDescriptor {
            name: "x",
            extensions: &["tif", "tiff"],
            magic: &[b"II*\0", b"MM\0*"],
            probe: |_| Probe::Unknown,
        };
        assert!(format.matches_magic(b"MM\0*\0\0\0\x08"));
        assert!(!format.matches_magic(b"MM"));
        assert!(format.has_extension("TIFF") && !format.has_extension("tifff"));
    }
}
