//! Finding an image sequence on disk from a directory, a pattern or one of its files.
//!
//! A frame's file name is PREFIX + digits + SUFFIX, where the digits are the
//! last run of digits before the extension. Sequences may be zero-padded
//! (`shot.%07d.dpx`) or not (`shot.%d.dpx`); in a padded sequence a frame
//! number may still have more digits than the padding (frame 10000000 in a
//! `%07d` sequence is `shot.10000000.dpx`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use playsim_core::{EntryKind, Storage, StorageError, StorageErrorKind};

use crate::Error;

/// The largest span `last - first + 1` of frame numbers a sequence may have.
///
/// Gaps are listed one by one, so a stray file numbered far away from the
/// rest must not make discovery list billions of them.
pub const MAX_FRAME_RANGE: u64 = 10_000_000;

/// The most digits a frame number can have (`u64::MAX` has 20).
const MAX_DIGITS: usize = 20;

/// A numbered image sequence: where its frames are, their numbers and its gaps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sequence {
    location: PathBuf,
    dir: PathBuf,
    prefix: String,
    suffix: String,
    padding: usize,
    /// Frame numbers that have a file (or directory entry), sorted, unique, never empty.
    frames: Vec<u64>,
    first: u64,
    last: u64,
    /// A single file whose name has no frame number: frame 0 is the file itself.
    still: bool,
}

impl Sequence {
    /// Finds the sequence at `location`, which is one of:
    ///
    /// - a directory: its largest group of similarly numbered entries (ties go
    ///   to a known image extension, then to the first pattern in name order).
    ///   Entries starting with `.` are ignored. Entries that are directories
    ///   but named like frames count as frames;
    /// - a pattern: `shot.%07d.dpx`, `shot.%d.dpx`, `shot.####.dpx` (N `#` are
    ///   N digits, but a single `#` is 4 digits as in RV) or `shot.@@@.dpx`
    ///   (one digit per `@`);
    /// - one file of a sequence, `shot.0000012.dpx`: the sequence it belongs to;
    /// - one file with no frame number in its name, `still.exr`: a one-frame
    ///   sequence, frame 0.
    ///
    /// Names that are not valid UTF-8 are ignored.
    pub fn discover(location: &Path) -> Result<Sequence, Error> {
        let kind = if location.is_dir() {
            Some(EntryKind::Dir)
        } else if location.exists() {
            Some(EntryKind::File)
        } else {
            None
        };
        let listing = match dir_to_list(location, kind)? {
            Some(dir) => list_names(&dir, location)?,
            None => Listing::default(),
        };
        from_listing(location, kind, listing)
    }

    /// [`discover`](Self::discover) through a [`Storage`]: the location's kind and its
    /// directory's listing come from the transport (an NFS server's LOOKUP and READDIRPLUS),
    /// and the paths are the transport's.
    pub async fn discover_on(location: &Path, storage: &dyn Storage) -> Result<Sequence, Error> {
        let kind = storage.kind(location).await.map_err(|e| storage_error(location, e))?;
        let listing = match dir_to_list(location, kind)? {
            Some(dir) => {
                let listed = if dir.as_os_str().is_empty() { Path::new(".") } else { dir.as_path() };
                let entries = storage.list_dir(listed).await.map_err(|e| storage_error(location, e))?;
                let n_entries = entries.len();
                let mut names: Vec<String> = entries.into_iter().map(|e| e.name).collect();
                names.sort_unstable();
                Listing { names, n_entries }
            }
            None => Listing::default(),
        };
        from_listing(location, kind, listing)
    }

    /// [`discover_on`](Self::discover_on) with the location's kind and its directory's
    /// names given in memory, as a transport would answer (`kind` `None`: nothing is there,
    /// so the location is read as a pattern): the entry of the `sequence_pattern` fuzz
    /// target, not an API.
    #[doc(hidden)]
    pub fn discover_in_names(
        location: &Path,
        kind: Option<EntryKind>,
        mut names: Vec<String>,
    ) -> Result<Sequence, Error> {
        let listing = match dir_to_list(location, kind)? {
            Some(_) => {
                let n_entries = names.len();
                names.sort_unstable();
                Listing { names, n_entries }
            }
            None => Listing::default(),
        };
        from_listing(location, kind, listing)
    }

    /// What the sequence was discovered from: a directory, a pattern or a file.
    pub fn location(&self) -> &Path {
        &self.location
    }

    /// The directory holding the frames (empty for the current directory).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The part of every file name before the frame number.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The part of every file name after the frame number.
    pub fn suffix(&self) -> &str {
        &self.suffix
    }

    /// The extension of the frames' names, without the dot, as on disk (`dpx`).
    pub fn extension(&self) -> Option<&str> {
        extension_of(if self.still { &self.prefix } else { &self.suffix })
    }

    /// Minimum digits of a frame number; 0 when unpadded (`%d`).
    pub fn padding(&self) -> usize {
        self.padding
    }

    /// The printf-style file name pattern, e.g. `shot.%07d.dpx` or `shot.%d.dpx`.
    pub fn pattern(&self) -> String {
        if self.still {
            return self.prefix.clone();
        }
        let number = if self.padding > 1 { format!("%0{}d", self.padding) } else { "%d".to_owned() };
        format!("{}{number}{}", self.prefix.replace('%', "%%"), self.suffix.replace('%', "%%"))
    }

    /// [`pattern`](Self::pattern) inside [`dir`](Self::dir).
    pub fn pattern_path(&self) -> PathBuf {
        self.dir.join(self.pattern())
    }

    /// The lowest frame number found.
    pub fn first_frame(&self) -> u64 {
        self.first
    }

    /// The highest frame number found.
    pub fn last_frame(&self) -> u64 {
        self.last
    }

    /// Frames in first..=last, gaps included.
    pub fn n_frames(&self) -> u64 {
        self.last - self.first + 1
    }

    /// Frames that have a file.
    pub fn n_files(&self) -> u64 {
        self.frames.len() as u64
    }

    /// True when frame number `frame` has a file.
    pub fn contains(&self, frame: u64) -> bool {
        self.frames.binary_search(&frame).is_ok()
    }

    /// Frame numbers in first..=last that have no file, in order.
    pub fn gaps(&self) -> Vec<u64> {
        let mut gaps = Vec::new();
        let mut expected = self.first;
        for &frame in &self.frames {
            gaps.extend(expected..frame);
            expected = frame + 1;
        }
        gaps
    }

    /// The path that frame number `frame` has, or would have.
    pub fn path_for(&self, frame: u64) -> PathBuf {
        if self.still {
            return self.dir.join(&self.prefix);
        }
        self.dir.join(file_name(&self.prefix, self.padding, frame, &self.suffix))
    }
}

/// The extension after the last dot of `name`, if any.
pub(crate) fn extension_of(name: &str) -> Option<&str> {
    name.rsplit_once('.').map(|(_, ext)| ext).filter(|ext| !ext.is_empty())
}

fn file_name(prefix: &str, padding: usize, frame: u64, suffix: &str) -> String {
    format!("{prefix}{frame:0padding$}{suffix}")
}

/// A file name split around its frame number.
struct NumberedName<'a> {
    prefix: &'a str,
    digits: &'a str,
    suffix: &'a str,
}

impl NumberedName<'_> {
    /// True for zero-padded numbers such as `0012`: they fix the padding.
    fn has_leading_zero(&self) -> bool {
        self.digits.len() > 1 && self.digits.starts_with('0')
    }

    fn number(&self) -> Option<u64> {
        if self.digits.len() > MAX_DIGITS {
            return None;
        }
        self.digits.parse().ok()
    }
}

/// Splits `name` around the last run of digits before its extension, or around
/// the last run of digits anywhere when the part before the extension has none
/// (`frame.0001` has no extension but a frame number).
fn split_numbered(name: &str) -> Option<NumberedName<'_>> {
    let stem_len = name.rfind('.').filter(|&dot| dot > 0).unwrap_or(name.len());
    let stem = name.get(..stem_len)?;
    let (start, end) = last_digit_run(stem).or_else(|| last_digit_run(name))?;
    Some(NumberedName { prefix: name.get(..start)?, digits: name.get(start..end)?, suffix: name.get(end..)? })
}

/// Byte range of the last run of ASCII digits in `s`. ASCII bytes never occur
/// inside a multi-byte UTF-8 character, so both ends are character boundaries.
fn last_digit_run(s: &str) -> Option<(usize, usize)> {
    let bytes = s.as_bytes();
    let end = bytes.iter().rposition(u8::is_ascii_digit)? + 1;
    let start = bytes.get(..end)?.iter().rposition(|b| !b.is_ascii_digit()).map_or(0, |i| i + 1);
    Some((start, end))
}

/// One way to read a group of names as a sequence.
#[derive(Debug)]
struct Candidate {
    prefix: String,
    suffix: String,
    padding: usize,
    frames: Vec<u64>,
}

impl Candidate {
    fn pattern(&self) -> String {
        file_name(&self.prefix, 0, 0, &self.suffix)
    }

    /// Whether the files' extension names an image format of the format registry (one file a
    /// frame): such a group wins a tie between equally large groups in a directory.
    fn has_image_extension(&self) -> bool {
        extension_of(&self.suffix)
            .and_then(crate::format_for_extension)
            .is_some_and(|format| !format.is_container())
    }
}

/// Groups numbered names into candidate sequences.
///
/// Names with the same prefix and suffix form one sequence, unless their
/// padding disagrees: each zero-padded width (`0012` is width 4) makes a
/// candidate holding the names of that width plus the unpadded numbers that
/// are at least as wide (`12345` fits `%04d`), and unpadded numbers that fit
/// no padded width form a `%d` candidate of their own.
fn group_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<Candidate> {
    let mut groups: BTreeMap<(&str, &str), Vec<Entry>> = BTreeMap::new();
    for name in names {
        let Some(split) = split_numbered(name) else { continue };
        let Some(number) = split.number() else { continue };
        let entry = Entry { n_digits: split.digits.len(), zero_padded: split.has_leading_zero(), number };
        groups.entry((split.prefix, split.suffix)).or_default().push(entry);
    }
    let mut candidates = Vec::new();
    for ((prefix, suffix), entries) in groups {
        let widths: BTreeSet<usize> = entries.iter().filter(|e| e.zero_padded).map(|e| e.n_digits).collect();
        let narrowest = widths.first().copied().unwrap_or(usize::MAX);
        for &width in &widths {
            let frames = entries.iter().filter(|e| e.fits(width)).map(|e| e.number).collect();
            candidates.push(candidate(prefix, suffix, width, frames));
        }
        if widths.is_empty() || entries.iter().any(|e| !e.zero_padded && e.n_digits < narrowest) {
            let unpadded: Vec<&Entry> = entries.iter().filter(|e| !e.zero_padded).collect();
            // Numbers of one width and no leading zero are most likely padded to that
            // width (1001..1100); reading them as `%04d` names the same files as `%d`.
            let min_len = unpadded.iter().map(|e| e.n_digits).min().unwrap_or(0);
            let max_len = unpadded.iter().map(|e| e.n_digits).max().unwrap_or(0);
            let padding = if min_len == max_len && min_len > 1 { min_len } else { 0 };
            candidates.push(candidate(prefix, suffix, padding, unpadded.iter().map(|e| e.number).collect()));
        }
    }
    candidates
}

/// One numbered name, as far as grouping needs it.
struct Entry {
    n_digits: usize,
    zero_padded: bool,
    number: u64,
}

impl Entry {
    /// True when a sequence padded to `width` digits would give this name.
    fn fits(&self, width: usize) -> bool {
        if self.zero_padded {
            self.n_digits == width
        } else {
            self.n_digits >= width
        }
    }
}

fn candidate(prefix: &str, suffix: &str, padding: usize, mut frames: Vec<u64>) -> Candidate {
    frames.sort_unstable();
    frames.dedup();
    Candidate { prefix: prefix.to_owned(), suffix: suffix.to_owned(), padding, frames }
}

/// The best candidate: most frames, then a known image extension, then name order.
fn best(candidates: Vec<Candidate>) -> Option<Candidate> {
    candidates.into_iter().filter(|c| !c.frames.is_empty()).min_by(|a, b| {
        b.frames
            .len()
            .cmp(&a.frames.len())
            .then(b.has_image_extension().cmp(&a.has_image_extension()))
            .then_with(|| a.pattern().cmp(&b.pattern()))
            .then(a.padding.cmp(&b.padding))
    })
}

/// The names in `dir` (the current directory when empty), skipping names that
/// are not UTF-8.
fn list_names(dir: &Path, location: &Path) -> Result<Listing, Error> {
    let listed = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let entries = std::fs::read_dir(listed).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound { path: location.to_owned() },
        _ => Error::io("list directory", listed, e),
    })?;
    let mut names = Vec::new();
    let mut n_entries = 0;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list directory", listed, e))?;
        n_entries += 1;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    names.sort_unstable();
    Ok(Listing { names, n_entries })
}

/// A directory's entries: the UTF-8 names, sorted, and how many entries there were in all.
#[derive(Debug, Default)]
struct Listing {
    names: Vec<String>,
    n_entries: usize,
}

/// The directory whose listing discovery needs for `location` of `kind` (`None`: nothing is
/// there): the location itself, or the directory holding the file or pattern. `Ok(None)`
/// when no listing is needed (a lone still).
fn dir_to_list(location: &Path, kind: Option<EntryKind>) -> Result<Option<PathBuf>, Error> {
    let parent = || location.parent().unwrap_or(Path::new("")).to_owned();
    let name = location.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    match kind {
        Some(EntryKind::Dir) => Ok(Some(location.to_owned())),
        Some(EntryKind::File) => Ok(split_numbered(name).map(|_| parent())),
        None => match parse_pattern(name).map_err(|e| e.into_error(location))? {
            Some(_) => Ok(Some(parent())),
            None => Err(Error::NotFound { path: location.to_owned() }),
        },
    }
}

fn from_listing(location: &Path, kind: Option<EntryKind>, listing: Listing) -> Result<Sequence, Error> {
    match kind {
        Some(EntryKind::Dir) => discover_in_dir(location, listing),
        Some(EntryKind::File) => discover_from_file(location, listing),
        None => {
            let name = location.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            match parse_pattern(name).map_err(|e| e.into_error(location))? {
                Some(parts) => discover_from_pattern(location, parts, listing),
                None => Err(Error::NotFound { path: location.to_owned() }),
            }
        }
    }
}

fn storage_error(location: &Path, error: StorageError) -> Error {
    match error.kind {
        StorageErrorKind::NotFound => Error::NotFound { path: location.to_owned() },
        _ => Error::Storage(error),
    }
}

fn discover_in_dir(dir: &Path, listing: Listing) -> Result<Sequence, Error> {
    let Listing { names, n_entries } = listing;
    if n_entries == 0 {
        return Err(Error::EmptyDirectory { path: dir.to_owned() });
    }
    // Hidden files such as macOS's `._shot.0001.dpx` would otherwise tie with the real sequence.
    let visible = names.iter().map(String::as_str).filter(|n| !n.starts_with('.'));
    let chosen = best(group_names(visible)).ok_or_else(|| Error::NoNumberedFiles {
        path: dir.to_owned(),
        detail: format!(" ({n_entries} entries, none named like NAME.0001.EXT)"),
    })?;
    finish(dir, dir.to_owned(), chosen)
}

fn discover_from_file(file: &Path, listing: Listing) -> Result<Sequence, Error> {
    let no_number = || Error::NoNumberedFiles {
        path: file.to_owned(),
        detail: " (the file name has no frame number)".to_owned(),
    };
    let name = file.file_name().and_then(|n| n.to_str()).ok_or_else(no_number)?;
    let Some(split) = split_numbered(name) else {
        // A lone file with no frame number, such as a still: a sequence of one frame.
        return Ok(Sequence {
            location: file.to_owned(),
            dir: file.parent().unwrap_or(Path::new("")).to_owned(),
            prefix: name.to_owned(),
            suffix: String::new(),
            padding: 0,
            frames: vec![0],
            first: 0,
            last: 0,
            still: true,
        });
    };
    let number = split.number().ok_or_else(|| Error::Limit {
        path: file.to_owned(),
        reason: format!("frame number {} has more than {MAX_DIGITS} digits or is too large", split.digits),
    })?;
    let dir = file.parent().unwrap_or(Path::new("")).to_owned();
    let names = listing.names;
    let siblings =
        names.iter().map(String::as_str).filter(|n| n.starts_with(split.prefix) && n.ends_with(split.suffix));
    // Keep only the readings of the group that name this very file.
    let readings = group_names(siblings).into_iter().filter(|c| {
        c.prefix == split.prefix
            && c.suffix == split.suffix
            && file_name(&c.prefix, c.padding, number, &c.suffix) == name
            && c.frames.binary_search(&number).is_ok()
    });
    let chosen = best(readings.collect()).ok_or_else(no_number)?;
    finish(file, dir, chosen)
}

fn discover_from_pattern(pattern: &Path, parts: PatternParts, listing: Listing) -> Result<Sequence, Error> {
    let dir = pattern.parent().unwrap_or(Path::new("")).to_owned();
    let names = listing.names;
    let mut frames = Vec::new();
    for name in &names {
        let Some(digits) = name.strip_prefix(&parts.prefix).and_then(|rest| rest.strip_suffix(&parts.suffix))
        else {
            continue;
        };
        if digits.is_empty() || digits.len() > MAX_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let leading_zero = digits.len() > 1 && digits.starts_with('0');
        let fits = if parts.padding > 1 {
            digits.len() == parts.padding || (digits.len() > parts.padding && !leading_zero)
        } else {
            !leading_zero
        };
        if let (true, Ok(number)) = (fits, digits.parse::<u64>()) {
            frames.push(number);
        }
    }
    let chosen = candidate(&parts.prefix, &parts.suffix, parts.padding, frames);
    if chosen.frames.is_empty() {
        return Err(Error::NoNumberedFiles {
            path: pattern.to_owned(),
            detail: " (no file matches)".to_owned(),
        });
    }
    finish(pattern, dir, chosen)
}

fn finish(location: &Path, dir: PathBuf, chosen: Candidate) -> Result<Sequence, Error> {
    let Candidate { prefix, suffix, padding, frames } = chosen;
    let (Some(&first), Some(&last)) = (frames.first(), frames.last()) else {
        return Err(Error::NoNumberedFiles { path: location.to_owned(), detail: String::new() });
    };
    let sequence = Sequence {
        location: location.to_owned(),
        dir,
        prefix,
        suffix,
        padding,
        frames,
        first,
        last,
        still: false,
    };
    if last - first >= MAX_FRAME_RANGE {
        return Err(Error::Limit {
            path: sequence.pattern_path(),
            reason: format!("frames {first} to {last} span more than {MAX_FRAME_RANGE} frames"),
        });
    }
    Ok(sequence)
}

/// A pattern's file name split around its frame-number placeholder.
#[derive(Debug, PartialEq, Eq)]
struct PatternParts {
    prefix: String,
    padding: usize,
    suffix: String,
}

enum PatternError {
    Invalid(String),
    Ambiguous(String),
}

impl PatternError {
    fn into_error(self, path: &Path) -> Error {
        match self {
            PatternError::Invalid(reason) => Error::InvalidPattern { path: path.to_owned(), reason },
            PatternError::Ambiguous(reason) => Error::Ambiguous { path: path.to_owned(), reason },
        }
    }
}

/// [`parse_pattern`] for the `sequence_pattern` fuzz target, not an API: the pattern's
/// (prefix, padding, suffix), `Ok(None)` without a placeholder, or the error discovery
/// would report for `name`.
#[doc(hidden)]
pub fn parse_pattern_parts(name: &str) -> Result<Option<(String, usize, String)>, Error> {
    let parts = parse_pattern(name).map_err(|e| e.into_error(Path::new(name)))?;
    Ok(parts.map(|p| (p.prefix, p.padding, p.suffix)))
}

/// Parses a file name pattern; `Ok(None)` when it has no placeholder.
///
/// `%%` is a literal `%`, and so is a `%` that does not start a conversion.
/// Padding of 0 or 1 digit is stored as 0 (unpadded).
fn parse_pattern(name: &str) -> Result<Option<PatternParts>, PatternError> {
    let mut literal = String::new();
    let mut found: Option<(String, usize)> = None;
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        let padding = match c {
            '%' => {
                let mut spec = String::new();
                while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    spec.push(d);
                    chars.next();
                }
                match chars.peek() {
                    Some('%') if spec.is_empty() => {
                        chars.next();
                        literal.push('%');
                        continue;
                    }
                    Some('d') => {
                        chars.next();
                    }
                    _ => {
                        literal.push('%');
                        literal.push_str(&spec);
                        continue;
                    }
                }
                if !spec.is_empty() && !spec.starts_with('0') {
                    return Err(PatternError::Invalid(format!(
                        "%{spec}d pads with spaces, which frame files do not use; write %0{spec}d"
                    )));
                }
                spec.parse::<usize>().unwrap_or(0)
            }
            '#' | '@' => {
                let mut run = 1;
                while chars.next_if_eq(&c).is_some() {
                    run += 1;
                }
                // As in RV, a single `#` stands for four digits.
                if c == '#' && run == 1 {
                    4
                } else {
                    run
                }
            }
            _ => {
                literal.push(c);
                continue;
            }
        };
        if padding > MAX_DIGITS {
            return Err(PatternError::Invalid(format!(
                "padding of {padding} digits is more than {MAX_DIGITS}"
            )));
        }
        if found.is_some() {
            return Err(PatternError::Ambiguous("more than one frame number placeholder".to_owned()));
        }
        found = Some((std::mem::take(&mut literal), if padding > 1 { padding } else { 0 }));
    }
    Ok(found.map(|(prefix, padding)| PatternParts { prefix, padding, suffix: literal }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;

    fn touch(dir: &Path, names: &[&str]) {
        for name in names {
            fs::write(dir.join(name), b"x").unwrap();
        }
    }

    fn numbered(
        dir: &Path,
        prefix: &str,
        padding: usize,
        frames: impl IntoIterator<Item = u64>,
        suffix: &str,
    ) {
        for f in frames {
            fs::write(dir.join(file_name(prefix, padding, f, suffix)), b"x").unwrap();
        }
    }

    #[test]
    fn parses_patterns() {
        let p = |s: &str| parse_pattern(s).ok().flatten().map(|p| (p.prefix, p.padding, p.suffix));
        let parts = |a: &str, n: usize, b: &str| Some((a.to_owned(), n, b.to_owned()));
        assert_eq!(p("shot.%07d.dpx"), parts("shot.", 7, ".dpx"));
        assert_eq!(p("shot.%d.dpx"), parts("shot.", 0, ".dpx"));
        assert_eq!(p("shot.%01d.dpx"), parts("shot.", 0, ".dpx"));
        assert_eq!(p("shot.####.dpx"), parts("shot.", 4, ".dpx"));
        assert_eq!(p("shot.#.dpx"), parts("shot.", 4, ".dpx"));
        assert_eq!(p("shot.######.dpx"), parts("shot.", 6, ".dpx"));
        assert_eq!(p("shot.@@@.dpx"), parts("shot.", 3, ".dpx"));
        assert_eq!(p("shot.@.dpx"), parts("shot.", 0, ".dpx"));
        assert_eq!(p("100%%_%04d.dpx"), parts("100%_", 4, ".dpx"));
        assert_eq!(p("100%_%04d.dpx"), parts("100%_", 4, ".dpx"));
        assert_eq!(p("shot.0001.dpx"), None);
        assert!(matches!(parse_pattern("a.%4d.dpx"), Err(PatternError::Invalid(_))));
        assert!(matches!(parse_pattern("a.%099d.dpx"), Err(PatternError::Invalid(_))));
        assert!(matches!(parse_pattern("a_%02d.####.dpx"), Err(PatternError::Ambiguous(_))));
    }

    #[test]
    fn splits_names_at_the_last_number_before_the_extension() {
        fn s(n: &str) -> Option<(&str, &str, &str)> {
            split_numbered(n).map(|s| (s.prefix, s.digits, s.suffix))
        }
        assert_eq!(s("shot_v2.0012.dpx"), Some(("shot_v2.", "0012", ".dpx")));
        assert_eq!(s("frame0001.j2k"), Some(("frame", "0001", ".j2k")));
        assert_eq!(s("shot.0001.dpx.md5"), Some(("shot.", "0001", ".dpx.md5")));
        assert_eq!(s("frame.0001"), Some(("frame.", "0001", "")));
        assert_eq!(s("ä1é.dpx"), Some(("ä", "1", "é.dpx")));
        assert_eq!(s("readme.txt"), None);
        assert_eq!(s(".hidden"), None);
    }

    #[test]
    fn discovers_a_directory_with_gaps() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "shot.", 7, (1..=10).filter(|f| *f != 4 && *f != 7), ".dpx");
        touch(tmp.path(), &["notes.txt", "shot.0000001.dpx.md5", "._shot.0000001.dpx"]);
        let seq = Sequence::discover(tmp.path()).unwrap();
        assert_eq!(seq.pattern(), "shot.%07d.dpx");
        assert_eq!((seq.first_frame(), seq.last_frame(), seq.n_frames(), seq.n_files()), (1, 10, 10, 8));
        assert_eq!(seq.gaps(), vec![4, 7]);
        assert_eq!(seq.padding(), 7);
        assert_eq!(seq.extension(), Some("dpx"));
        assert_eq!(seq.path_for(4), tmp.path().join("shot.0000004.dpx"));
        assert!(seq.contains(3) && !seq.contains(4));
    }

    #[test]
    fn picks_the_largest_group_then_an_image_extension_then_name_order() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "b.", 4, 1..=5, ".dpx");
        numbered(tmp.path(), "a.", 4, 1..=3, ".dpx");
        numbered(tmp.path(), "a.", 4, 1..=5, ".xml");
        assert_eq!(Sequence::discover(tmp.path()).unwrap().pattern(), "b.%04d.dpx");
        numbered(tmp.path(), "a.", 4, 4..=5, ".dpx");
        assert_eq!(Sequence::discover(tmp.path()).unwrap().pattern(), "a.%04d.dpx");
        numbered(tmp.path(), "c.", 4, 1..=6, ".tif");
        assert_eq!(Sequence::discover(tmp.path()).unwrap().pattern(), "c.%04d.tif");
    }

    #[test]
    fn any_image_format_of_the_registry_wins_a_tie() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "a.", 4, 1..=3, ".xml");
        numbered(tmp.path(), "b.", 4, 1..=3, ".TIFF");
        numbered(tmp.path(), "c.", 4, 1..=3, ".mov");
        assert_eq!(Sequence::discover(tmp.path()).unwrap().pattern(), "b.%04d.TIFF");
    }

    #[test]
    fn frame_numbers_may_outgrow_the_padding() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "shot.", 7, 9_999_997..=10_000_002, ".dpx");
        let by_pattern = Sequence::discover(&tmp.path().join("shot.%07d.dpx")).unwrap();
        assert_eq!(by_pattern.pattern(), "shot.%07d.dpx");
        assert_eq!((by_pattern.first_frame(), by_pattern.last_frame()), (9_999_997, 10_000_002));
        assert!(by_pattern.gaps().is_empty());
        assert_eq!(by_pattern.path_for(10_000_000), tmp.path().join("shot.10000000.dpx"));
        assert_eq!(by_pattern.path_for(12), tmp.path().join("shot.0000012.dpx"));
        // With no zero-padded name on disk, `%d` names exactly the same files.
        let by_dir = Sequence::discover(tmp.path()).unwrap();
        assert_eq!((by_dir.pattern().as_str(), by_dir.n_files()), ("shot.%d.dpx", 6));
        assert_eq!(by_dir.path_for(10_000_000), by_pattern.path_for(10_000_000));

        // A zero-padded name fixes the padding; wider numbers still belong.
        numbered(tmp.path(), "take.", 3, [1, 2, 998, 999, 1000, 1002], ".dpx");
        let seq = Sequence::discover(&tmp.path().join("take.1000.dpx")).unwrap();
        assert_eq!(seq.pattern(), "take.%03d.dpx");
        assert_eq!((seq.first_frame(), seq.last_frame(), seq.n_files()), (1, 1002, 6));
        assert_eq!(seq.gaps().len(), 1002 - 6);
        assert_eq!(seq.path_for(1001), tmp.path().join("take.1001.dpx"));
        let by_hash = Sequence::discover(&tmp.path().join("take.###.dpx")).unwrap();
        assert_eq!(by_hash, Sequence { location: by_hash.location.clone(), ..seq });
    }

    #[test]
    fn unpadded_sequences() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "shot.", 0, (8..=12).chain(14..=15), ".dpx");
        let seq = Sequence::discover(tmp.path()).unwrap();
        assert_eq!(seq.pattern(), "shot.%d.dpx");
        assert_eq!(seq.gaps(), vec![13]);
        assert_eq!(seq.path_for(9), tmp.path().join("shot.9.dpx"));
        let by_pattern = Sequence::discover(&tmp.path().join("shot.%d.dpx")).unwrap();
        assert_eq!((by_pattern.first_frame(), by_pattern.last_frame(), by_pattern.n_files()), (8, 15, 7));
        let by_at = Sequence::discover(&tmp.path().join("shot.@.dpx")).unwrap();
        assert_eq!(by_at.n_files(), 7);
        let by_file = Sequence::discover(&tmp.path().join("shot.9.dpx")).unwrap();
        assert_eq!(by_file.pattern(), "shot.%d.dpx");
    }

    #[test]
    fn same_width_numbers_without_zeros_read_as_padded() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "shot.", 0, 1001..=1010, ".dpx");
        let seq = Sequence::discover(tmp.path()).unwrap();
        assert_eq!(seq.pattern(), "shot.%04d.dpx");
        assert_eq!(seq.n_files(), 10);
    }

    #[test]
    fn conflicting_paddings_are_separate_sequences() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "s.", 4, 1..=5, ".dpx");
        numbered(tmp.path(), "s.", 2, 1..=3, ".dpx");
        let seq = Sequence::discover(tmp.path()).unwrap();
        assert_eq!((seq.pattern(), seq.n_files()), ("s.%04d.dpx".to_owned(), 5));
        let two = Sequence::discover(&tmp.path().join("s.02.dpx")).unwrap();
        assert_eq!((two.pattern(), two.n_files()), ("s.%02d.dpx".to_owned(), 3));
        let by_pattern = Sequence::discover(&tmp.path().join("s.##.dpx")).unwrap();
        assert_eq!(by_pattern.n_files(), 3);
    }

    #[test]
    fn hash_and_at_patterns() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "shot.", 4, [1, 2, 5], ".dpx");
        numbered(tmp.path(), "shot.", 3, [1, 2, 3], ".dpx");
        let hash = Sequence::discover(&tmp.path().join("shot.#.dpx")).unwrap();
        assert_eq!((hash.pattern(), hash.gaps()), ("shot.%04d.dpx".to_owned(), vec![3, 4]));
        let hashes = Sequence::discover(&tmp.path().join("shot.####.dpx")).unwrap();
        assert_eq!(hashes.n_files(), 3);
        let at = Sequence::discover(&tmp.path().join("shot.@@@.dpx")).unwrap();
        assert_eq!((at.pattern(), at.first_frame(), at.last_frame()), ("shot.%03d.dpx".to_owned(), 1, 3));
        let printf = Sequence::discover(&tmp.path().join("shot.%03d.dpx")).unwrap();
        assert_eq!(printf, Sequence { location: printf.location.clone(), ..at });
    }

    #[test]
    fn a_single_file_finds_its_siblings() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "shot.", 7, [10, 11, 12, 14], ".dpx");
        numbered(tmp.path(), "other.", 7, 1..=20, ".dpx");
        let seq = Sequence::discover(&tmp.path().join("shot.0000012.dpx")).unwrap();
        assert_eq!(seq.pattern(), "shot.%07d.dpx");
        assert_eq!((seq.first_frame(), seq.last_frame(), seq.gaps()), (10, 14, vec![13]));
        assert_eq!(seq.location(), tmp.path().join("shot.0000012.dpx"));
    }

    #[test]
    fn a_directory_named_like_a_frame_is_a_frame() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "shot.", 4, [1, 2, 4], ".dpx");
        fs::create_dir(tmp.path().join("shot.0003.dpx")).unwrap();
        let seq = Sequence::discover(tmp.path()).unwrap();
        assert_eq!((seq.n_files(), seq.gaps()), (4, vec![]));
        assert!(seq.path_for(3).is_dir());
    }

    #[test]
    fn errors_name_the_path() {
        let tmp = tempfile::tempdir().unwrap();
        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        let err = Sequence::discover(&empty).unwrap_err();
        assert!(matches!(err, Error::EmptyDirectory { .. }), "{err}");
        assert!(err.to_string().contains("empty") && err.to_string().contains(&*empty.to_string_lossy()));

        let missing = tmp.path().join("nothing-here");
        let err = Sequence::discover(&missing).unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
        assert_eq!(err.to_string(), format!("{} not found", missing.display()));

        let missing_dir_pattern = tmp.path().join("nope/shot.%04d.dpx");
        let err = Sequence::discover(&missing_dir_pattern).unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");

        let plain = tmp.path().join("plain");
        fs::create_dir(&plain).unwrap();
        touch(&plain, &["readme.txt", "notes"]);
        let err = Sequence::discover(&plain).unwrap_err();
        assert!(matches!(err, Error::NoNumberedFiles { .. }), "{err}");
        assert!(err.to_string().contains(&*plain.to_string_lossy()), "{err}");
        // A lone file with no frame number is a one-frame sequence.
        let still = Sequence::discover(&plain.join("readme.txt")).unwrap();
        assert_eq!((still.first_frame(), still.last_frame(), still.n_frames()), (0, 0, 1));
        assert_eq!(still.path_for(0), plain.join("readme.txt"));
        assert_eq!((still.pattern().as_str(), still.extension()), ("readme.txt", Some("txt")));
        let err = Sequence::discover(&plain.join("x.%04d.dpx")).unwrap_err();
        assert!(matches!(err, Error::NoNumberedFiles { .. }), "{err}");

        let err = Sequence::discover(&plain.join("x.%02d.####.dpx")).unwrap_err();
        assert!(matches!(err, Error::Ambiguous { .. }), "{err}");
        let err = Sequence::discover(&plain.join("x.%4d.dpx")).unwrap_err();
        assert!(matches!(err, Error::InvalidPattern { .. }), "{err}");
    }

    #[test]
    fn refuses_an_absurd_frame_range() {
        let tmp = tempfile::tempdir().unwrap();
        numbered(tmp.path(), "shot.", 4, [1, 2, 99_999_999], ".dpx");
        let err = Sequence::discover(tmp.path()).unwrap_err();
        assert!(matches!(err, Error::Limit { .. }), "{err}");
        assert!(err.to_string().contains("shot.%04d.dpx"), "{err}");
    }

    #[test]
    fn ignores_numbers_too_long_for_u64() {
        let tmp = tempfile::tempdir().unwrap();
        touch(tmp.path(), &["a.123456789012345678901234.dpx", "b.1.dpx"]);
        assert_eq!(Sequence::discover(tmp.path()).unwrap().pattern(), "b.%d.dpx");
    }
}
