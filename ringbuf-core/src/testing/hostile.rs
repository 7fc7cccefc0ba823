//! The writer against subscribers that write anything into their control blocks.

use crate::layout::{CONTROL_BLOCK_LEN, RingConfig};
use crate::reader::{ReadError, Reader};
use crate::region::Region;
use crate::reservation::ReserveError;
use crate::sync::Ordering;
use crate::writer::{Mode, Start, Writer, WriterStats};

/// Checks, by panicking, what the writer promises whatever the subscribers write into their
/// control blocks. `input` drives a writer (ring of 1 KiB, messages up to 200 bytes) with one
/// honest gating reader and two control blocks whose every word the input may set: one admitted
/// gating, one lossy. Its bytes are a program of steps: publish a message of the next byte's
/// length, write a word of a hostile block (cursor, `parked`, sequence numbers, counters, the
/// publisher's own line), drain the honest reader, or look at the subscribers and announce and
/// withdraw a wait for space. Whatever the hostile blocks hold: no panic or overflow, the honest
/// reader receives every message in order and intact and stays gating, and a full ring is
/// always freed by the honest reader's draining plus, at most, the demotion of the hostile
/// gating subscriber (what a stall bound does). Returns the writer's statistics, so that a
/// caller can tell which paths its inputs reached.
pub fn check_hostile_control_blocks(input: &[u8]) -> WriterStats {
    fn payload(seq: u64, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (seq as u8).wrapping_mul(31).wrapping_add(i as u8))
            .collect()
    }

    /// Receives everything readable; returns the next expected sequence number.
    fn drain(reader: &mut Reader, mut expected: u64, buf: &mut Vec<u8>) -> u64 {
        loop {
            match reader.try_peek() {
                Ok(frame) => {
                    assert_eq!(frame.seq(), expected, "the honest reader's order");
                    reader.read_payload(&frame, buf);
                    assert_eq!(*buf, payload(expected, buf.len()), "message {expected}");
                    reader.release(frame);
                    expected += 1;
                }
                Err(ReadError::Empty) => return expected,
                Err(e) => panic!("the honest reader got {e:?}"),
            }
        }
    }

    let cfg = RingConfig::new(1024, 200).expect("a valid configuration");
    let mut writer: Writer<()> =
        Writer::new(Region::heap(cfg.region_len()), cfg).expect("a fresh ring");
    let honest_cb = Region::heap(CONTROL_BLOCK_LEN);
    let honest_id = writer
        .admit(honest_cb.clone(), Mode::Gating, Start::Newest, ())
        .expect("admitted");
    let mut honest = Reader::attach(writer.ring().clone(), honest_cb).expect("attached");
    let hostile = [
        Region::heap(CONTROL_BLOCK_LEN),
        Region::heap(CONTROL_BLOCK_LEN),
    ];
    let gating = writer
        .admit(hostile[0].clone(), Mode::Gating, Start::Newest, ())
        .expect("admitted");
    writer
        .admit(hostile[1].clone(), Mode::Lossy, Start::Oldest, ())
        .expect("admitted");

    let mut bytes = input.iter().copied();
    let mut next = move || bytes.next();
    let (mut expected, mut buf) = (0u64, Vec::new());
    while let Some(op) = next() {
        match op % 4 {
            0 => {
                let len = usize::from(next().unwrap_or(0)) % 201;
                let seq = writer.next_seq();
                let message = payload(seq, len);
                match writer.send(&message, |_| {}) {
                    Ok(_) => {}
                    Err(ReserveError::Full { .. }) => {
                        expected = drain(&mut honest, expected, &mut buf);
                        if writer.send(&message, |_| {}).is_err() {
                            writer.demote(gating);
                            writer.send(&message, |_| {}).expect(
                                "room once the honest reader drained and the rest is lossy",
                            );
                        }
                    }
                    Err(e) => panic!("publishing {len} bytes: {e:?}"),
                }
            }
            1 => {
                let block = &hostile[usize::from(next().unwrap_or(0)) % 2];
                let off = usize::from(next().unwrap_or(0)) % (CONTROL_BLOCK_LEN / 8) * 8;
                let value = match next().unwrap_or(0) % 4 {
                    // Near what the writer knows: around the committed position or sequence.
                    0 => writer
                        .committed()
                        .wrapping_add(u64::from(next().unwrap_or(0)) * 16),
                    1 => writer
                        .committed()
                        .wrapping_sub(u64::from(next().unwrap_or(0)) * 16),
                    2 => [0, 1, 2, u64::MAX, 1 << 63][usize::from(next().unwrap_or(0)) % 5],
                    _ => {
                        let mut word = [0u8; 8];
                        for b in &mut word {
                            *b = next().unwrap_or(0);
                        }
                        u64::from_le_bytes(word)
                    }
                };
                // The subscriber's store, as another process makes it: one word, any value.
                block.u64_at(off).store(value, Ordering::Relaxed);
            }
            2 => expected = drain(&mut honest, expected, &mut buf),
            _ => {
                let seen = writer.subscribers().count();
                assert_eq!(seen, 3, "nobody leaves by writing its block");
                let _ = writer.slowest_gating();
                let len = usize::from(next().unwrap_or(0)) % 201;
                let _ = writer.prepare_wait_for_space(len).expect("a valid length");
                writer.end_wait_for_space();
            }
        }
    }
    let expected = drain(&mut honest, expected, &mut buf);
    assert_eq!(
        expected,
        writer.next_seq(),
        "the honest reader received everything"
    );
    let info = writer
        .subscribers()
        .find(|s| s.id == honest_id)
        .expect("still admitted");
    assert_eq!(
        info.mode,
        Mode::Gating,
        "the honest reader is never demoted"
    );
    writer.stats()
}
