//! The cost of a wait for space: a gating publisher finds the ring full, and its subscriber (a
//! thread on the other core) releases one frame 1 µs later. Timed from the moment the subscriber
//! is told to go until the publisher's loan returns, with the adaptive spin (the default) and with
//! a publisher that sleeps at once (`spin_limit(0)`). Without a wait, the same loan takes tens of
//! nanoseconds (`loan_publish` in the `publish` bench); the difference is what a full ring costs.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use shmcast::{DEFAULT_SPIN_LIMIT, LoanError, Publisher, RecvError, Subscriber};

/// 48-byte messages fill 64-byte frames, 64 to the 4 KiB ring: one release always makes room
/// for one loan, wherever the ring wraps.
const MESSAGE: usize = 48;

/// How long after being told the subscriber releases a frame.
const RELEASE_AFTER: Duration = Duration::from_micros(1);

/// The subscriber's side: waits for each go signal, lets `RELEASE_AFTER` pass, receives one
/// message (its drop releases the frame) and goes back to waiting.
fn consumer(mut sub: Subscriber, go: Arc<AtomicU64>, stop: Arc<AtomicBool>) {
    let mut seen = 0;
    while !stop.load(Ordering::Relaxed) {
        let now = go.load(Ordering::Acquire);
        if now == seen {
            std::hint::spin_loop();
            continue;
        }
        seen = now;
        let t0 = Instant::now();
        while t0.elapsed() < RELEASE_AFTER {
            std::hint::spin_loop();
        }
        match sub.recv_timeout(Duration::from_secs(5)) {
            Ok(sample) => drop(sample),
            Err(RecvError::Disconnected) => return,
            Err(e) => panic!("receive failed: {e}"),
        }
    }
}

fn full_ring_wait(c: &mut Criterion) {
    let mut group = c.benchmark_group("full_ring_wait");
    for (label, spin) in [("spin", DEFAULT_SPIN_LIMIT), ("sleep", Duration::ZERO)] {
        let name = format!("shmcast-criterion-{}-full-{label}", std::process::id());
        let mut publisher = Publisher::builder(name.as_str())
            .capacity(4096)
            .max_message(MESSAGE as u64)
            .stall_bound(None)
            .spin_limit(spin)
            .bind()
            .expect("bind a publisher");
        let sub = Subscriber::builder(name.as_str())
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .expect("connect a subscriber");
        publisher
            .wait_for_subscribers(1, Duration::from_secs(5))
            .expect("subscriber admitted");
        // Fill the ring.
        loop {
            match publisher.try_loan(MESSAGE) {
                Ok(loan) => loan.publish(),
                Err(LoanError::Full) => break,
                Err(e) => panic!("loan failed: {e}"),
            }
        }
        let go = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let (go, stop) = (go.clone(), stop.clone());
            thread::spawn(move || consumer(sub, go, stop))
        };
        let mut round = 0;
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    round += 1;
                    let t0 = Instant::now();
                    go.store(round, Ordering::Release);
                    let loan = publisher
                        .loan_timeout(MESSAGE, Duration::from_secs(5))
                        .expect("loan after a release");
                    total += t0.elapsed();
                    loan.publish();
                }
                total
            });
        });
        stop.store(true, Ordering::Relaxed);
        drop(publisher);
        worker.join().expect("subscriber thread");
    }
    group.finish();
}

criterion_group!(benches, full_ring_wait);
criterion_main!(benches);
