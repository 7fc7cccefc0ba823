//! Publisher hot paths, in-process: loan + fill + publish by message size, and publish with 0, 1
//! and 8 parked subscribers.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use shmcast::{Publisher, RecvError, Subscriber};

/// A topic name private to this process.
fn topic(kind: &str) -> String {
    format!("shmcast-criterion-{}-{kind}", std::process::id())
}

/// Loans `size` bytes, writes every one of them and publishes, with no subscriber.
fn loan_publish(c: &mut Criterion) {
    let mut group = c.benchmark_group("loan_publish");
    for size in [8usize, 64, 4096, 1 << 20] {
        let capacity = ((size as u64 + 16).next_power_of_two() * 4).max(1 << 20);
        let mut publisher = Publisher::builder(topic(&format!("loan-{size}")))
            .capacity(capacity)
            .max_message(size as u64)
            .bind()
            .expect("bind a publisher");
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &size, |b, &size| {
            let mut byte = 0u8;
            b.iter(|| {
                let mut loan = publisher.loan(size).expect("loan");
                loan.fill(byte);
                loan.publish();
                byte = byte.wrapping_add(1);
            });
        });
    }
    group.finish();
}

/// Receives until `Empty`: `try_recv` then leaves the subscriber announced as parked (waiting
/// on its descriptor), so the next commit must ring its doorbell.
fn park(sub: &mut Subscriber) {
    loop {
        match sub.try_recv() {
            Ok(sample) => drop(black_box(sample)),
            Err(RecvError::Empty) => return,
            Err(RecvError::Lagged(_)) => {}
            Err(e) => panic!("receive failed: {e}"),
        }
    }
}

/// One 64-byte publish while 0, 1 or 8 subscribers are parked on their descriptors: the flag
/// scan and one non-blocking doorbell send each. Only the publish is timed; re-parking is not.
/// Nobody sleeps in the kernel here, so this is the publisher's side of a wake alone.
fn publish_parked(c: &mut Criterion) {
    let mut group = c.benchmark_group("publish_parked");
    for parked in [0usize, 1, 8] {
        let name = topic(&format!("parked-{parked}"));
        let mut publisher = Publisher::builder(name.as_str())
            .capacity(1 << 20)
            .bind()
            .expect("bind a publisher");
        let mut subs: Vec<Subscriber> = (0..parked)
            .map(|_| {
                Subscriber::builder(name.as_str())
                    .lossy()
                    .connect_timeout(Duration::from_secs(5))
                    .connect()
                    .expect("connect a subscriber")
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(5);
        while publisher.subscriber_count() < parked {
            assert!(Instant::now() < deadline, "subscribers not admitted");
            std::thread::sleep(Duration::from_millis(1));
        }
        group.bench_function(BenchmarkId::from_parameter(parked), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    for sub in &mut subs {
                        park(sub);
                    }
                    let t0 = Instant::now();
                    let mut loan = publisher.loan(64).expect("loan");
                    loan.fill(1);
                    loan.publish();
                    total += t0.elapsed();
                }
                total
            });
        });
        drop(subs);
    }
    group.finish();
}

criterion_group!(benches, loan_publish, publish_parked);
criterion_main!(benches);
