//! A topic's state as its publisher reports it to an INSPECT request: the snapshot types and
//! their INFO record (codec only, fixed bounds, every byte checked).
//!
//! ```text
//! INFO   magic | version | kind 5 | flags u16 | rows u16 | subscribers u32
//!        | pid u32 | uid u32 | uptime_ns u64 | capacity u64 | max_message u64
//!        | messages u64 | wake_syscalls u64 | full u64 | demotions u64
//!        | admitted u64 | refused u64 | departed u64 | [upstream_lost u64] | [early_wraps u64]
//!        | message u8 | 1 zero byte | name_len u16 | a u32 | b u32 | exe_len u16 | name | exe
//!        | rows x ( id u64 | pid u32 | uid u32 | requested u8 | mode u8 | parked u8 | 1 zero byte
//!                 | exe_len u16 | cursor u64 | lag_bytes u64 | lag_messages u64
//!                 | received u64 | lagged u64 | exe )
//! ```
//!
//! All integers little-endian. `message`, `a`, `b` and `name` are the contract's message type as
//! a WELCOME carries it. A pid of 0 is a process outside the publisher's pid namespace; an
//! `exe_len` of 0 an executable that could not be read. An `exe` is its path as the publisher
//! read it from `/proc`, made [`printable`] there and again when decoded: any process may
//! name its executable, and whoever is shown the snapshot is not to be shown control characters. Modes are 1 (gating) and 2 (lossy); a
//! row's `requested` is the mode it asked for, `mode` the one it has now (gating, lossy, or
//! lossy after a demotion).
//!
//! `flags`: bit 0 ([`FLAG_IMPORTED`]) the publisher republishes imported messages; bit 1
//! ([`FLAG_UPSTREAM_LOST`]) an `upstream_lost` counter follows `departed`, set exactly when
//! that count is not 0; bit 2 ([`FLAG_EARLY_WRAPS`]) an `early_wraps` counter follows, set
//! exactly when that count is not 0; every other bit is 0. A topic with none of them sends the
//! record that peers without these fields read; they refuse the others as an invalid `flags`
//! field.
//!
//! # Bounds
//!
//! At most [`MAX_ROWS`] rows (`subscribers` counts them all: a topic with more subscribers
//! reports the first [`MAX_ROWS`]) and executables of at most [`MAX_EXE`] bytes (longer ones are
//! cut), so a record is at most [`MAX_INFO`] bytes. A record that breaks any of this, or has a
//! byte more or less than its lengths say, is refused with a [`DecodeError`].

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use shmcast_core::Mode;

use crate::contract::{self, Contract, MessageType};
use crate::handshake::{self, DecodeError, KIND_INFO, message_fields, message_type, printable};

/// Most subscriber rows in one snapshot.
pub const MAX_ROWS: usize = 128;
/// Longest executable path in a snapshot, in bytes.
pub const MAX_EXE: usize = 255;
/// The INFO flag of a publisher that republishes imported messages.
const FLAG_IMPORTED: u16 = 1;
/// The INFO flag saying that an `upstream_lost` counter follows `departed`.
const FLAG_UPSTREAM_LOST: u16 = 2;
/// The INFO flag saying that an `early_wraps` counter follows (after `upstream_lost`, if any).
const FLAG_EARLY_WRAPS: u16 = 4;
const FIXED: usize = 118;
const ROW_FIXED: usize = 62;
/// Largest INFO record.
pub(crate) const MAX_INFO: usize =
    FIXED + 16 + contract::MAX_CONTRACT_NAME + MAX_EXE + MAX_ROWS * (ROW_FIXED + MAX_EXE);

/// A process at the other end of a topic socket, as the publisher sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProcessInfo {
    /// Its pid in the publisher's pid namespace (`None`: it has none there). Informational:
    /// pids are reused.
    pub pid: Option<u32>,
    /// Its effective uid.
    pub uid: u32,
    /// Its executable (`None`: unreadable), cut to [`MAX_EXE`] bytes, as text safe to show:
    /// UTF-8 whose control characters (the escape that starts a terminal sequence, say) are
    /// written as escapes (`\u{1b}`).
    pub exe: Option<PathBuf>,
}

/// The publisher's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TopicCounters {
    /// Messages published.
    pub messages: u64,
    /// Wake syscalls made (doorbells and futex wakes).
    pub wake_syscalls: u64,
    /// Times a loan found the ring full.
    pub full: u64,
    /// Gating subscribers demoted to lossy.
    pub demotions: u64,
    /// Subscribers admitted so far.
    pub admitted: u64,
    /// Subscriber connections refused (not introspection requests).
    pub refused: u64,
    /// Subscribers that left or died.
    pub departed: u64,
    /// Messages lost upstream, before they reached the publisher, as it noted them
    /// ([`Publisher::note_upstream_lost`](crate::Publisher::note_upstream_lost)): for a topic a
    /// bridge imports, the gaps in the remote sequence numbers.
    pub upstream_lost: u64,
    /// Laps the publisher started early to keep the stream in its cache window
    /// ([`PublisherBuilder::cache_window`](crate::PublisherBuilder::cache_window)).
    pub early_wraps: u64,
}

impl TopicCounters {
    /// The counters an INFO record carries only when they are not 0, with their flags, in
    /// record order.
    fn optional(&self) -> [(u16, u64); 2] {
        [
            (FLAG_UPSTREAM_LOST, self.upstream_lost),
            (FLAG_EARLY_WRAPS, self.early_wraps),
        ]
    }
}

/// One subscriber of a topic.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SubscriberRow {
    /// The publisher's number for it.
    pub id: u64,
    /// Its process.
    pub process: ProcessInfo,
    /// The mode it asked for.
    pub requested: Mode,
    /// The mode it has now.
    pub mode: Mode,
    /// Whether it is parked, waiting for a message (else busy, or not waiting yet).
    pub parked: bool,
    /// The ring position it has released up to.
    pub cursor: u64,
    /// Bytes published that it has not released.
    pub lag_bytes: u64,
    /// Messages published that it has not taken.
    pub lag_messages: u64,
    /// Messages it reports having received.
    pub received: u64,
    /// Messages it reports having missed.
    pub lagged: u64,
}

impl SubscriberRow {
    /// Whether it asked to be gating and was demoted to lossy for stalling the publisher.
    pub fn demoted(&self) -> bool {
        self.requested == Mode::Gating && self.mode == Mode::Lossy
    }
}

/// A topic's state, as its publisher answered [`inspect`](crate::inspect).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TopicInfo {
    /// The publisher's own process.
    pub publisher: ProcessInfo,
    /// How long the publisher has served the topic.
    pub uptime: Duration,
    /// What the topic carries.
    pub contract: Contract,
    /// The ring's data capacity in bytes.
    pub capacity: u64,
    /// The publisher's counters.
    pub counters: TopicCounters,
    /// Whether the publisher republishes messages imported from elsewhere
    /// ([`PublisherBuilder::imported`](crate::PublisherBuilder::imported)).
    pub imported: bool,
    /// How many subscribers the topic has (`subscribers` holds at most [`MAX_ROWS`] of them).
    pub subscriber_count: usize,
    /// The subscribers, by id.
    pub subscribers: Vec<SubscriberRow>,
}

impl TopicInfo {
    /// The INFO record of this snapshot, cutting what exceeds the bounds.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let rows = &self.subscribers[..self.subscribers.len().min(MAX_ROWS)];
        let mut out = Vec::with_capacity(MAX_INFO);
        handshake::header(KIND_INFO, &mut out);
        let c = &self.counters;
        let mut flags = 0;
        if self.imported {
            flags |= FLAG_IMPORTED;
        }
        for (flag, n) in c.optional() {
            if n != 0 {
                flags |= flag;
            }
        }
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&(rows.len() as u16).to_le_bytes());
        let count = self.subscriber_count.max(rows.len());
        out.extend_from_slice(&u32::try_from(count).unwrap_or(u32::MAX).to_le_bytes());
        let p = &self.publisher;
        out.extend_from_slice(&p.pid.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&p.uid.to_le_bytes());
        let uptime = u64::try_from(self.uptime.as_nanos()).unwrap_or(u64::MAX);
        for v in [
            uptime,
            self.capacity,
            self.contract.max_message as u64,
            c.messages,
            c.wake_syscalls,
            c.full,
            c.demotions,
            c.admitted,
            c.refused,
            c.departed,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for (_, n) in c.optional() {
            if n != 0 {
                out.extend_from_slice(&n.to_le_bytes());
            }
        }
        let (kind, a, b, name) = message_fields(&self.contract.message);
        let exe = exe_bytes(&p.exe);
        out.extend_from_slice(&[kind, 0]);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
        out.extend_from_slice(&(exe.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(exe);
        for r in rows {
            let exe = exe_bytes(&r.process.exe);
            out.extend_from_slice(&r.id.to_le_bytes());
            out.extend_from_slice(&r.process.pid.unwrap_or(0).to_le_bytes());
            out.extend_from_slice(&r.process.uid.to_le_bytes());
            out.extend_from_slice(&[mode_byte(r.requested), mode_byte(r.mode), r.parked as u8, 0]);
            out.extend_from_slice(&(exe.len() as u16).to_le_bytes());
            for v in [r.cursor, r.lag_bytes, r.lag_messages, r.received, r.lagged] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(exe);
        }
        debug_assert!(out.len() <= MAX_INFO);
        out
    }

    /// Reads an INFO record; anything else, or any byte out of place, is an error.
    pub(crate) fn decode(p: &[u8]) -> Result<TopicInfo, DecodeError> {
        let kind = handshake::check_header(p)?;
        if kind != KIND_INFO {
            return Err(DecodeError::Kind(kind));
        }
        if p.len() < FIXED || p.len() > MAX_INFO {
            return Err(DecodeError::Length(p.len()));
        }
        let mut r = Cursor { p, at: 8 };
        let flags = r.u16()?;
        if flags & !(FLAG_IMPORTED | FLAG_UPSTREAM_LOST | FLAG_EARLY_WRAPS) != 0 {
            return Err(DecodeError::Field("flags"));
        }
        let rows = r.u16()? as usize;
        let count = r.u32()? as usize;
        if rows > MAX_ROWS || rows > count || (rows < MAX_ROWS && rows != count) {
            return Err(DecodeError::Field("rows"));
        }
        let pid = r.u32()?;
        let uid = r.u32()?;
        let mut v = [0u64; 10];
        for slot in &mut v {
            *slot = r.u64()?;
        }
        let [
            uptime,
            capacity,
            max_message,
            messages,
            wake_syscalls,
            full,
            demotions,
            admitted,
        ] = [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
        let [refused, departed] = [v[8], v[9]];
        // Each optional counter is present exactly when not 0, so that every record has one
        // encoding.
        let mut optional = |flag: u16, field: &'static str| -> Result<u64, DecodeError> {
            if flags & flag == 0 {
                return Ok(0);
            }
            match r.u64()? {
                0 => Err(DecodeError::Field(field)),
                n => Ok(n),
            }
        };
        let upstream_lost = optional(FLAG_UPSTREAM_LOST, "upstream_lost")?;
        let early_wraps = optional(FLAG_EARLY_WRAPS, "early_wraps")?;
        let message = r.u8()?;
        if r.u8()? != 0 {
            return Err(DecodeError::Field("reserved"));
        }
        let name_len = r.u16()? as usize;
        let (a, b) = (r.u32()?, r.u32()?);
        let exe_len = r.u16()? as usize;
        let name = r.take(name_len)?;
        let exe = r.exe(exe_len)?;
        let message = message_type(message, a, b, name)?;
        let max_message =
            usize::try_from(max_message).map_err(|_| DecodeError::Field("max_message"))?;
        if let MessageType::Pod { size, .. } = message
            && size > max_message
        {
            return Err(DecodeError::Field("max_message"));
        }
        let mut subscribers = Vec::with_capacity(rows);
        for _ in 0..rows {
            let id = r.u64()?;
            let pid = r.u32()?;
            let uid = r.u32()?;
            let requested = decode_mode(r.u8()?)?;
            let mode = decode_mode(r.u8()?)?;
            if requested == Mode::Lossy && mode == Mode::Gating {
                return Err(DecodeError::Field("mode"));
            }
            let parked = match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::Field("parked")),
            };
            if r.u8()? != 0 {
                return Err(DecodeError::Field("reserved"));
            }
            let exe_len = r.u16()? as usize;
            let mut w = [0u64; 5];
            for slot in &mut w {
                *slot = r.u64()?;
            }
            let exe = r.exe(exe_len)?;
            if subscribers
                .last()
                .is_some_and(|last: &SubscriberRow| last.id >= id)
            {
                return Err(DecodeError::Field("id"));
            }
            subscribers.push(SubscriberRow {
                id,
                process: ProcessInfo {
                    pid: (pid != 0).then_some(pid),
                    uid,
                    exe,
                },
                requested,
                mode,
                parked,
                cursor: w[0],
                lag_bytes: w[1],
                lag_messages: w[2],
                received: w[3],
                lagged: w[4],
            });
        }
        if r.at != p.len() {
            return Err(DecodeError::Length(p.len()));
        }
        Ok(TopicInfo {
            publisher: ProcessInfo {
                pid: (pid != 0).then_some(pid),
                uid,
                exe,
            },
            uptime: Duration::from_nanos(uptime),
            contract: Contract::new(message, max_message),
            capacity,
            counters: TopicCounters {
                messages,
                wake_syscalls,
                full,
                demotions,
                admitted,
                refused,
                departed,
                upstream_lost,
                early_wraps,
            },
            imported: flags & FLAG_IMPORTED != 0,
            subscriber_count: count,
            subscribers,
        })
    }
}

/// An executable's path as a snapshot shows it: [`printable`], at most [`MAX_EXE`] bytes.
pub(crate) fn shown_exe(path: &Path) -> PathBuf {
    PathBuf::from(printable(path.as_os_str().as_bytes(), MAX_EXE))
}

/// An executable's bytes as the record carries them: at most [`MAX_EXE`], none when unknown.
fn exe_bytes(exe: &Option<PathBuf>) -> &[u8] {
    let bytes = exe.as_deref().map_or(&[][..], |p| p.as_os_str().as_bytes());
    &bytes[..bytes.len().min(MAX_EXE)]
}

fn mode_byte(mode: Mode) -> u8 {
    match mode {
        Mode::Gating => 1,
        Mode::Lossy => 2,
    }
}

fn decode_mode(b: u8) -> Result<Mode, DecodeError> {
    match b {
        1 => Ok(Mode::Gating),
        2 => Ok(Mode::Lossy),
        _ => Err(DecodeError::Field("mode")),
    }
}

/// Reads fields in order; running past the end is a length error.
struct Cursor<'a> {
    p: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.p.len())
            .ok_or(DecodeError::Length(self.p.len()))?;
        let bytes = &self.p[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut b = [0; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    fn exe(&mut self, len: usize) -> Result<Option<PathBuf>, DecodeError> {
        if len > MAX_EXE {
            return Err(DecodeError::Field("exe_len"));
        }
        let bytes = self.take(len)?;
        Ok((!bytes.is_empty()).then(|| PathBuf::from(printable(bytes, MAX_EXE))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(rows: usize) -> TopicInfo {
        TopicInfo {
            publisher: ProcessInfo {
                pid: Some(42),
                uid: 1000,
                exe: Some("/usr/bin/pub".into()),
            },
            uptime: Duration::from_millis(1500),
            contract: Contract::new(MessageType::pod_named::<u64>("Tick"), 4096),
            capacity: 1 << 20,
            counters: TopicCounters {
                messages: 7,
                wake_syscalls: 3,
                full: 1,
                demotions: 1,
                admitted: 4,
                refused: 2,
                departed: 1,
                upstream_lost: 0,
                early_wraps: 0,
            },
            imported: false,
            subscriber_count: rows,
            subscribers: (0..rows as u64)
                .map(|id| SubscriberRow {
                    id,
                    process: ProcessInfo {
                        pid: (id % 2 == 1).then_some(id as u32 + 100),
                        uid: 1000,
                        exe: (id % 3 != 0).then(|| PathBuf::from("/x".repeat(200))),
                    },
                    requested: Mode::Gating,
                    mode: if id % 2 == 0 {
                        Mode::Gating
                    } else {
                        Mode::Lossy
                    },
                    parked: id % 2 == 0,
                    cursor: id * 64,
                    lag_bytes: 64,
                    lag_messages: 1,
                    received: id,
                    lagged: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn round_trips_and_cuts_at_the_bounds() {
        for rows in [0, 1, 5] {
            let info = sample(rows);
            let mut cut = info.clone();
            for r in &mut cut.subscribers {
                r.process.exe = r.process.exe.as_ref().map(|e| {
                    PathBuf::from(std::ffi::OsStr::from_bytes(exe_bytes(&Some(e.clone()))))
                });
            }
            assert_eq!(TopicInfo::decode(&info.encode()), Ok(cut));
        }
        let mut imported = sample(2);
        imported.imported = true;
        imported.counters.upstream_lost = 1 << 40;
        imported.counters.early_wraps = 5;
        let back = TopicInfo::decode(&imported.encode()).unwrap();
        assert!(back.imported);
        assert_eq!(back.counters, imported.counters);
        let bytes = sample(MAX_ROWS + 10).encode();
        assert!(bytes.len() <= MAX_INFO);
        let back = TopicInfo::decode(&bytes).unwrap();
        assert_eq!(back.subscriber_count, MAX_ROWS + 10);
        assert_eq!(back.subscribers.len(), MAX_ROWS);
        assert!(back.subscribers.iter().all(|r| {
            r.process
                .exe
                .as_ref()
                .is_none_or(|e| e.as_os_str().len() == MAX_EXE)
        }));
    }

    #[test]
    fn a_topic_with_neither_flag_sends_the_record_without_them() {
        let plain = sample(1).encode();
        assert_eq!(plain[8..10], [0, 0]);
        let mut lossy = sample(1);
        lossy.counters.upstream_lost = 9;
        let lossy = lossy.encode();
        assert_eq!(lossy[8..10], [FLAG_UPSTREAM_LOST as u8, 0]);
        assert_eq!(lossy.len(), plain.len() + 8);
        let at = 8 + 16 + 10 * 8;
        assert_eq!(lossy[at..at + 8], 9u64.to_le_bytes());
        // The counter is there exactly when it is not 0: one encoding per snapshot.
        let mut zero = lossy.clone();
        zero[at..at + 8].fill(0);
        assert_eq!(
            TopicInfo::decode(&zero),
            Err(DecodeError::Field("upstream_lost"))
        );
        let mut wrapped = sample(1);
        wrapped.counters.early_wraps = 11;
        let wrapped = wrapped.encode();
        assert_eq!(wrapped[8..10], [FLAG_EARLY_WRAPS as u8, 0]);
        assert_eq!(wrapped[at..at + 8], 11u64.to_le_bytes());
        let mut both = sample(1);
        both.counters.upstream_lost = 9;
        both.counters.early_wraps = 11;
        let both = both.encode();
        assert_eq!(both.len(), plain.len() + 16);
        assert_eq!(both[at + 8..at + 16], 11u64.to_le_bytes());
        let mut unknown = plain.clone();
        unknown[8] = 8;
        assert_eq!(
            TopicInfo::decode(&unknown),
            Err(DecodeError::Field("flags"))
        );
    }

    /// Whether an executable of `info` is none of [`sample`]'s: a flip landed in one.
    fn flipped_exe(info: &TopicInfo) -> bool {
        let long = "/x".repeat(200);
        let ours = [Some("/usr/bin/pub"), Some(&long[..MAX_EXE]), None];
        let rows = info.subscribers.iter().map(|r| &r.process);
        std::iter::once(&info.publisher)
            .chain(rows)
            .any(|p| !ours.contains(&p.exe.as_deref().and_then(Path::to_str)))
    }

    #[test]
    fn executables_decode_to_printable_text() {
        let mut info = sample(2);
        let hostile = |name: &[u8]| {
            let mut path = b"/tmp/".to_vec();
            path.extend_from_slice(name);
            Some(PathBuf::from(std::ffi::OsStr::from_bytes(&path)))
        };
        info.publisher.exe = hostile(b"pub\x1b]0;owned\x07\x1b[2J");
        info.subscribers[0].process.exe = hostile(b"sub\xc2\x9b2J\x7f\xff\xc3\xa9");
        info.subscribers[1].process.exe = hostile(&[0x1b; MAX_EXE]);
        let back = TopicInfo::decode(&info.encode()).unwrap();
        let shown = |p: &ProcessInfo| p.exe.as_ref().unwrap().to_str().unwrap().to_owned();
        assert_eq!(
            shown(&back.publisher),
            r"/tmp/pub\u{1b}]0;owned\u{7}\u{1b}[2J"
        );
        assert_eq!(
            shown(&back.subscribers[0].process),
            "/tmp/sub\\u{9b}2J\\u{7f}\u{fffd}é"
        );
        let long = shown(&back.subscribers[1].process);
        assert!(long.len() <= MAX_EXE, "{long}");
        assert_eq!(
            long,
            format!("/tmp/{}", r"\u{1b}".repeat((MAX_EXE - 5) / 6))
        );
        // As the publisher gathers them: already what the record carries.
        assert_eq!(
            shown_exe(info.publisher.exe.as_deref().unwrap()),
            back.publisher.exe.unwrap()
        );
    }

    #[test]
    fn refuses_every_truncation_extension_and_bad_field() {
        let mut flagged = sample(2);
        flagged.imported = true;
        flagged.counters.upstream_lost = 3;
        flagged.counters.early_wraps = 4;
        for good in [sample(3).encode(), flagged.encode()] {
            for len in 0..good.len() {
                assert!(TopicInfo::decode(&good[..len]).is_err(), "{len}");
            }
            let mut longer = good.clone();
            longer.push(0);
            assert!(TopicInfo::decode(&longer).is_err());
            for byte in 0..good.len() {
                for bit in 0..8 {
                    let mut p = good.clone();
                    p[byte] ^= 1 << bit;
                    if let Ok(info) = TopicInfo::decode(&p) {
                        // Whatever is accepted is exactly what it encodes to, but for an
                        // executable made printable (a flip to a control character or a
                        // byte that is not UTF-8), which is then shown as it encodes.
                        let again = info.encode();
                        assert!(again == p || flipped_exe(&info), "byte {byte} bit {bit}");
                        assert_eq!(TopicInfo::decode(&again), Ok(info));
                    }
                }
            }
        }
        let demoted_backwards = {
            let mut info = sample(1);
            info.subscribers[0].requested = Mode::Lossy;
            info.subscribers[0].mode = Mode::Gating;
            info.encode()
        };
        assert_eq!(
            TopicInfo::decode(&demoted_backwards),
            Err(DecodeError::Field("mode"))
        );
    }
}
