//! RPC-over-RDMA for playsim's own NFS client (`nfs+rdma://`, issue 18).
//!
//! RPC-over-RDMA version 1 (RFC 8166, with the NFS binding of RFC 8267) carries each RPC
//! call and reply in an RDMA Send, behind a small transport header that lists the memory
//! the peer may reach with RDMA Read and Write: the write chunk a server places READ data
//! into, and the reply chunk a large reply goes into. [`header`] encodes the header of a
//! call, decodes the header of a reply, checks the lengths the server says it placed, and
//! reads the RFC 8797 connection private data. It is a pure function over bytes: a reply
//! comes from the server and is treated as hostile, so decoding never panics and never
//! allocates more than the message itself can describe.
//!
//! ```
//! use playsim_rdma::header::{decode_reply, encode_call_header, ReplyKind, Segment};
//!
//! // A READ call that offers one write chunk of one 1 MiB segment for the data.
//! let offered = [Segment { handle: 0x1234, length: 1 << 20, offset: 0x7f00_0000_0000 }];
//! let mut call = Vec::new();
//! encode_call_header(&mut call, 7, 32, Some(&offered), None);
//! assert_eq!(call.len(), 52);
//!
//! // The server's reply header: RDMA_MSG, 32 credits, the write chunk with 4096 bytes placed.
//! let mut reply = Vec::new();
//! for word in [7u32, 1, 32, 0, /* read list */ 0, /* write list */ 1, 1, 0x1234, 4096] {
//!     reply.extend_from_slice(&word.to_be_bytes());
//! }
//! reply.extend_from_slice(&0x7f00_0000_0000u64.to_be_bytes());
//! reply.extend_from_slice(&[0; 4]); // end of the write list
//! reply.extend_from_slice(&[0; 4]); // no reply chunk
//! reply.extend_from_slice(&[0xab; 24]); // the RPC reply message itself
//! let header = decode_reply(&reply)?;
//! assert_eq!((header.xid, header.credits, header.header_len), (7, 32, 52));
//! let ReplyKind::Msg { write_list, .. } = &header.kind else { panic!("an RDMA_MSG reply") };
//! assert_eq!(playsim_rdma::header::placed_length(&write_list[0], &offered)?, 4096);
//! # Ok::<(), playsim_rdma::header::HeaderError>(())
//! ```
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(clippy::unwrap_used)]

pub mod header;
