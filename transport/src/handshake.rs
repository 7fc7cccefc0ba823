//! The control messages on the topic socket: small, versioned, length-checked records.
//!
//! ```text
//! subscriber -> publisher  HELLO    magic "SHMC" | version u16 | kind 1 | mode u8 | start u8 | 6 zero bytes
//! publisher -> subscriber  WELCOME  magic | version | kind 2 | flags u32 (0) | ring_len u64 | cb_len u64
//!                                   + 2 descriptors: ring (read-only), control block
//! publisher -> subscriber  REFUSE   magic | version | kind 3 | code u16 | text_len u16 | text
//! after WELCOME, both ways DOORBELL 1 byte, never blocking (MSG_DONTWAIT): "look at the ring"
//!                                   (publisher: a commit for a parked subscriber, a demotion;
//!                                   subscriber: space released while the publisher waits)
//! ```
//!
//! All integers little-endian. A packet of the wrong length, magic, version or kind is refused;
//! nothing in it is trusted beyond these checks.

use shmcast_core::{Mode, Start};
use std::fmt;

const MAGIC: [u8; 4] = *b"SHMC";
/// Version of the control protocol.
pub(crate) const VERSION: u16 = 2;
const KIND_HELLO: u16 = 1;
pub(crate) const KIND_WELCOME: u16 = 2;
pub(crate) const KIND_REFUSE: u16 = 3;
/// Largest control packet.
pub(crate) const MAX_PACKET: usize = 256;
const HELLO_LEN: usize = 16;
const WELCOME_LEN: usize = 32;
const REFUSE_MAX_TEXT: usize = MAX_PACKET - 12;
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
    /// The publisher closed the connection before saying why (it refused before reading our
    /// request, as it does when the policy or the subscriber limit rules us out at once).
    Unstated,
    /// A code this build does not know (a newer publisher).
    Other(u16),
}

impl fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefuseReason::PermissionDenied => f.write_str("permission denied"),
            RefuseReason::Version => f.write_str("protocol version"),
            RefuseReason::BadRequest => f.write_str("bad request"),
            RefuseReason::Busy => f.write_str("busy"),
            RefuseReason::Internal => f.write_str("internal error"),
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
        other => RefuseReason::Other(other),
    }
}

fn header(kind: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
}

/// Checks magic and version and returns the kind. The version is checked before the kind so a
/// peer of another version always learns that.
fn check_header(p: &[u8]) -> Result<u16, DecodeError> {
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

/// A subscriber's request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hello {
    pub mode: Mode,
    pub start: Start,
}

impl Hello {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HELLO_LEN);
        header(KIND_HELLO, &mut out);
        out.push(match self.mode {
            Mode::Gating => 1,
            Mode::Lossy => 2,
        });
        out.push(match self.start {
            Start::Newest => 0,
            Start::Oldest => 1,
        });
        out.resize(HELLO_LEN, 0);
        out
    }

    pub(crate) fn decode(p: &[u8]) -> Result<Hello, DecodeError> {
        let kind = check_header(p)?;
        if kind != KIND_HELLO {
            return Err(DecodeError::Kind(kind));
        }
        if p.len() != HELLO_LEN {
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
        if p[10..].iter().any(|&b| b != 0) {
            return Err(DecodeError::Field("reserved"));
        }
        Ok(Hello { mode, start })
    }
}

/// The publisher's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    Welcome {
        flags: u32,
        ring_len: u64,
        cb_len: u64,
    },
    Refuse {
        code: u16,
        text: String,
    },
}

impl Reply {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(WELCOME_LEN);
        match self {
            Reply::Welcome {
                flags,
                ring_len,
                cb_len,
            } => {
                header(KIND_WELCOME, &mut out);
                out.extend_from_slice(&flags.to_le_bytes());
                out.extend_from_slice(&ring_len.to_le_bytes());
                out.extend_from_slice(&cb_len.to_le_bytes());
                out.resize(WELCOME_LEN, 0);
            }
            Reply::Refuse { code, text } => {
                header(KIND_REFUSE, &mut out);
                let mut end = text.len().min(REFUSE_MAX_TEXT);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                out.extend_from_slice(&code.to_le_bytes());
                out.extend_from_slice(&(end as u16).to_le_bytes());
                out.extend_from_slice(&text.as_bytes()[..end]);
            }
        }
        out
    }

    pub(crate) fn refuse(reason: RefuseReason, text: impl Into<String>) -> Reply {
        Reply::Refuse {
            code: refuse_code(reason),
            text: text.into(),
        }
    }

    pub(crate) fn decode(p: &[u8]) -> Result<Reply, DecodeError> {
        match check_header(p)? {
            KIND_WELCOME => {
                if p.len() != WELCOME_LEN {
                    return Err(DecodeError::Length(p.len()));
                }
                let flags = u32::from_le_bytes([p[8], p[9], p[10], p[11]]);
                if flags != 0 {
                    return Err(DecodeError::Field("flags"));
                }
                if p[28..].iter().any(|&b| b != 0) {
                    return Err(DecodeError::Field("reserved"));
                }
                Ok(Reply::Welcome {
                    flags,
                    ring_len: u64_at(p, 12),
                    cb_len: u64_at(p, 20),
                })
            }
            KIND_REFUSE => {
                if p.len() < 12 {
                    return Err(DecodeError::Length(p.len()));
                }
                let code = u16::from_le_bytes([p[8], p[9]]);
                let len = u16::from_le_bytes([p[10], p[11]]) as usize;
                if p.len() != 12 + len {
                    return Err(DecodeError::Length(p.len()));
                }
                Ok(Reply::Refuse {
                    code,
                    text: String::from_utf8_lossy(&p[12..]).into_owned(),
                })
            }
            kind => Err(DecodeError::Kind(kind)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for mode in [Mode::Gating, Mode::Lossy] {
            for start in [Start::Newest, Start::Oldest] {
                let h = Hello { mode, start };
                assert_eq!(Hello::decode(&h.encode()), Ok(h));
            }
        }
        let w = Reply::Welcome {
            flags: 0,
            ring_len: 1 << 20,
            cb_len: 512,
        };
        let w_bytes = w.encode();
        assert_eq!(Reply::decode(&w_bytes), Ok(w));
        let mut reserved = w_bytes;
        reserved[31] = 1;
        assert_eq!(
            Reply::decode(&reserved),
            Err(DecodeError::Field("reserved"))
        );
        let r = Reply::refuse(RefuseReason::PermissionDenied, "é".repeat(300));
        let Ok(Reply::Refuse { code: 1, text }) = Reply::decode(&r.encode()) else {
            panic!()
        };
        assert!(text.len() <= REFUSE_MAX_TEXT && text.chars().all(|c| c == 'é'));
    }

    #[test]
    fn rejects_every_truncation_and_bit_flip() {
        let good = Hello {
            mode: Mode::Lossy,
            start: Start::Oldest,
        }
        .encode();
        for len in 0..good.len() {
            assert!(Hello::decode(&good[..len]).is_err());
        }
        for byte in 0..good.len() {
            for bit in 0..8 {
                let mut p = good.clone();
                p[byte] ^= 1 << bit;
                // A flip may turn one valid request into another, never into a panic.
                if let Ok(h) = Hello::decode(&p) {
                    assert!(byte == 8 || byte == 9, "{h:?}");
                }
            }
        }
        let mut other_version = good.clone();
        other_version[4] = 9;
        assert_eq!(Hello::decode(&other_version), Err(DecodeError::Version(9)));
        assert!(Reply::decode(&[0xff; 300]).is_err());
    }
}
