//! A hostile publisher scribbling at random over the whole ring (header and data) and the
//! control block while the real subscriber receives, from a thread of this process and from
//! another process. Every receive returns a message or a typed error, and each run shows some of
//! both (see `common::fake_publisher`).

mod common;

use common::abi::{MESSAGE, PADDING, ctl, hdr, meta};
use common::fake_publisher::{Scene, hostile};
use common::image::{BOTH, CAP, MAX, TOP};
use common::memfd::{CONTROL_SEALS, Memfd, RING_SEALS};
use shmcast::test_support::encode_welcome;
use shmcast::{FrameError, Mode, RecvError, Start, Subscriber};
use shmcast_core::layout::{MODE_LOSSY, STATE_ACTIVE, STATE_EVICTED};
use shmcast_core::testing::Rng;
use shmcast_core::{CONTROL_BLOCK_LEN, HEADER_LEN, Region, RingConfig, Writer};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How the receives went, by kind.
#[derive(Debug, Default)]
struct Tally {
    messages: u64,
    timeouts: u64,
    lagged: u64,
    disconnected: u64,
    evicted: u64,
    demoted: u64,
    corrupt: BTreeMap<&'static str, u64>,
    /// Anything a hostile ring must not produce from `recv_timeout`.
    unexpected: Vec<String>,
}

impl Tally {
    fn receives(&self) -> u64 {
        self.messages
            + self.timeouts
            + self.lagged
            + self.disconnected
            + self.evicted
            + self.demoted
            + self.corrupt.values().sum::<u64>()
            + self.unexpected.len() as u64
    }

    fn count(&mut self, got: Result<usize, RecvError>) {
        match got {
            Ok(len) if len <= MAX as usize => self.messages += 1,
            Ok(len) => self.unexpected.push(format!("a message of {len} bytes")),
            Err(RecvError::Timeout) => self.timeouts += 1,
            Err(RecvError::Lagged(_)) => self.lagged += 1,
            Err(RecvError::Disconnected) => self.disconnected += 1,
            Err(RecvError::Evicted) => self.evicted += 1,
            Err(RecvError::Demoted) => self.demoted += 1,
            Err(RecvError::Corrupt(e)) => {
                let kind = match e {
                    FrameError::BadMeta(_) => "bad meta",
                    FrameError::TooLong { .. } => "too long",
                    FrameError::CrossesEnd => "crosses end",
                    FrameError::BadPadding => "bad padding",
                    FrameError::BeyondCommit => "beyond commit",
                    FrameError::Sequence { .. } => "sequence",
                    FrameError::Position(_) => "position",
                };
                *self.corrupt.entry(kind).or_default() += 1;
            }
            Err(e) => self.unexpected.push(format!("{e:?}")),
        }
    }
}

/// The harness's publisher while scribbling: the real writer runs over a private copy of the
/// ring (so its own bookkeeping never reads the damage), each round is copied into the shared
/// ring, and then the damage is done there.
struct Scribbler<'a> {
    shadow: Region,
    writer: Writer<()>,
    ring: &'a Memfd,
    cb: &'a Memfd,
    rng: Rng,
    /// Consecutive rounds the gating subscriber held the writer back.
    full: u32,
    sent: u64,
    damage: u64,
}

impl Scribbler<'_> {
    fn shadow_word(&self, off: usize) -> &AtomicU64 {
        assert!(off % 8 == 0 && off + 8 <= self.shadow.len());
        // SAFETY: in bounds and 8-aligned (the region base is 128-aligned); the region lives
        // as long as `self`, and only this thread's writer and atomics touch it.
        unsafe { AtomicU64::from_ptr(self.shadow.as_ptr().add(off).cast()) }
    }

    /// Publishes a few messages on the private ring and copies it into the shared one.
    fn publish(&mut self) {
        let mut futex = false;
        for _ in 0..1 + self.rng.below(4) {
            let len = self.rng.below(MAX + 1) as usize;
            let seq = self.writer.next_seq();
            match self.writer.send(&vec![seq as u8; len], |_| {}) {
                Ok(w) => {
                    futex |= w.wake_word;
                    self.sent += 1;
                    self.full = 0;
                }
                Err(_) => {
                    self.full += 1;
                    if self.full == 2000 {
                        // The stall bound a real publisher would have: stop waiting for it.
                        let id = shmcast_core::SubscriberId(1);
                        self.writer.demote(id);
                    }
                    break;
                }
            }
        }
        for off in (0..self.shadow.len()).step_by(8) {
            let word = self.shadow_word(off).load(Ordering::Relaxed);
            self.ring.store64(off, word);
        }
        self.cb.store32(ctl::STATE, STATE_ACTIVE);
        if futex {
            let _ = rustix::thread::futex::wake(
                self.ring.u32_at(hdr::WAKE),
                rustix::thread::futex::Flags::empty(),
                u32::MAX,
            );
        }
    }

    /// Random damage: anywhere, to the positions, to the static header, to frame headers, to
    /// sequence numbers, to the flags, to the control block.
    fn scribble(&mut self) {
        let len = self.ring.len;
        let rng = &mut self.rng;
        let frame_off = |rng: &mut Rng| HEADER_LEN + (rng.below(CAP / 16) * 16) as usize;
        match rng.below(16) {
            0..=3 => {
                let off = (rng.below(len / 8) * 8) as usize;
                self.ring.store64(off, rng.next());
            }
            4..=5 => {
                let off = (rng.below(len / 8) * 8) as usize;
                self.ring
                    .u64_at(off)
                    .fetch_xor(1 << rng.below(64), Ordering::Relaxed);
            }
            6..=8 => {
                let offs = [hdr::COMMITTED, hdr::NEXT_SEQ, hdr::RESERVED, hdr::TAIL];
                let word = self.ring.u64_at(offs[rng.below(4) as usize]);
                let now = word.load(Ordering::Relaxed);
                let value = match rng.below(5) {
                    0 => rng.next(),
                    1 => now.wrapping_add((rng.below(9) * 16).wrapping_sub(64)),
                    2 => now.wrapping_add(8),
                    3 => now.wrapping_add(CAP + 16),
                    _ => [0, u64::MAX, TOP][rng.below(3) as usize],
                };
                word.store(value, Ordering::Relaxed);
            }
            9 => {
                let offs = [
                    hdr::MAGIC,
                    hdr::VERSION,
                    hdr::CAPACITY,
                    hdr::MAX_PAYLOAD,
                    hdr::TOTAL_LEN,
                ];
                let off = offs[rng.below(5) as usize] & !7;
                self.ring.store64(off, rng.next());
            }
            10..=11 => {
                let kind = [MESSAGE, PADDING, rng.below(256)][rng.below(3) as usize];
                let len = [rng.below(MAX + 64), rng.next() & 0xffff_ffff][rng.below(2) as usize];
                let off = frame_off(rng);
                self.ring.store64(off, meta(kind, len as u32));
            }
            12..=13 => {
                let off = frame_off(rng) + 8;
                let word = self.ring.u64_at(off);
                let now = word.load(Ordering::Relaxed);
                let value = [now.wrapping_sub(1), now.wrapping_add(1), rng.next(), 0];
                word.store(value[rng.below(4) as usize], Ordering::Relaxed);
            }
            14 => {
                let offs = [hdr::CLOSED, hdr::WRITER_WAITING, hdr::WAKE];
                let value = [0, 1, rng.next() as u32][rng.below(3) as usize];
                self.ring.store32(offs[rng.below(3) as usize], value);
            }
            _ => {
                let (off, value) = match rng.below(4) {
                    0 => (ctl::STATE, STATE_EVICTED),
                    1 => (ctl::STATE, rng.next() as u32),
                    2 => (ctl::MODE, MODE_LOSSY),
                    _ => (ctl::START_POS, rng.next() as u32),
                };
                self.cb.store32(off, value);
            }
        }
        self.damage += 1;
    }
}

/// Where the scribbler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScribbleFrom {
    /// A thread of this process: a gating subscriber reads only the lengths of in-place
    /// samples, as reading their bytes would race the thread outside Rust's model.
    Thread,
    /// A child process forked from this one: the subscriber reads every byte, as it would
    /// under a hostile publisher process.
    Process,
}

/// The loop a scribbler runs until `stop`: publish now and then, damage a few words, breathe.
fn scribble_until(scribbler: &mut Scribbler<'_>, stop: &AtomicU64) {
    let mut round = 0u64;
    while stop.load(Ordering::Relaxed) == 0 {
        if scribbler.rng.below(4) != 0 {
            scribbler.publish();
        }
        for _ in 0..scribbler.rng.below(4) {
            scribbler.scribble();
        }
        round += 1;
        if round % 8 == 0 {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            std::thread::yield_now();
        }
    }
}

/// Scribbles over a ring one subscriber reads in `mode`, for `run_for` and at least 2000
/// receives; returns how they went.
fn scribble_while_receiving(
    scene: &Scene,
    mode: Mode,
    seed: u64,
    run_for: Duration,
    from: ScribbleFrom,
) -> Tally {
    const MIN_RECEIVES: u64 = 2000;
    let cfg = RingConfig::new(CAP, MAX).unwrap();
    let ring = Memfd::new(cfg.region_len() as u64);
    let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
    // The stop flag and what the scribbler reports, shared with a forked scribbler.
    let shared = Memfd::new(4096);
    let (stop, sent, damage) = (shared.u64_at(0), shared.u64_at(8), shared.u64_at(16));
    let shadow = Region::heap(cfg.region_len());
    let mut writer = Writer::new(shadow.clone(), cfg).unwrap();
    writer.admit(cb.region(), mode, Start::Newest, ()).unwrap();
    let mut scribbler = Scribbler {
        shadow,
        writer,
        ring: &ring,
        cb: &cb,
        // Never zero: xorshift would stay there.
        rng: Rng(seed | 1),
        full: 0,
        sent: 0,
        damage: 0,
    };
    scribbler.publish();
    ring.seal(RING_SEALS);
    cb.seal(CONTROL_SEALS);
    let welcome = encode_welcome(ring.len, CONTROL_BLOCK_LEN as u64);
    let (sub, conn) = scene.connect(&welcome, &[ring.fd(), cb.fd()], mode);
    let mut sub = sub.expect("the ring is correct when the subscriber connects");

    let mut tally = Tally::default();
    // The first message arrives before any scribbling, so every run has one that got through.
    tally.count(sub.recv_timeout(Duration::from_secs(60)).map(|s| s.len()));
    assert_eq!(tally.messages, 1, "{mode:?}: the untouched ring: {tally:?}");
    let receive = |sub: &mut Subscriber, tally: &mut Tally| {
        let start = Instant::now();
        let mut buf = Vec::new();
        let mut checksum = 0u64;
        // Until the run time, the receive count and a noticed damage are all reached; only a
        // subscriber that never notices damage meets the bound.
        while start.elapsed() < run_for
            || tally.receives() < MIN_RECEIVES
            || tally.corrupt.is_empty()
        {
            if start.elapsed() > Duration::from_secs(30) {
                break;
            }
            let got = sub.recv_timeout(Duration::from_millis(2)).map(|sample| {
                if mode == Mode::Lossy {
                    // A lossy sample is the subscriber's own validated copy.
                    buf.clear();
                    buf.extend_from_slice(&sample);
                } else if from == ScribbleFrom::Process {
                    // In place, in the ring the other process scribbles on.
                    checksum = sample
                        .iter()
                        .fold(checksum, |a, &b| a.rotate_left(5) ^ b as u64);
                }
                sample.len()
            });
            tally.count(got);
        }
        std::hint::black_box(checksum);
    };
    match from {
        ScribbleFrom::Thread => std::thread::scope(|s| {
            let harness = s.spawn(|| {
                scribble_until(&mut scribbler, stop);
                sent.store(scribbler.sent, Ordering::Relaxed);
                damage.store(scribbler.damage, Ordering::Relaxed);
            });
            receive(&mut sub, &mut tally);
            stop.store(1, Ordering::Relaxed);
            harness.join().unwrap();
        }),
        ScribbleFrom::Process => {
            // SAFETY: the child only runs the scribbling loop (its memory is a copy of ours, the
            // ring, control block and flags shared mappings) and leaves with `_exit`, never
            // returning into the test harness; glibc's malloc is safe to use after `fork`.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
            if pid == 0 {
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    scribble_until(&mut scribbler, stop);
                    sent.store(scribbler.sent, Ordering::Relaxed);
                    damage.store(scribbler.damage, Ordering::Relaxed);
                }));
                // SAFETY: ends the child at once, without running the parent's exit handlers.
                unsafe { libc::_exit(i32::from(run.is_err())) };
            }
            receive(&mut sub, &mut tally);
            stop.store(1, Ordering::Relaxed);
            let mut status = 0;
            // SAFETY: waits for our own child; `status` is a valid out-pointer.
            let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
            assert_eq!(rc, pid, "waitpid: {}", std::io::Error::last_os_error());
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "the scribbling process failed: status {status:#x}"
            );
        }
    }
    drop(conn);
    drop(sub);
    let (sent, damage) = (sent.load(Ordering::Relaxed), damage.load(Ordering::Relaxed));
    println!(
        "{mode:?}, scribbler in a {from:?} (seed {seed:#x}): {sent} messages sent, {damage} \
         words damaged: {tally:?}"
    );
    tally
}

/// The outcomes every scribbled run must show: only typed ones, some messages, some damage.
fn check_scribbled(mode: Mode, tally: &Tally) {
    assert!(
        tally.unexpected.is_empty(),
        "{mode:?}: {:?}",
        tally.unexpected
    );
    assert!(
        tally.messages > 0,
        "{mode:?}: no message got through: {tally:?}"
    );
    let corrupt: u64 = tally.corrupt.values().sum();
    assert!(corrupt > 0, "{mode:?}: no damage was noticed: {tally:?}");
}

/// Scribbles from `from` while a gating and then a lossy subscriber receive, each for 1.5 s,
/// and checks each run.
fn scribble_in_both_modes(name: &str, from: ScribbleFrom) {
    let seed = scribble_seed();
    hostile(name, |scene| {
        for (i, mode) in BOTH.into_iter().enumerate() {
            let run = Duration::from_millis(1500);
            let seed = seed.wrapping_add(i as u64);
            let tally = scribble_while_receiving(scene, mode, seed, run, from);
            check_scribbled(mode, &tally);
        }
    });
}

/// The seed of a scribbling run: `SHMCAST_HOSTILE_SEED=<hex>` replays a printed one.
fn scribble_seed() -> u64 {
    std::env::var("SHMCAST_HOSTILE_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            t.map_or(1, |d| d.as_nanos() as u64) ^ u64::from(std::process::id())
        })
}

/// A thread publishes through the real writer and scribbles random bytes over the whole ring
/// (header and data) and the control block while the subscriber receives: every receive
/// returns a message or a typed error, some of each. `SHMCAST_HOSTILE_SEED=<hex>` replays a
/// printed run: the gating subscriber's scribbler uses that seed, the lossy one's the next.
#[test]
fn scribbling_over_the_whole_ring_yields_only_typed_outcomes() {
    scribble_in_both_modes("scribble", ScribbleFrom::Thread);
}

/// The same scribbler as a separate process, as a hostile publisher would be: now the gating
/// subscriber reads every byte of its in-place samples while the other process writes them.
/// Every receive still returns a message or a typed error, some of each.
#[test]
fn a_scribbler_in_another_process_yields_only_typed_outcomes() {
    scribble_in_both_modes("scribble-process", ScribbleFrom::Process);
}
