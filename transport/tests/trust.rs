//! Whom each side trusts, with real processes: a subscriber process cannot write the ring it
//! was given; a subscriber of another uid is refused before any descriptor is sent; a publisher
//! of another uid is not trusted unless the subscriber says so. The tests that switch a child
//! to another uid need root and are skipped (saying so) without it.
//!
//! Every wait is bounded by `common::child`'s watchdog; every test holds a `FdGuard`.

mod common;

use common::FdGuard;
use common::child::spawn;
use shmcast::{ConnectError, Publisher, Subscriber};
use std::time::{Duration, Instant};

fn topic(name: &str) -> String {
    format!("trust-{}-{name}", std::process::id())
}

/// The child side. Runs only when re-executed in a role by `common::child::spawn`.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "other-uid" => role_other_uid(&args),
        "other-uid-publisher" => role_other_uid_publisher(&args),
        "hostile-writer" => role_hostile_writer(&args),
        "admitted-other-uid" => role_admitted_other_uid(&args),
        r => panic!("unknown role {r}"),
    }
}

/// args: path. Drops to uid 65534, then tries to subscribe.
fn role_other_uid(args: &[String]) {
    // SAFETY: single-threaded at this point of the child; setuid only changes credentials.
    let rc = unsafe { libc::setuid(65534) };
    assert_eq!(rc, 0, "setuid");
    let path = std::path::Path::new(&args[0]);
    match shmcast::test_support::raw_handshake(path) {
        Ok(Err(refusal)) => println!("refused: {refusal}"),
        Ok(Ok(_)) => panic!("a foreign uid received descriptors"),
        Err(e) => panic!("connect: {e}"),
    }
    // Our side refuses first: the publisher runs as root, not as us.
    match Subscriber::connect(&args[0]) {
        Err(ConnectError::UntrustedPublisher { uid: 0, .. }) => println!("untrusted: uid 0"),
        other => panic!("expected an untrusted publisher, got {other:?}"),
    }
    let trusting = Subscriber::builder(&args[0]).publisher(shmcast::Admission::AnyUid);
    match trusting.connect() {
        Err(ConnectError::Refused { code, reason }) => {
            println!("refused again ({code:?}): {reason}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// args: path, private path. Drops to uid 65534, tries the root publisher at `private path`
/// that admits only root (printing `denied: ERROR`), subscribes to the one at `path` (trusting
/// uid 0), and prints `received N` for the first message.
fn role_admitted_other_uid(args: &[String]) {
    // SAFETY: single-threaded at this point of the child; setuid only changes credentials.
    let rc = unsafe { libc::setuid(65534) };
    assert_eq!(rc, 0, "setuid");
    let denied = Subscriber::builder(&args[1])
        .publisher(shmcast::Admission::Uids(vec![0]))
        .connect()
        .unwrap_err();
    println!("denied: {denied}");
    let mut sub = Subscriber::builder(&args[0])
        .publisher(shmcast::Admission::Uids(vec![0]))
        .connect()
        .unwrap();
    println!("connected");
    let m = sub.recv_timeout(common::child::WATCHDOG).unwrap();
    println!("received {}", m.len());
}

/// args: path. Drops to uid 65534, binds a publisher admitting any uid on `path`, prints
/// `bound`, and publishes a message every 5 ms for at most a minute.
fn role_other_uid_publisher(args: &[String]) {
    // SAFETY: single-threaded at this point of the child; setuid only changes credentials.
    let rc = unsafe { libc::setuid(65534) };
    assert_eq!(rc, 0, "setuid");
    let mut publisher = Publisher::builder(&args[0])
        .admission(shmcast::Admission::AnyUid)
        .bind()
        .unwrap();
    println!("bound");
    let until = Instant::now() + Duration::from_secs(60);
    for i in 0u64.. {
        if Instant::now() > until {
            break;
        }
        publisher.send(&i.to_le_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// args: path. Receives the ring as a subscriber and tries every way to write it.
fn role_hostile_writer(args: &[String]) {
    use std::os::fd::AsRawFd;
    let (fds, _sock) = shmcast::test_support::raw_handshake(std::path::Path::new(&args[0]))
        .unwrap()
        .unwrap();
    let ring = &fds[0];
    let len = 4096;
    // SAFETY: mmap with a null hint and a valid fd; the result is checked and never used.
    let shared_rw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            ring.as_raw_fd(),
            0,
        )
    };
    assert_eq!(
        shared_rw,
        libc::MAP_FAILED,
        "writable mapping of the ring fd must fail"
    );
    let reopened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/self/fd/{}", ring.as_raw_fd()));
    match reopened {
        Err(e) => println!("reopen O_RDWR refused: {e}"),
        Ok(f) => {
            // SAFETY: as above.
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    f.as_raw_fd(),
                    0,
                )
            };
            assert_eq!(
                m,
                libc::MAP_FAILED,
                "writable mapping through a re-open must fail"
            );
            assert!(
                std::io::Write::write(&mut &f, b"x").is_err(),
                "write() through a re-open must fail"
            );
            println!("reopen O_RDWR allowed, but mmap(PROT_WRITE) and write() refused");
        }
    }
    println!("ring is read-only");
}

#[test]
fn a_subscriber_process_cannot_write_the_ring() {
    let fds = FdGuard::new();
    let t = topic("readonly");
    let publisher = Publisher::bind(&t).unwrap();
    let child = spawn("hostile-writer", &[publisher.path().display().to_string()]);
    let out = child.finish();
    assert!(out.contains("ring is read-only"), "{out}");
    drop(publisher);
    fds.check();
}

/// A fresh directory of `mode` for a test that switches a child to uid 65534, or `None` (said
/// on stderr) when the test does not run as root and so cannot switch.
fn dir_for_another_uid(name: &str, mode: u32) -> Option<std::path::PathBuf> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to switch to another uid");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("shmcast-{name}-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    Some(dir)
}

#[test]
fn another_uid_is_refused_before_any_fd_is_sent() {
    let fds = FdGuard::new();
    let Some(dir) = dir_for_another_uid("uid", 0o755) else {
        return;
    };
    let path = dir.join("topic.sock");
    let publisher = Publisher::bind(path.to_str().unwrap()).unwrap();
    // Let the other uid reach the socket, so that the credential check is what stops it.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let out = spawn("other-uid", &[path.display().to_string()]).finish();
    assert!(out.contains("refused: uid 65534 is not admitted"), "{out}");
    assert!(out.contains("untrusted: uid 0"), "{out}");
    assert!(out.contains("refused again (PermissionDenied)"), "{out}");
    assert_eq!(publisher.subscriber_count(), 0);
    assert!(publisher.stats().refused >= 2);
    drop(publisher);
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

/// A publisher that admits another uid opens its socket file to it (mode 0666; a publisher
/// that admits only its own uid keeps 0600), so that the admitted uid connects with no
/// `chmod` of the operator's, and receives the stream.
#[test]
fn an_admitted_uid_can_connect_without_a_chmod() {
    use std::os::unix::fs::PermissionsExt;
    let fds = FdGuard::new();
    let Some(dir) = dir_for_another_uid("admitted", 0o755) else {
        return;
    };
    let own = dir.join("own.sock");
    let private = Publisher::bind(own.to_str().unwrap()).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&own), 0o600);
    let path = dir.join("shared.sock");
    let mut publisher = Publisher::builder(path.to_str().unwrap())
        .admission(shmcast::Admission::Uids(vec![65534]))
        .bind()
        .unwrap();
    assert_eq!(mode(&path), 0o666);
    let args = [path.display().to_string(), own.display().to_string()];
    let mut child = spawn("admitted-other-uid", &args);
    let denied = child.expect_line("denied: ");
    assert!(
        denied.contains("the socket belongs to uid 0 (mode 600)"),
        "{denied}"
    );
    child.expect_line("connected");
    publisher.send(b"for 65534").unwrap();
    let out = child.finish();
    assert!(out.contains("received 9"), "{out}");
    drop((publisher, private));
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

/// A socket path in a directory others may write can be bound by anyone: a subscriber trusts
/// only a publisher of its own uid unless told otherwise, and learns which uid it refused.
#[test]
fn a_publisher_of_another_uid_is_not_trusted() {
    let fds = FdGuard::new();
    // Anyone may bind here, as in a shared directory.
    let Some(dir) = dir_for_another_uid("trust", 0o777) else {
        return;
    };
    let path = dir.join("topic.sock");
    let topic = path.to_str().unwrap();
    let mut publisher = spawn("other-uid-publisher", &[topic.to_owned()]);
    publisher.expect_line("bound");
    match Subscriber::connect(topic) {
        Err(e @ ConnectError::UntrustedPublisher { uid: 65534, .. }) => {
            assert!(e.to_string().contains("uid 65534"), "{e}");
        }
        other => panic!("expected an untrusted publisher, got {other:?}"),
    }
    for trusted in [
        shmcast::Admission::Uids(vec![65534]),
        shmcast::Admission::AnyUid,
    ] {
        let mut sub = Subscriber::builder(topic)
            .publisher(trusted.clone())
            .connect()
            .unwrap_or_else(|e| panic!("{trusted:?}: {e}"));
        assert_eq!(sub.recv_timeout(Duration::from_secs(10)).unwrap().len(), 8);
    }
    publisher.kill();
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}
