//! Messages whose length is known only once written: `loan_up_to` and `io::Write` on a loan.
//! A real publisher process writes variable-length text with `write!` to a gating and a lossy
//! subscriber process, which check every length and byte; in one process, the loan's edges:
//! writing past the capacity, all-or-nothing appends, truncation, the waiting variants, a serde
//! writer.
//!
//! This test binary re-executes itself in a child role (see `role_entry` and `common::child`).
//! Every test holds a `FdGuard`; every wait is bounded by a watchdog; nothing asserts on time.

mod common;

use common::FdGuard;
use common::child::{WATCHDOG, spawn};
use shmcast::{LoanError, LoanFull, Mode, Publisher, RecvError, Subscriber};
use std::io::{self, Write};
use std::time::Duration;

fn topic(name: &str) -> String {
    format!("varlen-{}-{name}", std::process::id())
}

const T: Duration = Duration::from_secs(10);

/// Largest message of the multi-process stream.
const MAX: usize = 1200;

/// The text of message `seq`: its number, then 0 to about a thousand letters.
fn text(seq: u64) -> String {
    let letters = (seq.wrapping_mul(7919) % 1000) as usize;
    let body: String = (0..letters)
        .map(|i| (b'a' + ((seq as usize + i) % 26) as u8) as char)
        .collect();
    format!("{seq}:{body}")
}

/// The child side. Runs only when re-executed in a role by `common::child::spawn`.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "writer" => writer(&args),
        "reader" => reader(&args),
        r => panic!("unknown role {r}"),
    }
}

/// args: topic count subscribers. Publishes `count` messages of [`text`] with `write!` into
/// loans of up to [`MAX`] bytes; every tenth message first tries a text that does not fit, which
/// must fail as `WriteZero` and is abandoned. Prints `published N` at the end.
fn writer(args: &[String]) {
    let fds = FdGuard::new();
    let (count, subs): (u64, usize) = (args[1].parse().unwrap(), args[2].parse().unwrap());
    let mut publisher = Publisher::builder(&args[0])
        .capacity(1 << 14)
        .max_message(MAX as u64)
        .bind()
        .unwrap();
    publisher.wait_for_subscribers(subs, WATCHDOG).unwrap();
    for seq in 0..count {
        if seq % 10 == 0 {
            let mut loan = publisher.loan_up_to_timeout(16, WATCHDOG).unwrap();
            let err = write!(loan, "{}", "x".repeat(17)).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::WriteZero);
            assert!(loan.is_empty(), "nothing written by a failed write!");
            // Dropped: abandoned, nobody sees it.
        }
        let mut loan = publisher.loan_up_to_timeout(MAX, WATCHDOG).unwrap();
        write!(loan, "{}", text(seq)).unwrap();
        loan.publish();
    }
    drop(publisher);
    fds.check();
    println!("published {count}");
}

/// args: topic mode count. Receives until disconnected; every message must be [`text`] of its
/// sequence number exactly. Prints `summary received=… lagged=…`.
fn reader(args: &[String]) {
    let fds = FdGuard::new();
    let mode = if args[1] == "lossy" {
        Mode::Lossy
    } else {
        Mode::Gating
    };
    let count: u64 = args[2].parse().unwrap();
    let mut sub = common::connect_as(&args[0], mode);
    println!("ready");
    let (mut received, mut lagged, mut next) = (0u64, 0u64, 0u64);
    loop {
        match sub.recv_timeout(WATCHDOG) {
            Ok(m) => {
                assert_eq!(m.seq(), next, "in order");
                let want = text(m.seq());
                assert_eq!(m.len(), want.len(), "length of message {}", m.seq());
                assert_eq!(&*m, want.as_bytes(), "bytes of message {}", m.seq());
                received += 1;
                next += 1;
            }
            Err(RecvError::Lagged(n)) => {
                assert_eq!(mode, Mode::Lossy, "a gating subscriber never lags");
                lagged += n;
                next += n;
            }
            Err(RecvError::Disconnected) => break,
            Err(e) => panic!("reader: {e}"),
        }
    }
    assert_eq!(
        received + lagged,
        count,
        "every message received or counted"
    );
    drop(sub);
    fds.check();
    println!("summary received={received} lagged={lagged}");
}

#[test]
fn write_into_loans_between_processes() {
    let fds = FdGuard::new();
    let count = 20_000u64;
    let t = topic("procs");
    let args = |mode: &str| [t.clone(), mode.to_string(), count.to_string()];
    // The writer waits for both readers before its first message.
    let writer = spawn("writer", &[t.clone(), count.to_string(), "2".into()]);
    let readers = [
        spawn("reader", &args("gating")),
        spawn("reader", &args("lossy")),
    ];
    assert!(writer.finish().contains(&format!("published {count}")));
    let [gating, lossy] = readers.map(|r| r.finish());
    assert!(
        gating.contains(&format!("received={count} lagged=0")),
        "{gating}"
    );
    let summary = lossy.lines().find(|l| l.starts_with("summary"));
    eprintln!("lossy subscriber: {}", summary.expect(&lossy));
    fds.check();
}

/// A publisher with one gating subscriber, in this process.
fn pair(name: &str) -> (Publisher, Subscriber) {
    let t = topic(name);
    let publisher = Publisher::builder(&t)
        .capacity(4096)
        .max_message(256)
        .stall_bound(None)
        .bind()
        .unwrap();
    let sub = Subscriber::connect(&t).unwrap();
    (publisher, sub)
}

#[test]
fn a_loan_up_to_publishes_exactly_what_was_written() {
    let fds = FdGuard::new();
    let (mut publisher, mut sub) = pair("exact");
    for len in [0usize, 1, 15, 16, 17, 100, 256] {
        let mut loan = publisher.loan_up_to(256).unwrap();
        assert_eq!((loan.len(), loan.capacity()), (0, 256));
        loan.write_all(&vec![len as u8; len]).unwrap();
        loan.publish();
        let m = sub.recv_timeout(T).unwrap();
        assert_eq!(&*m, &vec![len as u8; len][..], "len {len}");
    }
    // A fixed loan truncated before publishing.
    let mut loan = publisher.loan(100).unwrap();
    loan.fill(7);
    loan.truncate(3);
    loan.publish();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), [7, 7, 7]);
    // Filled through the spare capacity, as an encoder into `&mut [u8]` would.
    let mut loan = publisher.loan_up_to(64).unwrap();
    loan.extend_from_slice(b"ab").unwrap();
    loan.spare_capacity_mut()[..3].copy_from_slice(b"cde");
    loan.set_len(5).unwrap();
    loan.publish();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"abcde");
    drop((sub, publisher));
    fds.check();
}

#[test]
fn writing_past_the_capacity_is_an_error_and_writes_nothing_past_it() {
    let fds = FdGuard::new();
    let (mut publisher, mut sub) = pair("full");
    let mut loan = publisher.loan_up_to(8).unwrap();
    write!(loan, "0123").unwrap();
    // `write!` and `write_all` are all or nothing per piece.
    let err = write!(loan, "{}", 456_789).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WriteZero);
    let full = err.get_ref().and_then(|e| e.downcast_ref::<LoanFull>());
    assert_eq!(
        full,
        Some(&LoanFull {
            capacity: 8,
            requested: 10
        })
    );
    assert_eq!(
        err.to_string(),
        "the loan holds at most 8 bytes; 10 do not fit"
    );
    assert_eq!(&loan[..], b"0123");
    // `write` takes what fits, then refuses.
    assert_eq!(loan.write(b"456789").unwrap(), 4);
    let err = loan.write(b"9").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WriteZero);
    assert_eq!(loan.write(b"").unwrap(), 0, "an empty write always fits");
    assert_eq!(
        loan.extend_from_slice(b"9"),
        Err(LoanFull {
            capacity: 8,
            requested: 9
        })
    );
    assert_eq!(
        loan.set_len(9),
        Err(LoanFull {
            capacity: 8,
            requested: 9
        })
    );
    assert_eq!(&loan[..], b"01234567");
    loan.publish();
    publisher.send(b"next").unwrap();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"01234567");
    assert_eq!(
        &*sub.recv_timeout(T).unwrap(),
        b"next",
        "the next message starts after the 8 bytes"
    );
    drop((sub, publisher));
    fds.check();
}

#[test]
fn loan_up_to_waits_like_loan() {
    let fds = FdGuard::new();
    let (mut publisher, sub) = pair("wait");
    assert!(matches!(
        publisher.try_loan_up_to(257),
        Err(LoanError::TooLarge { len: 257, max: 256 })
    ));
    // The gating subscriber never reads: fill the ring with 256-byte reservations that publish
    // one byte each, until one does not fit.
    let mut published = 0;
    loop {
        match publisher.try_loan_up_to(256) {
            Ok(mut loan) => {
                loan.write_all(b"x").unwrap();
                loan.publish();
                published += 1;
            }
            Err(LoanError::Full) => break,
            Err(e) => panic!("{e}"),
        }
    }
    // 32-byte frames in a 4096-byte ring, and a 272-byte reservation must still fit.
    assert_eq!(published, (4096 - 272) / 32 + 1);
    assert!(matches!(
        publisher.loan_up_to_timeout(256, Duration::from_millis(20)),
        Err(LoanError::Timeout)
    ));
    // A smaller reservation still fits where the larger did not.
    publisher.try_loan_up_to(0).unwrap().publish();
    drop((sub, publisher));
    fds.check();
}

#[test]
fn serde_writes_in_place() {
    let fds = FdGuard::new();
    let (mut publisher, mut sub) = pair("serde");
    let value = serde_json::json!({ "door": "open", "temperature": 21.5, "seq": [1, 2, 3] });
    let mut loan = publisher.loan_up_to(publisher.max_message()).unwrap();
    serde_json::to_writer(&mut loan, &value).unwrap();
    let written = loan.len();
    loan.publish();
    let m = sub.recv_timeout(T).unwrap();
    assert_eq!(m.len(), written);
    let back: serde_json::Value = serde_json::from_slice(&m).unwrap();
    assert_eq!(back, value);
    drop(m);
    // A value that does not fit is an error from the serializer, and the loan is abandoned.
    let mut loan = publisher.loan_up_to(8).unwrap();
    let err = serde_json::to_writer(&mut loan, &value).unwrap_err();
    assert!(err.is_io(), "{err}");
    drop(loan);
    publisher.send(b"after").unwrap();
    assert_eq!(&*sub.recv_timeout(T).unwrap(), b"after");
    drop((sub, publisher));
    fds.check();
}
