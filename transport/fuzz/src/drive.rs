//! Reads a ring until the reader stops, and checks everything it returns against what a reader
//! may return over memory nobody writes meanwhile.

use crate::input::{bytes_of, word};
use core::mem::offset_of;
use shmcast_core::layout::RingHeader;
use shmcast_core::{LayoutError, ReadError, Reader, Region, validate_ring};

/// What a reader returned before it stopped.
#[derive(Debug)]
pub struct Outcome {
    /// Messages returned.
    pub messages: u64,
    /// Sum of the `Lagged` reports.
    pub lagged: u64,
    /// What stopped it: `Empty`, `Closed`, `Evicted` or `Corrupt`.
    pub end: ReadError,
}

/// Attaches a reader to `ring` and `cb` and reads until it stops, using `try_peek` (then
/// `read_payload` and `release`) or `try_copy` as bit `i % 64` of `schedule` says for the `i`-th
/// read of a gating reader. Panics on anything a reader must never do: a message out of sequence,
/// longer than the maximum or beyond `committed`, a lag count that disagrees with the sequence
/// numbers, counters that disagree with the results, or reads that never stop.
pub fn drive(
    ring: Region,
    cb: Region,
    schedule: u64,
    writer_gone: bool,
) -> Result<Outcome, LayoutError> {
    let committed = word(&bytes_of(&ring), offset_of!(RingHeader, committed));
    let cfg = validate_ring(&ring);
    let mut r = Reader::attach(ring, cb)?;
    let cfg = cfg.expect("attach validates the ring");
    if writer_gone {
        r.set_writer_gone();
    }
    let mut out = Outcome {
        messages: 0,
        lagged: 0,
        end: ReadError::Empty,
    };
    let (mut lag_events, mut demotions, mut last_end) = (0, 0, 0);
    let mut buf = Vec::new();
    // Nobody writes: each message or lag report moves the reader at least one 16-byte slot
    // towards `committed`, and after the one resynchronisation that can succeed the reader is
    // within one ring of it.
    let bound = cfg.capacity() / 16 + 3;
    for step in 0.. {
        assert!(step < bound, "the reader keeps returning without moving");
        let before = r.next_seq();
        let got = if r.is_gating() && schedule >> (step % 64) & 1 != 0 {
            r.try_peek().map(|f| {
                assert!(
                    f.pos() % 16 == 0 && f.pos() >= last_end,
                    "frame at {}",
                    f.pos()
                );
                assert!(
                    f.pos() + 16 + f.len() as u64 <= committed,
                    "frame beyond commit"
                );
                last_end = f.pos() + 16 + f.len() as u64;
                r.read_payload(&f, &mut buf);
                assert_eq!(buf.len(), f.len());
                let (seq, len) = (f.seq(), f.len());
                r.release(f);
                (seq, len)
            })
        } else {
            r.try_copy(&mut buf).map(|c| (c.seq, c.len))
        };
        match got {
            Ok((seq, len)) => {
                assert_eq!(seq, before, "messages arrive in sequence");
                assert_eq!(r.next_seq(), seq.wrapping_add(1));
                assert!(len <= cfg.max_payload() && buf.len() == len);
                out.messages += 1;
            }
            Err(ReadError::Lagged(n)) => {
                assert!(n > 0, "a lag report names at least one message");
                assert_eq!(r.next_seq(), before + n, "and every skipped one");
                out.lagged += n;
                lag_events += 1;
            }
            Err(ReadError::Demoted) => {
                demotions += 1;
                assert!(demotions == 1 && !r.is_gating(), "demoted once, then lossy");
            }
            Err(end) => {
                out.end = end;
                break;
            }
        }
    }
    let stats = r.stats();
    assert_eq!(stats.received, out.messages);
    assert_eq!((stats.lagged, stats.lag_events), (out.lagged, lag_events));
    if r.prepare_park() {
        r.unpark();
    }
    Ok(out)
}
