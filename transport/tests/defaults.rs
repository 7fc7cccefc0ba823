//! The settings a new user relies on without reading every option: documented capacities and
//! timeouts that must work as documented, a publisher that a stopped subscriber cannot freeze by
//! default, a publisher that can wait for its subscribers, and the small conveniences of the
//! receive side (loops, raw descriptors, comparable errors). Every test holds a `FdGuard` and
//! bounds its waits with a watchdog.

mod common;

use common::watchdog::Watchdog;
use common::{FdGuard, until};
use shmcast::{
    BindError, ConnectError, DEFAULT_STALL_BOUND, LoanError, Publisher, RecvError, Subscriber,
};
use std::ops::ControlFlow;
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

fn topic(name: &str) -> String {
    format!("defaults-{}-{name}", std::process::id())
}

const T: Duration = Duration::from_secs(10);

/// Capacities up to the documented 1 TiB bind with the default maximum message (which is capped
/// at what a frame can carry), and the largest ring maps on both sides; memory is reserved, not
/// touched.
#[test]
fn documented_capacities_bind_and_carry_messages() {
    let fds = FdGuard::new();
    for shift in [34, 36, 40] {
        let t = topic(&format!("cap-{shift}"));
        let publisher = Publisher::builder(&t).capacity(1 << shift).bind();
        let publisher = publisher.unwrap_or_else(|e| panic!("capacity 2^{shift}: {e}"));
        assert_eq!(publisher.max_message(), 4_294_967_280, "capacity 2^{shift}");
    }
    let t = topic("cap-40-1mib");
    let mut publisher = Publisher::builder(&t)
        .capacity(1 << 40)
        .max_message(1 << 20)
        .bind()
        .expect("a 1 TiB ring with 1 MiB messages");
    let mut sub = Subscriber::connect(&t).expect("the subscriber maps 1 TiB + the header");
    publisher.send(b"across a terabyte").unwrap();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"across a terabyte");
    drop((sub, publisher));
    fds.check();
}

/// A maximum message of zero would allow only empty messages: refused with the reason.
#[test]
fn zero_max_message_is_refused() {
    let err = Publisher::builder(topic("max0"))
        .max_message(0)
        .bind()
        .unwrap_err();
    assert!(
        matches!(
            err,
            BindError::InvalidOption {
                option: "max_message",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "max_message: must be at least 1: a maximum of 0 allows only empty messages"
    );
}

/// `connect_timeout(Duration::MAX)` waits for a publisher that appears later, instead of
/// overflowing into "no wait".
#[test]
fn connect_timeout_max_waits_for_a_late_publisher() {
    let fds = FdGuard::new();
    let t = topic("late");
    let subscriber = {
        let t = t.clone();
        std::thread::spawn(move || {
            Subscriber::builder(&t)
                .connect_timeout(Duration::MAX)
                .connect()
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let mut publisher = Publisher::bind(&t).unwrap();
    until("the waiting subscriber", || {
        publisher.subscriber_count() == 1
    });
    let mut sub = subscriber
        .join()
        .unwrap()
        .expect("connected once the publisher appeared");
    publisher.send(b"late").unwrap();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"late");
    drop((sub, publisher));
    fds.check();
}

/// A zero handshake timeout is refused where it is used, naming the option, on both sides.
#[test]
fn zero_handshake_timeout_is_refused_on_both_sides() {
    let fds = FdGuard::new();
    let t = topic("hs0");
    let err = Publisher::builder(&t)
        .handshake_timeout(Duration::ZERO)
        .bind()
        .unwrap_err();
    assert!(
        matches!(
            err,
            BindError::InvalidOption {
                option: "handshake_timeout",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "handshake_timeout: must be greater than zero: a zero timeout would refuse every subscriber"
    );
    // A publisher exists, so only the option can be what fails.
    let _publisher = Publisher::bind(&t).unwrap();
    let err = Subscriber::builder(&t)
        .handshake_timeout(Duration::ZERO)
        .connect()
        .unwrap_err();
    assert!(
        matches!(
            err,
            ConnectError::InvalidOption {
                option: "handshake_timeout",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "handshake_timeout: must be greater than zero: the publisher could never answer in time"
    );
    drop(_publisher);
    fds.check();
}

/// A default publisher is not frozen by a gating subscriber that never releases: after the
/// default stall bound it demotes it and goes on; the subscriber learns it was demoted and
/// receives as a lossy one from then on.
#[test]
fn a_stopped_gating_subscriber_delays_a_default_publisher_only_by_the_stall_bound() {
    // Without a default bound, the sends below never return.
    let _watchdog = Watchdog::start("stall bound", Duration::from_secs(120));
    let fds = FdGuard::new();
    let t = topic("stall");
    let mut publisher = Publisher::builder(&t).capacity(4096).bind().unwrap();
    let mut stopped = Subscriber::connect(&t).unwrap();
    // Far more than the ring holds: a publisher without a bound would wait forever here.
    for i in 0..200u32 {
        publisher.send(&i.to_le_bytes()).unwrap();
    }
    let stats = publisher.stats();
    assert_eq!(stats.demotions, 1);
    assert!(
        stats.space_waits > 0,
        "the publisher waited before demoting"
    );
    assert_eq!(stopped.recv_timeout(T).unwrap_err(), RecvError::Demoted);
    assert!(!stopped.is_gating());
    drop((stopped, publisher));
    fds.check();
}

/// The documented default is what a builder starts with, and "wait forever" stays an explicit
/// choice: without a bound, a timed loan times out instead of demoting.
#[test]
fn without_a_stall_bound_a_full_ring_waits_for_the_caller() {
    assert_eq!(DEFAULT_STALL_BOUND, Duration::from_secs(5));
    let fds = FdGuard::new();
    let t = topic("nobound");
    let mut publisher = Publisher::builder(&t)
        .capacity(4096)
        .stall_bound(None)
        .bind()
        .unwrap();
    let sub = Subscriber::connect(&t).unwrap();
    let err = loop {
        match publisher.loan_timeout(64, Duration::from_millis(50)) {
            Ok(loan) => loan.publish(),
            Err(e) => break e,
        }
    };
    assert!(matches!(err, LoanError::Timeout), "{err:?}");
    assert_eq!(publisher.stats().demotions, 0);
    drop((sub, publisher));
    fds.check();
}

/// `wait_for_subscribers` returns once enough have connected, and nothing published after it
/// returns is lost to them; a wait that cannot be met says how many came.
#[test]
fn wait_for_subscribers_then_publish_loses_nothing() {
    let fds = FdGuard::new();
    let t = topic("wait");
    let mut publisher = Publisher::bind(&t).unwrap();
    let subscribers: Vec<_> = (0..2)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || {
                let mut sub = Subscriber::builder(&t)
                    .connect_timeout(T)
                    .connect()
                    .unwrap();
                sub.recv_timeout(T).unwrap().to_vec()
            })
        })
        .collect();
    assert_eq!(publisher.wait_for_subscribers(2, T).unwrap(), 2);
    publisher.send(b"first").unwrap();
    for s in subscribers {
        assert_eq!(s.join().unwrap(), b"first");
    }
    // Departures are noticed by the publisher's server thread, not at once.
    until("the departures", || publisher.subscriber_count() == 0);
    let err = publisher
        .wait_for_subscribers(1, Duration::from_millis(20))
        .unwrap_err();
    assert_eq!((err.wanted, err.connected), (1, 0));
    assert!(
        err.to_string()
            .ends_with("waiting for 1 subscribers (0 connected)"),
        "{err}"
    );
    drop(publisher);
    fds.check();
}

/// `for_each` hands over every message and ends with the stream; `for_each_ready` takes what is
/// ready without waiting.
#[test]
fn receive_loops_end_with_the_stream() {
    let fds = FdGuard::new();
    let t = topic("loops");
    let mut publisher = Publisher::bind(&t).unwrap();
    let mut sub = Subscriber::connect(&t).unwrap();
    assert_eq!(sub.for_each_ready(|_| {}).unwrap(), 0);
    for i in 0..10u8 {
        publisher.send(&[i]).unwrap();
    }
    let mut ready = Vec::new();
    assert_eq!(sub.for_each_ready(|s| ready.push(s[0])).unwrap(), 10);
    assert_eq!(ready, (0..10).collect::<Vec<_>>());
    for i in 10..20u8 {
        publisher.send(&[i]).unwrap();
    }
    // Stop early...
    let mut seen = Vec::new();
    sub.for_each(|s| {
        seen.push(s[0]);
        if seen.len() == 5 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    assert_eq!(seen, (10..15).collect::<Vec<_>>());
    // ...or run to the end of the stream.
    drop(publisher);
    sub.for_each(|s| {
        seen.push(s[0]);
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(seen, (10..20).collect::<Vec<_>>());
    assert_eq!(sub.try_recv().unwrap_err(), RecvError::Disconnected);
    drop(sub);
    fds.check();
}

/// The raw descriptor is the one `as_fd` lends; loans print; receive errors compare, I/O errors
/// by kind.
#[test]
fn raw_descriptor_debug_loans_and_comparable_errors() {
    let fds = FdGuard::new();
    let t = topic("small");
    let mut publisher = Publisher::bind(&t).unwrap();
    let sub = Subscriber::connect(&t).unwrap();
    assert_eq!(sub.as_raw_fd(), sub.as_fd().as_raw_fd());
    let loan = publisher.loan(3).unwrap();
    let text = format!("{loan:?}");
    assert!(text.starts_with("Loan { len: 3"), "{text}");
    drop(loan);
    let pod = publisher.loan_pod::<u64>().unwrap();
    assert!(format!("{pod:?}").contains("u64"));
    drop(pod);
    assert_eq!(RecvError::Lagged(3), RecvError::Lagged(3));
    assert_ne!(RecvError::Lagged(3), RecvError::Lagged(4));
    let io = |k| RecvError::Io(std::io::Error::from(k));
    assert_eq!(
        io(std::io::ErrorKind::Interrupted),
        io(std::io::ErrorKind::Interrupted)
    );
    assert_ne!(io(std::io::ErrorKind::Interrupted), RecvError::Timeout);
    drop((sub, publisher));
    fds.check();
}
