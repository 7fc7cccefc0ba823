//! The frame decoder and the reader against random frames in a valid ring: every frame header
//! gives a frame inside the data area and the committed range, or a typed error; a reader over any
//! data area returns messages in sequence and in bounds, keeps exact counts, and stops.
#![cfg(not(shmcast_loom))]

use core::mem::offset_of;
use shmcast_core::frame::{FRAME_HEADER_LEN, FRAME_TAG, FrameError, Kind, decode_header};
use shmcast_core::layout::{ControlBlock, RingHeader};
use shmcast_core::{
    CONTROL_BLOCK_LEN, HEADER_LEN, Mode, ReadError, Reader, Region, RingConfig, Start, Writer,
    validate_ring,
};

use shmcast_core::testing::Rng;

fn iterations(full: u64) -> u64 {
    if cfg!(miri) {
        return 40;
    }
    std::env::var("SHMCAST_FRAME_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(full)
}

#[allow(clippy::mut_from_ref)] // test scaffolding over a heap region no one else touches
fn bytes(r: &Region) -> &mut [u8] {
    // SAFETY: heap region owned by this test, no other reference alive while we mutate it.
    unsafe { std::slice::from_raw_parts_mut(r.as_ptr(), r.len()) }
}

fn get_u64(r: &Region, off: usize) -> u64 {
    u64::from_ne_bytes(bytes(r)[off..off + 8].try_into().unwrap())
}

fn put_u64(r: &Region, off: usize, v: u64) {
    bytes(r)[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

fn put_u32(r: &Region, off: usize, v: u32) {
    bytes(r)[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}

/// What a frame header must decode to, written from the format's definition with wide
/// arithmetic instead of the decoder's checked steps.
fn reference(
    cfg: &RingConfig,
    meta: u64,
    pos: u64,
    committed: u64,
) -> Result<(Kind, u32, u64), FrameError> {
    let (cap, max) = (cfg.capacity(), cfg.max_payload() as u32);
    let len = meta as u32;
    let room = cap - pos % cap;
    if meta >> 40 != FRAME_TAG {
        return Err(FrameError::BadMeta(meta));
    }
    let (kind, span) = match (meta >> 32) & 0xff {
        1 if len > max => return Err(FrameError::TooLong { len, max }),
        1 => (Kind::Message, 16 + u64::from(len).div_ceil(16) * 16),
        2 => (Kind::Padding, room),
        _ => return Err(FrameError::BadMeta(meta)),
    };
    if kind == Kind::Message && span > room {
        return Err(FrameError::CrossesEnd);
    }
    if kind == Kind::Padding && 16 + u64::from(len) != room {
        return Err(FrameError::BadPadding);
    }
    if u128::from(pos) + u128::from(span) > u128::from(committed) {
        return Err(FrameError::BeyondCommit);
    }
    Ok((kind, len, span))
}

/// A word near an interesting value, or anything.
fn around(rng: &mut Rng, values: &[u64]) -> u64 {
    let base = values[rng.below(values.len() as u64) as usize];
    match rng.below(4) {
        0 => rng.next(),
        1 => base,
        2 => base.wrapping_add(rng.below(33)),
        _ => base.wrapping_sub(rng.below(33)),
    }
}

#[test]
fn decoded_headers_match_the_reference_and_stay_in_bounds() {
    let mut rng = Rng(0x5eed_f4a3_0000_0001);
    let n = iterations(2_000_000);
    let mut accepted = [0u64; 2];
    for _ in 0..n {
        let cap = 64u64 << rng.below(35); // every capacity up to MAX_CAPACITY
        let limit = RingConfig::payload_limit(cap);
        let max = around(&mut rng, &[0, 16, limit]).min(limit);
        let cfg = RingConfig::new(cap, max).unwrap();
        let pos = around(&mut rng, &[0, cap, u64::MAX, u64::MAX - cap, 1 << 63]) & !15;
        let room = cap - pos % cap;
        let kind = [1, 2, rng.below(256)][rng.below(3) as usize];
        let len = around(&mut rng, &[0, max, room - 16, u32::MAX.into()]) as u32;
        let meta = match rng.below(8) {
            0 => rng.next(),
            _ => FRAME_TAG << 40 | kind << 32 | u64::from(len),
        };
        let committed = match rng.below(3) {
            0 => rng.next(),
            1 => u64::MAX,
            _ => pos.wrapping_add(around(&mut rng, &[0, room, cap])),
        };
        let got = decode_header(&cfg, meta, pos, committed);
        assert_eq!(
            got,
            reference(&cfg, meta, pos, committed),
            "cap {cap} max {max} meta {meta:#x} pos {pos} committed {committed}"
        );
        if let Ok((kind, len, span)) = got {
            // The bounds the reader's unchecked offsets rely on.
            assert!(span >= FRAME_HEADER_LEN as u64 && span % 16 == 0 && span <= room);
            assert!(FRAME_HEADER_LEN as u64 + u64::from(len) <= span);
            assert!(pos.checked_add(span).is_some_and(|end| end <= committed));
            accepted[(kind == Kind::Padding) as usize] += 1;
        }
    }
    eprintln!("{n} headers: {accepted:?} messages and padding accepted");
    assert!(
        cfg!(miri) || accepted.iter().all(|&a| a > 0),
        "both kinds accepted sometimes: {accepted:?}"
    );
}

/// A ring a real writer filled, with the control block of one admitted subscriber.
struct Template {
    ring: Region,
    cb: Region,
    /// Every message sent, by sequence number.
    sent: Vec<Vec<u8>>,
    closed: bool,
}

fn payload(seq: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seq as usize * 31 + i * 7) as u8)
        .collect()
}

/// History before the admission (so the ring has wrapped and holds padding), more after it, in
/// either mode and from either end.
fn template(rng: &mut Rng) -> Template {
    let cap = 64u64 << rng.below(4);
    let limit = RingConfig::payload_limit(cap);
    let max = [limit, rng.below(limit + 1)][rng.below(2) as usize];
    let cfg = RingConfig::new(cap, max).unwrap();
    let mut w: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg).unwrap();
    let mut sent = Vec::new();
    let mut send = |w: &mut Writer<()>, rng: &mut Rng| {
        let p = payload(sent.len() as u64, rng.below(max + 1) as usize);
        let ok = w.send(&p, |_| {}).is_ok();
        if ok {
            sent.push(p);
        }
        ok
    };
    for _ in 0..rng.below(16) {
        send(&mut w, rng);
    }
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    let mode = [Mode::Gating, Mode::Lossy][rng.below(2) as usize];
    let start = [Start::Newest, Start::Oldest][rng.below(2) as usize];
    w.admit(cb.clone(), mode, start, ()).unwrap();
    for _ in 0..rng.below(16) {
        if !send(&mut w, rng) {
            break; // full: the gating subscriber holds the rest back
        }
    }
    let closed = rng.below(4) == 0;
    if closed {
        w.close(|_| {});
    }
    Template {
        ring: w.ring().clone(),
        cb,
        sent,
        closed,
    }
}

/// What a reader returned before it stopped.
struct Outcome {
    messages: Vec<(u64, Vec<u8>)>,
    lagged: u64,
    end: ReadError,
}

/// Reads until the reader stops, mixing `try_peek` and `try_copy`, and checks every result
/// against what the reader may return. `None` if the reader refuses to attach.
fn drive(ring: &Region, cb: &Region, rng: &mut Rng) -> Option<Outcome> {
    let committed = get_u64(ring, offset_of!(RingHeader, committed));
    let max = validate_ring(ring).ok()?.max_payload();
    let mut r = Reader::attach(ring.clone(), cb.clone()).ok()?;
    let mut out = Outcome {
        messages: Vec::new(),
        lagged: 0,
        end: ReadError::Empty,
    };
    let mut lag_events = 0;
    let mut demotions = 0;
    let mut buf = Vec::new();
    // Every message or lag report moves the reader at least one 16-byte slot towards
    // `committed`, which is at most one ring ahead, and nobody writes meanwhile.
    let bound = (ring.len() - HEADER_LEN) / 16 + 3;
    for step in 0.. {
        assert!(step < bound, "the reader keeps returning without moving");
        let before = r.next_seq();
        let got = if r.is_gating() && rng.below(2) == 0 {
            r.try_peek().map(|f| {
                assert_eq!(f.pos() % 16, 0);
                assert!(
                    f.pos() + 16 + f.len() as u64 <= committed,
                    "frame beyond commit"
                );
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
                assert!(len <= max && buf.len() == len);
                out.messages.push((seq, buf.clone()));
            }
            Err(ReadError::Lagged(n)) => {
                assert!(n > 0);
                assert_eq!(
                    r.next_seq(),
                    before + n,
                    "a lag report names every skipped message"
                );
                out.lagged += n;
                lag_events += 1;
            }
            Err(ReadError::Demoted) => {
                demotions += 1;
                assert!(demotions == 1 && !r.is_gating());
            }
            Err(e) => {
                out.end = e;
                break;
            }
        }
    }
    let stats = r.stats();
    assert_eq!(stats.received, out.messages.len() as u64);
    assert_eq!((stats.lagged, stats.lag_events), (out.lagged, lag_events));
    if r.prepare_park() {
        r.unpark();
    }
    Some(out)
}

#[test]
fn readers_over_untouched_rings_read_exactly_what_was_sent() {
    let mut rng = Rng(0x5eed_f4a3_0000_0002);
    for i in 0..iterations(20_000) {
        let t = template(&mut rng);
        let out = drive(&t.ring, &t.cb, &mut rng).expect("a writer's ring attaches");
        let start_seq = get_u64(&t.cb, offset_of!(ControlBlock, start_seq));
        let first = start_seq + out.lagged;
        let seqs: Vec<u64> = out.messages.iter().map(|m| m.0).collect();
        assert_eq!(
            seqs,
            (first..t.sent.len() as u64).collect::<Vec<_>>(),
            "case {i}"
        );
        for (seq, p) in &out.messages {
            assert_eq!(p, &t.sent[*seq as usize], "case {i} seq {seq}");
        }
        let end = if t.closed {
            ReadError::Closed
        } else {
            ReadError::Empty
        };
        assert_eq!(out.end, end, "case {i}");
    }
}

#[test]
fn readers_over_mutated_frames_stay_in_sequence_and_stop() {
    let mut rng = Rng(0x5eed_f4a3_0000_0003);
    let templates: Vec<Template> = (0..if cfg!(miri) { 4 } else { 256 })
        .map(|_| template(&mut rng))
        .collect();
    let (mut delivered, mut corrupt) = (0u64, 0u64);
    for _ in 0..iterations(1_000_000) {
        let t = &templates[rng.below(templates.len() as u64) as usize];
        let ring = Region::heap(t.ring.len());
        bytes(&ring).copy_from_slice(bytes(&t.ring));
        let cb = Region::heap(t.cb.len());
        bytes(&cb).copy_from_slice(bytes(&t.cb));
        let cap = (ring.len() - HEADER_LEN) as u64;
        let start_pos = get_u64(&cb, offset_of!(ControlBlock, start_pos));
        for _ in 0..1 + rng.below(3) {
            // A frame boundary: the reader's first frame, or any 16-byte slot.
            let slot = match rng.below(2) {
                0 => start_pos % cap,
                _ => rng.below(cap / 16) * 16,
            } as usize
                + HEADER_LEN;
            let room = cap - (slot - HEADER_LEN) as u64;
            match rng.below(6) {
                0 => {
                    let kind = [1, 2, rng.below(256)][rng.below(3) as usize];
                    let len = around(&mut rng, &[0, room - 16, cap / 2, u32::MAX.into()]);
                    put_u64(
                        &ring,
                        slot,
                        FRAME_TAG << 40 | kind << 32 | (len & 0xffff_ffff),
                    );
                }
                1 => {
                    let seq = get_u64(&ring, slot + 8);
                    put_u64(&ring, slot + 8, around(&mut rng, &[seq, 0, u64::MAX]));
                }
                2 => {
                    let at = HEADER_LEN + rng.below(cap) as usize;
                    bytes(&ring)[at] ^= 1 << rng.below(8);
                }
                3 => {
                    let field = [
                        offset_of!(RingHeader, committed),
                        offset_of!(RingHeader, reserved),
                        offset_of!(RingHeader, tail),
                    ][rng.below(3) as usize];
                    let v = get_u64(&ring, field);
                    put_u64(
                        &ring,
                        field,
                        around(&mut rng, &[v, v.wrapping_add(cap), 0, u64::MAX]),
                    );
                }
                4 => {
                    let field = [
                        offset_of!(ControlBlock, start_pos),
                        offset_of!(ControlBlock, start_seq),
                    ][rng.below(2) as usize];
                    let v = get_u64(&cb, field);
                    put_u64(
                        &cb,
                        field,
                        around(&mut rng, &[v, v.wrapping_add(cap), u64::MAX]),
                    );
                }
                _ => {
                    put_u32(&cb, offset_of!(ControlBlock, mode), rng.below(4) as u32);
                    put_u32(&ring, offset_of!(RingHeader, closed), rng.below(2) as u32);
                }
            }
        }
        if let Some(out) = drive(&ring, &cb, &mut rng) {
            delivered += out.messages.len() as u64;
            corrupt += matches!(out.end, ReadError::Corrupt(_)) as u64;
        }
    }
    eprintln!("mutated rings: {delivered} messages delivered, {corrupt} reads ended corrupt");
    assert!(
        cfg!(miri) || (delivered > 0 && corrupt > 0),
        "mutations both kept and broke frames: {delivered} delivered, {corrupt} corrupt"
    );
}

/// The payload limit of any capacity, valid or not, is a number (no arithmetic overflow): a
/// capacity too small for two frames allows nothing, and `RingConfig::new` then refuses it.
#[test]
fn payload_limits_of_tiny_capacities_are_zero() {
    for cap in [0, 1, 16, 31, 32, 33] {
        assert_eq!(RingConfig::payload_limit(cap), 0, "capacity {cap}");
        assert!(RingConfig::new(cap, 0).is_err(), "capacity {cap}");
    }
    assert_eq!(RingConfig::payload_limit(64), 16);
}
