//! The validators against random and bit-flipped regions: any bytes give a valid view or a typed
//! error, never a panic or an out-of-bounds access.
#![cfg(not(shmcast_loom))]

use shmcast_core::{
    CONTROL_BLOCK_LEN, HEADER_LEN, Mode, Reader, Region, RingConfig, Start, Writer, validate_ring,
};

use shmcast_core::testing::Rng;

fn iterations() -> u64 {
    if cfg!(miri) {
        return 50;
    }
    std::env::var("SHMCAST_VALIDATOR_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

#[allow(clippy::mut_from_ref)] // test scaffolding over a heap region no one else touches
fn bytes(r: &Region) -> &mut [u8] {
    // SAFETY: heap region owned by this test, no other reference alive while we mutate it.
    unsafe { std::slice::from_raw_parts_mut(r.as_ptr(), r.len()) }
}

/// A live ring with traffic, two readers and a control block to corrupt.
fn template() -> (Region, Region) {
    let cfg = RingConfig::new(256, 96).unwrap();
    let mut w: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg).unwrap();
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    w.admit(cb.clone(), Mode::Lossy, Start::Newest, ()).unwrap();
    for i in 0..7u8 {
        w.send(&vec![i; 10 + 9 * i as usize], |_| {}).unwrap();
    }
    (w.ring().clone(), cb)
}

/// Drives a reader over whatever the region holds until it stops making progress.
fn exercise(ring: &Region, cb: &Region) {
    let ring_copy = Region::heap(ring.len());
    bytes(&ring_copy).copy_from_slice(bytes(ring));
    let cb_copy = Region::heap(cb.len());
    bytes(&cb_copy).copy_from_slice(bytes(cb));
    if validate_ring(&ring_copy).is_err() {
        return;
    }
    let Ok(mut r) = Reader::attach(ring_copy, cb_copy) else {
        return;
    };
    let mut buf = Vec::new();
    for _ in 0..16 {
        let _ = r.try_copy(&mut buf);
        let _ = r.try_peek().map(|f| r.release(f));
        let _ = r.prepare_park();
    }
}

#[test]
fn random_and_mutated_regions_never_panic() {
    let (ring, cb) = template();
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let n = iterations();
    let mut accepted = 0u64;
    let scratch = Region::heap(ring.len());
    let scratch_cb = Region::heap(cb.len());
    for i in 0..n {
        let (buf, cbuf) = (bytes(&scratch), bytes(&scratch_cb));
        buf.copy_from_slice(bytes(&ring));
        cbuf.copy_from_slice(bytes(&cb));
        match i % 4 {
            // Entirely random header.
            0 => buf[..HEADER_LEN]
                .iter_mut()
                .for_each(|b| *b = rng.next() as u8),
            // A few bit flips anywhere in the ring or control block.
            1 | 2 => {
                for _ in 0..1 + rng.next() % 4 {
                    let at = (rng.next() as usize) % (buf.len() + cbuf.len());
                    let bit = 1u8 << (rng.next() % 8);
                    if at < buf.len() {
                        buf[at] ^= bit
                    } else {
                        cbuf[at - buf.len()] ^= bit
                    }
                }
            }
            // A header word set to an extreme value.
            _ => {
                let word = (rng.next() as usize % (HEADER_LEN / 8)) * 8;
                let v =
                    [0, 1, u64::MAX, u64::MAX / 2, 1 << 40, rng.next()][rng.next() as usize % 6];
                buf[word..word + 8].copy_from_slice(&v.to_ne_bytes());
            }
        }
        if validate_ring(&scratch).is_ok() {
            accepted += 1;
        }
        // Readers run on a fraction (they are costlier), covering every mutation kind.
        if i % 16 < 4 {
            exercise(&scratch, &scratch_cb);
        }
    }
    assert!(
        accepted > 0 && accepted < n,
        "mutations both kept and broke the header"
    );
    eprintln!("validated {n} regions, {accepted} accepted");
}

#[test]
fn truncated_regions_are_refused() {
    let (ring, _) = template();
    for len in [0, 8, HEADER_LEN - 1, HEADER_LEN, ring.len() - 1] {
        let short = Region::heap(len);
        bytes(&short).copy_from_slice(&bytes(&ring)[..len]);
        assert!(validate_ring(&short).is_err(), "len {len}");
    }
}
