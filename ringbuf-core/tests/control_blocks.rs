//! The writer against control blocks whose every word a subscriber may write: random programs
//! of publishes, scribbled words (cursors near and far from the committed position, `parked`
//! values, sequence numbers, counters, the publisher's own line), drains of an honest reader and
//! waits for space. Whatever the hostile blocks hold, the writer neither panics nor overflows,
//! the honest reader receives every message in order and intact and stays gating
//! (`shmcast_core::testing::check_hostile_control_blocks`, shared with the fuzz target
//! `control_blocks`).
#![cfg(not(shmcast_loom))]

use shmcast_core::testing::Rng;
use shmcast_core::testing::check_hostile_control_blocks as check;

/// Programs and their longest length in bytes.
fn programs() -> (u64, u64) {
    if cfg!(miri) {
        return (6, 400);
    }
    let n = std::env::var("SHMCAST_CONTROL_BLOCK_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    (n, 4000)
}

#[test]
fn random_programs_keep_the_honest_reader_whole() {
    let mut rng = Rng(0x5eed_c0b1_0000_0001);
    let (n, longest) = programs();
    let (mut messages, mut demotions, mut full) = (0, 0, 0);
    for _ in 0..n {
        let len = rng.below(longest) as usize;
        let program: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let stats = check(&program);
        messages += stats.messages;
        demotions += stats.demotions;
        full += stats.full;
    }
    eprintln!("{n} programs: {messages} messages, {full} full rings, {demotions} demotions");
    // The programs reach the paths that matter: a full ring, and demotions of the hostile
    // gating subscriber (by its cursor or by the stall bound).
    assert!(cfg!(miri) || (messages > n && full > 0 && demotions > 0));
}

#[test]
fn empty_and_tiny_programs() {
    for program in [&[][..], &[0], &[1], &[2], &[3], &[0, 200], &[1, 0, 0, 2, 7]] {
        check(program);
    }
    // Publish until the ring is full with the hostile gating cursor left where it was admitted:
    // only the stall bound's demotion frees it.
    let program: Vec<u8> = (0..200).flat_map(|_| [0u8, 150]).collect();
    let stats = check(&program);
    assert_eq!(stats.messages, 200);
    assert!(stats.demotions >= 1, "{stats:?}");
}
