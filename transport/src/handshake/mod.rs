//! The control messages on the topic socket: small, versioned, length-checked records.
//!
//! ```text
//! subscriber -> publisher  HELLO    magic "SHMC" | version u16 | kind 1 | mode u8 | start u8
//!                                   | flags u16 | 4 zero bytes
//!                                   [+ with flag EXPECTS: what u8 | message u8 | name_len u16
//!                                   | a u32 | b u32 | at_least u64 | name]
//! publisher -> subscriber  WELCOME  magic | version | kind 2 | flags u32 | ring_len u64 | cb_len u64
//!                                   | message u8 | 1 zero byte | name_len u16 | a u32 | b u32 | name
//!                                   + 2 descriptors: ring (read-only), control block
//! publisher -> subscriber  REFUSE   magic | version | kind 3 | code u16 | text_len u16 | text
//!                                   [+ for code 6, contract: message u8 | 1 zero byte
//!                                   | name_len u16 | a u32 | b u32 | max_message u64 | name]
//! client -> publisher      INSPECT  magic | version | kind 4 | 8 zero bytes
//! publisher -> client      INFO     magic | version | kind 5 | the topic's snapshot
//!                                   (`introspect`: no descriptors; the connection then closes)
//! after WELCOME, both ways DOORBELL 1 byte, never blocking (MSG_DONTWAIT): "look at the ring"
//!                                   (publisher: a commit for a parked subscriber, a demotion;
//!                                   subscriber: space released while the publisher waits)
//! ```
//!
//! All integers little-endian. A packet of the wrong length, magic, version or kind is refused;
//! nothing in it is trusted beyond these checks.
//!
//! The WELCOME's tail is the topic contract's message type (the maximum message size is the
//! ring header's): `message` 0 is bytes of no declared type (`name_len`, `a` and `b` zero), 1 a
//! schema (`a` its version, `b` zero), 2 a Pod type (`a` its size, `b` its alignment, a power of
//! two up to 16). `name` is the type or schema name: `name_len` bytes, 1 to
//! [`MAX_CONTRACT_NAME`](crate::MAX_CONTRACT_NAME), UTF-8 without control characters. A WELCOME is
//! therefore 40 to 168 bytes, and every byte of it is checked.
//!
//! A HELLO states what the subscriber expects of the topic's contract, if anything
//! ([`Expectation`]): its `flags` hold `HELLO_EXPECTS` (1) and the record follows. `what` has
//! bit 0 for a message type (`message`, `a`, `b` and `name` as in the WELCOME; all zero
//! otherwise) and bit 1 for a least maximum message size (`at_least`; zero otherwise), at least
//! one of them. A publisher whose contract does not meet the expectation refuses before it
//! admits anything, with code 6, whose record after the text is its contract, so the
//! subscriber can name both sides; nobody waiting for subscribers counts the refused one. The
//! subscriber checks the WELCOME's contract all the same.
//!
//! The WELCOME's `flags` hold one bit: `FLAG_IMPORTED` (1), the publisher republishes
//! messages imported from elsewhere ([`PublisherBuilder::imported`](crate::PublisherBuilder::imported));
//! every other bit is 0.
//!
//! A client sends either a HELLO (to subscribe) or an INSPECT (to read the topic's state): both
//! are admitted by the same credential check. A publisher of this version that predates
//! INSPECT refuses it as a bad request ("unexpected packet kind 4").
//!
//! Version 3 added the contract. Peers of different versions refuse each other: a publisher
//! answers a request of another version with a REFUSE (reason: protocol version), written in
//! the requester's version when that version's REFUSE has the same layout (2), so that an older
//! subscriber reads it as a refusal; a subscriber that receives a reply of another version fails
//! with [`DecodeError::Version`]. Within a version, a flag bit marks an addition (the WELCOME's
//! imported bit, the INFO record's bits): a peer that sets none sends exactly the bytes an
//! older peer of the same version reads, and an older peer refuses one that sets a bit as an
//! invalid `flags` field, never misreading it.
//!
//! # Text from a peer
//!
//! What a peer writes for people (a REFUSE's text, the executables of an INFO record) is made
//! [`printable`] as it is decoded, and an executable as the publisher reads it from `/proc`,
//! before anyone can show it: every control character is written as its escape, by the rule
//! contract names obey (they must hold none), so a peer cannot move the cursor, retitle the
//! window or clear the screen of whoever shows its text.

use crate::contract::{self, Contract, Expectation, MessageType};
use shmcast_core::{Mode, Start};
use std::fmt;

const MAGIC: [u8; 4] = *b"SHMC";
/// Version of the control protocol.
pub(crate) const VERSION: u16 = 3;
/// Older versions whose REFUSE has this version's layout: a publisher refuses a request of such
/// a version in that version, so that the requester can read why.
const REFUSE_COMPATIBLE: [u16; 1] = [2];
/// The WELCOME flag of a publisher that republishes messages imported from elsewhere.
pub(crate) const FLAG_IMPORTED: u32 = 1;
/// The HELLO flag of a request that states an expectation of the contract.
const HELLO_EXPECTS: u16 = 1;
/// The expectation record's `what` bits.
const EXPECTS_MESSAGE: u8 = 1;
const EXPECTS_AT_LEAST: u8 = 2;
/// A HELLO with an expectation, without its name.
const HELLO_EXPECT_FIXED: usize = HELLO_LEN + 20;
/// The contract record of a contract refusal, without its name.
const CONTRACT_RECORD_FIXED: usize = 20;
/// The refusal code of a contract that does not meet the subscriber's expectation.
const CODE_CONTRACT: u16 = 6;
const KIND_HELLO: u16 = 1;
const KIND_INSPECT: u16 = 4;
pub(crate) const KIND_INFO: u16 = 5;
pub(crate) const KIND_WELCOME: u16 = 2;
pub(crate) const KIND_REFUSE: u16 = 3;
/// Largest control packet.
pub(crate) const MAX_PACKET: usize = 256;
const HELLO_LEN: usize = 16;
const INSPECT_LEN: usize = 16;
/// A WELCOME without its name.
const WELCOME_FIXED: usize = 40;
const MESSAGE_BYTES: u8 = 0;
const MESSAGE_SCHEMA: u8 = 1;
const MESSAGE_POD: u8 = 2;
const REFUSE_MAX_TEXT: usize = MAX_PACKET - 12;
const _: () = assert!(WELCOME_FIXED + contract::MAX_CONTRACT_NAME <= MAX_PACKET);
const _: () = assert!(HELLO_EXPECT_FIXED + contract::MAX_CONTRACT_NAME <= MAX_PACKET);
const _: () = assert!(12 + CONTRACT_RECORD_FIXED + contract::MAX_CONTRACT_NAME < MAX_PACKET);
/// Descriptors a WELCOME carries.
pub(crate) const WELCOME_FDS: usize = 2;

/// Why a publisher refused a subscriber, as carried by its refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefuseReason {
    /// The publisher's admission policy does not admit our uid.
    PermissionDenied,
    /// The publisher speaks another protocol version.
    Version,
    /// The publisher found our request malformed, or we took too long to send it.
    BadRequest,
    /// Overload: too many handshakes at once, the subscriber limit, or the publisher is short
    /// of descriptors. Trying again later may succeed.
    Busy,
    /// The publisher failed to set up our shared memory.
    Internal,
    /// The topic's contract does not meet what the subscriber expects (a subscriber reports
    /// it as [`ConnectError::ContractMismatch`](crate::ConnectError::ContractMismatch)).
    Contract,
    /// The publisher closed the connection before saying why (it refused before reading our
    /// request, as it does when the policy or the subscriber limit rules us out at once).
    Unstated,
    /// A code this build does not know (a newer publisher).
    Other(u16),
}

impl RefuseReason {
    /// Why a request that does not decode is refused: its version, or its form.
    pub(crate) fn of(error: &DecodeError) -> RefuseReason {
        match error {
            DecodeError::Version(_) => RefuseReason::Version,
            _ => RefuseReason::BadRequest,
        }
    }
}

impl fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefuseReason::PermissionDenied => f.write_str("permission denied"),
            RefuseReason::Version => f.write_str("protocol version"),
            RefuseReason::BadRequest => f.write_str("bad request"),
            RefuseReason::Busy => f.write_str("busy"),
            RefuseReason::Internal => f.write_str("internal error"),
            RefuseReason::Contract => f.write_str("topic contract mismatch"),
            RefuseReason::Unstated => f.write_str("no reason given"),
            RefuseReason::Other(code) => write!(f, "code {code}"),
        }
    }
}

/// A handshake record that breaks the protocol: its length, magic, version, kind or a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The packet has the wrong length for its kind.
    Length(usize),
    /// The packet does not start with the protocol's magic.
    Magic,
    /// The peer speaks this other protocol version.
    Version(u16),
    /// The packet is of a kind not expected here.
    Kind(u16),
    /// This field holds a value the protocol does not define.
    Field(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Length(n) => write!(f, "packet of {n} bytes has the wrong length"),
            DecodeError::Magic => f.write_str("not a shmcast packet"),
            DecodeError::Version(v) => {
                write!(f, "protocol version {v}, this build speaks {VERSION}")
            }
            DecodeError::Kind(k) => write!(f, "unexpected packet kind {k}"),
            DecodeError::Field(n) => write!(f, "invalid field `{n}`"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The wire code of each refusal reason.
pub(crate) fn refuse_code(reason: RefuseReason) -> u16 {
    match reason {
        RefuseReason::PermissionDenied => 1,
        RefuseReason::Version => 2,
        RefuseReason::BadRequest => 3,
        RefuseReason::Busy => 4,
        RefuseReason::Internal => 5,
        RefuseReason::Contract => CODE_CONTRACT,
        RefuseReason::Unstated => 0,
        RefuseReason::Other(code) => code,
    }
}

/// The refusal reason a wire code stands for.
pub(crate) fn refuse_reason(code: u16) -> RefuseReason {
    match code {
        1 => RefuseReason::PermissionDenied,
        2 => RefuseReason::Version,
        3 => RefuseReason::BadRequest,
        4 => RefuseReason::Busy,
        5 => RefuseReason::Internal,
        CODE_CONTRACT => RefuseReason::Contract,
        other => RefuseReason::Other(other),
    }
}

pub(crate) fn header(kind: u16, out: &mut Vec<u8>) {
    header_as(VERSION, kind, out);
}

fn header_as(version: u16, kind: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
}

/// Checks magic and version and returns the kind. The version is checked before the kind so a
/// peer of another version always learns that.
pub(crate) fn check_header(p: &[u8]) -> Result<u16, DecodeError> {
    if p.len() < 8 {
        return Err(DecodeError::Length(p.len()));
    }
    if p[..4] != MAGIC {
        return Err(DecodeError::Magic);
    }
    let version = u16::from_le_bytes([p[4], p[5]]);
    if version != VERSION {
        return Err(DecodeError::Version(version));
    }
    Ok(u16::from_le_bytes([p[6], p[7]]))
}

fn u64_at(p: &[u8], at: usize) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(&p[at..at + 8]);
    u64::from_le_bytes(b)
}

fn u16_at(p: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([p[at], p[at + 1]])
}

fn u32_at(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

/// The wire fields of a message type: (message, a, b, name), as a WELCOME and an INFO carry
/// them.
pub(crate) fn message_fields(m: &MessageType) -> (u8, u32, u32, &str) {
    match m {
        MessageType::Bytes => (MESSAGE_BYTES, 0, 0, ""),
        MessageType::Schema { name, version } => (MESSAGE_SCHEMA, *version, 0, name),
        // A declared size fits: it is at most the maximum message, a u32 in the ring header.
        MessageType::Pod { name, size, align } => (
            MESSAGE_POD,
            u32::try_from(*size).unwrap_or(u32::MAX),
            u32::try_from(*align).unwrap_or(u32::MAX),
            name,
        ),
    }
}

/// Decodes a WELCOME's message type (bytes 28.. of a packet whose length was checked against
/// its `name_len`).
fn decode_message(p: &[u8]) -> Result<MessageType, DecodeError> {
    if p[29] != 0 {
        return Err(DecodeError::Field("reserved"));
    }
    message_type(p[28], u32_at(p, 32), u32_at(p, 36), &p[WELCOME_FIXED..])
}

/// The message type that the wire fields `message`, `a`, `b` and `name` stand for, every field
/// checked.
pub(crate) fn message_type(
    message: u8,
    a: u32,
    b: u32,
    raw: &[u8],
) -> Result<MessageType, DecodeError> {
    let name = || -> Result<String, DecodeError> {
        let name = std::str::from_utf8(raw).map_err(|_| DecodeError::Field("name"))?;
        contract::check_name(name).map_err(|_| DecodeError::Field("name"))?;
        Ok(name.to_owned())
    };
    match message {
        MESSAGE_BYTES => {
            if !raw.is_empty() {
                return Err(DecodeError::Field("name"));
            }
            if a != 0 || b != 0 {
                return Err(DecodeError::Field("reserved"));
            }
            Ok(MessageType::Bytes)
        }
        MESSAGE_SCHEMA => {
            if b != 0 {
                return Err(DecodeError::Field("reserved"));
            }
            Ok(MessageType::Schema {
                name: name()?,
                version: a,
            })
        }
        MESSAGE_POD => {
            let name = name()?;
            if !b.is_power_of_two() || b > 16 {
                return Err(DecodeError::Field("align"));
            }
            Ok(MessageType::Pod {
                name,
                size: a as usize,
                align: b as usize,
            })
        }
        _ => Err(DecodeError::Field("message")),
    }
}

/// A subscriber's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hello {
    pub mode: Mode,
    pub start: Start,
    /// What the subscriber expects of the topic's contract (the default: nothing).
    pub expect: Expectation,
}

impl Hello {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_PACKET);
        header(KIND_HELLO, &mut out);
        out.push(match self.mode {
            Mode::Gating => 1,
            Mode::Lossy => 2,
        });
        out.push(match self.start {
            Start::Newest => 0,
            Start::Oldest => 1,
        });
        if self.expect.is_empty() {
            out.resize(HELLO_LEN, 0);
            return out;
        }
        out.extend_from_slice(&HELLO_EXPECTS.to_le_bytes());
        out.resize(HELLO_LEN, 0);
        let (what, (message, a, b, name)) = match &self.expect.message {
            Some(m) => (EXPECTS_MESSAGE, message_fields(m)),
            None => (0, (0, 0, 0, "")),
        };
        let (what, at_least) = match self.expect.max_message_at_least {
            Some(n) => (what | EXPECTS_AT_LEAST, n as u64),
            None => (what, 0),
        };
        out.extend_from_slice(&[what, message]);
        // An expected name is at most MAX_CONTRACT_NAME bytes (validated before connecting).
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
        out.extend_from_slice(&at_least.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out
    }

    pub(crate) fn decode(p: &[u8]) -> Result<Hello, DecodeError> {
        let kind = check_header(p)?;
        if kind != KIND_HELLO {
            return Err(DecodeError::Kind(kind));
        }
        if p.len() < HELLO_LEN {
            return Err(DecodeError::Length(p.len()));
        }
        let mode = match p[8] {
            1 => Mode::Gating,
            2 => Mode::Lossy,
            _ => return Err(DecodeError::Field("mode")),
        };
        let start = match p[9] {
            0 => Start::Newest,
            1 => Start::Oldest,
            _ => return Err(DecodeError::Field("start")),
        };
        let flags = u16_at(p, 10);
        if flags & !HELLO_EXPECTS != 0 {
            return Err(DecodeError::Field("flags"));
        }
        if p[12..HELLO_LEN].iter().any(|&b| b != 0) {
            return Err(DecodeError::Field("reserved"));
        }
        let expect = if flags & HELLO_EXPECTS == 0 {
            if p.len() != HELLO_LEN {
                return Err(DecodeError::Length(p.len()));
            }
            Expectation::default()
        } else {
            decode_expectation(p)?
        };
        Ok(Hello {
            mode,
            start,
            expect,
        })
    }
}

/// Decodes a HELLO's expectation record (bytes 16.. of a HELLO whose flags announce it).
fn decode_expectation(p: &[u8]) -> Result<Expectation, DecodeError> {
    if p.len() < HELLO_EXPECT_FIXED {
        return Err(DecodeError::Length(p.len()));
    }
    let r = &p[HELLO_LEN..];
    let (what, message, name_len) = (r[0], r[1], u16_at(r, 2) as usize);
    let (a, b, at_least) = (u32_at(r, 4), u32_at(r, 8), u64_at(r, 12));
    if p.len() != HELLO_EXPECT_FIXED + name_len {
        return Err(DecodeError::Length(p.len()));
    }
    if what == 0 || what & !(EXPECTS_MESSAGE | EXPECTS_AT_LEAST) != 0 {
        return Err(DecodeError::Field("what"));
    }
    let mut expect = Expectation::default();
    if what & EXPECTS_MESSAGE != 0 {
        let name = &p[HELLO_EXPECT_FIXED..];
        expect.message = Some(message_type(message, a, b, name)?);
    } else if message != 0 || name_len != 0 || a != 0 || b != 0 {
        return Err(DecodeError::Field("reserved"));
    }
    if what & EXPECTS_AT_LEAST != 0 {
        let n = usize::try_from(at_least).map_err(|_| DecodeError::Field("at_least"))?;
        expect.max_message_at_least = Some(n);
    } else if at_least != 0 {
        return Err(DecodeError::Field("reserved"));
    }
    Ok(expect)
}

/// What a client asks of the publisher: to subscribe, or to see the topic's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    Hello(Hello),
    Inspect,
}

impl Request {
    /// The INSPECT record.
    pub(crate) fn inspect() -> Vec<u8> {
        let mut out = Vec::with_capacity(INSPECT_LEN);
        header(KIND_INSPECT, &mut out);
        out.resize(INSPECT_LEN, 0);
        out
    }

    pub(crate) fn decode(p: &[u8]) -> Result<Request, DecodeError> {
        match check_header(p)? {
            KIND_INSPECT => {
                if p.len() != INSPECT_LEN {
                    return Err(DecodeError::Length(p.len()));
                }
                if p[8..].iter().any(|&b| b != 0) {
                    return Err(DecodeError::Field("reserved"));
                }
                Ok(Request::Inspect)
            }
            _ => Hello::decode(p).map(Request::Hello),
        }
    }
}

/// The publisher's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    Welcome {
        flags: u32,
        ring_len: u64,
        cb_len: u64,
        /// What the topic carries (the contract, less the ring's maximum message).
        message: MessageType,
    },
    Refuse {
        code: u16,
        /// Why, for people: [`printable`] once decoded.
        text: String,
    },
    /// A refusal for a contract that does not meet the subscriber's expectation (code 6):
    /// `text` for people ([`printable`] once decoded), then the contract itself.
    Mismatch { text: String, offered: Contract },
}

impl Reply {
    pub(crate) fn encode(&self) -> Vec<u8> {
        self.encode_as(VERSION)
    }

    /// Encodes a REFUSE in `version` (one of [`REFUSE_COMPATIBLE`], else this version); every
    /// other reply in this version.
    fn encode_as(&self, version: u16) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_PACKET);
        match self {
            Reply::Welcome {
                flags,
                ring_len,
                cb_len,
                message,
            } => {
                let (kind, a, b, name) = message_fields(message);
                header(KIND_WELCOME, &mut out);
                out.extend_from_slice(&flags.to_le_bytes());
                out.extend_from_slice(&ring_len.to_le_bytes());
                out.extend_from_slice(&cb_len.to_le_bytes());
                out.extend_from_slice(&[kind, 0]);
                // A declared name is at most MAX_CONTRACT_NAME bytes (checked when declared).
                out.extend_from_slice(&(name.len() as u16).to_le_bytes());
                out.extend_from_slice(&a.to_le_bytes());
                out.extend_from_slice(&b.to_le_bytes());
                out.extend_from_slice(name.as_bytes());
            }
            Reply::Refuse { code, text } => {
                let version = if REFUSE_COMPATIBLE.contains(&version) {
                    version
                } else {
                    VERSION
                };
                header_as(version, KIND_REFUSE, &mut out);
                out.extend_from_slice(&code.to_le_bytes());
                push_text(text, REFUSE_MAX_TEXT, &mut out);
            }
            Reply::Mismatch { text, offered } => {
                let (message, a, b, name) = message_fields(&offered.message);
                header(KIND_REFUSE, &mut out);
                out.extend_from_slice(&CODE_CONTRACT.to_le_bytes());
                let room = REFUSE_MAX_TEXT - CONTRACT_RECORD_FIXED - name.len();
                push_text(text, room, &mut out);
                out.extend_from_slice(&[message, 0]);
                out.extend_from_slice(&(name.len() as u16).to_le_bytes());
                out.extend_from_slice(&a.to_le_bytes());
                out.extend_from_slice(&b.to_le_bytes());
                out.extend_from_slice(&(offered.max_message as u64).to_le_bytes());
                out.extend_from_slice(name.as_bytes());
            }
        }
        out
    }

    /// The refusal of a subscriber whose expectation `offered` does not meet.
    pub(crate) fn mismatch(expected: &Expectation, offered: &Contract) -> Reply {
        Reply::Mismatch {
            text: format!("the topic carries {offered}; this subscriber expects {expected}"),
            offered: offered.clone(),
        }
    }

    pub(crate) fn refuse(reason: RefuseReason, text: impl Into<String>) -> Reply {
        Reply::Refuse {
            code: refuse_code(reason),
            text: text.into(),
        }
    }

    /// The refusal of a request that failed to decode with `error`, encoded: a request of
    /// another version is refused for its version, in its own version where that version's
    /// REFUSE has this layout (so that an older subscriber reads the reason).
    pub(crate) fn refusal_of(error: &DecodeError) -> Vec<u8> {
        let refusal = Reply::refuse(RefuseReason::of(error), error.to_string());
        match *error {
            DecodeError::Version(v) => refusal.encode_as(v),
            _ => refusal.encode(),
        }
    }

    pub(crate) fn decode(p: &[u8]) -> Result<Reply, DecodeError> {
        match check_header(p)? {
            KIND_WELCOME => {
                if p.len() < WELCOME_FIXED {
                    return Err(DecodeError::Length(p.len()));
                }
                let name_len = u16::from_le_bytes([p[30], p[31]]) as usize;
                if p.len() != WELCOME_FIXED + name_len {
                    return Err(DecodeError::Length(p.len()));
                }
                let flags = u32_at(p, 8);
                if flags & !FLAG_IMPORTED != 0 {
                    return Err(DecodeError::Field("flags"));
                }
                Ok(Reply::Welcome {
                    flags,
                    ring_len: u64_at(p, 12),
                    cb_len: u64_at(p, 20),
                    message: decode_message(p)?,
                })
            }
            KIND_REFUSE => {
                if p.len() < 12 {
                    return Err(DecodeError::Length(p.len()));
                }
                let code = u16_at(p, 8);
                let len = u16_at(p, 10) as usize;
                if code == CODE_CONTRACT {
                    return decode_mismatch(p, len);
                }
                if p.len() != 12 + len {
                    return Err(DecodeError::Length(p.len()));
                }
                Ok(Reply::Refuse {
                    code,
                    text: printable(&p[12..], REFUSE_MAX_TEXT),
                })
            }
            kind => Err(DecodeError::Kind(kind)),
        }
    }
}

/// Appends `text`'s length and its first bytes, at most `max` and whole characters.
fn push_text(text: &str, max: usize, out: &mut Vec<u8>) {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.extend_from_slice(&(end as u16).to_le_bytes());
    out.extend_from_slice(&text.as_bytes()[..end]);
}

/// `raw` as text that is safe to show on a terminal, in at most `max` bytes: invalid UTF-8
/// replaced by U+FFFD (as [`String::from_utf8_lossy`] does), every character
/// [`unsafe_to_show`](contract::unsafe_to_show) (control characters, direction overrides: none
/// is in a contract name) written as its escape (`\u{1b}`, `\n`, `\u{202e}`), everything else
/// kept. Text that is printable and within `max` comes back
/// unchanged; longer text is cut at a character, never within an escape.
pub(crate) fn printable(raw: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len().min(max));
    for c in text.chars() {
        let escape = contract::unsafe_to_show(c).then(|| c.escape_default());
        // An escape is ASCII: one byte a character.
        let len = escape.as_ref().map_or(c.len_utf8(), ExactSizeIterator::len);
        if out.len() + len > max {
            break;
        }
        match escape {
            Some(e) => out.extend(e),
            None => out.push(c),
        }
    }
    out
}

/// Decodes a contract refusal whose text is `len` bytes: the text (UTF-8, as long as the
/// encoder leaves room for; made [`printable`]) and the contract record after it, every field
/// checked.
fn decode_mismatch(p: &[u8], len: usize) -> Result<Reply, DecodeError> {
    let record = 12 + len;
    if p.len() < record + CONTRACT_RECORD_FIXED {
        return Err(DecodeError::Length(p.len()));
    }
    let r = &p[record..];
    let name_len = u16_at(r, 2) as usize;
    if p.len() != record + CONTRACT_RECORD_FIXED + name_len || p.len() > MAX_PACKET {
        return Err(DecodeError::Length(p.len()));
    }
    let text = std::str::from_utf8(&p[12..record]).map_err(|_| DecodeError::Field("text"))?;
    if r[1] != 0 {
        return Err(DecodeError::Field("reserved"));
    }
    let name = &r[CONTRACT_RECORD_FIXED..];
    let message = message_type(r[0], u32_at(r, 4), u32_at(r, 8), name)?;
    let max_message =
        usize::try_from(u64_at(r, 12)).map_err(|_| DecodeError::Field("max_message"))?;
    Ok(Reply::Mismatch {
        text: printable(text.as_bytes(), REFUSE_MAX_TEXT),
        offered: Contract::new(message, max_message),
    })
}

#[cfg(test)]
mod tests;
