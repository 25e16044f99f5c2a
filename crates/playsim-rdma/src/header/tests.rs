//! Unit tests of the header codec: round trips, hand-checked bytes, and hostile replies.

use super::*;

const SEG_A: Segment = Segment { handle: 0x0102_0304, length: 0x0001_0000, offset: 0x1122_3344_5566_7788 };
const SEG_B: Segment = Segment { handle: 0xa0b0_c0d0, length: 4096, offset: 0x7fff_0000_1000 };

/// Builds reply messages the way a server would, word by word.
#[derive(Default)]
struct Reply(Vec<u8>);

impl Reply {
    fn fixed(xid: u32, version: u32, credits: u32, procedure: u32) -> Reply {
        Reply::default().words(&[xid, version, credits, procedure])
    }

    fn words(mut self, words: &[u32]) -> Reply {
        for word in words {
            self.0.extend_from_slice(&word.to_be_bytes());
        }
        self
    }

    fn chunk(mut self, segments: &[Segment]) -> Reply {
        put_chunk(&mut self.0, segments);
        self
    }

    /// Chunk lists of an RDMA_MSG or RDMA_NOMSG body: no read list, then the write list,
    /// then the reply chunk.
    fn lists(mut self, write_list: &[&[Segment]], reply_chunk: Option<&[Segment]>) -> Reply {
        self = self.words(&[0]);
        for chunk in write_list {
            self = self.words(&[1]).chunk(chunk);
        }
        self = self.words(&[0]);
        match reply_chunk {
            Some(chunk) => self.words(&[1]).chunk(chunk),
            None => self.words(&[0]),
        }
    }

    fn payload(mut self, bytes: &[u8]) -> Reply {
        self.0.extend_from_slice(bytes);
        self
    }
}

/// An RPC reply's first bytes, standing in for the whole message.
const RPC_REPLY: [u8; 24] = [0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

fn msg_with_write_chunk() -> Vec<u8> {
    Reply::fixed(9, 1, 32, RDMA_MSG).lists(&[&[SEG_A, SEG_B]], None).payload(&RPC_REPLY).0
}

#[test]
fn call_header_bytes_follow_the_rfc_xdr_layout() {
    let seg = Segment { handle: 0xdead_beef, length: 0x0010_0000, offset: 0x0000_7f12_3456_7000 };
    let mut out = Vec::new();
    encode_call_header(&mut out, 0x0a0b_0c0d, 64, &[], Some(&[seg]), None);
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        0x0a, 0x0b, 0x0c, 0x0d, // rdma_xid
        0, 0, 0, 1,             // rdma_vers = 1
        0, 0, 0, 64,            // rdma_credit requested
        0, 0, 0, 0,             // rdma_proc = RDMA_MSG
        0, 0, 0, 0,             // read list: empty
        0, 0, 0, 1,             // write list: a chunk follows
        0, 0, 0, 1,             //   its segment count
        0xde, 0xad, 0xbe, 0xef, //   handle
        0x00, 0x10, 0x00, 0x00, //   length (1 MiB)
        0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x70, 0x00, // offset
        0, 0, 0, 0,             // write list: end
        0, 0, 0, 0,             // reply chunk: absent
    ];
    assert_eq!(out, expected);
    assert_eq!(call_header_len(&[], Some(&[seg]), None), expected.len());
}

#[test]
fn call_header_without_chunks_is_the_28_byte_minimum() {
    let mut out = vec![0xee]; // encoding appends
    encode_call_header(&mut out, 1, 1, &[], None, None);
    assert_eq!(
        &out[1..],
        &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(call_header_len(&[], None, None), 28);
}

#[test]
fn call_header_lengths_match_what_is_encoded() {
    let chunks: [Option<&[Segment]>; 4] = [None, Some(&[]), Some(&[SEG_A]), Some(&[SEG_A, SEG_B])];
    let read = ReadSegment { position: 120, segment: SEG_A };
    let read_lists: [&[ReadSegment]; 3] = [&[], &[read], &[read, read]];
    for read_list in read_lists {
        for write in chunks {
            for reply in chunks {
                let mut out = Vec::new();
                encode_call_header(&mut out, 5, 8, read_list, write, reply);
                assert_eq!(
                    out.len(),
                    call_header_len(read_list, write, reply),
                    "{read_list:?} {write:?} {reply:?}"
                );
            }
        }
    }
}

#[test]
fn call_header_round_trips_through_the_decoder_as_a_reply() {
    // A call and a reply share the layout, so a call header followed by an RPC message
    // decodes with the chunks it was given.
    for (write, reply) in [
        (None, None),
        (Some(&[SEG_A][..]), None),
        (None, Some(&[SEG_B][..])),
        (Some(&[SEG_A, SEG_B][..]), Some(&[SEG_B][..])),
    ] {
        let mut out = Vec::new();
        encode_call_header(&mut out, 77, 128, &[], write, reply);
        let header_len = out.len();
        out.extend_from_slice(&RPC_REPLY);
        let header = decode_reply(&out).unwrap();
        assert_eq!((header.xid, header.version, header.credits), (77, 1, 128));
        assert_eq!(header.header_len, header_len);
        let expected_writes: Vec<Vec<Segment>> = write.map(|c| vec![c.to_vec()]).unwrap_or_default();
        assert_eq!(
            header.kind,
            ReplyKind::Msg { write_list: expected_writes, reply_chunk: reply.map(<[Segment]>::to_vec) }
        );
        assert_eq!(header.payload(&out), RPC_REPLY);
    }
}

#[test]
fn call_header_with_one_read_segment_follows_the_rfc_xdr_layout() {
    let item = ReadSegment {
        position: 0x0000_0088,
        segment: Segment { handle: 0xcafe_f00d, length: 0x0010_0000, offset: 0x0000_7f00_1234_5000 },
    };
    let mut out = Vec::new();
    encode_call_header(&mut out, 0x0102_0304, 128, &[item], None, None);
    #[rustfmt::skip]
    let expected: Vec<u8> = vec![
        0x01, 0x02, 0x03, 0x04, // rdma_xid
        0, 0, 0, 1,             // rdma_vers = 1
        0, 0, 0, 128,           // rdma_credit requested
        0, 0, 0, 0,             // rdma_proc = RDMA_MSG
        0, 0, 0, 1,             // read list: an item follows
        0, 0, 0, 0x88,          //   its position in the rpc message
        0xca, 0xfe, 0xf0, 0x0d, //   handle
        0x00, 0x10, 0x00, 0x00, //   length (1 MiB)
        0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x50, 0x00, // offset
        0, 0, 0, 0,             // read list: end
        0, 0, 0, 0,             // write list: empty
        0, 0, 0, 0,             // reply chunk: absent
    ];
    assert_eq!(out, expected);
    assert_eq!(call_header_len(&[item], None, None), expected.len());
    // A server would refuse nothing here; playsim's own decoder, which reads replies, refuses
    // a read list as a server never sends one.
    out.extend_from_slice(&RPC_REPLY);
    assert_eq!(decode_reply(&out), Err(HeaderError::ReadListInReply { offset: 16 }));
}

/// A stand-in RPC call header (call header, AUTH_SYS credential, verifier): 44 bytes.
fn rpc_header() -> Vec<u8> {
    (0..44u8).map(|i| 0xc0 | (i & 0x3f)).collect()
}

/// WRITE3args as XDR: a 28-byte handle, offset, count, stable, then the data's length word,
/// the data and its padding, followed by `tail` (a WRITE has none; it shows what follows the
/// padding stays inline). Returns the arguments and where the data starts.
fn write_args(data: &[u8], tail: &[u8]) -> (Vec<u8>, usize) {
    let mut args = Vec::new();
    args.extend_from_slice(&28u32.to_be_bytes());
    args.extend_from_slice(&[0x11; 28]);
    args.extend_from_slice(&(1u64 << 33).to_be_bytes()); // offset
    args.extend_from_slice(&(data.len() as u32).to_be_bytes()); // count
    args.extend_from_slice(&2u32.to_be_bytes()); // stable: FILE_SYNC
    args.extend_from_slice(&(data.len() as u32).to_be_bytes()); // the opaque's length
    let data_at = args.len();
    args.extend_from_slice(data);
    args.resize(args.len() + data.len().next_multiple_of(4) - data.len(), 0);
    args.extend_from_slice(tail);
    (args, data_at)
}

#[test]
fn a_write_sends_its_data_in_a_read_chunk_and_the_rest_inline() {
    let data: Vec<u8> = (0..4097u32).map(|i| (i % 253) as u8 | 1).collect();
    let (args, data_at) = write_args(&data, &[]);
    assert_eq!(data_at, 52);
    let header = rpc_header();
    let source = Segment { handle: 0x0bad_cafe, length: data.len() as u32, offset: 0x7f55_0000_0000 };
    let call = CallMessage { rpc_header: &header, args: &args, data_at };
    let mut out = Vec::new();
    let item = encode_call_with_read_chunk(&mut out, 0x4242, 64, &call, source, None).unwrap();
    // The position is the data's offset in the rpc message (44 + 52), not in the Send.
    assert_eq!(item, ReadSegment { position: 96, segment: source });
    let header_len = call_header_len(&[item], None, None);
    assert_eq!(header_len, 52);
    #[rustfmt::skip]
    let expected_header: Vec<u8> = vec![
        0, 0, 0x42, 0x42, 0, 0, 0, 1, 0, 0, 0, 64, 0, 0, 0, 0, // xid, vers, credits, RDMA_MSG
        0, 0, 0, 1, 0, 0, 0, 96,                               // read item at position 96
        0x0b, 0xad, 0xca, 0xfe, 0, 0, 0x10, 0x01,              // handle, length 4097
        0, 0, 0x7f, 0x55, 0, 0, 0, 0,                          // offset
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,                    // ends of the lists, no reply chunk
    ];
    assert_eq!(out[..header_len], expected_header);
    // Inline: the rpc header and the arguments up to and including the length word, and
    // nothing of the data or its 3 bytes of padding.
    let inline = &out[header_len..];
    assert_eq!(inline.len(), 44 + 52);
    assert_eq!(&inline[..44], &header[..]);
    assert_eq!(&inline[44..], &args[..data_at]);
    assert_eq!(inline[inline.len() - 4..], 4097u32.to_be_bytes());
    assert_eq!(args.len(), data_at + 4100);
    // The whole Send is small whatever the data's size.
    assert_eq!(out.len(), 52 + 44 + 52);
}

#[test]
fn what_follows_the_padding_stays_inline_after_the_length_word() {
    for n in 0..8usize {
        let data = vec![0xee; n];
        let tail = [0xd1, 0xd2, 0xd3, 0xd4];
        let (args, data_at) = write_args(&data, &tail);
        let header = rpc_header();
        let source = Segment { handle: 7, length: n as u32, offset: 0x1000 };
        let call = CallMessage { rpc_header: &header, args: &args, data_at };
        let mut out = Vec::new();
        let item = encode_call_with_read_chunk(&mut out, 1, 1, &call, source, Some(&[SEG_B])).unwrap();
        assert_eq!(item.position as usize, header.len() + data_at);
        let header_len = call_header_len(&[item], None, Some(&[SEG_B]));
        let inline = &out[header_len..];
        let mut expected = header.clone();
        expected.extend_from_slice(&args[..data_at]);
        expected.extend_from_slice(&tail);
        assert_eq!(inline, &expected[..], "{n} bytes of data");
        assert!(!inline.contains(&0xee), "{n} bytes of data");
    }
}

#[test]
fn a_data_item_that_is_not_where_it_is_said_to_be_is_refused_and_nothing_is_written() {
    let data = [0x33; 10];
    let (args, data_at) = write_args(&data, &[]);
    let header = rpc_header();
    let source = Segment { handle: 7, length: 10, offset: 0x1000 };
    let cases: [(usize, Segment, &[u8], &str); 4] = [
        (data_at + 2, source, &header, "4-byte boundary"),
        (data_at, source, &header[..42], "4-byte boundary"),
        (data_at, Segment { length: 11, ..source }, &header, "length word"),
        (0, Segment { length: 28, ..source }, &header, "no length word"),
    ];
    for (at, source, rpc_header, why) in cases {
        let call = CallMessage { rpc_header, args: &args, data_at: at };
        let mut out = vec![0xaa];
        let error = encode_call_with_read_chunk(&mut out, 1, 1, &call, source, None).unwrap_err();
        assert!(error.why.contains(why), "{error}");
        assert_eq!(out, [0xaa]);
    }
    // A length word that claims more than the arguments hold.
    let mut short = args.clone();
    short.truncate(data_at + 8);
    let call = CallMessage { rpc_header: &header, args: &short, data_at };
    let error = encode_call_with_read_chunk(&mut Vec::new(), 1, 1, &call, source, None).unwrap_err();
    assert!(error.to_string().contains("run past the arguments"), "{error}");
}

#[test]
fn msg_reply_with_one_write_chunk_of_two_segments() {
    let bytes = msg_with_write_chunk();
    let header = decode_reply(&bytes).unwrap();
    assert_eq!(header.xid, 9);
    assert_eq!(header.credits, 32);
    assert_eq!(header.header_len, 16 + 4 + 4 + 4 + 2 * 16 + 4 + 4);
    assert_eq!(header.kind, ReplyKind::Msg { write_list: vec![vec![SEG_A, SEG_B]], reply_chunk: None });
    assert_eq!(header.payload(&bytes), RPC_REPLY);
    assert_eq!(peek_xid(&bytes), Some(9));
}

#[test]
fn nomsg_reply_with_a_reply_chunk() {
    let placed = Segment { length: 700, ..SEG_B };
    let bytes = Reply::fixed(3, 1, 16, RDMA_NOMSG).lists(&[], Some(&[placed])).0;
    let header = decode_reply(&bytes).unwrap();
    assert_eq!(header.kind, ReplyKind::NoMsg { write_list: vec![], reply_chunk: vec![placed] });
    assert_eq!(header.header_len, bytes.len());
    assert!(header.payload(&bytes).is_empty());
    let ReplyKind::NoMsg { reply_chunk, .. } = header.kind else { unreachable!() };
    assert_eq!(placed_length(&reply_chunk, &[SEG_B]), Ok(700));
}

#[test]
fn nomsg_reply_with_a_write_chunk_too_and_trailing_bytes_ignored() {
    let bytes = Reply::fixed(3, 1, 16, RDMA_NOMSG).lists(&[&[SEG_A]], Some(&[SEG_B])).payload(&[1, 2, 3]).0;
    let header = decode_reply(&bytes).unwrap();
    assert_eq!(header.kind, ReplyKind::NoMsg { write_list: vec![vec![SEG_A]], reply_chunk: vec![SEG_B] });
    assert_eq!(header.header_len, bytes.len() - 3);
}

#[test]
fn nomsg_reply_without_a_reply_chunk_is_refused() {
    let bytes = Reply::fixed(3, 1, 16, RDMA_NOMSG).lists(&[], None).0;
    assert_eq!(decode_reply(&bytes), Err(HeaderError::NoMsgWithoutReplyChunk { offset: 24 }));
}

#[test]
fn error_reply_err_vers_carries_the_range() {
    let bytes = Reply::fixed(11, 1, 1, RDMA_ERROR).words(&[ERR_VERS, 2, 3]).0;
    let header = decode_reply(&bytes).unwrap();
    assert_eq!(header.kind, ReplyKind::Error(RdmaError::Version { low: 2, high: 3 }));
    assert_eq!((header.xid, header.header_len), (11, 28));
    assert!(header.payload(&bytes).is_empty());
    let message = RdmaError::Version { low: 2, high: 3 }.to_string();
    assert!(message.contains("versions 2 to 3"), "{message}");
}

#[test]
fn error_reply_err_chunk_and_unknown_codes() {
    let bytes = Reply::fixed(12, 1, 1, RDMA_ERROR).words(&[ERR_CHUNK]).0;
    let header = decode_reply(&bytes).unwrap();
    assert_eq!(header.kind, ReplyKind::Error(RdmaError::Chunk));
    assert_eq!(header.header_len, 20);
    let bytes = Reply::fixed(12, 1, 1, RDMA_ERROR).words(&[99]).0;
    assert_eq!(decode_reply(&bytes).unwrap().kind, ReplyKind::Error(RdmaError::Unknown(99)));
}

#[test]
fn err_vers_cut_short_names_the_version_range() {
    let bytes = Reply::fixed(12, 1, 1, RDMA_ERROR).words(&[ERR_VERS, 1]).0;
    assert_eq!(
        decode_reply(&bytes),
        Err(HeaderError::Truncated { field: Field::VersionRange, offset: 24, needed: 4, len: 24 })
    );
}

#[test]
fn version_2_is_refused_with_the_version_and_the_xid_stays_readable() {
    let mut bytes = msg_with_write_chunk();
    bytes[4..8].copy_from_slice(&2u32.to_be_bytes());
    let err = decode_reply(&bytes).unwrap_err();
    assert_eq!(err, HeaderError::Version { version: 2 });
    assert!(err.to_string().contains("version 2 at byte offset 4"), "{err}");
    assert_eq!(peek_xid(&bytes), Some(9));
}

#[test]
fn deprecated_and_unknown_procedures_are_refused() {
    for procedure in [RDMA_MSGP, RDMA_DONE] {
        let bytes = Reply::fixed(1, 1, 1, procedure).lists(&[], None).payload(&RPC_REPLY).0;
        let err = decode_reply(&bytes).unwrap_err();
        assert_eq!(err, HeaderError::UnsupportedProcedure { procedure });
        assert!(err.to_string().contains("deprecates"), "{err}");
    }
    let bytes = Reply::fixed(1, 1, 1, 5).lists(&[], None).payload(&RPC_REPLY).0;
    assert_eq!(decode_reply(&bytes), Err(HeaderError::UnknownProcedure { procedure: 5 }));
}

#[test]
fn credits_0_1_and_65535_decode_raw_and_clamp_to_the_posted_receives() {
    for credits in [0, 1, 65535] {
        let bytes = Reply::fixed(1, 1, credits, RDMA_MSG).lists(&[], None).payload(&RPC_REPLY).0;
        assert_eq!(decode_reply(&bytes).unwrap().credits, credits);
    }
    assert_eq!(usable_credits(0, 32), 1, "a grant of 0 must not deadlock the requester");
    assert_eq!(usable_credits(1, 32), 1);
    assert_eq!(usable_credits(65535, 32), 32, "never more calls than posted receives");
    assert_eq!(usable_credits(16, 32), 16);
    assert_eq!(usable_credits(u32::MAX, u32::MAX), u32::MAX);
    assert_eq!(usable_credits(0, 1), 1);
    assert_eq!(usable_credits(65535, 0), 0, "nothing may be sent before a receive is posted");
}

#[test]
fn read_list_in_a_reply_is_refused() {
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG)
        .words(&[1, 0, SEG_A.handle, SEG_A.length, 0, 0, 0])
        .words(&[0, 0])
        .payload(&RPC_REPLY)
        .0;
    let err = decode_reply(&bytes).unwrap_err();
    assert_eq!(err, HeaderError::ReadListInReply { offset: 16 });
    assert!(err.to_string().contains("read list at byte offset 16"), "{err}");
}

#[test]
fn list_words_other_than_0_and_1_are_refused() {
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).words(&[2]).payload(&RPC_REPLY).0;
    assert_eq!(
        decode_reply(&bytes),
        Err(HeaderError::BadDiscriminator { field: Field::ReadList, offset: 16, value: 2 })
    );
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).words(&[0, 7]).payload(&RPC_REPLY).0;
    assert_eq!(
        decode_reply(&bytes),
        Err(HeaderError::BadDiscriminator { field: Field::WriteList, offset: 20, value: 7 })
    );
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).words(&[0, 0, 0xffff_ffff]).payload(&RPC_REPLY).0;
    assert_eq!(
        decode_reply(&bytes),
        Err(HeaderError::BadDiscriminator { field: Field::ReplyChunk, offset: 24, value: 0xffff_ffff })
    );
}

#[test]
fn a_chunk_longer_than_the_message_is_refused_before_allocating() {
    // Write chunk 0 claims 100000 segments; 3 words are left after its count.
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).words(&[0, 1, 100_000, 0, 0, 0]).0;
    let err = decode_reply(&bytes).unwrap_err();
    assert_eq!(
        err,
        HeaderError::SegmentsPastEnd { chunk: Chunk::Write(0), offset: 24, count: 100_000, left: 12 }
    );
    assert_eq!(
        err.to_string(),
        "write list chunk 0 at byte offset 24 claims 100000 segments but only 12 bytes are left"
    );
}

#[test]
fn segment_count_0xffffffff_is_refused() {
    for (bytes, chunk, offset) in [
        (Reply::fixed(4, 1, 8, RDMA_MSG).words(&[0, 1, u32::MAX]).payload(&RPC_REPLY).0, Chunk::Write(0), 24),
        (Reply::fixed(4, 1, 8, RDMA_NOMSG).words(&[0, 0, 1, u32::MAX]).0, Chunk::Reply, 28),
    ] {
        let left = bytes.len() - offset - 4;
        assert_eq!(
            decode_reply(&bytes),
            Err(HeaderError::SegmentsPastEnd { chunk, offset, count: u32::MAX, left })
        );
    }
}

#[test]
fn more_segments_than_the_cap_are_refused_even_when_present() {
    let segments = vec![SEG_B; MAX_CHUNK_SEGMENTS + 1];
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).lists(&[&segments], None).payload(&RPC_REPLY).0;
    assert_eq!(
        decode_reply(&bytes),
        Err(HeaderError::TooManySegments {
            chunk: Chunk::Write(0),
            offset: 24,
            count: 257,
            limit: MAX_CHUNK_SEGMENTS
        })
    );
    // The cap itself is fine.
    let segments = vec![SEG_B; MAX_CHUNK_SEGMENTS];
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).lists(&[&segments], None).payload(&RPC_REPLY).0;
    assert!(decode_reply(&bytes).is_ok());
}

#[test]
fn more_write_chunks_than_the_cap_are_refused() {
    let chunks: Vec<&[Segment]> = vec![&[]; MAX_WRITE_CHUNKS + 1];
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).lists(&chunks, None).payload(&RPC_REPLY).0;
    // 64 empty chunks of 8 bytes each after the write list starts at 20.
    assert_eq!(
        decode_reply(&bytes),
        Err(HeaderError::TooManyChunks { offset: 20 + 8 * MAX_WRITE_CHUNKS, limit: MAX_WRITE_CHUNKS })
    );
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).lists(&chunks[1..], None).payload(&RPC_REPLY).0;
    let ReplyKind::Msg { write_list, .. } = decode_reply(&bytes).unwrap().kind else { unreachable!() };
    assert_eq!(write_list.len(), MAX_WRITE_CHUNKS);
}

#[test]
fn an_endless_write_list_stops_at_the_end_of_the_message() {
    // "Another chunk follows" with no chunk: the count is missing.
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).words(&[0, 1]).0;
    assert_eq!(
        decode_reply(&bytes),
        Err(HeaderError::Truncated {
            field: Field::SegmentCount(Chunk::Write(0)),
            offset: 24,
            needed: 4,
            len: 24
        })
    );
}

#[test]
fn msg_reply_whose_lists_are_fine_but_that_leaves_no_payload_is_refused() {
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).lists(&[&[SEG_A]], None).0;
    let err = decode_reply(&bytes).unwrap_err();
    assert_eq!(err, HeaderError::NoPayload { header_len: bytes.len(), payload_len: 0 });
    let bytes = Reply::fixed(4, 1, 8, RDMA_MSG).lists(&[], None).payload(&[0, 0, 0]).0;
    assert_eq!(decode_reply(&bytes), Err(HeaderError::NoPayload { header_len: 28, payload_len: 3 }));
}

#[test]
fn every_truncation_of_valid_headers_is_an_error_not_a_panic() {
    let valid = [
        msg_with_write_chunk(),
        Reply::fixed(3, 1, 16, RDMA_NOMSG).lists(&[&[SEG_A]], Some(&[SEG_B])).0,
        Reply::fixed(11, 1, 1, RDMA_ERROR).words(&[ERR_VERS, 1, 1]).0,
        Reply::fixed(12, 1, 1, RDMA_ERROR).words(&[ERR_CHUNK]).0,
    ];
    for bytes in valid {
        let header = decode_reply(&bytes).unwrap();
        // An RDMA_MSG's payload may shrink to the minimum and still decode.
        let shortest_valid = match header.kind {
            ReplyKind::Msg { .. } => header.header_len + MIN_INLINE_RPC_MESSAGE,
            _ => header.header_len,
        };
        for len in 0..shortest_valid {
            let result = decode_reply(&bytes[..len]);
            assert!(result.is_err(), "{len} of {} bytes decoded: {result:?}", bytes.len());
            assert_eq!(peek_xid(&bytes[..len]).is_some(), len >= 4);
        }
        for len in shortest_valid..=bytes.len() {
            assert!(decode_reply(&bytes[..len]).is_ok(), "{len} of {} bytes", bytes.len());
        }
    }
}

#[test]
fn placed_length_sums_the_returned_lengths() {
    let offered = [SEG_A, SEG_B];
    assert_eq!(placed_length(&offered, &offered), Ok(0x0001_0000 + 4096));
    // Short in the last segment, or fewer segments returned.
    assert_eq!(placed_length(&[SEG_A, Segment { length: 10, ..SEG_B }], &offered), Ok(0x0001_0000 + 10));
    assert_eq!(placed_length(&[SEG_A], &offered), Ok(0x0001_0000));
    assert_eq!(placed_length(&[], &offered), Ok(0));
    // Short in the first, nothing in the second.
    assert_eq!(
        placed_length(&[Segment { length: 5, ..SEG_A }, Segment { length: 0, ..SEG_B }], &offered),
        Ok(5)
    );
}

#[test]
fn segment_lengths_past_the_registered_buffer_are_refused() {
    let offered = [SEG_A, SEG_B];
    let returned = [SEG_A, Segment { length: 4097, ..SEG_B }];
    let err = placed_length(&returned, &offered).unwrap_err();
    assert_eq!(err, HeaderError::LengthPastOffered { index: 1, returned: 4097, offered: 4096 });
    assert!(err.to_string().contains("past the 4096-byte buffer registered for it"), "{err}");
    let returned = [Segment { length: u32::MAX, ..SEG_A }];
    assert!(matches!(
        placed_length(&returned, &offered),
        Err(HeaderError::LengthPastOffered { index: 0, .. })
    ));
}

#[test]
fn placed_length_refuses_extra_segments_other_handles_and_holes() {
    assert_eq!(
        placed_length(&[SEG_A, SEG_B], &[SEG_A]),
        Err(HeaderError::MoreSegmentsThanOffered { returned: 2, offered: 1 })
    );
    assert_eq!(
        placed_length(&[SEG_B], &[SEG_A]),
        Err(HeaderError::HandleMismatch { index: 0, returned: SEG_B.handle, offered: SEG_A.handle })
    );
    assert_eq!(
        placed_length(&[Segment { length: 100, ..SEG_A }, Segment { length: 1, ..SEG_B }], &[SEG_A, SEG_B]),
        Err(HeaderError::GapInPlacedData {
            index: 1,
            length: 1,
            short: 0,
            short_length: 100,
            short_offered: SEG_A.length
        })
    );
}

#[test]
fn a_decoded_write_list_checks_against_the_offer() {
    let offered = [SEG_A, SEG_B];
    let returned = [SEG_A, Segment { length: 8192, ..SEG_B }];
    let bytes = Reply::fixed(1, 1, 1, RDMA_MSG).lists(&[&returned], None).payload(&RPC_REPLY).0;
    let ReplyKind::Msg { write_list, .. } = decode_reply(&bytes).unwrap().kind else { unreachable!() };
    assert!(matches!(
        placed_length(&write_list[0], &offered),
        Err(HeaderError::LengthPastOffered { index: 1, returned: 8192, offered: 4096 })
    ));
}

#[test]
fn connect_private_round_trips_and_matches_rfc_8797_bytes() {
    let data = ConnectPrivate { send_size: 4096, recv_size: 256 * 1024, remote_invalidate: true };
    let bytes = data.encode();
    assert_eq!(bytes, [0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 255]);
    assert_eq!(ConnectPrivate::decode(&bytes), Some(data));
    let defaults = ConnectPrivate::default();
    assert_eq!(defaults.encode(), [0xf6, 0xab, 0x0e, 0x18, 1, 0, 0, 0]);
    assert_eq!(ConnectPrivate::decode(&defaults.encode()), Some(defaults));
    // RDMA-CM pads private data; the reserved flag bits are ignored.
    let mut padded = bytes.to_vec();
    padded[5] |= 0xfe;
    padded.extend_from_slice(&[0; 48]);
    assert_eq!(ConnectPrivate::decode(&padded), Some(data));
}

#[test]
fn connect_private_sizes_round_down_and_clamp_to_what_one_byte_carries() {
    let encode =
        |size| ConnectPrivate { send_size: size, recv_size: size, remote_invalidate: false }.encode()[6];
    assert_eq!(encode(0), 0);
    assert_eq!(encode(1023), 0);
    assert_eq!(encode(1024), 0);
    assert_eq!(encode(2047), 0);
    assert_eq!(encode(2048), 1);
    assert_eq!(encode(256 * 1024), 255);
    assert_eq!(encode(u32::MAX), 255);
    for byte in 0..=u8::MAX {
        let bytes = [0xf6, 0xab, 0x0e, 0x18, 1, 0, byte, byte];
        let data = ConnectPrivate::decode(&bytes).unwrap();
        assert_eq!(data.send_size, (u32::from(byte) + 1) * 1024);
        assert_eq!(data.encode(), bytes);
    }
}

#[test]
fn connect_private_that_is_not_rfc_8797_is_ignored() {
    let good = ConnectPrivate::default().encode();
    for len in 0..ConnectPrivate::LEN {
        assert_eq!(ConnectPrivate::decode(&good[..len]), None);
    }
    let mut bad_magic = good;
    bad_magic[0] = 0;
    assert_eq!(ConnectPrivate::decode(&bad_magic), None);
    let mut version_2 = good;
    version_2[4] = 2;
    assert_eq!(ConnectPrivate::decode(&version_2), None);
}

#[test]
fn inline_sizes_take_the_smaller_side_and_default_to_1024() {
    let ours = ConnectPrivate { send_size: 4096, recv_size: 4096, remote_invalidate: true };
    assert_eq!(ours.negotiate(None), InlineSizes { send: 1024, recv: 1024 });
    let peer = ConnectPrivate { send_size: 8192, recv_size: 2048, remote_invalidate: false };
    assert_eq!(ours.negotiate(Some(&peer)), InlineSizes { send: 2048, recv: 4096 });
    let peer = ConnectPrivate { send_size: 1024, recv_size: 65536, remote_invalidate: false };
    assert_eq!(ours.negotiate(Some(&peer)), InlineSizes { send: 4096, recv: 1024 });
    // The peer saw whole KiB from 1 to 256, so that is what is used.
    let odd = ConnectPrivate { send_size: 5000, recv_size: 100, remote_invalidate: false };
    let big = ConnectPrivate { send_size: 1 << 20, recv_size: 1 << 20, remote_invalidate: false };
    assert_eq!(odd.negotiate(Some(&big)), InlineSizes { send: 4096, recv: 1024 });
    assert_eq!(big.negotiate(Some(&big)), InlineSizes { send: 256 * 1024, recv: 256 * 1024 });
}

/// A xorshift64 generator: deterministic, so a failure reproduces.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Checks what a decoded header promises: it lies within the message, its lists keep to
/// the caps, and an RDMA_MSG has its payload.
fn check_decoded(bytes: &[u8]) {
    let Ok(header) = decode_reply(bytes) else { return };
    assert!(header.header_len <= bytes.len());
    assert_eq!(header.version, RPCRDMA_VERSION);
    assert_eq!(Some(header.xid), peek_xid(bytes));
    let (write_list, reply_chunk) = match &header.kind {
        ReplyKind::Msg { write_list, reply_chunk } => {
            assert!(bytes.len() - header.header_len >= MIN_INLINE_RPC_MESSAGE);
            assert_eq!(header.payload(bytes), &bytes[header.header_len..]);
            (write_list.as_slice(), reply_chunk.as_deref())
        }
        ReplyKind::NoMsg { write_list, reply_chunk } => (write_list.as_slice(), Some(reply_chunk.as_slice())),
        ReplyKind::Error(_) => (&[][..], None),
    };
    assert!(write_list.len() <= MAX_WRITE_CHUNKS);
    for chunk in write_list.iter().map(Vec::as_slice).chain(reply_chunk) {
        assert!(chunk.len() <= MAX_CHUNK_SEGMENTS);
        // Whatever came back, checking it against itself as the offer cannot panic.
        let _ = placed_length(chunk, chunk);
    }
}

#[test]
fn ten_thousand_random_mutations_of_valid_headers_never_panic() {
    let seeds = [
        msg_with_write_chunk(),
        Reply::fixed(3, 1, 16, RDMA_NOMSG).lists(&[&[SEG_A], &[SEG_B, SEG_A]], Some(&[SEG_B])).0,
        Reply::fixed(11, 1, 1, RDMA_ERROR).words(&[ERR_VERS, 1, 1]).0,
    ];
    let interesting = [0, 1, 2, 4, 16, 255, 256, 257, 0x7fff_ffff, 0xffff_ffff];
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut decoded = 0;
    for round in 0..10_000 {
        let mut bytes = seeds[round % seeds.len()].clone();
        for _ in 0..1 + rng.below(4) {
            match rng.below(5) {
                // Flip a bit.
                0 => {
                    let at = rng.below(bytes.len());
                    bytes[at] ^= 1 << rng.below(8);
                }
                // Overwrite an aligned word with a value parsers trip on.
                1 if bytes.len() >= 4 => {
                    let at = rng.below(bytes.len() / 4) * 4;
                    let value: u32 = interesting[rng.below(interesting.len())];
                    bytes[at..at + 4].copy_from_slice(&value.to_be_bytes());
                }
                // Overwrite a byte with anything.
                2 => {
                    let at = rng.below(bytes.len());
                    bytes[at] = rng.next() as u8;
                }
                // Cut the message short.
                3 => bytes.truncate(rng.below(bytes.len() + 1)),
                // Append random words.
                _ => {
                    for _ in 0..rng.below(8) {
                        bytes.extend_from_slice(&(rng.next() as u32).to_be_bytes());
                    }
                }
            }
            if bytes.is_empty() {
                bytes.push(0);
            }
        }
        check_decoded(&bytes);
        decoded += usize::from(decode_reply(&bytes).is_ok());
        let _ = ConnectPrivate::decode(&bytes);
    }
    // The mutations leave some messages valid, so the checks above are exercised.
    assert!(decoded > 100, "only {decoded} of 10000 mutated headers decoded");
}
