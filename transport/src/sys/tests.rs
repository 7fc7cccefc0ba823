//! Tests of the syscall wrappers against the real kernel.

// One test plays a C host that never ignored SIGPIPE, through libc.
#![allow(unsafe_code)]

use super::event::*;
use super::fs::*;
use super::net::*;
use super::packet::*;
use super::process::*;
use rustix::net::sockopt::{self, Timeout};
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A name no other test in this process uses.
fn unique(tag: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("shmcast-test-{tag}-{}-{n}", std::process::id())
}

/// A memfd with a unique name, so that [`open_copies`] can count its descriptors.
fn named_memfd(tag: &str) -> (OwnedFd, String) {
    let name = unique(tag);
    (memfd_create_sealable(&name).unwrap(), name)
}

/// How many of this process's descriptors refer to the memfd called `name`.
///
/// Unlike [`fd_count`] this is exact while other tests open and close descriptors.
fn open_copies(name: &str) -> usize {
    let target = format!("/memfd:{name} (deleted)");
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|link| link.as_os_str() == target.as_str())
        .count()
}

/// The copies of memfd `name` left once the reaper thread has closed what it was handed (it
/// closes in the background; a memfd's close never waits, so this takes microseconds).
fn copies_after_reaping(name: &str) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let n = open_copies(name);
        if n <= 1 || std::time::Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn pair() -> (OwnedFd, OwnedFd) {
    rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .unwrap()
}

fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    let (a, b) = (rustix::fs::fstat(a).unwrap(), rustix::fs::fstat(b).unwrap());
    (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
}

/// A fresh 0700 directory for socket files, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let path = std::env::temp_dir().join(unique("dir"));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .unwrap();
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn memfd_size_and_seals() {
    let fd = memfd_create_sealable("shmcast-test").unwrap();
    ftruncate(fd.as_fd(), 8192).unwrap();
    assert_eq!(fstat_size(fd.as_fd()).unwrap(), 8192);
    let before = get_seals(fd.as_fd()).unwrap();
    assert!(
        !before.contains(SealFlags::SEAL),
        "sealing must still be allowed"
    );

    add_seals(fd.as_fd(), SealFlags::SHRINK).unwrap();
    assert!(get_seals(fd.as_fd()).unwrap().contains(SealFlags::SHRINK));
    let err = ftruncate(fd.as_fd(), 4096).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    ftruncate(fd.as_fd(), 16384).unwrap();

    add_seals(fd.as_fd(), SealFlags::SEAL).unwrap();
    let err = add_seals(fd.as_fd(), SealFlags::GROW).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
}

#[test]
fn get_seals_rejects_non_memfd() {
    let evfd = eventfd_create(true).unwrap();
    let err = get_seals(evfd.as_fd()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn eventfd_signal_drain_and_wait() {
    let evfd = eventfd_create(true).unwrap();
    assert_eq!(eventfd_drain(evfd.as_fd()).unwrap(), 0);
    assert!(!wait_readable(evfd.as_fd(), Some(Duration::ZERO)).unwrap());
    assert!(!wait_readable(evfd.as_fd(), Some(Duration::from_millis(5))).unwrap());

    for _ in 0..3 {
        eventfd_signal(evfd.as_fd()).unwrap();
    }
    assert!(wait_readable(evfd.as_fd(), Some(Duration::ZERO)).unwrap());
    assert!(wait_readable(evfd.as_fd(), None).unwrap());
    assert_eq!(eventfd_drain(evfd.as_fd()).unwrap(), 3, "signals coalesce");
    assert_eq!(eventfd_drain(evfd.as_fd()).unwrap(), 0);
    assert!(!wait_readable(evfd.as_fd(), Some(Duration::ZERO)).unwrap());
}

#[test]
fn wait_readable_wakes_on_signal_from_another_thread() {
    let evfd = eventfd_create(true).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            eventfd_signal(evfd.as_fd()).unwrap();
        });
        assert!(wait_readable(evfd.as_fd(), None).unwrap());
    });
    assert_eq!(eventfd_drain(evfd.as_fd()).unwrap(), 1);
}

#[test]
fn huge_timeout_does_not_overflow() {
    let evfd = eventfd_create(true).unwrap();
    eventfd_signal(evfd.as_fd()).unwrap();
    assert!(wait_readable(evfd.as_fd(), Some(Duration::MAX)).unwrap());
    let epfd = epoll_create().unwrap();
    epoll_add(epfd.as_fd(), evfd.as_fd(), 1).unwrap();
    assert_eq!(
        epoll_wait_one(epfd.as_fd(), Some(Duration::MAX)).unwrap(),
        1
    );
}

#[test]
fn wait_readable2_reports_each_side() {
    let evfd = eventfd_create(true).unwrap();
    let (a, b) = pair();
    let timeout = Some(Duration::ZERO);
    assert_eq!(
        wait_readable2(evfd.as_fd(), b.as_fd(), timeout).unwrap(),
        (false, false)
    );
    send_packet(a.as_fd(), b"x").unwrap();
    assert_eq!(
        wait_readable2(evfd.as_fd(), b.as_fd(), timeout).unwrap(),
        (false, true)
    );
    eventfd_signal(evfd.as_fd()).unwrap();
    assert_eq!(
        wait_readable2(evfd.as_fd(), b.as_fd(), None).unwrap(),
        (true, true)
    );
    eventfd_drain(evfd.as_fd()).unwrap();
    recv_packet(b.as_fd(), &mut [0; 8]).unwrap();
    drop(a);
    // A hung-up peer makes the socket ready, so the waiter reads and learns of it.
    assert_eq!(
        wait_readable2(evfd.as_fd(), b.as_fd(), None).unwrap(),
        (false, true)
    );
}

#[test]
fn epoll_edge_triggered_gives_one_event_per_write_without_reading() {
    let evfd = eventfd_create(true).unwrap();
    let epfd = epoll_create().unwrap();
    epoll_add_edge(epfd.as_fd(), evfd.as_fd(), 7).unwrap();
    let zero = Some(Duration::ZERO);
    assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);

    for _ in 0..3 {
        eventfd_signal(evfd.as_fd()).unwrap();
        let mut tokens = [0; 4];
        assert_eq!(epoll_wait(epfd.as_fd(), &mut tokens, None).unwrap(), 1);
        assert_eq!(tokens[0], 7);
        // Never read: the edge was consumed, so no second event.
        assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);
    }
}

#[test]
fn an_armed_timer_gives_one_edge_per_expiry_and_rearming_replaces() {
    let timer = timerfd_create().unwrap();
    let epfd = epoll_create().unwrap();
    epoll_add_edge(epfd.as_fd(), timer.as_fd(), 9).unwrap();
    let zero = Some(Duration::ZERO);
    assert_eq!(
        epoll_wait_one(epfd.as_fd(), zero).unwrap(),
        0,
        "created disarmed"
    );

    // Zero means "at once", not "disarm"; each expiry is one event, the timer never read.
    for _ in 0..3 {
        timerfd_arm(timer.as_fd(), Duration::ZERO).unwrap();
        let mut tokens = [0; 4];
        assert_eq!(epoll_wait(epfd.as_fd(), &mut tokens, None).unwrap(), 1);
        assert_eq!(tokens[0], 9);
        assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);
    }

    // A later arming replaces an earlier one: armed for an hour, re-armed for now.
    timerfd_arm(timer.as_fd(), Duration::from_secs(3600)).unwrap();
    assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);
    timerfd_arm(timer.as_fd(), Duration::from_millis(1)).unwrap();
    assert_eq!(epoll_wait_one(epfd.as_fd(), None).unwrap(), 1);
    // Durations beyond what a timespec holds do not overflow.
    timerfd_arm(timer.as_fd(), Duration::MAX).unwrap();
}

#[test]
fn epoll_level_triggered_repeats_until_read() {
    let evfd = eventfd_create(true).unwrap();
    let epfd = epoll_create().unwrap();
    epoll_add(epfd.as_fd(), evfd.as_fd(), 1).unwrap();
    eventfd_signal(evfd.as_fd()).unwrap();
    let zero = Some(Duration::ZERO);
    assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 1);
    assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 1);
    eventfd_drain(evfd.as_fd()).unwrap();
    assert_eq!(epoll_wait_one(epfd.as_fd(), zero).unwrap(), 0);
    let err = epoll_wait(epfd.as_fd(), &mut [], zero).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn send_two_fds_receive_two() {
    let (a, b) = pair();
    let (m1, n1) = named_memfd("two");
    let (m2, n2) = named_memfd("two");
    send_with_fds(a.as_fd(), b"hello", &[m1.as_fd(), m2.as_fd()]).unwrap();

    let mut buf = [0; 16];
    let (len, fds) = recv_with_fds(b.as_fd(), &mut buf, 2).unwrap();
    assert_eq!(&buf[..len], b"hello");
    assert_eq!(fds.len(), 2);
    assert!(same_file(fds[0].as_fd(), m1.as_fd()));
    assert!(same_file(fds[1].as_fd(), m2.as_fd()));
    let flags = rustix::io::fcntl_getfd(&fds[0]).unwrap();
    assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
    assert_eq!((open_copies(&n1), open_copies(&n2)), (2, 2));
    drop(fds);
    assert_eq!(
        (copies_after_reaping(&n1), copies_after_reaping(&n2)),
        (1, 1)
    );
}

#[test]
fn surplus_fds_are_refused_and_closed() {
    let (a, b) = pair();
    let (memfd, name) = named_memfd("surplus");
    let three = [memfd.as_fd(); 3];
    send_with_fds(a.as_fd(), b"x", &three).unwrap();
    let err = recv_with_fds(b.as_fd(), &mut [0; 8], 2).unwrap_err();
    assert!(
        matches!(
            err,
            RecvFdsError::WrongFdCount {
                expected: 2,
                got: 3
            }
        ),
        "{err}"
    );
    assert_eq!(copies_after_reaping(&name), 1, "only our own copy is left");
}

#[test]
fn missing_fds_are_refused_and_closed() {
    let (a, b) = pair();
    let (memfd, name) = named_memfd("missing");
    send_with_fds(a.as_fd(), b"x", &[memfd.as_fd()]).unwrap();
    let err = recv_with_fds(b.as_fd(), &mut [0; 8], 2).unwrap_err();
    assert!(
        matches!(
            err,
            RecvFdsError::WrongFdCount {
                expected: 2,
                got: 1
            }
        ),
        "{err}"
    );
    assert_eq!(copies_after_reaping(&name), 1);
}

/// A TCP socket whose close waits up to `linger` (unsent data to a peer that never reads), and
/// that peer: what a hostile peer sends to make its receiver's close wait.
fn lingering_tcp(linger: Duration) -> (OwnedFd, std::net::TcpStream) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let sender = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (reader, _) = listener.accept().unwrap();
    sockopt::set_socket_recv_buffer_size(&reader, 4096).unwrap();
    sockopt::set_socket_send_buffer_size(&sender, 4096).unwrap();
    sender.set_nonblocking(true).unwrap();
    let chunk = [0u8; 65536];
    while (&sender).write(&chunk).is_ok() {}
    sockopt::set_socket_linger(&sender, Some(linger)).unwrap();
    (OwnedFd::from(sender), reader)
}

#[test]
fn a_received_descriptor_whose_close_waits_never_holds_up_the_receiver() {
    let (a, b) = pair();
    let (tcp, reader) = lingering_tcp(Duration::from_secs(120));
    send_with_fds(a.as_fd(), b"x", &[tcp.as_fd()]).unwrap();
    // Ours is no longer the last copy: the receiver's is, once it arrives.
    drop(tcp);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let got = recv_packet(b.as_fd(), &mut [0; 8]);
        drop(got);
        let _ = done.send(());
    });
    // Closed inline, the receive would take the whole linger (two minutes).
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("receiving a lingering socket waited for its close");
    // Let the reaper's close end: read what the socket was holding.
    let mut drain = [0u8; 65536];
    reader
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    while matches!(std::io::Read::read(&mut &reader, &mut drain), Ok(n) if n > 0) {}
}

#[test]
fn recv_packet_closes_fds_a_peer_attaches() {
    let (a, b) = pair();
    let (memfd, name) = named_memfd("attached");
    send_with_fds(a.as_fd(), b"data", &[memfd.as_fd(), memfd.as_fd()]).unwrap();
    let err = recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
    assert!(
        matches!(
            err,
            RecvFdsError::WrongFdCount {
                expected: 0,
                got: 2
            }
        ),
        "{err}"
    );
    assert_eq!(copies_after_reaping(&name), 1);

    // Many more: all arrive, counted, and the reaper closes them.
    send_with_fds(a.as_fd(), b"data", &[memfd.as_fd(); MAX_FDS_PER_PACKET]).unwrap();
    let err = recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
    assert!(
        matches!(
            err,
            RecvFdsError::WrongFdCount {
                expected: 0,
                got: MAX_FDS_PER_PACKET
            }
        ),
        "{err}"
    );
    assert_eq!(copies_after_reaping(&name), 1);

    send_packet(a.as_fd(), b"next").unwrap();
    let mut buf = [0; 8];
    let len = recv_packet(b.as_fd(), &mut buf).unwrap();
    assert_eq!(&buf[..len], b"next", "the socket stays usable");
}

#[test]
fn fd_count_sees_received_fds_closed() {
    // `fd_count` is process-wide and other tests run in parallel, so only bound the growth:
    // a leak of 64 descriptors per round would show.
    let (a, b) = pair();
    let (memfd, _) = named_memfd("count");
    let before = fd_count().unwrap();
    for _ in 0..64 {
        send_with_fds(a.as_fd(), b"x", &[memfd.as_fd()]).unwrap();
        recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
    }
    // The reaper thread closes them in the background.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut after = fd_count().unwrap();
    while after >= before + 32 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
        after = fd_count().unwrap();
    }
    assert!(after < before + 32, "descriptor leak: {before} -> {after}");
}

#[test]
fn truncated_packet_is_an_error_and_closes_its_fds() {
    let (a, b) = pair();
    let (memfd, name) = named_memfd("trunc");
    send_with_fds(a.as_fd(), &[1; 64], &[memfd.as_fd()]).unwrap();
    let err = recv_with_fds(b.as_fd(), &mut [0; 16], 1).unwrap_err();
    assert!(matches!(err, RecvFdsError::Truncated), "{err}");
    assert_eq!(copies_after_reaping(&name), 1);

    send_packet(a.as_fd(), &[1; 64]).unwrap();
    let err = recv_packet(b.as_fd(), &mut [0; 16]).unwrap_err();
    assert!(matches!(err, RecvFdsError::Truncated), "{err}");
}

#[test]
fn peer_hang_up_is_hung_up() {
    let (a, b) = pair();
    drop(a);
    let err = recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
    assert!(matches!(err, RecvFdsError::HungUp), "{err}");
    let err = recv_with_fds(b.as_fd(), &mut [0; 8], 1).unwrap_err();
    assert!(matches!(err, RecvFdsError::HungUp), "{err}");
}

#[test]
fn peer_closing_with_our_packets_unread_is_a_hang_up_too() {
    let (a, b) = pair();
    send_packet(a.as_fd(), b"unread").unwrap();
    send_packet(b.as_fd(), b"one").unwrap();
    send_packet(b.as_fd(), b"two").unwrap();
    drop(b);
    let mut buf = [0; 8];
    for expected in [&b"one"[..], b"two"] {
        let len = recv_packet(a.as_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..len], expected, "what the peer sent comes first");
    }
    let err = recv_packet(a.as_fd(), &mut buf).unwrap_err();
    assert!(matches!(err, RecvFdsError::HungUp), "{err}");
    let err = recv_packet(a.as_fd(), &mut buf).unwrap_err();
    assert!(matches!(err, RecvFdsError::HungUp), "{err}");

    let (a, b) = pair();
    send_packet(a.as_fd(), b"unread").unwrap();
    drop(b);
    let err = send_packet(a.as_fd(), b"x").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
}

#[test]
fn receive_timeout_and_nonblocking_are_would_block() {
    let (_a, b) = pair();
    set_recv_timeout(b.as_fd(), Some(Duration::from_millis(5))).unwrap();
    let err = recv_packet(b.as_fd(), &mut [0; 8]).unwrap_err();
    assert!(
        matches!(&err, RecvFdsError::Io(e) if e.kind() == io::ErrorKind::WouldBlock),
        "{err}"
    );
    set_recv_timeout(b.as_fd(), None).unwrap();
    let err = set_recv_timeout(b.as_fd(), Some(Duration::ZERO)).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

    set_nonblocking(b.as_fd(), true).unwrap();
    let err = recv_with_fds(b.as_fd(), &mut [0; 8], 1).unwrap_err();
    assert!(
        matches!(&err, RecvFdsError::Io(e) if e.kind() == io::ErrorKind::WouldBlock),
        "{err}"
    );
}

#[test]
fn too_many_fds_are_rejected_before_any_syscall() {
    let (a, b) = pair();
    let evfd = eventfd_create(true).unwrap();
    let many = [evfd.as_fd(); MAX_FDS_PER_PACKET + 1];
    let err = send_with_fds(a.as_fd(), b"x", &many).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let err = recv_with_fds(b.as_fd(), &mut [0; 8], MAX_FDS_PER_PACKET + 1).unwrap_err();
    assert!(matches!(err, RecvFdsError::Io(_)), "{err}");
}

#[test]
fn send_to_closed_peer_is_broken_pipe() {
    let (a, b) = pair();
    drop(b);
    let err = send_packet(a.as_fd(), b"x").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    let evfd = eventfd_create(true).unwrap();
    let err = send_with_fds(a.as_fd(), b"x", &[evfd.as_fd()]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
}

const SIGPIPE_CHILD_ENV: &str = "SHMCAST_TEST_SIGPIPE_CHILD";

/// The Rust runtime ignores `SIGPIPE`, which would hide a missing `MSG_NOSIGNAL`; a child
/// process restores the default disposition (what a C host has) and sends to a closed peer.
/// Linux raises no `SIGPIPE` for `SOCK_SEQPACKET` at all, so the child also sends over a
/// stream pair, where only `MSG_NOSIGNAL` keeps it alive.
#[test]
fn send_to_closed_peer_raises_no_sigpipe_in_a_c_like_host() {
    let module = module_path!().split_once("::").unwrap().1;
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("{module}::sigpipe_child"), "--ignored"])
        .env(SIGPIPE_CHILD_ENV, "1")
        .output()
        .unwrap();
    assert!(child.status.success(), "child died: {}", child.status);
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        stdout.contains("1 passed"),
        "the child ran no test: {stdout}"
    );
}

#[test]
#[ignore = "run in a child process by send_to_closed_peer_raises_no_sigpipe_in_a_c_like_host"]
fn sigpipe_child() {
    if std::env::var_os(SIGPIPE_CHILD_ENV).is_none() {
        return;
    }
    // SAFETY: this child process runs only this test; SIG_DFL is a valid disposition.
    let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    assert_ne!(previous, libc::SIG_ERR);
    let stream = || {
        let flags = SocketFlags::CLOEXEC;
        rustix::net::socketpair(AddressFamily::UNIX, SocketType::STREAM, flags, None).unwrap()
    };
    for (a, b) in [pair(), stream()] {
        drop(b);
        let err = send_packet(a.as_fd(), b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
    let (a, b) = stream();
    drop(b);
    let err = send_with_fds(a.as_fd(), b"x", &[a.as_fd()]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
}

#[test]
fn listen_connect_accept_and_peer_cred() {
    let dir = TempDir::new();
    let path = dir.0.join("topic.sock");
    let listener = seqpacket_listen(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let client = seqpacket_connect(&path, Some(Duration::from_secs(5))).unwrap();
    let server = seqpacket_accept(listener.as_fd(), true).unwrap();
    let me = PeerCred {
        pid: i32::try_from(std::process::id()).ok(),
        uid: getuid(),
        gid: rustix::process::getgid().as_raw(),
    };
    assert_eq!(peer_cred(server.as_fd()).unwrap(), me);
    assert_eq!(peer_cred(client.as_fd()).unwrap(), me);

    // The accepted socket is non-blocking, the connected one has no send timeout left.
    let err = recv_packet(server.as_fd(), &mut [0; 8]).unwrap_err();
    assert!(matches!(&err, RecvFdsError::Io(e) if e.kind() == io::ErrorKind::WouldBlock));
    assert_eq!(
        sockopt::socket_timeout(&client, Timeout::Send).unwrap(),
        None
    );
    let err = seqpacket_listen(&path).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
}

#[test]
fn nonblocking_accept_with_nothing_pending_would_block() {
    let dir = TempDir::new();
    let path = dir.0.join("idle.sock");
    let listener = seqpacket_listen(&path).unwrap();
    set_nonblocking(listener.as_fd(), true).unwrap();
    let err = seqpacket_accept(listener.as_fd(), false).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
}

#[test]
fn connect_tells_missing_from_stale() {
    let dir = TempDir::new();
    let path = dir.0.join("topic.sock");
    let err = seqpacket_connect(&path, None).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);

    drop(seqpacket_listen(&path).unwrap());
    assert!(path.exists(), "a dead listener leaves its socket file");
    let err = seqpacket_connect(&path, None).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
}

#[test]
fn connect_to_a_full_backlog_times_out() {
    let dir = TempDir::new();
    let path = dir.0.join("full.sock");
    let listener = seqpacket_socket().unwrap();
    rustix::net::bind(&listener, &SocketAddrUnix::new(&path).unwrap()).unwrap();
    rustix::net::listen(&listener, 0).unwrap();
    let _queued = seqpacket_connect(&path, None).unwrap();
    let err = seqpacket_connect(&path, Some(Duration::from_millis(10))).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
}

#[test]
fn peer_cred_of_unconnected_socket_has_no_pid() {
    let sock = seqpacket_socket().unwrap();
    let cred = peer_cred(sock.as_fd()).unwrap();
    assert_eq!(cred.pid, None);
}

#[test]
fn runnable_threads_counts_at_least_the_caller() {
    // The caller is running while it reads the count, so a parsed count is never zero.
    let n = runnable_threads().expect("/proc/loadavg is readable and parses");
    assert!(n >= 1, "{n} runnable threads, the caller included");
}

/// What a uid that may write the socket's directory can swap in after `bind` is refused, never
/// changed: a symbolic link (to a file of someone else's), a file of another kind. Only a
/// socket of ours gets the mode.
#[test]
fn a_socket_mode_is_set_only_on_a_socket_of_ours_never_through_a_link() {
    let dir = TempDir::new();
    let victim = dir.0.join("victim");
    std::fs::write(&victim, b"x").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let link = dir.0.join("link.sock");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    assert!(chmod_own_socket(&link, 0o600).is_err());
    let mode =
        |p: &std::path::Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&victim), 0o644, "the link's target is untouched");
    assert!(chmod_own_socket(&victim, 0o600).is_err(), "not a socket");
    assert_eq!(mode(&victim), 0o644);
    let path = dir.0.join("topic.sock");
    let _listener = seqpacket_listen(&path).unwrap();
    chmod_own_socket(&path, 0o640).unwrap();
    assert_eq!(mode(&path), 0o640);
}
