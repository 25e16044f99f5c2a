//! The RPC-over-RDMA version 1 transport header (RFC 8166 §4) and the RDMA-CM private data
//! of RFC 8797: encoding a call's header (with a read chunk for a WRITE's data), decoding a
//! reply's, and checking what it claims.
//!
//! Every field is an XDR big-endian word (a segment's offset is two). A header is
//!
//! ```text
//! xid | version | credits | procedure | read list | write list | reply chunk | (RPC message)
//! ```
//!
//! where the read list is a chain of `1, position, segment` items ended by `0`, the write
//! list a chain of `1, count, count × segment` items ended by `0`, the reply chunk either `0`
//! or `1, count, count × segment`, and a segment is `handle, length, offset (64 bits)`.
//!
//! A reply comes from the server and is decoded as hostile input: [`decode_reply`] never
//! panics, checks every count against the bytes left before it allocates, and holds lists
//! to [`MAX_WRITE_CHUNKS`] chunks of [`MAX_CHUNK_SEGMENTS`] segments. Each refusal is a
//! [`HeaderError`] that says what is wrong and at which byte offset. [`peek_xid`] reads the
//! transaction id even from a reply that does not decode, so the caller can fail the call it
//! belongs to rather than the connection.
#![forbid(unsafe_code)]

use std::fmt;

/// The RPC-over-RDMA protocol version playsim speaks, and the only one it accepts.
pub const RPCRDMA_VERSION: u32 = 1;

/// Procedure: an RPC message follows the transport header in the same Send.
pub const RDMA_MSG: u32 = 0;
/// Procedure: no RPC message follows; it travels in the read list (a call) or the reply
/// chunk (a reply). The normal form of a large reply, not an error.
pub const RDMA_NOMSG: u32 = 1;
/// Procedure: padded RDMA_MSG, from RFC 5666; RFC 8166 deprecates it and playsim refuses it.
pub const RDMA_MSGP: u32 = 2;
/// Procedure: "done with the reply chunk", from RFC 5666; RFC 8166 deprecates it and
/// playsim refuses it.
pub const RDMA_DONE: u32 = 3;
/// Procedure: the peer could not process a message; an error code follows.
pub const RDMA_ERROR: u32 = 4;

/// RDMA_ERROR code: the peer does not speak the version sent; the range it speaks follows.
pub const ERR_VERS: u32 = 1;
/// RDMA_ERROR code: the peer could not parse or use the chunks of a message.
pub const ERR_CHUNK: u32 = 2;

/// The inline threshold in each direction when the peer offers no RFC 8797 private data:
/// RFC 8166 §3.3.3 sets the default to 1024 bytes, the largest Send and the smallest
/// receive buffer each peer must be able to handle.
pub const DEFAULT_INLINE_SEND: u32 = 1024;
/// The receive inline threshold when the peer offers no RFC 8797 private data (see
/// [`DEFAULT_INLINE_SEND`]).
pub const DEFAULT_INLINE_RECV: u32 = 1024;

/// The RFC 8797 format identifier that opens RPC-over-RDMA's connection private data.
pub const CM_PRIVATE_MAGIC: u32 = 0xf6ab_0e18;
/// The RFC 8797 private data version this crate reads and writes.
pub const CM_PRIVATE_VERSION: u8 = 1;

/// The most write chunks a reply may list. A call offers at most one (NFSv3 READ has one
/// data item), so a server that returns more is broken; the cap bounds the work a hostile
/// header can cause.
pub const MAX_WRITE_CHUNKS: usize = 64;
/// The most segments one chunk may hold: a chunk is offered as one segment per memory
/// registration, a handful at most, so a reply beyond this is broken and is refused.
pub const MAX_CHUNK_SEGMENTS: usize = 256;

/// The smallest RPC message an RDMA_MSG reply can carry after its header: an RPC reply
/// opens with its 4-byte XID, so fewer bytes cannot be one.
pub const MIN_INLINE_RPC_MESSAGE: usize = 4;

/// Bytes of the fixed part of every header: xid, version, credits and procedure.
const FIXED_HEADER_LEN: usize = 16;

/// An RDMA segment: a piece of registered memory the peer may read or write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// The steering tag (R_key) of the registered memory.
    pub handle: u32,
    /// The segment's length in bytes. In a returned write chunk: the bytes placed.
    pub length: u32,
    /// The address of the segment's first byte, as the memory registration names it.
    pub offset: u64,
}

impl Segment {
    /// Bytes of one segment on the wire: handle, length and a 64-bit offset.
    pub const ENCODED_LEN: usize = 16;
}

/// A read list item: a segment the responder pulls with RDMA Read, and where its bytes go
/// in the XDR stream. A WRITE too large to send inline carries its data in one (see
/// [`encode_call_with_read_chunk`]); a reply never carries any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ReadSegment {
    /// The offset in the RPC message's XDR stream at which this segment's bytes belong.
    pub position: u32,
    /// The memory the bytes are read from.
    pub segment: Segment,
}

impl ReadSegment {
    /// Bytes of one read segment on the wire: the position and a segment.
    pub const ENCODED_LEN: usize = 4 + Segment::ENCODED_LEN;
}

/// A decoded reply header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplyHeader {
    /// The transaction id: the same as the XID of the RPC call this replies to.
    pub xid: u32,
    /// The protocol version; always [`RPCRDMA_VERSION`] in a header that decodes.
    pub version: u32,
    /// The credits granted, as the server sent them: pass through [`usable_credits`]
    /// before using them.
    pub credits: u32,
    /// What the reply carries.
    pub kind: ReplyKind,
    /// Bytes of transport header: in an RDMA_MSG reply, the RPC message starts here.
    pub header_len: usize,
}

impl ReplyHeader {
    /// The bytes after the transport header in `message` (the bytes this header was decoded
    /// from): the RPC reply of an RDMA_MSG, empty for other kinds (and for any other slice
    /// shorter than the header).
    pub fn payload<'a>(&self, message: &'a [u8]) -> &'a [u8] {
        match self.kind {
            ReplyKind::Msg { .. } => message.get(self.header_len..).unwrap_or_default(),
            ReplyKind::NoMsg { .. } | ReplyKind::Error(_) => &[],
        }
    }
}

/// The body of a reply header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplyKind {
    /// RDMA_MSG: the RPC reply follows the header (bytes `header_len..`), with the data the
    /// server placed into the call's write chunks listed by their returned lengths.
    Msg {
        /// The call's write chunks, each with the lengths the server actually wrote.
        write_list: Vec<Vec<Segment>>,
        /// The reply chunk, when the call offered one and the server chose not to use it
        /// (an RDMA_MSG reply does not travel in it).
        reply_chunk: Option<Vec<Segment>>,
    },
    /// RDMA_NOMSG: the whole RPC reply was written into the reply chunk.
    NoMsg {
        /// The call's write chunks, each with the lengths the server actually wrote.
        write_list: Vec<Vec<Segment>>,
        /// The reply chunk with the lengths written: the RPC reply is its first
        /// [`placed_length`] bytes. Always present: without it the reply would be nowhere.
        reply_chunk: Vec<Segment>,
    },
    /// RDMA_ERROR: the server could not process the call's transport header.
    Error(RdmaError),
}

/// What an RDMA_ERROR reply reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RdmaError {
    /// ERR_VERS: the server speaks only versions `low..=high` of RPC-over-RDMA.
    #[error("the server does not speak rpc-over-rdma version 1 (it speaks versions {low} to {high})")]
    Version {
        /// The lowest version the server speaks.
        low: u32,
        /// The highest version the server speaks.
        high: u32,
    },
    /// ERR_CHUNK: the server could not parse or use the call's chunks.
    #[error("the server could not use the call's rpc-over-rdma chunks (ERR_CHUNK)")]
    Chunk,
    /// An error code RFC 8166 does not define.
    #[error("the server reported rpc-over-rdma error code {0}, which RFC 8166 does not define")]
    Unknown(u32),
}

/// Which chunk of a header a problem is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// The write chunk at this index in the write list (from 0).
    Write(usize),
    /// The reply chunk.
    Reply,
}

impl fmt::Display for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Chunk::Write(index) => write!(f, "write list chunk {index}"),
            Chunk::Reply => f.write_str("reply chunk"),
        }
    }
}

/// A field of the header, to say where a truncated header ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// The transaction id (byte 0).
    Xid,
    /// The protocol version (byte 4).
    Version,
    /// The credit grant (byte 8).
    Credits,
    /// The procedure (byte 12).
    Procedure,
    /// The word that says whether a read list item follows.
    ReadList,
    /// The word that says whether another write chunk follows.
    WriteList,
    /// The word that says whether a reply chunk follows.
    ReplyChunk,
    /// A chunk's segment count.
    SegmentCount(Chunk),
    /// Segment `index` of a chunk.
    Segment(Chunk, usize),
    /// The error code of an RDMA_ERROR.
    ErrorCode,
    /// The version range of an ERR_VERS.
    VersionRange,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Xid => f.write_str("xid"),
            Field::Version => f.write_str("version"),
            Field::Credits => f.write_str("credits"),
            Field::Procedure => f.write_str("procedure"),
            Field::ReadList => f.write_str("read list"),
            Field::WriteList => f.write_str("write list"),
            Field::ReplyChunk => f.write_str("reply chunk"),
            Field::SegmentCount(chunk) => write!(f, "{chunk} segment count"),
            Field::Segment(chunk, index) => write!(f, "{chunk} segment {index}"),
            Field::ErrorCode => f.write_str("RDMA_ERROR code"),
            Field::VersionRange => f.write_str("ERR_VERS version range"),
        }
    }
}

/// A reply header that cannot be used, or placed lengths that do not fit what was offered.
///
/// Every variant says what is wrong; those about the bytes say at which byte offset of the
/// message. The XID of a message that fails to decode is still available from [`peek_xid`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The message ends inside a field.
    #[error("rpc-over-rdma reply header is cut short: the {field} at byte offset {offset} needs {needed} bytes but the message ends at byte {len}")]
    Truncated {
        /// The field being read.
        field: Field,
        /// Where the field starts.
        offset: usize,
        /// The bytes the field needs.
        needed: usize,
        /// The length of the whole message.
        len: usize,
    },
    /// The version is not 1.
    #[error("rpc-over-rdma reply has version {version} at byte offset 4; playsim speaks version 1")]
    Version {
        /// The version the reply carries.
        version: u32,
    },
    /// RDMA_MSGP or RDMA_DONE, which RFC 8166 deprecates and a reply never needs.
    #[error("rpc-over-rdma reply has procedure {procedure} ({}) at byte offset 12, which RFC 8166 deprecates; playsim takes RDMA_MSG, RDMA_NOMSG and RDMA_ERROR", procedure_name(*procedure))]
    UnsupportedProcedure {
        /// The procedure the reply carries.
        procedure: u32,
    },
    /// A procedure RFC 8166 does not define.
    #[error("rpc-over-rdma reply has unknown procedure {procedure} at byte offset 12 (valid: 0 RDMA_MSG, 1 RDMA_NOMSG, 4 RDMA_ERROR)")]
    UnknownProcedure {
        /// The procedure the reply carries.
        procedure: u32,
    },
    /// A read list in a reply, which a server never sends: read chunks carry a call's
    /// bulk data, never a reply's.
    #[error("rpc-over-rdma reply carries a read list at byte offset {offset}; a server never asks the client to be read from")]
    ReadListInReply {
        /// Where the read list starts.
        offset: usize,
    },
    /// A list or optional item whose "present" word is neither 0 nor 1.
    #[error("rpc-over-rdma reply has {value} at byte offset {offset} where the {field} must say 0 (absent) or 1 (present)")]
    BadDiscriminator {
        /// The list or item.
        field: Field,
        /// Where the word is.
        offset: usize,
        /// What the word says.
        value: u32,
    },
    /// More write chunks than [`MAX_WRITE_CHUNKS`].
    #[error(
        "rpc-over-rdma reply lists more than {limit} write chunks (the next starts at byte offset {offset})"
    )]
    TooManyChunks {
        /// Where the chunk past the limit starts.
        offset: usize,
        /// [`MAX_WRITE_CHUNKS`].
        limit: usize,
    },
    /// A chunk whose segments do not fit in the bytes left.
    #[error("{chunk} at byte offset {offset} claims {count} segments but only {left} bytes are left")]
    SegmentsPastEnd {
        /// The chunk.
        chunk: Chunk,
        /// Where the segment count is.
        offset: usize,
        /// The segment count claimed.
        count: u32,
        /// Bytes of message after the count.
        left: usize,
    },
    /// A chunk with more segments than [`MAX_CHUNK_SEGMENTS`].
    #[error("{chunk} at byte offset {offset} claims {count} segments, more than the {limit} playsim takes")]
    TooManySegments {
        /// The chunk.
        chunk: Chunk,
        /// Where the segment count is.
        offset: usize,
        /// The segment count claimed.
        count: u32,
        /// [`MAX_CHUNK_SEGMENTS`].
        limit: usize,
    },
    /// An RDMA_MSG reply with no room for the RPC reply after its header.
    #[error("rpc-over-rdma RDMA_MSG reply leaves {payload_len} bytes for the rpc reply after its {header_len}-byte header; an rpc reply needs at least {MIN_INLINE_RPC_MESSAGE}")]
    NoPayload {
        /// Bytes of transport header.
        header_len: usize,
        /// Bytes after it.
        payload_len: usize,
    },
    /// An RDMA_NOMSG reply without a reply chunk: its RPC reply would be nowhere.
    #[error("rpc-over-rdma RDMA_NOMSG reply has no reply chunk (byte offset {offset}), so it carries no rpc reply")]
    NoMsgWithoutReplyChunk {
        /// Where the reply chunk's word is.
        offset: usize,
    },
    /// A returned chunk with more segments than the call offered.
    #[error("the server returned {returned} segments for a chunk offered with {offered}")]
    MoreSegmentsThanOffered {
        /// Segments in the returned chunk.
        returned: usize,
        /// Segments in the offered chunk.
        offered: usize,
    },
    /// A returned segment whose handle is not the offered one.
    #[error(
        "the server returned segment {index} with handle {returned:#x}; the call offered handle {offered:#x}"
    )]
    HandleMismatch {
        /// The segment's index in its chunk.
        index: usize,
        /// The handle returned.
        returned: u32,
        /// The handle offered.
        offered: u32,
    },
    /// A returned segment longer than the registered buffer offered for it.
    #[error("the server returned segment {index} with {returned} bytes written, past the {offered}-byte buffer registered for it")]
    LengthPastOffered {
        /// The segment's index in its chunk.
        index: usize,
        /// The length returned.
        returned: u32,
        /// The length offered.
        offered: u32,
    },
    /// Bytes in a segment after an earlier segment came back short, which would leave a
    /// hole in the data: a responder fills segments in order.
    #[error("the server returned {length} bytes in segment {index} after segment {short} came back short ({short_length} of {short_offered} bytes)")]
    GapInPlacedData {
        /// The segment with bytes after the hole.
        index: usize,
        /// Its returned length.
        length: u32,
        /// The earlier segment that is short.
        short: usize,
        /// The short segment's returned length.
        short_length: u32,
        /// The short segment's offered length.
        short_offered: u32,
    },
}

/// Appends the transport header of an RDMA_MSG call to `out`: the RPC call follows it
/// inline in the same Send.
///
/// `credits` is the number of credits requested. `read_list` is the call's read segments
/// (empty for a call sent whole inline; one for a WRITE whose data travels in a read chunk,
/// see [`encode_call_with_read_chunk`]); `write_chunk` is the one write chunk a READ offers
/// for its data (the write list is empty without it); `reply_chunk` is offered for a reply
/// that may not fit inline. The header takes [`call_header_len`] bytes. (A chunk of more than
/// `u32::MAX` segments cannot be described on the wire; only its first `u32::MAX` would be
/// encoded.)
pub fn encode_call_header(
    out: &mut Vec<u8>,
    xid: u32,
    credits: u32,
    read_list: &[ReadSegment],
    write_chunk: Option<&[Segment]>,
    reply_chunk: Option<&[Segment]>,
) {
    out.reserve(call_header_len(read_list, write_chunk, reply_chunk));
    for word in [xid, RPCRDMA_VERSION, credits, RDMA_MSG] {
        put_u32(out, word);
    }
    // The read list is a chain of items, each a "present" word, a position and a segment.
    for item in read_list {
        put_u32(out, 1);
        put_u32(out, item.position);
        put_segment(out, &item.segment);
    }
    put_u32(out, 0);
    if let Some(segments) = write_chunk {
        put_u32(out, 1);
        put_chunk(out, segments);
    }
    put_u32(out, 0);
    match reply_chunk {
        Some(segments) => {
            put_u32(out, 1);
            put_chunk(out, segments);
        }
        None => put_u32(out, 0),
    }
}

/// Bytes of the header [`encode_call_header`] writes for these chunks: 28 with none.
pub fn call_header_len(
    read_list: &[ReadSegment],
    write_chunk: Option<&[Segment]>,
    reply_chunk: Option<&[Segment]>,
) -> usize {
    // Fixed part, the read list's end, the write list's end and the reply chunk's word.
    let mut len = FIXED_HEADER_LEN + 4 + 4 + 4;
    len += read_list.len() * (4 + ReadSegment::ENCODED_LEN);
    for segments in [write_chunk, reply_chunk].into_iter().flatten() {
        len += 4 + encodable(segments).len() * Segment::ENCODED_LEN;
    }
    if write_chunk.is_some() {
        len += 4; // its "present" word
    }
    len
}

/// Appends an RDMA_MSG call whose DDP-eligible data item (RFC 8267: a WRITE's data) travels
/// in a read chunk, which the server pulls with RDMA Read (RFC 8166 §3.5): the transport
/// header with one read segment, then the RPC message inline without the data.
///
/// The RPC message is `call.rpc_header` (the call header, credential and verifier) followed
/// by `call.args`, whose bytes `data_at..data_at + source.length` are the data item: the
/// contents of an XDR opaque whose length word ends at `data_at`. Inline go the RPC header,
/// the arguments up to `data_at` (the length word stays in the XDR stream) and whatever follows the data's XDR
/// padding; the data and its padding do not (RFC 8166 §3.5.3: roundup is neither in the
/// chunk nor inline, and the server supplies it). The read segment's position is the data's
/// byte offset in the RPC message, counted from its first byte (the XID), not from the
/// transport header; `source` is the registered memory holding the data, its `length` the
/// data's length. Returns the read segment sent.
///
/// The pieces are checked (they are the caller's, but a wrong position would have the server
/// write the data at the wrong place of the file): the data item must start on a 4-byte
/// boundary after its length word, that word must give `source.length`, and the data with
/// its padding must lie inside `args`.
pub fn encode_call_with_read_chunk(
    out: &mut Vec<u8>,
    xid: u32,
    credits: u32,
    call: &CallMessage<'_>,
    source: Segment,
    reply_chunk: Option<&[Segment]>,
) -> Result<ReadSegment, DataItemError> {
    let CallMessage { rpc_header, args, data_at } = *call;
    let len = source.length as usize;
    let bad = |why: &'static str| DataItemError { data_at, len, args_len: args.len(), why };
    if data_at % 4 != 0 || rpc_header.len() % 4 != 0 {
        return Err(bad("it does not start on a 4-byte boundary of the rpc message"));
    }
    let Some(length_word) = data_at.checked_sub(4).and_then(|at| args.get(at..data_at)) else {
        return Err(bad("no length word precedes it"));
    };
    if length_word != source.length.to_be_bytes() {
        return Err(bad("the opaque's length word before it gives another length"));
    }
    let padded_end = data_at.checked_add(len.div_ceil(4) * 4).filter(|end| *end <= args.len());
    let Some(padded_end) = padded_end else {
        return Err(bad("it and its padding run past the arguments"));
    };
    let position =
        u32::try_from(rpc_header.len() + data_at).map_err(|_| bad("its position does not fit 32 bits"))?;
    let item = ReadSegment { position, segment: source };
    encode_call_header(out, xid, credits, std::slice::from_ref(&item), None, reply_chunk);
    out.extend_from_slice(rpc_header);
    out.extend_from_slice(&args[..data_at]);
    out.extend_from_slice(&args[padded_end..]);
    Ok(item)
}

/// An RPC call message in two parts, and where its DDP-eligible data item lies, for
/// [`encode_call_with_read_chunk`].
#[derive(Clone, Copy, Debug)]
pub struct CallMessage<'a> {
    /// The RPC call header, credential and verifier: the message up to the arguments.
    pub rpc_header: &'a [u8],
    /// The procedure's arguments in XDR, the data item included.
    pub args: &'a [u8],
    /// Where the data item's bytes start in `args`, just after its length word.
    pub data_at: usize,
}

/// A data item [`encode_call_with_read_chunk`] was given that is not where it was said to be.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the call's bulk data at byte offset {data_at} of its {args_len} bytes of arguments ({len} bytes) cannot go in a read chunk: {why}")]
pub struct DataItemError {
    /// Where the data was said to start in the arguments.
    pub data_at: usize,
    /// Its length.
    pub len: usize,
    /// Bytes of arguments.
    pub args_len: usize,
    /// What is wrong.
    pub why: &'static str,
}

/// The transaction id of a message: its first word, or `None` when it is shorter than one.
///
/// It needs nothing else of the header to be valid, so a caller can fail the call a bad
/// reply belongs to (after checking that such a call is outstanding).
pub fn peek_xid(message: &[u8]) -> Option<u32> {
    message.get(..4).map(|word| be_u32(word, 0))
}

/// Decodes the transport header of a reply: RDMA_MSG, RDMA_NOMSG or RDMA_ERROR.
///
/// The message is the server's and is treated as hostile: every count is checked against
/// the bytes left before anything is allocated, lists are held to [`MAX_WRITE_CHUNKS`]
/// chunks of [`MAX_CHUNK_SEGMENTS`] segments, a read list is refused (a server never sends
/// one), so is a version other than 1, an RDMA_MSG with no room for its RPC reply and an
/// RDMA_NOMSG without a reply chunk. Bytes after an RDMA_NOMSG or RDMA_ERROR header are
/// ignored. The credits are returned as sent; see [`usable_credits`].
pub fn decode_reply(message: &[u8]) -> Result<ReplyHeader, HeaderError> {
    let mut reader = Reader { bytes: message, pos: 0 };
    let xid = reader.u32(Field::Xid)?;
    let version = reader.u32(Field::Version)?;
    // The version is checked before anything else is trusted: another version's header
    // may lay out the rest differently.
    if version != RPCRDMA_VERSION {
        return Err(HeaderError::Version { version });
    }
    let credits = reader.u32(Field::Credits)?;
    let procedure = reader.u32(Field::Procedure)?;
    let kind = match procedure {
        RDMA_MSG | RDMA_NOMSG => {
            let read_list_at = reader.pos;
            match reader.u32(Field::ReadList)? {
                0 => {}
                1 => return Err(HeaderError::ReadListInReply { offset: read_list_at }),
                value => {
                    return Err(HeaderError::BadDiscriminator {
                        field: Field::ReadList,
                        offset: read_list_at,
                        value,
                    })
                }
            }
            let write_list = reader.write_list()?;
            let reply_chunk_at = reader.pos;
            let reply_chunk =
                if reader.present(Field::ReplyChunk)? { Some(reader.chunk(Chunk::Reply)?) } else { None };
            if procedure == RDMA_MSG {
                let payload_len = message.len() - reader.pos;
                if payload_len < MIN_INLINE_RPC_MESSAGE {
                    return Err(HeaderError::NoPayload { header_len: reader.pos, payload_len });
                }
                ReplyKind::Msg { write_list, reply_chunk }
            } else {
                let Some(reply_chunk) = reply_chunk else {
                    return Err(HeaderError::NoMsgWithoutReplyChunk { offset: reply_chunk_at });
                };
                ReplyKind::NoMsg { write_list, reply_chunk }
            }
        }
        RDMA_ERROR => ReplyKind::Error(match reader.u32(Field::ErrorCode)? {
            ERR_VERS => {
                let low = reader.u32(Field::VersionRange)?;
                let high = reader.u32(Field::VersionRange)?;
                RdmaError::Version { low, high }
            }
            ERR_CHUNK => RdmaError::Chunk,
            code => RdmaError::Unknown(code),
        }),
        RDMA_MSGP | RDMA_DONE => return Err(HeaderError::UnsupportedProcedure { procedure }),
        procedure => return Err(HeaderError::UnknownProcedure { procedure }),
    };
    Ok(ReplyHeader { xid, version, credits, kind, header_len: reader.pos })
}

/// The bytes the server placed into a chunk, from the chunk it `returned` in its reply and
/// the chunk the call `offered`.
///
/// The responder returns each chunk with its segments' lengths set to what it wrote
/// (RFC 8166, "Write Chunks"). The returned chunk may have fewer segments than offered,
/// never more; segment `i` must carry the handle of offered segment `i` and at most its length (bytes
/// past the registered buffer would be a server writing where it was not allowed, or lying
/// about it); and segments fill in order, so no segment may carry bytes after a short one
/// (the data would have a hole the caller cannot see). Offsets are not compared: the
/// lengths are what the caller uses, and the Linux client reads nothing else either.
pub fn placed_length(returned: &[Segment], offered: &[Segment]) -> Result<usize, HeaderError> {
    if returned.len() > offered.len() {
        return Err(HeaderError::MoreSegmentsThanOffered {
            returned: returned.len(),
            offered: offered.len(),
        });
    }
    let mut total: u64 = 0;
    let mut short: Option<(usize, u32, u32)> = None;
    for (index, (got, asked)) in returned.iter().zip(offered).enumerate() {
        if got.handle != asked.handle {
            return Err(HeaderError::HandleMismatch { index, returned: got.handle, offered: asked.handle });
        }
        if got.length > asked.length {
            return Err(HeaderError::LengthPastOffered {
                index,
                returned: got.length,
                offered: asked.length,
            });
        }
        if let Some((short, short_length, short_offered)) = short {
            if got.length > 0 {
                return Err(HeaderError::GapInPlacedData {
                    index,
                    length: got.length,
                    short,
                    short_length,
                    short_offered,
                });
            }
        } else if got.length < asked.length {
            short = Some((index, got.length, asked.length));
        }
        total += u64::from(got.length);
    }
    // At most 2^32 segments of under 2^32 bytes each were offered, and they were registered
    // in this address space, so the sum fits a usize wherever the offer could be made.
    Ok(usize::try_from(total).unwrap_or(usize::MAX))
}

/// The number of calls a requester may have outstanding, from the server's `granted`
/// credits and the receives it has `posted` for replies.
///
/// The result is `granted` held to `1..=posted`: never more calls than there are posted
/// receives (a reply with nowhere to land breaks the connection), never more than the
/// server allows, and never fewer than one. A grant of 0 is read as 1: credits only arrive
/// in replies, so a requester that took 0 literally could never send the call whose reply
/// would raise the grant again, and the connection would deadlock (RFC 8166 §3.3.1 has the
/// requester always able to make progress; the Linux client reads 0 as 1 in the same way).
/// A grant above what was posted, 65535 say, is simply more than this requester can use.
/// With nothing `posted` the answer is 0: no call may be sent until a receive is posted.
pub fn usable_credits(granted: u32, posted: u32) -> u32 {
    granted.max(1).min(posted)
}

/// The RFC 8797 private data of an RDMA-CM connect request or accept: the inline sizes its
/// sender handles and whether it accepts Send With Invalidate.
///
/// Sizes are as seen by the peer that sends the data: `send_size` is the largest message it
/// will Send (the receiver's posted buffers must hold that much) and `recv_size` the size of
/// the buffers it posts (the largest message the receiver may Send it). On the wire each is
/// one byte, in KiB minus one: 1 KiB to 256 KiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectPrivate {
    /// The largest message, in bytes, the sender will Send inline.
    pub send_size: u32,
    /// The size, in bytes, of the receive buffers the sender posts.
    pub recv_size: u32,
    /// Whether the sender accepts Send With Invalidate (remote invalidation) of its memory
    /// registrations.
    pub remote_invalidate: bool,
}

impl Default for ConnectPrivate {
    /// The RFC 8166 defaults, which a peer that sends no private data has: 1024 bytes each
    /// way and no remote invalidation.
    fn default() -> ConnectPrivate {
        ConnectPrivate {
            send_size: DEFAULT_INLINE_SEND,
            recv_size: DEFAULT_INLINE_RECV,
            remote_invalidate: false,
        }
    }
}

impl ConnectPrivate {
    /// Bytes of the private data: format identifier (4), version, flags, send size and
    /// receive size (1 each).
    pub const LEN: usize = 8;
    /// The smallest size the encoding can carry (a byte of 0): RFC 8166's 1 KiB minimum.
    pub const MIN_SIZE: u32 = 1024;
    /// The largest size the encoding can carry (a byte of 255): 256 KiB.
    pub const MAX_SIZE: u32 = 256 * 1024;
    /// The flags bit that says the sender accepts remote invalidation.
    const FLAG_REMOTE_INVALIDATE: u8 = 1;

    /// The eight bytes on the wire.
    ///
    /// A size that is not a whole number of KiB is rounded down, and one above 256 KiB is
    /// sent as 256 KiB: offering less than one has is always safe. A size below 1 KiB is sent
    /// as 1 KiB, the protocol's minimum that every peer must handle anyway.
    pub fn encode(&self) -> [u8; 8] {
        let magic = CM_PRIVATE_MAGIC.to_be_bytes();
        let flags = if self.remote_invalidate { Self::FLAG_REMOTE_INVALIDATE } else { 0 };
        [
            magic[0],
            magic[1],
            magic[2],
            magic[3],
            CM_PRIVATE_VERSION,
            flags,
            encode_size(self.send_size),
            encode_size(self.recv_size),
        ]
    }

    /// Reads the private data a peer sent, or `None` when it is shorter than 8 bytes or its
    /// format identifier or version is not RFC 8797's: the caller then falls back to
    /// [`ConnectPrivate::default`]. Bytes after the eighth (RDMA-CM pads private data) and
    /// the reserved flag bits are ignored.
    pub fn decode(bytes: &[u8]) -> Option<ConnectPrivate> {
        let data = bytes.get(..Self::LEN)?;
        if be_u32(data, 0) != CM_PRIVATE_MAGIC || data[4] != CM_PRIVATE_VERSION {
            return None;
        }
        Some(ConnectPrivate {
            remote_invalidate: data[5] & Self::FLAG_REMOTE_INVALIDATE != 0,
            send_size: decode_size(data[6]),
            recv_size: decode_size(data[7]),
        })
    }

    /// The inline sizes of a connection on which this side offered `self` and the peer
    /// answered with `peer` (`None` when it sent no RFC 8797 private data, which means
    /// RFC 8166's 1024 bytes each way).
    ///
    /// Each direction takes the smaller of what the sender will Send and what the receiver
    /// posts, as the Linux client does: this side Sends at most `min(send_size,
    /// peer.recv_size)` and receives at most `min(recv_size, peer.send_size)`, where this
    /// side's sizes are taken as [`encode`](Self::encode) puts them on the wire (whole KiB,
    /// 1 KiB to 256 KiB), since that is what the peer saw.
    pub fn negotiate(&self, peer: Option<&ConnectPrivate>) -> InlineSizes {
        let peer = peer.copied().unwrap_or_default();
        let send_size = decode_size(encode_size(self.send_size));
        let recv_size = decode_size(encode_size(self.recv_size));
        InlineSizes { send: send_size.min(peer.recv_size), recv: recv_size.min(peer.send_size) }
    }
}

/// The inline thresholds of a connection: the largest RPC-over-RDMA message each side may
/// Send to the other without chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InlineSizes {
    /// The largest message this side may Send.
    pub send: u32,
    /// The largest message the peer may Send to this side (this side's receive buffers
    /// must hold it).
    pub recv: u32,
}

/// The name RFC 8166 gives a procedure number, for messages.
fn procedure_name(procedure: u32) -> &'static str {
    match procedure {
        RDMA_MSG => "RDMA_MSG",
        RDMA_NOMSG => "RDMA_NOMSG",
        RDMA_MSGP => "RDMA_MSGP",
        RDMA_DONE => "RDMA_DONE",
        RDMA_ERROR => "RDMA_ERROR",
        _ => "unknown",
    }
}

fn encode_size(size: u32) -> u8 {
    let kib = size.clamp(ConnectPrivate::MIN_SIZE, ConnectPrivate::MAX_SIZE) / 1024;
    u8::try_from(kib - 1).unwrap_or(u8::MAX)
}

fn decode_size(byte: u8) -> u32 {
    (u32::from(byte) + 1) * 1024
}

/// The segments of a chunk that a segment count can describe.
fn encodable(segments: &[Segment]) -> &[Segment] {
    let max = usize::try_from(u32::MAX).unwrap_or(usize::MAX);
    &segments[..segments.len().min(max)]
}

/// The big-endian word at `at` of `bytes`, or 0 where `bytes` ends first (callers pass
/// slices they have already checked to be long enough).
fn be_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0; 4];
    if let Some(src) = bytes.get(at..at.saturating_add(4)) {
        word.copy_from_slice(src);
    }
    u32::from_be_bytes(word)
}

fn put_u32(out: &mut Vec<u8>, word: u32) {
    out.extend_from_slice(&word.to_be_bytes());
}

fn put_chunk(out: &mut Vec<u8>, segments: &[Segment]) {
    let segments = encodable(segments);
    put_u32(out, u32::try_from(segments.len()).unwrap_or(u32::MAX));
    for segment in segments {
        put_segment(out, segment);
    }
}

fn put_segment(out: &mut Vec<u8>, segment: &Segment) {
    put_u32(out, segment.handle);
    put_u32(out, segment.length);
    out.extend_from_slice(&segment.offset.to_be_bytes());
}

/// A cursor over a message that reads XDR words and refuses to read past its end.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn left(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take<const N: usize>(&mut self, field: Field) -> Result<[u8; N], HeaderError> {
        let truncated =
            || HeaderError::Truncated { field, offset: self.pos, needed: N, len: self.bytes.len() };
        let end = self.pos.checked_add(N).ok_or_else(truncated)?;
        let bytes: [u8; N] =
            self.bytes.get(self.pos..end).and_then(|s| s.try_into().ok()).ok_or_else(truncated)?;
        self.pos = end;
        Ok(bytes)
    }

    fn u32(&mut self, field: Field) -> Result<u32, HeaderError> {
        self.take::<4>(field).map(u32::from_be_bytes)
    }

    /// An XDR optional-data word: 1 when an item follows, 0 when none does.
    fn present(&mut self, field: Field) -> Result<bool, HeaderError> {
        let offset = self.pos;
        match self.u32(field)? {
            0 => Ok(false),
            1 => Ok(true),
            value => Err(HeaderError::BadDiscriminator { field, offset, value }),
        }
    }

    fn write_list(&mut self) -> Result<Vec<Vec<Segment>>, HeaderError> {
        let mut chunks = Vec::new();
        loop {
            let offset = self.pos;
            if !self.present(Field::WriteList)? {
                return Ok(chunks);
            }
            if chunks.len() == MAX_WRITE_CHUNKS {
                return Err(HeaderError::TooManyChunks { offset, limit: MAX_WRITE_CHUNKS });
            }
            chunks.push(self.chunk(Chunk::Write(chunks.len()))?);
        }
    }

    /// A counted array of segments. The count is checked against the bytes left before the
    /// vector is allocated, so a hostile count costs nothing.
    fn chunk(&mut self, chunk: Chunk) -> Result<Vec<Segment>, HeaderError> {
        let offset = self.pos;
        let count = self.u32(Field::SegmentCount(chunk))?;
        let left = self.left();
        let needed = u64::from(count) * Segment::ENCODED_LEN as u64;
        if needed > left as u64 {
            return Err(HeaderError::SegmentsPastEnd { chunk, offset, count, left });
        }
        let n_segments = usize::try_from(count).unwrap_or(usize::MAX);
        if n_segments > MAX_CHUNK_SEGMENTS {
            return Err(HeaderError::TooManySegments { chunk, offset, count, limit: MAX_CHUNK_SEGMENTS });
        }
        let mut segments = Vec::with_capacity(n_segments);
        for index in 0..n_segments {
            let bytes = self.take::<16>(Field::Segment(chunk, index))?;
            segments.push(Segment {
                handle: be_u32(&bytes, 0),
                length: be_u32(&bytes, 4),
                offset: (u64::from(be_u32(&bytes, 8)) << 32) | u64::from(be_u32(&bytes, 12)),
            });
        }
        Ok(segments)
    }
}

#[cfg(test)]
mod tests;
