//! The bytes of one bridged message on Zenoh: a small header, then the payload as published.
//!
//! Every message carries where it comes from, its sequence number and the topic's whole
//! contract, so an importer that joins late, restarts or hears several exporters needs nothing
//! but the message itself: no side channel, no state to lose. The contract costs 14 bytes plus
//! the type or schema name.
//!
//! # Layout (little-endian)
//!
//! ```text
//! 0      2  magic b"SZ"
//! 2      1  version (2)
//! 3      1  flags: 0, or BATCH (1); others refused
//! 4      8  origin: the exporting bridge's random id (a new one each time a bridge starts)
//! 12     8  source: the exported topic's place, the same for every exporter of that topic on
//!           that host (its host and topic path, hashed): one per stream of sequence numbers
//! 20     4  epoch: how many times this exporter (origin) connected to a new local publisher of
//!           the topic before this message's (0 for its first)
//! 24     8  seq: the local topic's sequence number of the message
//! 32     2  c: length of the contract that follows
//! 34     c  contract: kind u8 (0 bytes, 1 schema, 2 pod), max_message u32,
//!           a u32 (schema version or pod size), b u32 (pod align), name length u8, name
//! 34 + c    payload; with BATCH, records of (u32 length, payload): messages seq, seq + 1, ...
//! ```
//!
//! An importer follows the sequence numbers of each `source` apart. Within one `origin`, a new
//! `epoch` is a new stream of the local publisher (it restarted, and its numbers started
//! again), whatever the numbers say: a reset, never a gap. A new `origin` for the same `source`
//! is a restarted exporter reading the same topic, so the numbers go on from where the last one
//! stopped.
//!
//! A batch carries the consecutive messages an exporter found waiting in its ring at once (up
//! to [`BATCH_BYTES`]): one Zenoh put, routed once, for many small messages. A message that is
//! alone goes without records.
//!
//! Anything that does not decode is a [`WireError`]: the importer counts it and skips the
//! message. Version 1 (without `source` and `epoch`) is refused like any other version: the
//! bridges on one key must speak the same version.

use std::fmt;

use shmcast::MessageType;

const MAGIC: [u8; 2] = *b"SZ";
const VERSION: u8 = 2;
/// Bytes before the contract.
const FIXED: usize = 34;
/// Bytes of a contract before its name.
const CONTRACT_FIXED: usize = 14;
/// Offset of the source.
const SOURCE_AT: usize = 12;
/// Offset of the epoch.
const EPOCH_AT: usize = 20;
/// Offset of the sequence number.
const SEQ_AT: usize = 24;
/// Offset of the contract's length.
const CLEN_AT: usize = 32;
/// The flag of a batch of records.
const BATCH: u8 = 1;
/// The most payload and record bytes an exporter puts in one batch.
pub const BATCH_BYTES: usize = 32 * 1024;
/// The most messages in one batch.
const BATCH_MESSAGES: usize = 256;

const KIND_BYTES: u8 = 0;
const KIND_SCHEMA: u8 = 1;
const KIND_POD: u8 = 2;

/// Why bytes from Zenoh are not a bridged message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// Fewer bytes than the header needs.
    Short {
        /// Bytes present.
        len: usize,
        /// Bytes the header needs.
        need: usize,
    },
    /// Not a shmcast bridge message (the magic differs).
    Magic,
    /// A wire version this bridge does not speak.
    Version(u8),
    /// Flags this version does not define.
    Flags(u8),
    /// A contract that does not decode (unknown kind, bad name, inconsistent lengths).
    Contract(&'static str),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Short { len, need } => {
                write!(f, "{len} bytes, fewer than the {need} of a bridge header")
            }
            WireError::Magic => f.write_str("not a shmcast bridge message (bad magic)"),
            WireError::Version(v) => {
                write!(f, "bridge wire version {v}, this bridge speaks {VERSION}")
            }
            WireError::Flags(x) => write!(f, "unknown header flags {x:#04x}"),
            WireError::Contract(why) => write!(f, "malformed contract: {why}"),
        }
    }
}

impl std::error::Error for WireError {}

/// The contract of a topic as it travels: what each message is and the largest message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireContract {
    /// What each message is.
    pub message: MessageType,
    /// The largest message, in bytes.
    pub max_message: usize,
}

impl fmt::Display for WireContract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, messages up to {} bytes",
            self.message, self.max_message
        )
    }
}

impl WireContract {
    /// The encoded contract, or `None` for a message type this wire version cannot carry
    /// (a future kind, a name over 255 bytes, sizes over 4 GiB).
    pub fn encode(&self) -> Option<Vec<u8>> {
        let (kind, a, b, name): (u8, usize, usize, &str) = match &self.message {
            MessageType::Bytes => (KIND_BYTES, 0, 0, ""),
            MessageType::Schema { name, version } => (KIND_SCHEMA, *version as usize, 0, name),
            MessageType::Pod { name, size, align } => (KIND_POD, *size, *align, name),
            _ => return None,
        };
        let max = u32::try_from(self.max_message).ok()?;
        let a = u32::try_from(a).ok()?;
        let b = u32::try_from(b).ok()?;
        let nlen = u8::try_from(name.len()).ok()?;
        let mut out = Vec::with_capacity(CONTRACT_FIXED + name.len());
        out.push(kind);
        out.extend_from_slice(&max.to_le_bytes());
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
        out.push(nlen);
        out.extend_from_slice(name.as_bytes());
        Some(out)
    }

    /// Decodes an encoded contract.
    pub fn decode(bytes: &[u8]) -> Result<WireContract, WireError> {
        if bytes.len() < CONTRACT_FIXED {
            return Err(WireError::Contract("shorter than its fixed part"));
        }
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let (kind, max, a, b) = (bytes[0], word(1), word(5), word(9));
        let nlen = usize::from(bytes[13]);
        if bytes.len() != CONTRACT_FIXED + nlen {
            return Err(WireError::Contract(
                "name length disagrees with the contract's",
            ));
        }
        let name = std::str::from_utf8(&bytes[CONTRACT_FIXED..])
            .map_err(|_| WireError::Contract("name is not UTF-8"))?
            .to_owned();
        let message = match kind {
            KIND_BYTES if nlen == 0 && a == 0 && b == 0 => MessageType::Bytes,
            KIND_BYTES => return Err(WireError::Contract("bytes with a name or sizes")),
            KIND_SCHEMA if b == 0 => MessageType::schema(name, a),
            KIND_POD => MessageType::Pod {
                name,
                size: a as usize,
                align: b as usize,
            },
            KIND_SCHEMA => return Err(WireError::Contract("schema with an alignment")),
            _ => return Err(WireError::Contract("unknown kind")),
        };
        Ok(WireContract {
            message,
            max_message: max as usize,
        })
    }
}

/// Where a message comes from (the header's `origin`, `source` and `epoch`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sender {
    /// The exporting bridge's random id.
    pub origin: u64,
    /// The exported topic's place on its host (see the layout): one stream of sequence
    /// numbers, whichever exporter reads it.
    pub source: u64,
    /// The exporter's count of new local publishers of the topic before this one.
    pub epoch: u32,
}

/// What an exporter writes before every payload of one topic, computed once.
#[derive(Clone, Debug)]
pub struct Encoder {
    /// Magic, version, flags, origin, source and epoch.
    head: [u8; SEQ_AT],
    /// The contract's length and the contract.
    tail: Vec<u8>,
}

impl Encoder {
    /// The encoder of messages from `sender` on a topic of `contract` (`None`: a contract
    /// this wire version cannot carry).
    pub fn new(sender: Sender, contract: &WireContract) -> Option<Encoder> {
        let c = contract.encode()?;
        let mut head = [0u8; SEQ_AT];
        head[..2].copy_from_slice(&MAGIC);
        head[2] = VERSION;
        head[4..SOURCE_AT].copy_from_slice(&sender.origin.to_le_bytes());
        head[SOURCE_AT..EPOCH_AT].copy_from_slice(&sender.source.to_le_bytes());
        head[EPOCH_AT..SEQ_AT].copy_from_slice(&sender.epoch.to_le_bytes());
        let mut tail = Vec::with_capacity(2 + c.len());
        tail.extend_from_slice(&u16::try_from(c.len()).ok()?.to_le_bytes());
        tail.extend_from_slice(&c);
        Some(Encoder { head, tail })
    }

    /// Header bytes before each payload.
    pub fn header_len(&self) -> usize {
        CLEN_AT + self.tail.len()
    }

    /// Message `seq` carrying `payload`, in one allocation of exactly its size.
    pub fn encode(&self, seq: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.header_len() + payload.len());
        out.extend_from_slice(&self.head);
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&self.tail);
        out.extend_from_slice(payload);
        out
    }
}

/// A decoded header: who sent the message, its sequence number, its contract (still encoded,
/// so an importer compares bytes rather than building strings per message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// Where the message comes from.
    pub sender: Sender,
    /// The message's sequence number on the exporter's local topic.
    pub seq: u64,
    /// The encoded contract ([`WireContract::decode`] reads it).
    pub contract: &'a [u8],
    /// Header bytes, where the payload starts.
    pub len: usize,
    /// Whether the payload is a batch of records ([`records`] reads them).
    pub batch: bool,
}

/// Decodes the header at the start of `bytes` (the payload follows at `header.len`).
pub fn decode(bytes: &[u8]) -> Result<Header<'_>, WireError> {
    if bytes.len() < FIXED {
        return Err(WireError::Short {
            len: bytes.len(),
            need: FIXED,
        });
    }
    if bytes[..2] != MAGIC {
        return Err(WireError::Magic);
    }
    if bytes[2] != VERSION {
        return Err(WireError::Version(bytes[2]));
    }
    if bytes[3] & !BATCH != 0 {
        return Err(WireError::Flags(bytes[3]));
    }
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let sender = Sender {
        origin: word(4),
        source: word(SOURCE_AT),
        epoch: u32::from_le_bytes(bytes[EPOCH_AT..SEQ_AT].try_into().expect("4 bytes")),
    };
    let clen = usize::from(u16::from_le_bytes([bytes[CLEN_AT], bytes[CLEN_AT + 1]]));
    let len = FIXED + clen;
    if bytes.len() < len {
        return Err(WireError::Short {
            len: bytes.len(),
            need: len,
        });
    }
    Ok(Header {
        sender,
        seq: word(SEQ_AT),
        contract: &bytes[FIXED..len],
        len,
        batch: bytes[3] & BATCH != 0,
    })
}

/// The payloads of a batch's records, in order; an `Err` ends it where a record does not fit.
pub fn records(mut body: &[u8]) -> impl Iterator<Item = Result<&[u8], WireError>> {
    std::iter::from_fn(move || {
        if body.is_empty() {
            return None;
        }
        let Some((len, rest)) = body.split_first_chunk::<4>() else {
            body = &[];
            return Some(Err(WireError::Short { len: 0, need: 4 }));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > rest.len() {
            body = &[];
            return Some(Err(WireError::Short {
                len: rest.len(),
                need: len,
            }));
        }
        let (record, rest) = rest.split_at(len);
        body = rest;
        Some(Ok(record))
    })
}

/// Consecutive messages gathered into one Zenoh payload: a plain message while it holds one,
/// a batch of records from the second on.
#[derive(Debug, Default)]
pub struct Batch {
    buf: Vec<u8>,
    header_len: usize,
    first: u64,
    count: usize,
    bytes: usize,
}

impl Batch {
    /// Whether it holds no message.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether message `seq` of `len` bytes may join: it must follow the last one, and fit.
    pub fn takes(&self, seq: u64, len: usize) -> bool {
        self.count == 0
            || (seq == self.first + self.count as u64
                && self.count < BATCH_MESSAGES
                && self.buf.len() - self.header_len + 8 + len <= BATCH_BYTES)
    }

    /// Adds message `seq` (check [`takes`](Self::takes) first).
    pub fn push(&mut self, encoder: &Encoder, seq: u64, payload: &[u8]) {
        if self.count == 0 {
            self.buf = encoder.encode(seq, payload);
            self.header_len = encoder.header_len();
            self.first = seq;
        } else {
            if self.count == 1 {
                let first_len = (self.buf.len() - self.header_len) as u32;
                self.buf[3] |= BATCH;
                self.buf
                    .splice(self.header_len..self.header_len, first_len.to_le_bytes());
            }
            self.buf
                .extend_from_slice(&(payload.len() as u32).to_le_bytes());
            self.buf.extend_from_slice(payload);
        }
        self.count += 1;
        self.bytes += payload.len();
    }

    /// The payload to put, the last sequence number, the message count and their bytes; the
    /// batch is empty again.
    pub fn take(&mut self) -> (Vec<u8>, u64, u64, u64) {
        let last = self.first + self.count as u64 - 1;
        let out = (
            std::mem::take(&mut self.buf),
            last,
            self.count as u64,
            self.bytes as u64,
        );
        self.count = 0;
        self.bytes = 0;
        out
    }
}

/// The most header bytes a message can have: an importer that finds fewer in the first slice
/// of a fragmented payload gathers this many.
pub const MAX_HEADER: usize = FIXED + CONTRACT_FIXED + 255;

#[cfg(test)]
mod tests {
    use super::*;

    fn contracts() -> Vec<WireContract> {
        vec![
            WireContract {
                message: MessageType::Bytes,
                max_message: 4096,
            },
            WireContract {
                message: MessageType::schema("proto:app.Tick", 3),
                max_message: 1 << 20,
            },
            WireContract {
                message: MessageType::Pod {
                    name: "Tick".into(),
                    size: 16,
                    align: 8,
                },
                max_message: 16,
            },
        ]
    }

    fn sender(origin: u64) -> Sender {
        Sender {
            origin,
            source: 0x5eed_0000_0000_0001,
            epoch: 7,
        }
    }

    #[test]
    fn round_trips() {
        for c in contracts() {
            let enc = Encoder::new(sender(0xfeed), &c).unwrap();
            let msg = enc.encode(42, b"hello");
            let h = decode(&msg).unwrap();
            assert_eq!(
                (h.sender, h.seq, h.len),
                (sender(0xfeed), 42, enc.header_len())
            );
            assert_eq!(&msg[h.len..], b"hello");
            assert_eq!(WireContract::decode(h.contract).unwrap(), c);
        }
    }

    #[test]
    fn every_truncation_and_bit_flip_is_an_error_or_a_message() {
        let c = &contracts()[1];
        let msg = Encoder::new(sender(7), c).unwrap().encode(9, b"payload");
        for cut in 0..FIXED + 14 {
            if let Ok(h) = decode(&msg[..cut]) {
                assert!(WireContract::decode(h.contract).is_err() || h.len <= cut);
            }
        }
        for bit in 0..msg.len() * 8 {
            let mut m = msg.clone();
            m[bit / 8] ^= 1 << (bit % 8);
            if let Ok(h) = decode(&m) {
                assert!(h.len <= m.len());
                let _ = WireContract::decode(h.contract);
            }
        }
    }

    #[test]
    fn batches_carry_consecutive_messages() {
        let enc = Encoder::new(sender(3), &contracts()[0]).unwrap();
        let mut b = Batch::default();
        b.push(&enc, 10, b"a");
        let (one, last, n, _) = b.take();
        let h = decode(&one).unwrap();
        assert!(!h.batch);
        assert_eq!((&one[h.len..], last, n), (&b"a"[..], 10, 1));
        for (i, p) in [&b"x"[..], b"", b"zzz"].iter().enumerate() {
            assert!(b.takes(20 + i as u64, p.len()));
            b.push(&enc, 20 + i as u64, p);
        }
        assert!(!b.takes(30, 1), "a jump in sequence numbers ends a batch");
        let (many, last, n, bytes) = b.take();
        assert_eq!((last, n, bytes), (22, 3, 4));
        let h = decode(&many).unwrap();
        assert!(h.batch && h.seq == 20);
        let got: Vec<_> = records(&many[h.len..]).collect();
        assert_eq!(got, vec![Ok(&b"x"[..]), Ok(&b""[..]), Ok(&b"zzz"[..])]);
        assert!(records(&many[h.len..many.len() - 1]).any(|r| r.is_err()));
        assert!(!b.takes(0, BATCH_BYTES) || b.is_empty());
    }

    #[test]
    fn foreign_bytes_are_refused() {
        assert_eq!(decode(b"hello"), Err(WireError::Short { len: 5, need: 34 }));
        assert_eq!(decode(&[0u8; 40]), Err(WireError::Magic));
        let mut m = Encoder::new(sender(1), &contracts()[0])
            .unwrap()
            .encode(0, b"");
        m[2] = 9;
        assert_eq!(decode(&m), Err(WireError::Version(9)));
        // Version 1 carried no source and no epoch: refused, not misread.
        m[2] = 1;
        assert_eq!(decode(&m), Err(WireError::Version(1)));
        m[2] = VERSION;
        m[3] = 2;
        assert_eq!(decode(&m), Err(WireError::Flags(2)));
    }
}
