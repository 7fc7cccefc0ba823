//! Hostile clients of the topic socket: a process flooding it with connections that never
//! speak, garbage and descriptors, and a same-uid process taking admitted connections until it
//! is refused. The publisher refuses or drops each, keeps the descriptors its own program needs,
//! keeps publishing, and a good subscriber process loses nothing (`common::attack`).
//!
//! Child processes come from `common::child`; every wait is bounded by its watchdog; nothing
//! here asserts on time.

mod common;

use common::attack::{FLAT_OUT, publish_under_attack};
use common::child::{self, WATCHDOG};
use common::{FdGuard, roles};
use shmcast::{Publisher, Subscriber};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

fn topic(name: &str) -> String {
    format!("hostile-sub-{}-{name}", std::process::id())
}

/// A process floods the topic socket: hundreds of connections that never speak, oversized and
/// truncated packets, garbage, descriptors, and connections opened and closed in a tight loop.
/// The publisher refuses or drops each (and counts them), keeps publishing, and the good
/// subscriber receives every message in order.
#[test]
fn socket_floods_are_refused_while_the_publisher_keeps_publishing() {
    let stats = publish_under_attack(
        &topic("clients"),
        ("clients", "flood"),
        1,
        FLAT_OUT,
        |publisher, _| publisher.stats().refused >= 1,
    )
    .stats;
    assert!(stats.refused >= 1, "{stats:?}");
    assert_eq!(stats.admitted, 1, "only the good subscriber: {stats:?}");
}

/// A same-uid process that opens admitted connections until it is refused cannot take the
/// descriptors the publisher's program needs: a publisher process with a limit of 64 descriptors
/// admits subscribers only up to its reserve, goes on opening files and publishing meanwhile,
/// and admits a good subscriber once the flood has left.
#[test]
fn admitted_connections_never_take_the_publishers_descriptor_reserve() {
    use shmcast::test_support::raw_handshake;
    let fds = FdGuard::new();
    let t = topic("reserve");
    let mut publisher = child::spawn("few-descriptors", std::slice::from_ref(&t));
    let line = publisher.expect_line("bound ");
    let path = std::path::PathBuf::from(line[line.find("bound ").unwrap() + 6..].trim());
    let mut flood = Vec::new();
    let reason = loop {
        assert!(
            flood.len() < 64,
            "64 subscribers admitted under a limit of 64 descriptors"
        );
        match raw_handshake(&path).unwrap() {
            Ok(conn) => flood.push(conn),
            Err(reason) => break reason,
        }
    };
    assert!(reason.contains("short of descriptors"), "{reason}");
    assert!(flood.len() >= 8, "only {} admitted", flood.len());
    // Short of descriptors, the publisher still answers an inspection (one request at a time).
    let info = shmcast::Inspector::new(&t).inspect().unwrap();
    assert_eq!(info.subscriber_count, flood.len());
    publisher.expect_line("opened 8 files");
    // The flood leaves; the next subscriber gets in and receives the stream.
    drop(flood);
    let deadline = Instant::now() + WATCHDOG;
    let mut sub = loop {
        match shmcast::Subscriber::connect(&t) {
            Ok(sub) => break sub,
            // Departures are noticed by the publisher's control thread, not at once.
            Err(shmcast::ConnectError::Refused { reason, .. }) if reason.contains("short of") => {
                assert!(
                    Instant::now() < deadline,
                    "watchdog: still refused: {reason}"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{e}"),
        }
    };
    let first = sub.recv_timeout(WATCHDOG).unwrap().seq();
    for seq in first + 1..first + 4 {
        assert_eq!(sub.recv_timeout(WATCHDOG).unwrap().seq(), seq);
    }
    drop(sub);
    assert!(
        !publisher.printed("cannot open"),
        "the publisher ran out of descriptors"
    );
    publisher.kill();
    // A killed publisher leaves its socket behind (a later publisher would replace it): remove
    // it, so the test leaves nothing in the topic directory.
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("{}: {e}", path.display()),
        _ => {}
    }
    fds.check();
}

/// The same reserve against bursts: a same-uid process opens connections 48 at a time, sends a
/// HELLO on each before reading any answer, and keeps them all. Admissions checked one by one
/// against descriptors opened since (the burst's later connections) still leave the program its
/// reserve: a publisher with a limit of 64 descriptors that opens and closes 8 files all along
/// never fails to.
#[test]
fn bursts_of_connections_never_take_the_publishers_descriptor_reserve() {
    use shmcast::test_support::{raw_connect, sample_hellos};
    let t = topic("burst");
    let mut publisher = child::spawn("few-descriptors-busy", std::slice::from_ref(&t));
    let line = publisher.expect_line("bound ");
    let path = std::path::PathBuf::from(line[line.find("bound ").unwrap() + 6..].trim());
    let hello = &sample_hellos()[0];
    let mut held = Vec::new();
    for _ in 0..4 {
        let burst: Vec<OwnedFd> = (0..48).filter_map(|_| raw_connect(&path).ok()).collect();
        for conn in &burst {
            send_raw(conn, hello);
        }
        held.extend(burst);
        // Let the publisher's thread answer the burst while its program goes on opening files.
        std::thread::sleep(Duration::from_millis(100));
    }
    let info = shmcast::Inspector::new(&t).inspect().unwrap();
    assert!(
        info.subscriber_count >= 8,
        "only {} admitted",
        info.subscriber_count
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !publisher.printed("cannot open"),
        "the publisher ran out of descriptors with {} subscribers admitted",
        info.subscriber_count
    );
    drop(held);
    publisher.kill();
    let _ = std::fs::remove_file(&path);
}

/// A subscriber that parks its own end of the connection in the publisher's receive queue
/// (`SCM_RIGHTS`), then exits, does not stay admitted, lossy or gating, whether it sends it once
/// admitted or right behind its request, before the answer: the kernel refuses descriptors on
/// an admitted connection where it can (Linux 6.16 and later), what was queued before admission
/// is dropped then, and a lossy subscriber's data is read and dropped at once. The publisher
/// publishes nothing meanwhile, so it never waits for space (where it would read a gating
/// connection anyway).
#[test]
fn a_subscriber_cannot_stay_admitted_by_parking_its_connection_in_the_publisher() {
    use shmcast::Mode;
    use shmcast::test_support::{raw_connect, raw_handshake_as, sample_hellos, try_send_fds};
    use std::os::fd::AsFd;
    let fds = FdGuard::new();
    // sample_hellos: gating then lossy, each from the newest message with no expectation first.
    let hellos = sample_hellos();
    for (mode, hello) in [(Mode::Lossy, &hellos[8]), (Mode::Gating, &hellos[0])] {
        // Sent once admitted, and sent behind the request, before the publisher answers it.
        for early in [false, true] {
            let t = topic(&format!("parked-{mode:?}-{early}"));
            let publisher = Publisher::builder(&t)
                .capacity(1 << 20)
                .stall_bound(Some(WATCHDOG))
                .bind()
                .unwrap();
            if early {
                let sock = raw_connect(publisher.path()).unwrap();
                send_raw(&sock, hello);
                let _ = try_send_fds(sock.as_fd(), &[sock.as_fd()]);
                publisher
                    .wait_for_subscribers(1, WATCHDOG)
                    .expect("admitted");
                drop(sock);
            } else {
                let (ring_and_block, sock) =
                    raw_handshake_as(publisher.path(), mode).unwrap().unwrap();
                publisher
                    .wait_for_subscribers(1, WATCHDOG)
                    .expect("admitted");
                // Refused by the kernel (EPERM) or queued; either way the process then leaves.
                let _ = try_send_fds(sock.as_fd(), &[sock.as_fd()]);
                drop((ring_and_block, sock));
            }
            // Nothing is published: the publisher never waits for space, so only its server
            // thread can notice the departure.
            common::until(
                &format!("{mode:?} subscriber (descriptor sent early: {early}) still admitted"),
                || publisher.stats().departed == 1,
            );
            let stats = publisher.stats();
            assert_eq!(stats.demotions, 0, "it left, it was not demoted: {stats:?}");
            assert!(stats.subscribers.is_empty(), "{stats:?}");
        }
    }
    fds.check();
}

/// The publisher keeps no descriptor of a subscriber's control block once it has handed it
/// over (only the mapping): another process of the same uid cannot open the block through
/// `/proc/<publisher>/fd` and write that subscriber's cursor. The subscriber keeps none
/// either.
#[test]
fn no_control_block_stays_open_to_be_reopened_through_proc() {
    let t = topic("cb-fd");
    let mut publisher = Publisher::builder(&t).bind().unwrap();
    let mut sub = Subscriber::connect(&t).unwrap();
    publisher.wait_for_subscribers(1, WATCHDOG).unwrap();
    publisher.send(b"one").unwrap();
    assert_eq!(&*sub.recv_timeout(WATCHDOG).unwrap(), b"one");
    let open = || -> Vec<String> {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .map(|target| target.display().to_string())
            .collect()
    };
    assert!(
        open().iter().any(|target| target.contains("memfd:shmcast")),
        "the ring's memfd is open (the check can see memfds): {:?}",
        open()
    );
    // The publisher's thread closes the block's descriptor once its welcome is sent, which may
    // be just after the subscriber has it.
    common::until("a control block stays open", || {
        !open().iter().any(|target| target.contains("shmcast-cb"))
    });
}

/// Child roles; a no-op in the normal test run.
#[test]
#[ignore = "runs only as a child process"]
fn role_entry() {
    let Some((role, args)) = child::role() else {
        return;
    };
    match role.as_str() {
        "subscriber" => roles::subscriber(&args),
        "clients" => role_clients(&args),
        "few-descriptors" => role_few_descriptors(&args),
        "few-descriptors-busy" => role_few_descriptors_busy(&args),
        "short-subscriber" => role_short_subscriber(&args),
        other => panic!("unknown role {other}"),
    }
}

/// Lowers this process's descriptor limit (the soft one) to `n`.
fn limit_descriptors(n: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let hard = getrlimit(Resource::Nofile).maximum;
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(n),
            maximum: hard,
        },
    )
    .unwrap();
}

/// args: topic. Lowers its descriptor limit to 64, binds (printing `bound PATH`) and publishes
/// a message every millisecond. Once it has refused a subscriber it opens 8 files, as the rest
/// of a program would, and prints `opened 8 files`, or `cannot open` and exits.
fn role_few_descriptors(args: &[String]) {
    limit_descriptors(64);
    let mut publisher = Publisher::builder(&args[0]).bind().unwrap();
    println!("bound {}", publisher.path().display());
    let mut opened = false;
    for seq in 0u64.. {
        if !opened && publisher.stats().refused > 0 {
            let files: Result<Vec<_>, _> =
                (0..8).map(|_| std::fs::File::open("/dev/null")).collect();
            match files {
                Ok(_) => println!("opened 8 files"),
                Err(e) => {
                    println!("cannot open: {e}");
                    std::process::exit(3);
                }
            }
            opened = true;
        }
        publisher.send(&seq.to_le_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// args: topic. Lowers its descriptor limit to 64, binds (printing `bound PATH`) and publishes
/// a message every millisecond, opening and closing 8 files each time, as the rest of a busy
/// program would; prints `cannot open` and exits if it cannot.
fn role_few_descriptors_busy(args: &[String]) {
    limit_descriptors(64);
    let mut publisher = Publisher::builder(&args[0]).bind().unwrap();
    println!("bound {}", publisher.path().display());
    for seq in 0u64.. {
        let files: Result<Vec<_>, _> = (0..8).map(|_| std::fs::File::open("/dev/null")).collect();
        if let Err(e) = files {
            println!("cannot open: {e}");
            std::process::exit(3);
        }
        publisher.send(&seq.to_le_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// args: topic. Connects with 0 to 8 descriptors free under its limit, and prints for each
/// `free N ok`, `free N errno E` (an I/O error of the system's, the limit's `EMFILE` among
/// them), or `free N other ERROR`.
fn role_short_subscriber(args: &[String]) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let hard = getrlimit(Resource::Nofile).maximum;
    let limit = |current: u64| {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(current),
                maximum: hard,
            },
        )
        .unwrap()
    };
    for free in 0..=8u64 {
        // The limit bounds descriptor numbers: the lowest that leaves `free` unused numbers
        // below it.
        // SAFETY: F_GETFD only reads the descriptor's flags, of any number, open or not.
        let open = |fd: i32| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1;
        let (mut number, mut unused) = (0i32, 0u64);
        while unused < free || open(number) {
            if !open(number) {
                unused += 1;
            }
            number += 1;
        }
        limit(number as u64);
        let got = Subscriber::connect(&args[0]);
        limit(hard.unwrap_or(4096).min(4096));
        match got {
            Ok(_) => println!("free {free} ok"),
            Err(shmcast::ConnectError::Io(e) | shmcast::ConnectError::Socket { source: e, .. }) => {
                println!("free {free} errno {}", e.raw_os_error().unwrap_or(0))
            }
            Err(e) => println!("free {free} other {e:?}"),
        }
    }
    println!("done");
}

/// A subscriber short of descriptors is told so (`EMFILE`), not that the publisher broke the
/// protocol, whichever step of the connection runs out: the socket, the descriptors the
/// publisher hands over (which the kernel cuts off), or its own event set.
#[test]
fn a_subscriber_short_of_descriptors_is_told_so() {
    let t = topic("short");
    let _publisher = Publisher::bind(&t).unwrap();
    let mut child = child::spawn("short-subscriber", &[t]);
    let mut lines = Vec::new();
    loop {
        let line = child.expect_line("");
        if line.trim() == "done" {
            break;
        }
        lines.push(line.trim().to_owned());
    }
    assert!(!lines.iter().any(|l| l.contains(" other ")), "{lines:?}");
    // The first line may follow the test harness's own words.
    assert!(lines.iter().any(|l| l.ends_with("free 8 ok")), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.ends_with("free 0 errno 24")),
        "{lines:?}"
    );
    let emfile = lines.iter().filter(|l| l.ends_with("errno 24")).count();
    assert!(emfile >= 2, "{lines:?}");
}

/// A connected `SOCK_SEQPACKET` socket to `path`, or `None` if the publisher's backlog is full.
fn seqpacket(path: &std::path::Path) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: plain socket calls on a descriptor we own from creation; the address is a zeroed
    // sockaddr_un with the path copied in, bounded by its size.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket");
        let fd = OwnedFd::from_raw_fd(fd);
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let bytes = path.as_os_str().as_bytes();
        assert!(bytes.len() < addr.sun_path.len());
        for (d, &b) in addr.sun_path.iter_mut().zip(bytes) {
            *d = b as libc::c_char;
        }
        let len = size_of::<libc::sockaddr_un>() as libc::socklen_t;
        let ok = libc::connect(fd.as_raw_fd(), (&raw const addr).cast(), len) == 0;
        ok.then_some(fd)
    }
}

/// Sends `bytes` on `fd` without blocking, ignoring the outcome.
fn send_raw(fd: &OwnedFd, bytes: &[u8]) {
    // SAFETY: a send from a live buffer on a descriptor we own.
    unsafe {
        libc::send(
            fd.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        );
    }
}

/// args: path. Floods the topic socket until killed.
fn role_clients(args: &[String]) {
    let path = std::path::Path::new(&args[0]);
    // Hundreds that never speak (past the publisher's pending-handshake cap: refused as busy).
    let silent: Vec<OwnedFd> = (0..300).filter_map(|_| seqpacket(path)).collect();
    assert!(!silent.is_empty());
    println!("attacking");
    let oversized = vec![0x5a; 4096];
    let mut hello = b"SHMC\x02\x00\x01\x00\x01\x00\0\0\0\0\0\0".to_vec();
    for round in 0u64.. {
        let Some(fd) = seqpacket(path) else {
            std::thread::yield_now();
            continue;
        };
        match round % 5 {
            0 => send_raw(&fd, &oversized),
            1 => send_raw(&fd, &hello[..3]),
            2 => send_raw(&fd, b"definitely not a hello"),
            3 => {
                hello.push(0);
                send_raw(&fd, &hello);
                hello.pop();
            }
            // Connect and close at once.
            _ => {}
        }
        drop(fd);
    }
    drop(silent);
}
