//! Subscriber hot paths, in-process: `try_recv` that finds a message (gating in place, lossy by
//! validated copy) and `try_recv` that finds none.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use shmcast::{Mode, Publisher, RecvError, Subscriber};

fn topic(kind: &str) -> String {
    format!("shmcast-criterion-{}-{kind}", std::process::id())
}

fn pair(kind: &str, mode: Mode) -> (Publisher, Subscriber) {
    let name = topic(kind);
    let publisher = Publisher::builder(name.as_str())
        .capacity(1 << 20)
        .bind()
        .expect("bind a publisher");
    let sub = Subscriber::builder(name.as_str())
        .mode(mode)
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .expect("connect a subscriber");
    let deadline = Instant::now() + Duration::from_secs(5);
    while publisher.subscriber_count() < 1 {
        assert!(Instant::now() < deadline, "subscriber not admitted");
        std::thread::sleep(Duration::from_millis(1));
    }
    (publisher, sub)
}

/// A 64-byte message is waiting (published untimed); the timed part is `try_recv`, reading the
/// payload and dropping the sample.
fn try_recv_hit(c: &mut Criterion) {
    let mut group = c.benchmark_group("try_recv_hit");
    for (name, mode) in [("gating", Mode::Gating), ("lossy", Mode::Lossy)] {
        let (mut publisher, mut sub) = pair(&format!("hit-{name}"), mode);
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    publisher.send(&[i as u8; 64]).expect("send");
                    let t0 = Instant::now();
                    let sample = sub.try_recv().expect("a message is waiting");
                    black_box(sample[0]);
                    drop(sample);
                    total += t0.elapsed();
                }
                total
            });
        });
    }
    group.finish();
}

/// Nothing to read: `try_recv` returns `Empty` (and arms the descriptor for an event loop).
fn try_recv_miss(c: &mut Criterion) {
    let (_publisher, mut sub) = pair("miss", Mode::Gating);
    c.bench_function("try_recv_miss", |b| {
        b.iter(|| match sub.try_recv() {
            Err(RecvError::Empty) => {}
            other => panic!("expected Empty, got {:?}", other.map(|s| s.seq())),
        });
    });
}

criterion_group!(benches, try_recv_hit, try_recv_miss);
criterion_main!(benches);
