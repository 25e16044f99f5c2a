//! The write side of [`HostileServer`](super::HostileServer): [`HOSTILE_OUT_DIR`](super::HOSTILE_OUT_DIR)'s files and
//! the calls that change them (CREATE, WRITE, COMMIT, RENAME, REMOVE, FSSTAT), with the
//! misbehaviours of [`Call::Write`], [`Call::Commit`] and [`Call::Rename`].
//!
//! Each file keeps two images of its bytes: what a read gives (every WRITE applied) and what
//! a restart keeps (FILE_SYNC and DATA_SYNC writes, and everything a COMMIT covered). A restart
//! ([`Misbehaviour::RestartBeforeCommit`]) puts every file back to its durable image and
//! changes the write verifier, as a server that lost its page cache would.

use super::{
    handle, lock, Answer, Call, Misbehaviour, Node, Out, Shared, Target, Wire, NFS3ERR_BADHANDLE,
    NFS3ERR_ISDIR, NFS3ERR_NOENT, NFS3ERR_NOSPC, NFS3ERR_ROFS, NFS3_OK,
};

/// WRITE's `stable_how` of UNSTABLE; DATA_SYNC and FILE_SYNC are durable at once.
const UNSTABLE: u32 = 0;
/// FSSTAT's sizes: 1 TiB, half of it free.
const TOTAL_BYTES: u64 = 1 << 40;
const FREE_BYTES: u64 = 1 << 39;

/// [`HOSTILE_OUT_DIR`](super::HOSTILE_OUT_DIR): its files, by slot (a removed file keeps its slot, nameless, so that a
/// handle to it stays valid, as an open unlinked file's does), and the write verifier.
#[derive(Debug, Default)]
pub(super) struct OutDir {
    files: Vec<OutFile>,
    /// The server's boot count: the write verifier.
    pub(super) restarts: u64,
}

#[derive(Debug, Default)]
struct OutFile {
    /// None once removed or renamed over.
    name: Option<String>,
    /// What a read gives.
    data: Vec<u8>,
    /// What survives a restart.
    durable: Vec<u8>,
}

impl OutDir {
    pub(super) fn has_slot(&self, j: usize) -> bool {
        j < self.files.len()
    }

    pub(super) fn size(&self, j: usize) -> u64 {
        self.files.get(j).map_or(0, |f| f.data.len() as u64)
    }

    pub(super) fn find(&self, name: &[u8]) -> Option<usize> {
        self.files.iter().position(|f| f.name.as_deref().map(str::as_bytes) == Some(name))
    }

    /// (slot, name) of every file there, in creation order.
    pub(super) fn entries(&self) -> impl Iterator<Item = (usize, String)> + '_ {
        self.files.iter().enumerate().filter_map(|(j, f)| Some((j, f.name.clone()?)))
    }

    /// (name, bytes) of every file there, by name.
    pub(super) fn listing(&self) -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> =
            self.files.iter().filter_map(|f| Some((f.name.clone()?, f.data.clone()))).collect();
        files.sort();
        files
    }

    fn verifier(&self) -> [u8; 8] {
        (0x706c_6179_0000_0000 | self.restarts).to_be_bytes()
    }

    /// Loses every byte not yet durable, and changes the verifier.
    fn restart(&mut self) {
        for file in &mut self.files {
            file.data.clone_from(&file.durable);
        }
        self.restarts += 1;
    }
}

/// Writes `data` at `offset` into `image`, growing it.
fn put(image: &mut Vec<u8>, offset: usize, data: &[u8]) {
    let end = offset + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[offset..end].copy_from_slice(data);
}

/// The frame a written file holds: the last number in its name (`.frame.0000005.dpx.partial`
/// is 5).
fn frame_of(name: &str) -> Option<usize> {
    let end = name.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = name[..end].rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    name[start..end].parse().ok()
}

impl Shared {
    /// Whether call `n_call`, of kind `call`, about the written file `name` is to be spoilt.
    fn spoils(&self, call: Call, name: &str, n_call: u64) -> bool {
        if self.target() != Target::Calls(call) {
            return false;
        }
        let frame = frame_of(name);
        let n_before = frame.map_or(0, |i| {
            let mut counts = lock(&self.write_calls);
            let count = counts.entry((call, i)).or_default();
            *count += 1;
            *count - 1
        });
        let spoil = self.picks(n_call, frame, n_before);
        if spoil {
            self.spoilt();
        }
        spoil
    }

    /// The name of written file `j`: its current one, or its last.
    fn written_name(&self, j: usize) -> String {
        lock(&self.out).files.get(j).and_then(|f| f.name.clone()).unwrap_or_default()
    }

    /// wcc_data: no attributes before, those after.
    fn wcc(&self, node: Node, out: &mut Out) {
        out.u32(0);
        self.post_op_attr(node, out);
    }

    /// The handle of a written file, or the status refusing it.
    fn written_of(&self, fh: &[u8]) -> Result<usize, u32> {
        match self.node_of(fh) {
            Some(Node::Written(j)) => Ok(j),
            Some(_) => Err(NFS3ERR_ISDIR),
            None => Err(NFS3ERR_BADHANDLE),
        }
    }

    /// An error reply with an empty wcc_data.
    fn failed(status: u32) -> Answer {
        let mut out = Out::default();
        out.u32(status).u32(0).u32(0);
        Answer::ok(out.0)
    }

    pub(super) fn read_written(&self, j: usize, offset: u64, count: u32) -> Answer {
        let (data, eof) = {
            let dir = lock(&self.out);
            let bytes = dir.files.get(j).map_or(&[][..], |f| &f.data[..]);
            let start = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
            let end = start.saturating_add(count as usize).min(bytes.len());
            (bytes[start..end].to_vec(), end == bytes.len())
        };
        let mut out = Out::default();
        out.u32(NFS3_OK);
        self.post_op_attr(Node::Written(j), &mut out);
        out.u32(u32::try_from(data.len()).unwrap_or(u32::MAX)).u32(u32::from(eof)).opaque(&data);
        Answer::ok(out.0)
    }

    pub(super) fn write(&self, fh: &[u8], offset: u64, stable: u32, data: &[u8], n_call: u64) -> Answer {
        let j = match self.written_of(fh) {
            Ok(j) => j,
            Err(status) => return Shared::failed(status),
        };
        let mut kept = data.len();
        let mut wire = Wire::Right;
        if self.spoils(Call::Write, &self.written_name(j), n_call) {
            match self.misbehaviour {
                Misbehaviour::NoSpace => {
                    let mut out = Out::default();
                    out.u32(NFS3ERR_NOSPC);
                    self.wcc(Node::Written(j), &mut out);
                    return Answer::ok(out.0);
                }
                Misbehaviour::WriteShort => kept = (kept / 2).max(1).min(data.len()),
                _ => wire = self.wire(),
            }
        }
        let Ok(offset) = usize::try_from(offset) else { return Shared::failed(NFS3ERR_NOSPC) };
        let verifier = {
            let mut dir = lock(&self.out);
            let verifier = dir.verifier();
            let file = &mut dir.files[j];
            put(&mut file.data, offset, &data[..kept]);
            if stable != UNSTABLE {
                put(&mut file.durable, offset, &data[..kept]);
            }
            verifier
        };
        let mut out = Out::default();
        out.u32(NFS3_OK);
        self.wcc(Node::Written(j), &mut out);
        out.u32(u32::try_from(kept).unwrap_or(u32::MAX)).u32(stable.min(2));
        out.0.extend_from_slice(&verifier);
        Answer { accept_status: 0, result: out.0, wire }
    }

    pub(super) fn commit(&self, fh: &[u8], n_call: u64) -> Answer {
        let j = match self.written_of(fh) {
            Ok(j) => j,
            Err(status) => return Shared::failed(status),
        };
        let mut wire = Wire::Right;
        let spoil = self.spoils(Call::Commit, &self.written_name(j), n_call);
        let verifier = {
            let mut dir = lock(&self.out);
            if spoil {
                match self.misbehaviour {
                    Misbehaviour::RestartBeforeCommit => dir.restart(),
                    _ => wire = self.wire(),
                }
            }
            let file = &mut dir.files[j];
            file.durable.clone_from(&file.data);
            dir.verifier()
        };
        let mut out = Out::default();
        out.u32(NFS3_OK);
        self.wcc(Node::Written(j), &mut out);
        out.0.extend_from_slice(&verifier);
        Answer { accept_status: 0, result: out.0, wire }
    }

    /// CREATE, UNCHECKED or GUARDED (EXCLUSIVE is taken as UNCHECKED): an existing file is
    /// truncated, as the size 0 playsim sets asks.
    pub(super) fn create(&self, dir: &[u8], name: &[u8]) -> Answer {
        match self.node_of(dir) {
            Some(Node::OutDir) => {}
            Some(Node::Root | Node::Dir) => return Shared::failed(NFS3ERR_ROFS),
            Some(_) => return Shared::failed(super::NFS3ERR_NOTDIR),
            None => return Shared::failed(NFS3ERR_BADHANDLE),
        }
        let Ok(name) = std::str::from_utf8(name) else { return Shared::failed(super::NFS3ERR_NOENT) };
        let j = {
            let mut out_dir = lock(&self.out);
            match out_dir.find(name.as_bytes()) {
                Some(j) => {
                    let file = &mut out_dir.files[j];
                    file.data.clear();
                    file.durable.clear();
                    j
                }
                None => {
                    out_dir.files.push(OutFile { name: Some(name.to_owned()), ..OutFile::default() });
                    out_dir.files.len() - 1
                }
            }
        };
        let mut out = Out::default();
        out.u32(NFS3_OK).u32(1).opaque(&handle(Node::Written(j)));
        self.post_op_attr(Node::Written(j), &mut out);
        self.wcc(Node::OutDir, &mut out);
        Answer::ok(out.0)
    }

    pub(super) fn remove(&self, dir: &[u8], name: &[u8]) -> Answer {
        if self.node_of(dir) != Some(Node::OutDir) {
            return Shared::failed(NFS3ERR_ROFS);
        }
        let removed = {
            let mut out_dir = lock(&self.out);
            out_dir.find(name).map(|j| out_dir.files[j].name = None)
        };
        let mut out = Out::default();
        out.u32(if removed.is_some() { NFS3_OK } else { NFS3ERR_NOENT });
        self.wcc(Node::OutDir, &mut out);
        Answer::ok(out.0)
    }

    /// RENAME within [`HOSTILE_OUT_DIR`](super::HOSTILE_OUT_DIR), replacing the target. A spoilt one takes effect
    /// before its reply is spoilt.
    pub(super) fn rename(
        &self,
        (from_dir, from): (&[u8], &[u8]),
        (to_dir, to): (&[u8], &[u8]),
        n_call: u64,
    ) -> Answer {
        let in_out = |fh: &[u8]| self.node_of(fh) == Some(Node::OutDir);
        if !in_out(from_dir) || !in_out(to_dir) {
            let mut out = Out::default();
            out.u32(NFS3ERR_ROFS).u32(0).u32(0).u32(0).u32(0);
            return Answer::ok(out.0);
        }
        let (Ok(from), Ok(to)) = (std::str::from_utf8(from), std::str::from_utf8(to)) else {
            return Shared::failed(NFS3ERR_NOENT);
        };
        let status = {
            let mut out_dir = lock(&self.out);
            match out_dir.find(from.as_bytes()) {
                None => NFS3ERR_NOENT,
                Some(_) if from == to => NFS3_OK,
                Some(j) => {
                    if let Some(old) = out_dir.find(to.as_bytes()) {
                        out_dir.files[old].name = None;
                    }
                    out_dir.files[j].name = Some(to.to_owned());
                    NFS3_OK
                }
            }
        };
        let wire = if status == NFS3_OK && self.spoils(Call::Rename, from, n_call) {
            self.wire()
        } else {
            Wire::Right
        };
        let mut out = Out::default();
        out.u32(status);
        self.wcc(Node::OutDir, &mut out);
        self.wcc(Node::OutDir, &mut out);
        Answer { accept_status: 0, result: out.0, wire }
    }

    pub(super) fn fsstat(&self, fh: &[u8]) -> Answer {
        let Some(node) = self.node_of(fh) else { return Shared::failed(NFS3ERR_BADHANDLE) };
        let mut out = Out::default();
        out.u32(NFS3_OK);
        self.post_op_attr(node, &mut out);
        out.u64(TOTAL_BYTES).u64(FREE_BYTES).u64(FREE_BYTES); // tbytes, fbytes, abytes
        out.u64(1 << 20).u64(1 << 19).u64(1 << 19); // tfiles, ffiles, afiles
        out.u32(0); // invarsec
        Answer::ok(out.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_of_a_name_is_its_last_number() {
        assert_eq!(frame_of(".frame.0000005.dpx.partial"), Some(5));
        assert_eq!(frame_of("frame.0000012.dpx"), Some(12));
        assert_eq!(frame_of("clip.mov"), None);
        assert_eq!(frame_of("7"), Some(7));
    }

    #[test]
    fn a_restart_keeps_only_what_was_durable_and_changes_the_verifier() {
        let mut dir = OutDir::default();
        dir.files.push(OutFile { name: Some("a".into()), ..OutFile::default() });
        put(&mut dir.files[0].data, 0, b"unstable");
        put(&mut dir.files[0].durable, 0, b"dur");
        let before = dir.verifier();
        dir.restart();
        assert_eq!(dir.files[0].data, b"dur");
        assert_ne!(dir.verifier(), before);
        assert_eq!(dir.listing(), vec![("a".to_owned(), b"dur".to_vec())]);
    }
}
