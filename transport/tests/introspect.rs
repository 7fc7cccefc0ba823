//! Introspection: the INSPECT request and the INFO record against every truncation and a
//! hundred thousand mutated packets (a value or a typed error, an accepted record re-encodes to
//! itself); a live publisher's snapshot names this process for each subscriber with its mode,
//! its lag and the topic's contract, admits nobody, and is bounded in rate; a missing topic, a
//! stale socket and a file that is not a socket are told apart; no descriptor is left open on
//! either side.

mod common;

use common::FdGuard;
use shmcast::test_support::{check_introspection, sample_introspection};
use shmcast::{InspectError, Inspector, Mode, Publisher, RefuseReason, Subscriber};
use shmcast_core::testing::Rng;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("shmcast-inspect-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o700)).unwrap();
    Scratch(dir)
}

/// A test's own topic directory, removed with what it holds when the test ends.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl From<&Scratch> for PathBuf {
    fn from(s: &Scratch) -> PathBuf {
        s.0.clone()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn records_round_trip_and_mutations_are_typed_errors() {
    let samples = sample_introspection();
    for (i, p) in samples.iter().enumerate() {
        let (request, info) = check_introspection(p);
        assert_eq!((request, info), (i == 0, i > 0), "sample {i}");
        for len in 0..p.len() {
            assert!(!check_introspection(&p[..len]).1, "sample {i} cut at {len}");
        }
        let mut longer = p.clone();
        longer.push(0);
        assert_eq!(check_introspection(&longer), (false, false));
    }
    let mut rng = Rng(0x0125_7ec7_0000_0001);
    let mut accepted = 0;
    for _ in 0..100_000 {
        let mut p = samples[rng.below(samples.len() as u64) as usize].clone();
        for _ in 0..=rng.below(4) {
            let at = rng.below(p.len() as u64) as usize;
            p[at] = rng.next() as u8;
        }
        let (a, b) = check_introspection(&p);
        accepted += (a || b) as u32;
    }
    // Most single-byte changes land in counters and stay valid; the rest must be refused.
    assert!(accepted > 0);
    for _ in 0..10_000 {
        let len = rng.below(400) as usize;
        check_introspection(&rng.bytes(len));
    }
}

#[test]
fn a_live_publisher_reports_its_subscribers() {
    let _fds = FdGuard::new();
    let dir = scratch("live");
    let mut publisher = Publisher::builder("t")
        .directory(&dir)
        .capacity(1 << 16)
        .schema("app.Text", 3)
        .bind()
        .unwrap();
    let connect = |mode| {
        Subscriber::builder("t")
            .directory(&dir)
            .mode(mode)
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .unwrap()
    };
    let gating = connect(Mode::Gating);
    let lossy = connect(Mode::Lossy);
    for i in 0..3u8 {
        publisher.send(&[i; 10]).unwrap();
    }
    let info = Inspector::new("t").directory(&dir).inspect().unwrap();
    assert_eq!(info.publisher.pid, Some(std::process::id()));
    assert_eq!(info.publisher.exe, std::env::current_exe().ok());
    assert_eq!(info.contract, *publisher.contract());
    assert_eq!(info.counters.messages, 3);
    assert_eq!(info.counters.admitted, 2);
    assert_eq!(info.subscriber_count, 2);
    let modes: Vec<_> = info
        .subscribers
        .iter()
        .map(|s| (s.requested, s.mode))
        .collect();
    assert_eq!(
        modes,
        [(Mode::Gating, Mode::Gating), (Mode::Lossy, Mode::Lossy)]
    );
    for s in &info.subscribers {
        assert_eq!(s.process.pid, Some(std::process::id()));
        assert_eq!(s.lag_messages, 3);
        assert!(s.lag_bytes >= 30);
        assert!(!s.demoted());
    }
    // Inspecting admitted nobody.
    assert_eq!(publisher.subscriber_count(), 2);
    assert!(!info.imported && !gating.imported());
    assert_eq!(info.counters.upstream_lost, 0);
    assert_eq!(info.counters.early_wraps, 0);
    drop((gating, lossy));
}

/// The laps a publisher starts early to stay in its cache window are counted in its snapshot,
/// exactly as in its own stats.
#[test]
fn a_snapshot_counts_the_laps_started_early() {
    let _fds = FdGuard::new();
    let dir = scratch("window");
    let mut publisher = Publisher::builder("t")
        .directory(&dir)
        .capacity(1 << 16)
        .cache_window(4096)
        .bind()
        .unwrap();
    let mut sub = Subscriber::builder("t")
        .directory(&dir)
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .unwrap();
    for i in 0..1000u32 {
        publisher.send(&[i as u8; 1000]).unwrap();
        let m = sub.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!((m.seq(), m.len()), (u64::from(i), 1000));
    }
    let wraps = publisher.stats().early_wraps;
    assert!(wraps > 100, "{wraps} early wraps");
    let info = Inspector::new("t").directory(&dir).inspect().unwrap();
    assert_eq!(info.counters.early_wraps, wraps);
    drop(sub);
}

#[test]
fn an_imported_topic_and_its_upstream_losses_reach_subscribers_and_inspectors() {
    let _fds = FdGuard::new();
    let dir = scratch("imported");
    let mut publisher = Publisher::builder("t")
        .directory(&dir)
        .imported(true)
        .bind()
        .unwrap();
    assert!(publisher.imported());
    let sub = Subscriber::builder("t")
        .directory(&dir)
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .unwrap();
    assert!(sub.imported());
    let inspect = || Inspector::new("t").directory(&dir).inspect().unwrap();
    let info = inspect();
    assert!(info.imported);
    assert_eq!(info.counters.upstream_lost, 0);
    publisher.send(b"0").unwrap();
    publisher.note_upstream_lost(5);
    publisher.send(b"6").unwrap();
    publisher.note_upstream_lost(u64::from(u32::MAX) + 1);
    let want = 5 + u64::from(u32::MAX) + 1;
    assert_eq!(publisher.stats().upstream_lost, want);
    let info = inspect();
    assert!(info.imported);
    assert_eq!(info.counters.upstream_lost, want);
    assert_eq!(info.counters.messages, 2);
    drop(sub);
}

#[test]
fn answers_are_bounded_in_rate() {
    let _fds = FdGuard::new();
    let dir = scratch("rate");
    let publisher = Publisher::builder("t").directory(&dir).bind().unwrap();
    let (mut busy, mut answered) = (0u64, 0u64);
    let start = std::time::Instant::now();
    for _ in 0..40 {
        match Inspector::new("t").directory(&dir).inspect() {
            Ok(_) => answered += 1,
            Err(InspectError::Refused {
                code: RefuseReason::Busy,
                ..
            }) => busy += 1,
            Err(e) => panic!("{e}"),
        }
    }
    // At most 20 in each one-second window the requests touched.
    let windows = start.elapsed().as_secs_f64().ceil() as u64 + 1;
    assert!(
        answered <= 20 * windows,
        "{answered} answers in {windows} windows"
    );
    assert_eq!(answered + busy, 40);
    // Refused inspections are not subscribers refused.
    while busy == 0 {
        if Inspector::new("t").directory(&dir).inspect().is_err() {
            busy += 1;
        }
    }
    assert_eq!(publisher.stats().refused, 0);
}

#[test]
fn missing_stale_and_foreign_files_are_told_apart() {
    let _fds = FdGuard::new();
    let dir = scratch("kinds");
    let inspect = |t: &str| Inspector::new(t).directory(&dir).inspect().unwrap_err();
    assert!(
        matches!(inspect("none"), InspectError::NoPublisher { .. }),
        "missing"
    );
    drop(std::os::unix::net::UnixListener::bind(dir.join("dead")).unwrap());
    let stale = inspect("dead");
    assert!(matches!(stale, InspectError::Stale(_)), "{stale}");
    std::fs::write(dir.join("file"), b"x").unwrap();
    let file = inspect("file");
    assert!(matches!(file, InspectError::NotASocket { .. }), "{file}");
}

#[test]
fn inspecting_leaks_no_descriptor_on_either_side() {
    let fds = FdGuard::new();
    let dir = scratch("fds");
    let publisher = Publisher::builder("t").directory(&dir).bind().unwrap();
    let bound = fds.snapshot();
    for _ in 0..200 {
        // Answered or refused as busy: both close every descriptor.
        let _ = Inspector::new("t").directory(&dir).inspect();
    }
    fds.expect(&bound, "after 200 inspections");
    drop(publisher);
    fds.check();
}
