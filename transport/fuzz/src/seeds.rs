//! Valid inputs for every target, from real writers and encoders: the fuzzer starts from rings a
//! writer made (wrapped, with padding, lapped readers, closed streams) and from every kind of
//! handshake packet, and mutates from there.

use crate::input::{FrameInput, bytes_of, join_ring_input};
use shmcast::test_support::{sample_hellos, sample_replies};
use shmcast_core::{CONTROL_BLOCK_LEN, Mode, Region, RingConfig, Start, Writer};
use std::path::Path;
use std::{fs, io};

/// The shape of a ring a writer fills.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Data area bytes.
    pub capacity: u64,
    /// Largest payload.
    pub max_payload: u64,
    /// How the subscriber is admitted.
    pub mode: Mode,
    /// Where it starts.
    pub start: Start,
    /// Messages sent before the admission.
    pub before: u64,
    /// Messages sent after it (fewer if a gating subscriber fills the ring).
    pub after: u64,
    /// Whether the stream is closed at the end.
    pub closed: bool,
}

/// The shapes the seeds are made of.
pub const SHAPES: [Shape; 8] = [
    shape(64, 16, Mode::Lossy, Start::Newest, 0, 0, false),
    shape(64, 16, Mode::Gating, Start::Newest, 0, 3, false),
    shape(128, 48, Mode::Lossy, Start::Oldest, 9, 2, true),
    shape(256, 96, Mode::Gating, Start::Oldest, 11, 5, false),
    shape(256, 96, Mode::Lossy, Start::Newest, 3, 20, false),
    shape(256, 0, Mode::Gating, Start::Newest, 40, 16, true),
    shape(512, 240, Mode::Lossy, Start::Oldest, 30, 7, false),
    shape(512, 100, Mode::Gating, Start::Oldest, 25, 12, true),
];

const fn shape(
    capacity: u64,
    max_payload: u64,
    mode: Mode,
    start: Start,
    before: u64,
    after: u64,
    closed: bool,
) -> Shape {
    Shape {
        capacity,
        max_payload,
        mode,
        start,
        before,
        after,
        closed,
    }
}

/// A ring a writer filled as `shape` says, and the admitted subscriber's control block.
pub fn writer_ring(shape: &Shape) -> (Region, Region) {
    let cfg = RingConfig::new(shape.capacity, shape.max_payload).expect("a valid shape");
    let mut writer: Writer<()> =
        Writer::new(Region::heap(cfg.region_len()), cfg).expect("a fresh ring");
    let mut seq = 0u64;
    let mut send = |writer: &mut Writer<()>| {
        let len = (seq * 37 % (shape.max_payload + 1)) as usize;
        let payload: Vec<u8> = (0..len).map(|i| (seq as usize * 31 + i) as u8).collect();
        seq += 1;
        writer.send(&payload, |_| {}).is_ok()
    };
    for _ in 0..shape.before {
        send(&mut writer);
    }
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    writer
        .admit(cb.clone(), shape.mode, shape.start, ())
        .expect("a whole control block");
    for _ in 0..shape.after {
        if !send(&mut writer) {
            break;
        }
    }
    if shape.closed {
        writer.close(|_| {});
    }
    (writer.ring().clone(), cb)
}

/// Seeds for `ring_validator`: every shape whole, and a few cut short.
pub fn ring_validator() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for shape in &SHAPES {
        let (ring, cb) = writer_ring(shape);
        let input = join_ring_input(&bytes_of(&cb), &bytes_of(&ring));
        out.push(input[..CONTROL_BLOCK_LEN + 40].to_vec());
        out.push(input[..input.len() - 1].to_vec());
        out.push(input);
    }
    out
}

/// Seeds for `frame_reader`: every shape, read with `try_copy` only and with `try_peek` only.
pub fn frame_reader() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for shape in &SHAPES {
        let (ring, cb) = writer_ring(shape);
        for schedule in [0, u64::MAX] {
            out.push(FrameInput::from_regions(&ring, &cb, schedule).encode());
        }
    }
    out
}

/// Seeds for `handshake`: every HELLO and sample replies.
pub fn handshake() -> Vec<Vec<u8>> {
    let mut out = sample_hellos();
    out.extend(sample_replies());
    out
}

/// Seeds for `introspection`: the INSPECT request and sample INFO records.
pub fn introspection() -> Vec<Vec<u8>> {
    shmcast::test_support::sample_introspection()
}

/// Seeds for `control_blocks`: programs that publish until the ring wraps, with the hostile
/// gating cursor left behind, kept at the committed position, or thrown far off, and `parked`
/// words set between publishes.
pub fn control_blocks() -> Vec<Vec<u8>> {
    // Steps: [0, len] publishes, [1, block, word, kind, operand..] writes a word of a hostile
    // block (word 16: cursor, 32: parked), [2] drains the honest reader, [3, len] looks and
    // announces a wait for space.
    let publish = |n: usize, len: u8| (0..n).flat_map(move |_| [0, len, 2]).collect::<Vec<u8>>();
    let mut left_behind = publish(40, 150);
    left_behind.push(3);
    left_behind.push(100);
    let mut kept_up = Vec::new();
    for i in 0..40u8 {
        kept_up.extend([0, i.wrapping_mul(7), 2, 1, 0, 16, 0, 0]);
    }
    let mut far_off = publish(3, 60);
    far_off.extend([1, 0, 16, 2, 3]);
    far_off.extend(publish(20, 120));
    let mut parked = Vec::new();
    for i in 0..20u8 {
        parked.extend([1, i % 2, 32, 2, i % 5, 0, 90, 2]);
    }
    vec![left_behind, kept_up, far_off, parked]
}

/// Writes each target's seeds to `dir/<target>/seed-<n>`; returns how many files it wrote.
pub fn write_all(dir: &Path) -> io::Result<usize> {
    let mut written = 0;
    for (target, seeds) in [
        ("ring_validator", ring_validator()),
        ("frame_reader", frame_reader()),
        ("handshake", handshake()),
        ("introspection", introspection()),
        ("control_blocks", control_blocks()),
    ] {
        let sub = dir.join(target);
        fs::create_dir_all(&sub)?;
        for (i, seed) in seeds.iter().enumerate() {
            fs::write(sub.join(format!("seed-{i:02}")), seed)?;
            written += 1;
        }
    }
    Ok(written)
}
