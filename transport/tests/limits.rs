//! Limits an operator sets on a process (`ulimit`, a service manager's settings): a publisher
//! and its subscribers that meet one get an error that names it, and never die of it.
//!
//! This test binary re-executes itself in a child role (see `role_entry` and `common::child`):
//! a limit set in a child does not touch the test process. Every wait is bounded by a watchdog;
//! nothing here asserts on time.

mod common;

use common::child::spawn;
use shmcast::{Publisher, Subscriber};
use std::time::Duration;

fn topic(name: &str) -> String {
    format!("limits-{}-{name}", std::process::id())
}

/// The child side. Runs only when re-executed in a role by `common::child::spawn`.
#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "file-size" => role_file_size(&args),
        "address-space" => role_address_space(&args),
        "threads" => role_threads(&args),
        r => panic!("unknown role {r}"),
    }
}

/// args: topic. Lowers its file size limit to 64 KiB, then binds a publisher whose ring needs
/// 1 MiB (printing `refused: ERROR`), and one whose ring fits, to which a subscriber connects
/// (its control block is a file too) and receives a message (printing `delivered`).
fn role_file_size(args: &[String]) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let hard = getrlimit(Resource::Fsize).maximum;
    setrlimit(
        Resource::Fsize,
        Rlimit {
            current: Some(64 << 10),
            maximum: hard,
        },
    )
    .unwrap();
    let too_big = Publisher::builder(&args[0]).capacity(1 << 20).bind();
    match too_big {
        Ok(_) => panic!("a 1 MiB ring was created under a 64 KiB file size limit"),
        Err(e) => println!("refused: {e}"),
    }
    let mut publisher = Publisher::builder(&args[0])
        .capacity(16 << 10)
        .bind()
        .unwrap();
    let mut sub = Subscriber::builder(&args[0])
        .connect_timeout(Duration::from_secs(30))
        .connect()
        .unwrap();
    publisher.send(b"fits").unwrap();
    assert_eq!(&*sub.recv().unwrap(), b"fits");
    println!("delivered");
}

/// args: topic. Limits its address space to what it uses plus 64 MiB, then connects to the
/// topic (whose ring is larger) and prints `refused: ERROR`.
fn role_address_space(args: &[String]) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let hard = getrlimit(Resource::As).maximum;
    setrlimit(
        Resource::As,
        Rlimit {
            current: Some((kib << 10) + (64 << 20)),
            maximum: hard,
        },
    )
    .unwrap();
    match Subscriber::builder(&args[0])
        .connect_timeout(Duration::from_secs(30))
        .connect()
    {
        Ok(_) => panic!("a 512 MiB ring was mapped within 64 MiB of address space"),
        Err(e) => println!("refused: {e} ({e:?})"),
    }
}

/// args: socket path. Becomes uid 65534 with a limit of one process (itself), then binds a
/// publisher at the path, whose thread cannot start, and prints `refused: ERROR`.
fn role_threads(args: &[String]) {
    use rustix::process::{Resource, Rlimit, setrlimit};
    // SAFETY: single-threaded at this point of the child; setuid only changes credentials.
    assert_eq!(unsafe { libc::setuid(65534) }, 0, "setuid");
    let one = Rlimit {
        current: Some(1),
        maximum: Some(1),
    };
    setrlimit(Resource::Nproc, one).unwrap();
    match Publisher::bind(&args[0]) {
        Ok(_) => println!("bound: the thread started under a limit of one process"),
        Err(e) => println!("refused: {e}"),
    }
}

#[test]
fn a_ring_beyond_the_file_size_limit_is_an_error_not_a_signal() {
    // Without the check, sizing the memfd raises SIGXFSZ and the child dies of it.
    let out = spawn("file-size", &[topic("fsize")]).finish();
    assert!(
        out.contains("refused:") && out.contains("file size limit (RLIMIT_FSIZE"),
        "{out}"
    );
    assert!(out.contains("65536 bytes"), "the limit is named: {out}");
    assert!(out.contains("delivered"), "{out}");
}

#[test]
fn a_ring_beyond_the_address_space_limit_is_a_local_error_that_names_it() {
    let t = topic("as");
    let _publisher = Publisher::builder(&t).capacity(512 << 20).bind().unwrap();
    let out = spawn("address-space", &[t]).finish();
    // The subscriber's own limit, not the publisher's fault (a protocol error).
    assert!(out.contains("mapping the topic's ring of 5"), "{out}");
    assert!(out.contains("ulimit -v"), "{out}");
    assert!(out.contains("(Io("), "{out}");
}

/// A publisher whose thread cannot start (the process limit, `ulimit -u`) says which thread
/// and why. Needs root to switch to a uid whose limit applies (skipped, saying so, without).
#[test]
fn a_thread_that_cannot_start_is_named() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to switch to another uid");
        return;
    }
    let dir = std::env::temp_dir().join(format!("shmcast-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let path = dir.join("t.sock");
    let out = spawn("threads", &[path.display().to_string()]).finish();
    std::fs::remove_dir_all(&dir).unwrap();
    if out.contains("bound:") {
        // Other processes of uid 65534 do not matter: the thread started regardless (a kernel
        // that does not count this limit per thread). Nothing to check.
        eprintln!("skipped: {out}");
        return;
    }
    assert!(out.contains("refused: "), "{out}");
    assert!(
        out.contains("(shmcast-server)"),
        "the thread is named: {out}"
    );
    assert!(out.contains("ulimit -u"), "{out}");
    assert!(
        !path.exists(),
        "the socket file of a failed bind stays behind"
    );
}
