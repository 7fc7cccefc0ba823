//! Typed messages between two processes.
//!
//! `cargo run --example pubsub -p shmcast` starts a publisher, which starts a subscriber process
//! (this same program with the argument `subscriber`) and sends it a stream of `Reading`s. The
//! subscriber views each message in place as a `Reading` and checks it.
//!
//! Run the halves separately with `pubsub publisher` and `pubsub subscriber [--spin]`.

use shmcast::{Publisher, RecvError, Subscriber};
use std::time::{Duration, Instant};

/// One sensor reading: plain old data, so it travels as its bytes.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Reading {
    seq: u64,
    sensor: u32,
    flags: u32,
    value: f64,
}

const TOPIC: &str = "example-pubsub";
const COUNT: u64 = 100_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("subscriber") => subscriber(std::env::args().nth(2).as_deref() == Some("--spin")),
        Some("publisher") => publisher(false),
        _ => publisher(true),
    }
}

fn publisher(spawn_subscriber: bool) -> Result<(), Box<dyn std::error::Error>> {
    let mut publisher = Publisher::builder(TOPIC).capacity(1 << 20).bind()?;
    let mut child = if spawn_subscriber {
        Some(
            std::process::Command::new(std::env::current_exe()?)
                .arg("subscriber")
                .spawn()?,
        )
    } else {
        None
    };
    println!(
        "publisher: waiting for a subscriber on {}",
        publisher.path().display()
    );
    // Whatever is published before a subscriber connects never reaches it.
    publisher.wait_for_subscribers(1, Duration::from_secs(30))?;
    let start = Instant::now();
    for seq in 0..COUNT {
        // Written in place: no copy of the message exists outside the ring.
        let mut loan = publisher.loan_pod::<Reading>()?;
        *loan = Reading {
            seq,
            sensor: (seq % 8) as u32,
            flags: 0,
            value: seq as f64 * 0.5,
        };
        loan.publish();
    }
    let stats = publisher.stats();
    println!(
        "publisher: {COUNT} readings in {:?}, {} wake syscalls ({:.3} per message)",
        start.elapsed(),
        stats.wake_syscalls,
        stats.wake_syscalls as f64 / COUNT as f64
    );
    drop(publisher); // ends the stream: the subscriber drains, then sees Disconnected
    if let Some(child) = child.as_mut() {
        let status = child.wait()?;
        if !status.success() {
            return Err(format!("subscriber failed: {status}").into());
        }
    }
    Ok(())
}

/// With `spin`, the subscriber polls instead of parking (it stays busy, so the publisher never
/// needs to wake it).
fn subscriber(spin: bool) -> Result<(), Box<dyn std::error::Error>> {
    let mut sub = Subscriber::builder(TOPIC)
        .connect_timeout(Duration::from_secs(10))
        .spin(if spin { u32::MAX } else { 0 })
        .connect()?;
    let mut received = 0u64;
    let mut sum = 0.0;
    loop {
        match sub.recv_timeout(Duration::from_secs(10)) {
            Ok(sample) => {
                let reading: &Reading = sample.as_pod()?;
                assert_eq!(reading.seq, received, "gating: every reading, in order");
                sum += reading.value;
                received += 1;
            }
            Err(RecvError::Disconnected) => break,
            Err(e) => return Err(e.into()),
        }
    }
    println!("subscriber: {received} readings, sum of values {sum}");
    if received != COUNT {
        return Err(format!("expected {COUNT} readings").into());
    }
    Ok(())
}
