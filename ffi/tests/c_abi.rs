//! The C ABI from C: the programs in `tests/c/` are compiled with `-std=c99 -Wall -Wextra
//! -Werror -pedantic` against the library cargo just built and run as separate processes under
//! a watchdog, talking to each other and to the Rust API. Every scenario runs twice: natively,
//! and under valgrind memcheck (any memory error or definite leak fails it), which is skipped
//! with a message when valgrind is not installed.

mod support;

use shmcast_transport::{Inspector, Publisher, RecvError, Subscriber};
use support::{
    Link, Runner, checksum_add, checksum_start, compile, expected_checksum, gen_len, gen_message,
};

/// Messages per stream: enough to wrap the 64 KiB test rings many times.
const COUNT: u64 = 3000;

/// A C publisher and two C subscribers (one in place, one mixing in-place and copy-out
/// receives), all in separate processes.
fn c_publisher_two_c_subscribers(r: Runner) {
    let topic = r.topic("c2c");
    let count = COUNT.to_string();
    let sub = compile("sub", Link::Shared);
    let mut a = r.spawn(&sub, &[&topic, &count]);
    let mut b = r.spawn(&sub, &[&topic, &count, "--mixed"]);
    let publisher = r.spawn(&compile("pub", Link::Shared), &[&topic, &count, "2"]);
    a.expect_line("connected");
    b.expect_line("connected");
    let sent = publisher.wait();
    sent.assert_success();
    let want = expected_checksum(COUNT);
    assert_eq!(sent.value("sent", "checksum"), want, "publisher checksum");
    for sub in [a.wait(), b.wait()] {
        sub.assert_success();
        assert_eq!(sub.value("received", "count"), COUNT, "{}", sub.name);
        assert_eq!(sub.value("received", "checksum"), want, "{}", sub.name);
        assert_eq!(sub.value("received", "lagged"), 0, "{}", sub.name);
    }
}

/// The spin limits from C, on both sides of a 4 KiB ring that fills every few messages: a C
/// publisher that never polls for space (`SHMCAST_SPIN_NONE`) with a C subscriber polling for
/// messages up to 200 µs, then the publisher at the largest limit with a subscriber that never
/// polls. Every message arrives, byte for byte, whoever sleeps.
fn spin_limits(r: Runner) {
    for (publisher_spin, subscriber_spin) in [("none", "200"), ("10000", "none")] {
        let topic = r.topic(&format!("spin-{publisher_spin}"));
        let count = COUNT.to_string();
        let mut sub = r.spawn(
            &compile("sub", Link::Shared),
            &[&topic, &count, "--spin-limit-us", subscriber_spin],
        );
        let publisher = r.spawn(
            &compile("pub", Link::Shared),
            &[&topic, &count, "1", "4096", publisher_spin],
        );
        sub.expect_line("connected");
        let sent = publisher.wait();
        sent.assert_success();
        let want = expected_checksum(COUNT);
        assert_eq!(sent.value("sent", "checksum"), want, "{publisher_spin}");
        let got = sub.wait();
        got.assert_success();
        assert_eq!(got.value("received", "count"), COUNT, "{subscriber_spin}");
        assert_eq!(got.value("received", "checksum"), want, "{subscriber_spin}");
    }
}

/// The cache window from C (`window.c`): through a 64 KiB ring, a subscriber that keeps up
/// gets every message whatever the window; with a 4 KiB window the publisher starts laps early
/// (counted for `shmcast stat`) and a late joiner finds only the window's few messages; with
/// `SHMCAST_CACHE_WINDOW_NONE`, or the 4 MiB default larger than the ring, the whole ring's.
fn cache_window(r: Runner) {
    let count = 2000u64;
    for window in ["4", "none", "default"] {
        let topic = r.topic(&format!("window-{window}"));
        let mut c = r.spawn(
            &compile("window", Link::Shared),
            &[&topic, window, &count.to_string()],
        );
        let history: u64 = c
            .expect_line("history")
            .trim_start_matches("history ")
            .trim()
            .parse()
            .unwrap();
        let wraps = Inspector::new(&topic)
            .timeout(r.limit())
            .inspect()
            .unwrap()
            .counters
            .early_wraps;
        c.send_line("go");
        let got = c.wait();
        got.assert_success();
        assert!(got.stdout.contains("checks passed"), "{}", got.stdout);
        if window == "4" {
            // Each lap ends once 4 KiB are written: about every five messages.
            assert!(wraps > count / 10, "{window}: {wraps} early wraps");
            assert!(history <= 7, "{window}: {history} messages of history");
        } else {
            assert_eq!(wraps, 0, "{window}");
            assert!(history >= 60, "{window}: {history} messages of history");
        }
    }
}

/// A Rust publisher and a C subscriber receiving by copy.
fn rust_publisher_c_subscriber(r: Runner) {
    let topic = r.topic("r2c");
    // No stall bound: a subscriber under memcheck may hold a full ring for seconds.
    let mut publisher = Publisher::builder(&topic)
        .capacity(1 << 16)
        .stall_bound(None)
        .bind()
        .unwrap();
    let count = COUNT.to_string();
    let mut sub = r.spawn(&compile("sub", Link::Shared), &[&topic, &count, "--copy"]);
    sub.wait_for("the C subscriber connecting", || {
        publisher.subscriber_count() == 1
    });
    for seq in 0..COUNT {
        publisher.send(&gen_message(seq)).unwrap();
    }
    drop(publisher);
    let got = sub.wait();
    got.assert_success();
    assert_eq!(got.value("received", "count"), COUNT);
    assert_eq!(got.value("received", "checksum"), expected_checksum(COUNT));
}

/// A C publisher and a Rust subscriber.
fn c_publisher_rust_subscriber(r: Runner) {
    let topic = r.topic("c2r");
    let count = COUNT.to_string();
    let publisher = r.spawn(
        &compile("pub", Link::Shared),
        &[&topic, &count, "1", "65536"],
    );
    let mut sub = Subscriber::builder(&topic)
        .connect_timeout(r.limit())
        .connect()
        .unwrap();
    let mut checksum = checksum_start();
    let mut next = 0;
    loop {
        match sub.recv_timeout(r.limit()) {
            Ok(m) => {
                assert_eq!(m.seq(), next);
                assert_eq!(m.len(), gen_len(next));
                assert!(*m == *gen_message(next), "message {next} differs");
                checksum = checksum_add(checksum, m.seq(), &m);
                next += 1;
            }
            Err(RecvError::Disconnected) => break,
            Err(e) => panic!("receive failed after {next} messages: {e}"),
        }
    }
    assert_eq!(next, COUNT);
    let sent = publisher.wait();
    sent.assert_success();
    assert_eq!(sent.value("sent", "checksum"), checksum);
    assert_eq!(checksum, expected_checksum(COUNT));
}

/// One C program serves three subscribers from one `poll()` loop. Each burst is sent only
/// once all three have parked (announced that they wait), so every burst must reach the
/// program through its descriptors.
fn poll_loop_three_subscribers(r: Runner) {
    const BURST: u64 = 50;
    let topics: Vec<String> = (0..3).map(|i| r.topic(&format!("poll{i}"))).collect();
    let mut publishers: Vec<Publisher> = topics
        .iter()
        .map(|t| Publisher::builder(t).capacity(1 << 16).bind().unwrap())
        .collect();
    let count = 12 * BURST;
    let prog = compile("poll3", Link::Shared);
    let count_arg = count.to_string();
    let mut sub = r.spawn(&prog, &[&topics[0], &topics[1], &topics[2], &count_arg]);
    sub.wait_for("the C program connecting", || {
        publishers.iter().all(|p| p.subscriber_count() == 1)
    });
    for burst in 0..count / BURST {
        sub.wait_for("all three subscribers parking", || {
            publishers
                .iter()
                .all(|p| p.stats().subscribers.iter().all(|s| s.parked))
        });
        for seq in burst * BURST..(burst + 1) * BURST {
            for p in &mut publishers {
                p.send(&gen_message(seq)).unwrap();
            }
        }
    }
    drop(publishers);
    let got = sub.wait();
    got.assert_success();
    let want = expected_checksum(count);
    for i in 0..3 {
        let line = format!("sub{i}");
        assert_eq!(got.value(&line, "count"), count);
        assert_eq!(got.value(&line, "checksum"), want);
    }
    assert!(
        got.value("polls", "count") >= count / BURST,
        "every burst must have been waited for with poll()"
    );
}

/// A C publisher in a `poll()` loop (`space.c`) that never blocks in a send: a send with
/// timeout 0 that finds the 4 KiB ring full arms the space descriptor, and the loop waits for it
/// beside a timer of its own. One C subscriber holds back until the publisher announces its first
/// wait, so that wait can end only through the descriptor; both get every message, byte for
/// byte.
fn event_loop_publisher(r: Runner) {
    let topic = r.topic("space");
    let count = COUNT.to_string();
    let sub = compile("sub", Link::Shared);
    let mut held = r.spawn(&sub, &[&topic, &count, "--wait-stdin"]);
    let mut other = r.spawn(&sub, &[&topic, &count, "--copy"]);
    let mut publisher = r.spawn(
        &compile("space", Link::Shared),
        &[&topic, &count, "2", "4096"],
    );
    held.expect_line("connected");
    other.expect_line("connected");
    publisher.expect_line("full");
    held.send_line("go");
    let sent = publisher.wait();
    sent.assert_success();
    let want = expected_checksum(COUNT);
    assert_eq!(sent.value("sent", "checksum"), want, "publisher checksum");
    assert!(sent.value("sent", "waits") > 0, "never waited for space");
    for sub in [held.wait(), other.wait()] {
        sub.assert_success();
        assert_eq!(sub.value("received", "count"), COUNT, "{}", sub.name);
        assert_eq!(sub.value("received", "checksum"), want, "{}", sub.name);
    }
}

/// The descriptor contract from C (`descriptor.c`): a C subscriber that waits for its
/// descriptor before its first receive, in three loops (poll with one receive per wakeup, epoll
/// edge-triggered, a late joiner's history), receives every message of a Rust publisher's
/// gating stream in order, then the end. The publisher waits for space with a bound, so a
/// descriptor that stays unreadable fails the test instead of hanging it.
fn descriptor_contract(r: Runner) {
    const HISTORY: u64 = 20;
    for mode in ["--poll-one", "--epoll-et", "--oldest"] {
        let topic = r.topic(&format!("fd{}", mode.trim_start_matches('-')));
        let mut publisher = Publisher::builder(&topic)
            .capacity(1 << 14)
            .stall_bound(None)
            .bind()
            .unwrap();
        let send = |p: &mut Publisher, seq: u64| {
            let m = gen_message(seq);
            let mut loan = p
                .loan_timeout(m.len(), r.limit())
                .unwrap_or_else(|e| panic!("{mode}: message {seq}: {e}"));
            loan.copy_from_slice(&m);
            loan.publish();
        };
        let first = if mode == "--oldest" { HISTORY } else { 0 };
        for seq in 0..first {
            send(&mut publisher, seq);
        }
        let count = COUNT.to_string();
        let mut sub = r.spawn(
            &compile("descriptor", Link::Shared),
            &[&topic, &count, mode],
        );
        sub.wait_for("the C subscriber connecting", || {
            publisher.subscriber_count() == 1
        });
        for seq in first..COUNT {
            send(&mut publisher, seq);
            if seq % 250 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        drop(publisher);
        let got = sub.wait();
        got.assert_success();
        assert_eq!(got.value("received", "count"), COUNT, "{mode}");
        assert_eq!(
            got.value("received", "checksum"),
            expected_checksum(COUNT),
            "{mode}"
        );
    }
}

/// Null arguments, bad options, a missing topic with a connect timeout, busy handles, small
/// buffers, a full ring, hostile clients, and the end of the stream, in one C program.
fn error_paths(r: Runner) {
    let prefix = r.topic("err");
    let got = r.spawn(&compile("errors", Link::Shared), &[&prefix]).wait();
    got.assert_success();
    assert!(got.stdout.contains("checks passed"), "{}", got.stdout);
}

/// The C subscriber starts reading only after the C publisher exited: it drains everything,
/// then gets `SHMCAST_EDISCONNECTED`.
fn drain_after_publisher_exit(r: Runner) {
    let topic = r.topic("drain");
    let count = "40"; // fits the 64 KiB ring, so the gated publisher never waits
    let mut sub = r.spawn(
        &compile("sub", Link::Shared),
        &[&topic, count, "--wait-stdin"],
    );
    let publisher = r.spawn(
        &compile("pub", Link::Shared),
        &[&topic, count, "1", "65536"],
    );
    sub.expect_line("connected");
    publisher.wait().assert_success();
    sub.send_line("go");
    let got = sub.wait();
    got.assert_success();
    assert_eq!(got.value("received", "count"), 40);
    assert_eq!(got.value("received", "checksum"), expected_checksum(40));
}

/// A lossy C subscriber that falls behind is told exactly how many messages it missed.
fn lossy_subscriber_lag_count(r: Runner) {
    let topic = r.topic("lossy");
    let mut publisher = Publisher::builder(&topic).capacity(4096).bind().unwrap();
    let total = 2000u64;
    let total_arg = total.to_string();
    let mut sub = r.spawn(
        &compile("sub", Link::Shared),
        &[&topic, &total_arg, "--lossy", "--mixed", "--wait-stdin"],
    );
    sub.expect_line("connected");
    sub.wait_for("the C subscriber connecting", || {
        publisher.subscriber_count() == 1
    });
    for seq in 0..total {
        publisher.send(&gen_message(seq)).unwrap();
    }
    drop(publisher);
    sub.send_line("go");
    let got = sub.wait();
    got.assert_success();
    let (received, lagged) = (
        got.value("received", "count"),
        got.value("received", "lagged"),
    );
    assert!(lagged > 0, "a 4 KiB ring cannot hold {total} messages");
    assert!(received > 0, "the newest messages are still in the ring");
    assert_eq!(received + lagged, total);
    assert!(got.value("received", "lag_events") >= 1);
}

/// The static library links into a C program with the system libraries the header names.
fn static_library(r: Runner) {
    let prefix = r.topic("static");
    let got = r.spawn(&compile("errors", Link::Static), &[&prefix]).wait();
    got.assert_success();
}

/// The struct the C program declares as `Tick`.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Tick {
    seq: u64,
    price: f64,
}

/// C publishers declare a type and a schema, C subscribers match, mismatch (each field) and
/// read the declaration; bad declarations and expectations are `SHMCAST_EINVAL`. Then a C
/// subscriber expecting the C `Tick` meets a Rust publisher of `pod::<Tick>()`. A C publisher
/// declared imported is so for C and Rust subscribers and for an inspector, with the losses
/// upstream it counted.
fn contract(r: Runner) {
    let rust_topic = r.topic("contract-rust");
    let imported_topic = r.topic("contract-imported");
    let mut publisher = Publisher::builder(&rust_topic)
        .pod::<Tick>()
        .bind()
        .unwrap();
    let mut c = r.spawn(
        &compile("contract", Link::Shared),
        &[&r.topic("contract"), &rust_topic, &imported_topic],
    );
    c.expect_line("connected");
    c.wait_for("the C subscriber admitted", || {
        publisher.subscriber_count() == 1
    });
    publisher
        .send_pod(&Tick {
            seq: 42,
            price: 2.5,
        })
        .unwrap();
    // The C publisher's imported topic, as `shmcast stat` and a subscriber see it.
    c.expect_line("imported");
    let info = Inspector::new(&imported_topic)
        .timeout(r.limit())
        .inspect()
        .unwrap();
    assert!(info.imported);
    assert_eq!(info.counters.upstream_lost, 7);
    let sub = Subscriber::connect(&imported_topic).unwrap();
    assert!(sub.imported());
    let got = c.wait();
    drop(sub);
    got.assert_success();
    assert!(
        got.stdout.contains("tick seq=42 price_x10=25"),
        "{}",
        got.stdout
    );
    assert!(got.stdout.contains("checks passed"), "{}", got.stdout);
    // The C subscriber refused for expecting "app::Tick" left; the matching one is gone too.
    drop(publisher);
}

/// A publisher refuses to replace a regular file, a FIFO, a symbolic link or a directory
/// (`SHMCAST_EEXIST`); socket paths over the limit and missing directories are `SHMCAST_ETOPIC`
/// naming the path; the `directory` option and `SHMCAST_DIR` choose where both sides look, and
/// `SHMCAST_ENOPUBLISHER` says where and why.
fn topic_paths(r: Runner) {
    let dir = std::env::temp_dir().join(r.topic("topics"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let got = r
        .spawn(&compile("topics", Link::Shared), &[dir.to_str().unwrap()])
        .wait();
    got.assert_success();
    assert!(got.stdout.contains("checks passed"), "{}", got.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `varlen.c`: loans of the most a message may need, published with the length written
/// (`shmcast_publisher_publish_len`); a length above the loan's keeps the loan outstanding.
fn variable_length(r: Runner) {
    let topic = r.topic("varlen");
    let got = r.spawn(&compile("varlen", Link::Shared), &[&topic]).wait();
    got.assert_success();
    assert!(got.stdout.contains("checks passed"), "{}", got.stdout);
}

/// A lossy C subscriber lapped by a Rust publisher resumes where its policy says, with an exact
/// lag, then receives the newest message with `shmcast_subscriber_recv_latest`.
fn resume_and_latest(r: Runner) {
    let total = 2000u64;
    let mut lags = Vec::new();
    for resume in ["oldest", "slack", "newest"] {
        let topic = r.topic(&format!("latest-{resume}"));
        let mut publisher = Publisher::builder(&topic).capacity(4096).bind().unwrap();
        let mut sub = r.spawn(
            &compile("latest", Link::Shared),
            &[&topic, &total.to_string(), resume],
        );
        sub.expect_line("connected");
        sub.wait_for("the C subscriber connecting", || {
            publisher.subscriber_count() == 1
        });
        for seq in 0..total {
            publisher.send(&gen_message(seq)).unwrap();
        }
        drop(publisher);
        sub.send_line("go");
        let got = sub.wait();
        got.assert_success();
        let (lagged, skipped) = (
            got.value("lagged", "lagged"),
            got.value("latest", "skipped"),
        );
        assert_eq!(
            lagged + skipped + 1,
            total,
            "{resume}: every message accounted for"
        );
        lags.push(lagged);
    }
    assert!(
        lags[0] < lags[1],
        "slack resumes after the oldest: {lags:?}"
    );
    assert_eq!(lags[2], total - 1, "newest resumes with the last message");
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod native {
            $(
                #[test]
                fn $name() {
                    super::$name(super::Runner { valgrind: false });
                }
            )*
        }

        mod valgrind {
            $(
                #[test]
                fn $name() {
                    if !super::support::valgrind_available() {
                        eprintln!(
                            "SKIPPED: valgrind is not installed; the C tests ran natively only \
                             (install valgrind to check them with memcheck)"
                        );
                        return;
                    }
                    super::$name(super::Runner { valgrind: true });
                }
            )*
        }
    };
}

scenarios!(
    c_publisher_two_c_subscribers,
    spin_limits,
    cache_window,
    rust_publisher_c_subscriber,
    c_publisher_rust_subscriber,
    poll_loop_three_subscribers,
    event_loop_publisher,
    descriptor_contract,
    error_paths,
    drain_after_publisher_exit,
    lossy_subscriber_lag_count,
    static_library,
    contract,
    topic_paths,
    variable_length,
    resume_and_latest,
);

/// The examples build with their Makefile against the fresh library and talk to each other.
#[test]
fn examples_build_and_run() {
    use std::process::Command;
    if Command::new("make").arg("--version").output().is_err() {
        eprintln!("SKIPPED: make is not installed");
        return;
    }
    let out = support::out_dir().join("examples");
    std::fs::create_dir_all(&out).unwrap();
    let made = Command::new("make")
        .arg("-C")
        .arg(support::manifest_dir().join("examples"))
        .arg(format!("SHMCAST_LIB_DIR={}", support::lib_dir().display()))
        .arg(format!("OUT={}", out.display()))
        .arg("-B")
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "make failed:\n{}{}",
        String::from_utf8_lossy(&made.stdout),
        String::from_utf8_lossy(&made.stderr)
    );
    let r = Runner { valgrind: false };
    let topic = r.topic("example");
    let mut sub = r.spawn(&out.join("subscriber"), &[&topic]);
    // Started from a script, its stdin at the end: it is no keyboard, so it does not stop it.
    sub.close_stdin();
    let publisher = r.spawn(&out.join("publisher"), &[&topic, "5", "1"]);
    let published = publisher.wait();
    published.assert_success();
    assert!(
        published
            .stdout
            .contains("published 5 messages to 1 subscribers")
    );
    sub.expect_line("#0: tick 0");
    sub.expect_line("#4: tick 4");
    sub.expect_line("publisher gone");
    sub.wait().assert_success();

    // The event-loop publisher: every line of its input, through its 4 KiB ring.
    let topic = r.topic("example-lines");
    let mut lines = r.spawn(&out.join("lines"), &[&topic]);
    lines.expect_line("publishing on");
    let mut sub = r.spawn(&out.join("subscriber"), &[&topic]);
    sub.close_stdin();
    for i in 0..2000 {
        lines.send_line(&format!("line {i}"));
    }
    lines.close_stdin();
    let published = lines.wait();
    published.assert_success();
    assert!(
        published.stdout.contains("published 2000 lines, dropped 0"),
        "{}",
        published.stdout
    );
    sub.expect_line("#0: line 0");
    sub.expect_line("#1999: line 1999");
    sub.expect_line("publisher gone");
    sub.wait().assert_success();
}
