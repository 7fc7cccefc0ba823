//! The publisher's side of the control blocks: a writer with an honest gating reader and two
//! control blocks whose words the input writes between publishes, drains and waits for space.
//! No panic or overflow, and the honest reader receives every message in order and intact. The
//! checks are the ones the stable property tests make (`ringbuf-core/tests/control_blocks.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shmcast_core::testing::check_hostile_control_blocks;

fuzz_target!(|program: &[u8]| {
    check_hostile_control_blocks(program);
});
