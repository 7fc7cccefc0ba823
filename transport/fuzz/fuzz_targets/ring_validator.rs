//! The ring and control-block validators (`validate_ring`, and `Reader::attach`, which adds the
//! control block's checks) against any bytes, compared with the layout's definition; a reader then
//! reads every region they accept.
#![no_main]

use core::mem::offset_of;
use libfuzzer_sys::fuzz_target;
use shmcast_core::layout::{
    CONTROL_MAGIC, ControlBlock, LAYOUT_VERSION, MAX_CAPACITY, MIN_CAPACITY, MODE_GATING,
    MODE_LOSSY, RING_MAGIC, RingHeader, STATE_ACTIVE,
};
use shmcast_core::{CONTROL_BLOCK_LEN, HEADER_LEN, validate_ring};
use shmcast_fuzz::drive::drive;
use shmcast_fuzz::input::{SCHEDULE_OFF, bytes_of, region_from, split_ring_input, word, word32};
use shmcast_fuzz::seeds::{SHAPES, writer_ring};
use std::sync::OnceLock;

/// The geometry `ring` declares, if the layout's definition accepts it.
fn reference_ring(ring: &[u8]) -> Option<(u64, u64)> {
    let field = |off| word(ring, off);
    let field32 = |off| word32(ring, off);
    let capacity = field(offset_of!(RingHeader, capacity));
    let max_payload = u64::from(field32(offset_of!(RingHeader, max_payload)));
    let limit = (capacity / 2)
        .saturating_sub(16)
        .min(u64::from(u32::MAX) & !15);
    let ok = ring.len() >= HEADER_LEN
        && field(offset_of!(RingHeader, magic)) == RING_MAGIC
        && field32(offset_of!(RingHeader, version)) == LAYOUT_VERSION
        && field32(offset_of!(RingHeader, header_len)) as usize == HEADER_LEN
        && field32(offset_of!(RingHeader, frame_align)) == 16
        && capacity.is_power_of_two()
        && (MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity)
        && max_payload <= limit
        && field(offset_of!(RingHeader, total_len)) == HEADER_LEN as u64 + capacity
        && ring.len() as u64 >= HEADER_LEN as u64 + capacity;
    ok.then_some((capacity, max_payload))
}

/// Whether a reader must attach to `ring` with `cb`.
fn reference_attach(ring: &[u8], cb: &[u8]) -> bool {
    let Some((capacity, _)) = reference_ring(ring) else {
        return false;
    };
    let committed = word(ring, offset_of!(RingHeader, committed));
    let mode = word32(cb, offset_of!(ControlBlock, mode));
    let start = word(cb, offset_of!(ControlBlock, start_pos));
    cb.len() >= CONTROL_BLOCK_LEN
        && word(cb, offset_of!(ControlBlock, magic)) == CONTROL_MAGIC
        && word32(cb, offset_of!(ControlBlock, version)) == LAYOUT_VERSION
        && word32(cb, offset_of!(ControlBlock, state)) == STATE_ACTIVE
        && (mode == MODE_GATING || mode == MODE_LOSSY)
        && start % 16 == 0
        && start <= committed
        // A lossy reader may have been lapped before it attached; a gating one cannot be.
        && (mode == MODE_LOSSY || committed - start <= capacity)
}

/// A ring and control block a writer made, for checking each fuzzed half against a valid other.
fn valid() -> &'static (Vec<u8>, Vec<u8>) {
    static VALID: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    VALID.get_or_init(|| {
        let (ring, cb) = writer_ring(&SHAPES[3]);
        (bytes_of(&ring), bytes_of(&cb))
    })
}

fuzz_target!(|data: &[u8]| {
    let (cb, ring) = split_ring_input(data);
    let got = validate_ring(&region_from(ring));
    let expected = reference_ring(ring);
    assert_eq!(
        got.as_ref()
            .ok()
            .map(|c| (c.capacity(), c.max_payload() as u64)),
        expected,
        "validate_ring said {got:?}"
    );
    let schedule = word(cb, SCHEDULE_OFF);
    let (valid_ring, valid_cb) = valid();
    for (ring, cb) in [(ring, cb), (valid_ring, cb), (ring, valid_cb)] {
        let attached = drive(region_from(ring), region_from(cb), schedule, false);
        assert_eq!(
            attached.is_ok(),
            reference_attach(ring, cb),
            "attach said {attached:?}"
        );
    }
});
