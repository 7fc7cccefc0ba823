//! Children forked without `exec` (pre-forking servers, daemons' workers) never keep a topic's
//! connections open: a subscriber destroyed in the parent leaves its publisher at once, and a
//! publisher process that dies is seen gone by its subscribers, however long its children
//! live. The children here only sleep; they never touch the handles they inherited.
//!
//! This test binary re-executes itself in a child role (see `role_entry` and `common::child`).
//! Every wait is bounded (a watchdog, or `BOUND` where a hang is the failure looked for);
//! nothing here asserts on time.

mod common;

use common::FdGuard;
use common::child::spawn;
use shmcast::{Publisher, RecvError, StreamEnd, Subscriber};
use std::time::{Duration, Instant};

/// Far longer than a departure or a hang-up takes to be seen; only a connection kept open by
/// a sleeping child reaches it.
const BOUND: Duration = Duration::from_secs(30);

fn topic(name: &str) -> String {
    format!("fork-{}-{name}", std::process::id())
}

/// A forked child that sleeps until killed; killed and reaped when dropped.
struct Sleeper(libc::pid_t);

impl Sleeper {
    /// Forks a child that sleeps until killed (it runs nothing of the parent's).
    fn fork() -> Sleeper {
        // SAFETY: the child only calls `pause` and `_exit`, both async-signal-safe.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            loop {
                // SAFETY: async-signal-safe; the child waits here to be killed.
                unsafe { libc::pause() };
            }
        }
        Sleeper(pid)
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let mut status = 0;
        // SAFETY: our own child.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, &mut status, 0);
        }
    }
}

/// The child side. Runs only when re-executed in a role by `common::child::spawn`.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "forking-publisher" => role_forking_publisher(&args),
        r => panic!("unknown role {r}"),
    }
}

/// args: topic. Binds, waits for one subscriber, publishes one message, forks a child that
/// sleeps (printing `sleeper PID`), then dies as a crash would: `_exit`, nothing dropped.
fn role_forking_publisher(args: &[String]) {
    let mut publisher = Publisher::bind(&args[0]).unwrap();
    println!("ready");
    publisher.wait_for_subscribers(1, BOUND).unwrap();
    publisher.send(b"last").unwrap();
    let sleeper = Sleeper::fork();
    println!("sleeper {}", sleeper.0);
    std::mem::forget(sleeper);
    // SAFETY: ends the process at once, as a crash would.
    unsafe { libc::_exit(0) };
}

/// A subscriber dropped in a process that has a forked child leaves its publisher: the child's
/// copy of the connection does not keep it admitted.
#[test]
fn a_subscriber_dropped_beside_a_forked_child_leaves_its_publisher() {
    let fds = FdGuard::new();
    let t = topic("subscriber");
    let mut publisher = Publisher::bind(&t).unwrap();
    let sub = Subscriber::connect(&t).unwrap();
    publisher.send(b"seen").unwrap();
    let sleeper = Sleeper::fork();
    drop(sub);
    let deadline = Instant::now() + BOUND;
    while publisher.subscriber_count() != 0 {
        assert!(
            Instant::now() < deadline,
            "a subscriber dropped beside a forked child stayed admitted"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(publisher.stats().departed, 1);
    // The stream goes on for others, as it does for the child, which holds nothing of it.
    let mut again = Subscriber::connect(&t).unwrap();
    publisher.send(b"again").unwrap();
    assert_eq!(&*again.recv_timeout(BOUND).unwrap(), b"again");
    drop(sleeper);
    drop((again, publisher));
    fds.check();
}

/// A publisher process that forked a child and then died is seen gone by its subscribers at
/// once (after the messages it committed), not when the child ends.
#[test]
fn a_publisher_that_forked_and_died_is_seen_gone() {
    let fds = FdGuard::new();
    let t = topic("publisher");
    let mut publisher = spawn("forking-publisher", std::slice::from_ref(&t));
    publisher.expect_line("ready");
    let mut sub = Subscriber::builder(&t)
        .connect_timeout(BOUND)
        .connect()
        .unwrap();
    let line = publisher.expect_line("sleeper ");
    let pid: libc::pid_t = line.trim_start_matches("sleeper ").trim().parse().unwrap();
    let sleeper = Sleeper(pid);
    assert_eq!(&*sub.recv_timeout(BOUND).unwrap(), b"last");
    match sub.recv_timeout(BOUND) {
        Err(RecvError::Disconnected) => {}
        other => panic!("the dead publisher's stream did not end: {other:?}"),
    }
    assert_eq!(sub.stream_end(), Some(StreamEnd::Vanished));
    drop(sleeper);
    drop(sub);
    // The crash left its socket behind: the next publisher takes the topic over, and removes
    // the socket when it is dropped.
    drop(Publisher::bind(&t).unwrap());
    fds.check();
}
