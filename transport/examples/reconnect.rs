//! A subscriber that outlives its publisher: on `Disconnected` it connects again, waiting for
//! the next publisher of the topic, as a long-running service does.
//!
//! `cargo run --example reconnect -p shmcast` starts the subscriber (this same program with the
//! argument `subscriber`), then runs three publishers one after the other, each sending 1000
//! messages and ending. The subscriber receives every message of each.
//!
//! A subscriber receives only what is published while it is connected: each publisher here
//! waits for it (`wait_for_subscribers`) before its first message. A publisher that cannot
//! wait loses to a reconnecting subscriber what it published in between; messages lost before
//! a topic's publisher are for it to count (`Publisher::note_upstream_lost`).

use shmcast::{ConnectError, Publisher, RecvError, Subscriber};
use std::time::Duration;

const TOPIC: &str = "example-reconnect";
const GENERATIONS: u64 = 3;
const PER_GENERATION: u64 = 1000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("subscriber") {
        return subscriber();
    }
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .arg("subscriber")
        .spawn()?;
    for generation in 0..GENERATIONS {
        let mut publisher = Publisher::bind(TOPIC)?;
        publisher.wait_for_subscribers(1, Duration::from_secs(30))?;
        for n in 0..PER_GENERATION {
            publisher.send(&[generation.to_le_bytes(), n.to_le_bytes()].concat())?;
        }
        println!("publisher {generation}: sent {PER_GENERATION}");
        // Dropping the publisher ends its stream: the subscriber drains it, then hears the end.
    }
    let status = child.wait()?;
    if !status.success() {
        return Err(format!("subscriber failed: {status}").into());
    }
    Ok(())
}

/// Connects, waiting up to 10 s for a publisher.
fn connect() -> Result<Subscriber, ConnectError> {
    Subscriber::builder(TOPIC)
        .connect_timeout(Duration::from_secs(10))
        .connect()
}

fn subscriber() -> Result<(), Box<dyn std::error::Error>> {
    let mut sub = connect()?;
    let mut counts = vec![0u64; GENERATIONS as usize];
    loop {
        // A sample borrows the subscriber: find out what happened, then replace it.
        let ended = match sub.recv_timeout(Duration::from_secs(10)) {
            Ok(m) => {
                let generation = u64::from_le_bytes(m[..8].try_into()?);
                counts[generation as usize] += 1;
                false
            }
            Err(RecvError::Disconnected) => true,
            Err(e) => return Err(e.into()),
        };
        if ended {
            if counts.iter().all(|&c| c == PER_GENERATION) {
                break;
            }
            // The publisher ended or died: wait for the next one.
            sub = connect()?;
        }
    }
    println!("subscriber: received per publisher {counts:?}");
    Ok(())
}
