//! Several subscribers in one `poll` loop, and several publishers in another.
//!
//! `cargo run --example poll_loop -p shmcast` starts three publishers (on three topics) in a
//! child process, then waits on one subscriber of each in a single `poll(2)` call. A subscriber's
//! descriptor is readable whenever a receive would not return `Empty`; the loop drains each
//! ready subscriber until `Empty` again. The child's publishers, with rings of 4 KiB, wait for
//! space in a `poll` loop of their own, on the descriptors `watch_space` arms, never blocking in
//! a send.

use rustix::event::{PollFd, PollFlags, poll};
use shmcast::{LoanError, Publisher, RecvError, Subscriber};
use std::time::Duration;

const TOPICS: [&str; 3] = ["example-poll-a", "example-poll-b", "example-poll-c"];
const PER_TOPIC: u64 = 1000;
const TEN_SECONDS: rustix::event::Timespec = rustix::event::Timespec {
    tv_sec: 10,
    tv_nsec: 0,
};

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
        if !fds.is_empty() && poll(&mut fds, Some(&TEN_SECONDS))? == 0 {
            return Err("no message for 10 s".into());
        }
    }
    println!("received per topic: {received:?}");
    child.wait()?;
    if received != [PER_TOPIC; 3] {
        return Err("lost messages".into());
    }
    Ok(())
}

/// The child: three publishers in one `poll` loop, each with a small ring. Each sends until its
/// ring is full, then waits on its space descriptor (`watch_space`) while the others go on.
fn publishers() -> Result<(), Box<dyn std::error::Error>> {
    let mut pubs = TOPICS
        .iter()
        .map(|t| Publisher::builder(*t).capacity(4096).bind())
        .collect::<Result<Vec<_>, _>>()?;
    for p in &pubs {
        p.wait_for_subscribers(1, Duration::from_secs(30))?;
    }
    let mut next = [0u64; 3];
    while next.iter().any(|&n| n < PER_TOPIC) {
        let mut waiting = [false; 3];
        for (n, p) in pubs.iter_mut().enumerate() {
            while next[n] < PER_TOPIC {
                let msg = format!("topic {n} message {}", next[n]);
                match p.try_loan(msg.len()) {
                    Ok(mut loan) => {
                        loan.copy_from_slice(msg.as_bytes());
                        loan.publish();
                        next[n] += 1;
                        continue;
                    }
                    Err(LoanError::Full) => {}
                    Err(e) => return Err(e.into()),
                }
                // Full: wait for space in the loop, unless it freed up meanwhile.
                if !p.watch_space(msg.len())? {
                    waiting[n] = true;
                    break;
                }
            }
        }
        let spaces: Vec<_> = pubs
            .iter()
            .zip(waiting)
            .filter(|(_, w)| *w)
            .map(|(p, _)| p.space_fd())
            .collect();
        let mut fds: Vec<PollFd<'_>> = spaces
            .iter()
            .map(|fd| PollFd::new(fd, PollFlags::IN))
            .collect();
        if !fds.is_empty() && poll(&mut fds, Some(&TEN_SECONDS))? == 0 {
            return Err("no space for 10 s".into());
        }
    }
    Ok(())
}
