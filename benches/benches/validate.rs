//! The cost of treating shared memory as untrusted, in-process over heap regions: validating a
//! ring header, attaching a reader (ring and control block validated), and reading frames with
//! their bounds checks (in place for gating, validated copy for lossy).

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use shmcast_core::{CONTROL_BLOCK_LEN, Mode, Reader, Region, RingConfig, Start, Writer};

fn ring(capacity: u64, max_payload: u64) -> Writer<()> {
    let cfg = RingConfig::new(capacity, max_payload).expect("ring geometry");
    Writer::new(Region::heap(cfg.region_len()), cfg).expect("writer")
}

fn validate_ring(c: &mut Criterion) {
    let writer = ring(1 << 20, 4096);
    c.bench_function("validate_ring", |b| {
        b.iter(|| shmcast_core::validate_ring(black_box(writer.ring())).expect("valid"));
    });
}

fn attach(c: &mut Criterion) {
    let mut writer = ring(1 << 20, 4096);
    let cb = Region::heap(CONTROL_BLOCK_LEN);
    writer
        .admit(cb.clone(), Mode::Gating, Start::Newest, ())
        .expect("admit");
    c.bench_function("reader_attach", |b| {
        b.iter(|| Reader::attach(writer.ring().clone(), cb.clone()).expect("attach"));
    });
}

/// Timed: the reader's side of one message of `size` bytes; untimed: the writer's send.
fn read_frames(c: &mut Criterion) {
    let mut group = c.benchmark_group("reader");
    for (name, mode) in [
        ("gating_peek_release", Mode::Gating),
        ("lossy_copy", Mode::Lossy),
    ] {
        for size in [64usize, 4096] {
            let mut writer = ring(1 << 20, 4096);
            let cb = Region::heap(CONTROL_BLOCK_LEN);
            writer
                .admit(cb.clone(), mode, Start::Newest, ())
                .expect("admit");
            let mut reader = Reader::attach(writer.ring().clone(), cb).expect("attach");
            let payload = vec![7u8; size];
            let mut buf = Vec::with_capacity(size);
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_function(BenchmarkId::new(name, size), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        writer.send(&payload, |_| {}).expect("send");
                        let t0 = Instant::now();
                        match mode {
                            Mode::Gating => {
                                let frame = reader.try_peek().expect("a frame");
                                reader.read_payload(&frame, &mut buf);
                                reader.release(frame);
                            }
                            Mode::Lossy => {
                                reader.try_copy(&mut buf).expect("a frame");
                            }
                        }
                        total += t0.elapsed();
                        black_box(&buf);
                    }
                    total
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, validate_ring, attach, read_frames);
criterion_main!(benches);
