//! Several subscribers in one `poll` loop.
//!
//! `cargo run --example poll_loop -p shmcast` starts three publishers (on three topics) in a
//! child process, then waits on one subscriber of each in a single `poll(2)` call. A subscriber's
//! descriptor becomes readable when a message may be waiting once `try_recv` has returned
//! `Empty`; the loop drains each ready subscriber until `Empty` again.

use rustix::event::{PollFd, PollFlags, poll};
use shmcast::{Publisher, RecvError, Subscriber};
use std::time::Duration;

const TOPICS: [&str; 3] = ["example-poll-a", "example-poll-b", "example-poll-c"];
const PER_TOPIC: u64 = 1000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("publishers") {
        return publishers();
    }
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .arg("publishers")
        .spawn()?;
    let mut subs = TOPICS
        .iter()
        .map(|t| {
            Subscriber::builder(*t)
                .connect_timeout(Duration::from_secs(10))
                .connect()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut received = [0u64; 3];
    let mut open = [true; 3];
    while open.iter().any(|&o| o) {
        // Drain every subscriber until it reports Empty (which arms its descriptor).
        for (i, sub) in subs.iter_mut().enumerate() {
            while open[i] {
                match sub.try_recv() {
                    Ok(_) => received[i] += 1,
                    Err(RecvError::Empty) => break,
                    Err(RecvError::Disconnected) => {
                        open[i] = false;
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let mut fds: Vec<PollFd<'_>> = subs
            .iter()
            .zip(open)
            .filter(|(_, o)| *o)
            .map(|(s, _)| PollFd::new(s, PollFlags::IN))
            .collect();
        if !fds.is_empty() {
            let timeout = rustix::event::Timespec {
                tv_sec: 10,
                tv_nsec: 0,
            };
            if poll(&mut fds, Some(&timeout))? == 0 {
                return Err("no message for 10 s".into());
            }
        }
    }
    println!("received per topic: {received:?}");
    child.wait()?;
    if received != [PER_TOPIC; 3] {
        return Err("lost messages".into());
    }
    Ok(())
}

fn publishers() -> Result<(), Box<dyn std::error::Error>> {
    let mut pubs = TOPICS
        .iter()
        .map(|t| Publisher::bind(t))
        .collect::<Result<Vec<_>, _>>()?;
    for p in &pubs {
        p.wait_for_subscribers(1, Duration::from_secs(30))?;
    }
    for i in 0..PER_TOPIC {
        for (n, p) in pubs.iter_mut().enumerate() {
            p.send(format!("topic {n} message {i}").as_bytes())?;
        }
        if i % 100 == 0 {
            std::thread::sleep(Duration::from_millis(1)); // let the subscribers park now and then
        }
    }
    Ok(())
}
