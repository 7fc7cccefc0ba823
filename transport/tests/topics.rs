//! Where topics live: what a publisher may replace at a topic's path (only a dead socket of
//! ours: every other file, a live publisher's socket and another user's stay as they were),
//! socket paths against the limit of a socket address, missing directories and other system
//! errors named with the path, the topic directory chosen by the builder, `SHMCAST_DIR`,
//! `XDG_RUNTIME_DIR` or the fallback (in child processes with their own environment), the
//! `NoPublisher` error saying where it looked and why, and the stale sockets a killed publisher
//! leaves, found and removed by `stale_topics` and `remove_stale`.

mod common;

use common::FdGuard;
use common::child::{WATCHDOG, spawn};
use shmcast::{
    BindError, CleanError, ConnectError, DirSource, FileKind, MAX_SOCKET_PATH, Publisher,
    Subscriber, TopicDir, TopicError,
};
use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A fresh private scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("shmcast-topics-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o700)).unwrap();
    dir
}

/// Device, inode and mode: a file replaced or changed in type differs in one of them.
fn identity(path: &Path) -> (u64, u64, u32) {
    let m = std::fs::symlink_metadata(path).unwrap();
    (m.dev(), m.ino(), m.mode())
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A socket file nobody listens on.
fn dead_socket(path: &Path) {
    drop(std::os::unix::net::UnixListener::bind(path).unwrap());
}

/// A socket file left by a publisher process killed with SIGKILL.
fn killed_publishers_socket(path: &Path) {
    let topic = path.to_str().unwrap().to_owned();
    let mut publisher = spawn("publisher", &[topic, "0".into(), "0".into()]);
    publisher.expect_line("published");
    publisher.kill();
    assert!(path.exists(), "a killed publisher leaves its socket");
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Binds a publisher at `path`, which must fail, and checks that the file there is unchanged.
fn refused(path: &Path) -> BindError {
    let before = identity(path);
    let err = Publisher::bind(path.to_str().unwrap())
        .err()
        .unwrap_or_else(|| panic!("binding over {} must fail", path.display()));
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "the error names the path: {err}"
    );
    assert_eq!(
        identity(path),
        before,
        "{} must be left as it was",
        path.display()
    );
    err
}

fn not_a_socket(path: &Path, kind: FileKind) {
    match refused(path) {
        BindError::NotASocket { path: p, kind: k } => assert_eq!((p.as_path(), k), (path, kind)),
        e => panic!("expected NotASocket for {kind}, got {e}"),
    }
}

#[test]
#[ignore = "entry point of child processes"]
fn role_entry() {
    let Some((role, args)) = common::child::role() else {
        return;
    };
    match role.as_str() {
        "publisher" => common::roles::publisher(&args),
        // args: topic [directory]. Prints where the publisher bound, or why it could not.
        "bind" => {
            let mut builder = Publisher::builder(&args[0]);
            if let Some(dir) = args.get(1) {
                builder = builder.directory(dir);
            }
            match builder.bind() {
                Ok(publisher) => println!("path={}", publisher.path().display()),
                Err(e) => println!("error={e}"),
            }
            match TopicDir::from_env() {
                Ok(dir) => println!("default={}", dir.path.display()),
                Err(e) => println!("default-error={e}"),
            }
        }
        // args: topic. Prints why there is no publisher.
        "no-publisher" => {
            let err = Subscriber::connect(&args[0]).unwrap_err();
            assert!(matches!(err, ConnectError::NoPublisher { .. }), "{err}");
            println!("error={err}");
        }
        r => panic!("unknown role {r}"),
    }
}

/// Runs this binary in `role` with `args` and `env` (`None` removes a variable), waits for it
/// under the watchdog and returns the value of its `key=` line.
fn run_role(role: &str, args: &[&str], env: &[(&str, Option<&Path>)], key: &str) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "role_entry",
        "--nocapture",
        "--include-ignored",
        "--test-threads=1",
    ])
    .env("SHMCAST_ROLE", role)
    .env("SHMCAST_ARGS", args.join("\x1f"))
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).unwrap();
        s
    });
    let deadline = Instant::now() + WATCHDOG;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("watchdog: {role} child still running after {WATCHDOG:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = reader.join().unwrap();
    assert!(status.success(), "{role} child failed: {status}\n{out}");
    let prefix = format!("{key}=");
    out.lines()
        .find_map(|l| l.split_once(&prefix).map(|(_, v)| v.to_owned()))
        .unwrap_or_else(|| panic!("{role} child printed no {key}=:\n{out}"))
}

#[test]
fn binding_over_a_regular_file_keeps_it() {
    let fds = FdGuard::new();
    let dir = scratch("file");
    let path = dir.join("notes.txt");
    std::fs::write(&path, b"my notes").unwrap();
    not_a_socket(&path, FileKind::Regular);
    assert_eq!(std::fs::read(&path).unwrap(), b"my notes");
    assert_eq!(
        refused(&path).to_string(),
        format!(
            "{} is a regular file, not a topic socket: remove it yourself or choose another topic",
            path.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn binding_over_a_fifo_keeps_it() {
    let fds = FdGuard::new();
    let dir = scratch("fifo");
    let path = dir.join("pipe");
    mkfifo(&path);
    not_a_socket(&path, FileKind::Fifo);
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn binding_over_a_symlink_keeps_it_and_its_target() {
    let fds = FdGuard::new();
    let dir = scratch("symlink");
    let file = dir.join("target.txt");
    std::fs::write(&file, b"x").unwrap();
    let sock = dir.join("dead.sock");
    dead_socket(&sock);
    let live = dir.join("live.sock");
    let publisher = Publisher::bind(live.to_str().unwrap()).unwrap();
    let dangling = dir.join("nothing");
    for (name, target) in [
        ("to-file", &file),
        ("to-dead-socket", &sock),
        ("to-live-socket", &live),
        ("dangling", &dangling),
    ] {
        let link = dir.join(name);
        std::os::unix::fs::symlink(target, &link).unwrap();
        let target_before = target.exists().then(|| identity(target));
        not_a_socket(&link, FileKind::Symlink);
        assert_eq!(
            target.exists().then(|| identity(target)),
            target_before,
            "the target of {name} is kept"
        );
    }
    drop(publisher);
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn binding_over_a_directory_keeps_it() {
    let fds = FdGuard::new();
    let dir = scratch("dir");
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    not_a_socket(&sub, FileKind::Directory);
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn binding_over_a_live_publisher_keeps_it() {
    let fds = FdGuard::new();
    let dir = scratch("live");
    let path = dir.join("live.sock");
    let mut publisher = Publisher::bind(path.to_str().unwrap()).unwrap();
    assert!(matches!(refused(&path), BindError::TopicInUse(p) if p == path));
    let mut sub = Subscriber::connect(path.to_str().unwrap()).unwrap();
    publisher.send(b"still here").unwrap();
    assert_eq!(&*sub.recv().unwrap(), b"still here");
    drop((sub, publisher));
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

/// Another program's stream or datagram socket at a topic path is kept, and every side says
/// it is no topic socket, instead of the system's "wrong type" error.
#[test]
fn another_programs_socket_is_kept_and_named_by_every_side() {
    let fds = FdGuard::new();
    let dir = scratch("other-program");
    let stream = dir.join("stream.sock");
    let datagram = dir.join("datagram.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&stream).unwrap();
    let _socket = std::os::unix::net::UnixDatagram::bind(&datagram).unwrap();
    const NOT_OURS: &str =
        "a socket of another type (stream or datagram), not a shmcast topic socket";
    for path in [&stream, &datagram] {
        let err = refused(path);
        assert!(err.to_string().contains(NOT_OURS), "{err}");
        let topic = path.to_str().unwrap();
        let err = Subscriber::connect(topic).unwrap_err();
        assert!(err.to_string().contains(NOT_OURS), "{err}");
        let err = shmcast::inspect(topic, Duration::from_secs(5)).unwrap_err();
        assert!(err.to_string().contains(NOT_OURS), "{err}");
    }
    drop((_listener, _socket));
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

/// A socket whose owner accepts no connection (stopped, or overwhelmed): once its queue of
/// pending connections is full, a subscriber waits out its `connect_timeout` and is told so,
/// not "resource temporarily unavailable".
#[test]
fn a_publisher_that_accepts_nothing_is_named_after_the_wait() {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketType};
    let fds = FdGuard::new();
    let dir = scratch("accepts-nothing");
    let path = dir.join("stuck.sock");
    let listener = rustix::net::socket(AddressFamily::UNIX, SocketType::SEQPACKET, None).unwrap();
    let addr = SocketAddrUnix::new(&path).unwrap();
    rustix::net::bind(&listener, &addr).unwrap();
    rustix::net::listen(&listener, 0).unwrap();
    // Fill the queue: connections that never get accepted.
    let mut queued = Vec::new();
    loop {
        let s = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            rustix::net::SocketFlags::NONBLOCK,
            None,
        )
        .unwrap();
        match rustix::net::connect(&s, &addr) {
            Ok(()) => queued.push(s),
            Err(_) => break,
        }
        assert!(queued.len() < 64, "the queue never filled");
    }
    let err = Subscriber::builder(path.to_str().unwrap())
        .connect_timeout(Duration::from_millis(200))
        .connect()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("accepted no connection within"), "{text}");
    assert!(
        text.contains("queue of pending connections stayed full"),
        "{text}"
    );
    drop((queued, listener));
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn binding_over_a_killed_publishers_socket_replaces_it() {
    let fds = FdGuard::new();
    let dir = scratch("killed");
    let path = dir.join("killed.sock");
    killed_publishers_socket(&path);
    let mut publisher =
        Publisher::bind(path.to_str().unwrap()).expect("a dead publisher's socket is replaced");
    let mut sub = Subscriber::connect(path.to_str().unwrap()).unwrap();
    publisher.send(b"new").unwrap();
    assert_eq!(&*sub.recv().unwrap(), b"new");
    drop((sub, publisher));
    assert!(!path.exists());
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn binding_over_a_socket_of_another_uid_keeps_it() {
    if !is_root() {
        eprintln!("SKIPPED: needs root to give a socket to another uid");
        return;
    }
    let fds = FdGuard::new();
    let dir = scratch("foreign");
    let path = dir.join("foreign.sock");
    dead_socket(&path);
    std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
    let err = refused(&path);
    assert_eq!(
        err.to_string(),
        format!(
            "{} is a socket of uid 65534, not ours to replace: choose another topic",
            path.display()
        )
    );
    assert!(matches!(err, BindError::ForeignSocket { uid: 65534, .. }));
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

/// A path of `len` bytes in `dir`.
fn path_of_len(dir: &Path, len: usize) -> PathBuf {
    let base = dir.as_os_str().len() + 1;
    dir.join("x".repeat(len - base))
}

fn too_long(err: TopicError, expected: &Path) {
    let text = err.to_string();
    let TopicError::PathTooLong { path, len, max } = err else {
        panic!("expected PathTooLong, got {text}")
    };
    assert_eq!(path, expected);
    assert_eq!((len, max), (expected.as_os_str().len(), MAX_SOCKET_PATH));
    assert_eq!(
        text,
        format!(
            "socket path {} is {len} bytes, more than the 107 a unix socket address holds: use a \
             shorter topic name or a shorter directory (SHMCAST_DIR or the `directory` option)",
            expected.display()
        )
    );
}

#[test]
fn socket_paths_over_the_limit_are_refused_on_both_sides() {
    let fds = FdGuard::new();
    let dir = scratch("long");
    let long = path_of_len(&dir, MAX_SOCKET_PATH + 1);
    let topic = long.to_str().unwrap();
    let Err(BindError::Topic(e)) = Publisher::bind(topic) else {
        panic!("a 108-byte path is refused")
    };
    too_long(e, &long);
    assert!(!long.exists(), "nothing was created");
    let Err(ConnectError::Topic(e)) = Subscriber::connect(topic) else {
        panic!("a 108-byte path is refused")
    };
    too_long(e, &long);
    let fits = path_of_len(&dir, MAX_SOCKET_PATH);
    let publisher = Publisher::bind(fits.to_str().unwrap()).unwrap();
    let sub = Subscriber::connect(fits.to_str().unwrap()).unwrap();
    drop((sub, publisher));
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn names_longer_than_their_directory_allows_are_refused_with_the_limit() {
    let fds = FdGuard::new();
    let default = TopicDir::from_env().unwrap().path;
    for len in [94, 100] {
        let name = "n".repeat(len);
        let Err(BindError::Topic(e)) = Publisher::bind(&name) else {
            panic!(
                "a {len}-character name does not fit in {}",
                default.display()
            )
        };
        too_long(e, &default.join(&name));
        let Err(ConnectError::Topic(e)) = Subscriber::connect(&name) else {
            panic!(
                "a {len}-character name does not fit in {}",
                default.display()
            )
        };
        too_long(e, &default.join(&name));
    }
    // The longest name the directory allows works on both sides.
    let longest = "n".repeat(MAX_SOCKET_PATH - default.as_os_str().len() - 1);
    let publisher = Publisher::bind(&longest).unwrap();
    let sub = Subscriber::connect(&longest).unwrap();
    drop((sub, publisher));
    fds.check();
}

#[test]
fn a_missing_directory_and_other_system_errors_name_the_path() {
    let fds = FdGuard::new();
    let dir = scratch("missing");
    let path = dir.join("no-such-dir").join("topic");
    let topic = path.to_str().unwrap();
    let err = Publisher::bind(topic).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot create the topic socket {}: directory {} does not exist",
            path.display(),
            dir.join("no-such-dir").display()
        )
    );
    assert!(matches!(err, BindError::NoDirectory { path: p } if p == path));
    // A subscriber may wait for the directory to appear: no publisher yet, and the error says
    // the directory is missing.
    let err = Subscriber::connect(topic).unwrap_err();
    assert!(
        err.to_string().ends_with(&format!(
            "(the topic is a socket path; its directory {} does not exist)",
            dir.join("no-such-dir").display()
        )),
        "{err}"
    );
    assert!(matches!(
        err,
        ConnectError::NoPublisher { path: p, dir: DirSource::SocketPath } if p == path
    ));
    // A named topic in a directory that does not exist: the same, in the directory's words.
    let err = Subscriber::builder("ticks")
        .directory(dir.join("no-such-topics"))
        .connect()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("given by the `directory` option, which does not exist"),
        "{err}"
    );
    // A path through a regular file.
    let file = dir.join("file");
    std::fs::write(&file, b"").unwrap();
    let through = file.join("topic");
    let err = Publisher::bind(through.to_str().unwrap()).unwrap_err();
    assert!(
        matches!(&err, BindError::Socket { path, .. } if *path == through),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "binding the topic socket {}: Not a directory (os error 20)",
            through.display()
        )
    );
    let err = Subscriber::connect(through.to_str().unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "connecting to {}: Not a directory (os error 20)",
            through.display()
        )
    );
    assert!(matches!(err, ConnectError::Socket { path, .. } if path == through));
    // A path that names a directory, not a socket in it.
    for topic in ["x/", "/", "x/.", "x/.."]
        .map(|t| t.to_string())
        .into_iter()
        .chain([
            format!("{}/", dir.display()),
            format!("{}/.", dir.display()),
        ])
    {
        let err = Publisher::bind(&topic).unwrap_err();
        assert!(
            matches!(&err, BindError::Topic(TopicError::NotASocket(p)) if p.as_os_str() == topic.as_str()),
            "{topic}: {err}"
        );
        assert!(
            err.to_string().contains("names a directory, not a socket"),
            "{err}"
        );
        assert!(matches!(
            Subscriber::connect(&topic),
            Err(ConnectError::Topic(TopicError::NotASocket(_)))
        ));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn the_builders_directory_is_where_both_sides_look() {
    let fds = FdGuard::new();
    let dir = scratch("builder");
    let topics = dir.join("topics");
    let name = "ticks";
    let mut publisher = Publisher::builder(name).directory(&topics).bind().unwrap();
    assert_eq!(publisher.path(), topics.join(name));
    let mode = std::fs::metadata(&topics).unwrap().mode();
    assert_eq!(mode & 0o777, 0o700, "created private");
    let mut sub = Subscriber::builder(name)
        .directory(&topics)
        .connect()
        .unwrap();
    publisher.send(b"found").unwrap();
    assert_eq!(&*sub.recv().unwrap(), b"found");
    // Elsewhere, nobody: the error says where it looked and why there.
    let elsewhere = dir.join("elsewhere");
    let err = Subscriber::builder(name)
        .directory(&elsewhere)
        .connect()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "no publisher on {} (the topic directory given by the `directory` option, which \
             does not exist)",
            elsewhere.join(name).display()
        )
    );
    assert!(
        matches!(err, ConnectError::NoPublisher { path, dir: DirSource::Builder } if path == elsewhere.join(name))
    );
    drop((sub, publisher));
    fds.check();
    // A directory others may enter is refused on both sides, whoever named it.
    std::fs::set_permissions(&topics, PermissionsExt::from_mode(0o755)).unwrap();
    let err = Publisher::builder(name)
        .directory(&topics)
        .bind()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "refusing topic directory {}: mode 755 lets others in",
            topics.display()
        )
    );
    assert!(matches!(
        Subscriber::builder(name).directory(&topics).connect(),
        Err(ConnectError::Topic(TopicError::InsecureDirectory { .. }))
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shmcast_dir_then_xdg_runtime_dir_then_the_fallback() {
    let fds = FdGuard::new();
    let dir = scratch("env");
    let own = dir.join("own");
    let xdg = dir.join("xdg");
    std::fs::create_dir(&xdg).unwrap();
    let name = format!("env-{}", std::process::id());
    let bind = |args: &[&str], shmcast_dir: Option<&Path>, xdg_dir: Option<&Path>| {
        let env = [("SHMCAST_DIR", shmcast_dir), ("XDG_RUNTIME_DIR", xdg_dir)];
        PathBuf::from(run_role("bind", args, &env, "path"))
    };
    assert_eq!(
        bind(&[&name], Some(&own), Some(&xdg)),
        own.join(&name),
        "SHMCAST_DIR over XDG_RUNTIME_DIR"
    );
    let builder = dir.join("builder");
    assert_eq!(
        bind(&[&name, builder.to_str().unwrap()], Some(&own), Some(&xdg)),
        builder.join(&name),
        "the builder over SHMCAST_DIR"
    );
    assert_eq!(
        bind(&[&name], None, Some(&xdg)),
        xdg.join("shmcast").join(&name),
        "XDG_RUNTIME_DIR without SHMCAST_DIR"
    );
    let uid = std::fs::metadata(&dir).unwrap().uid();
    let fallback = PathBuf::from(format!("/tmp/shmcast-{uid}"));
    assert_eq!(
        bind(&[&name], None, None),
        fallback.join(&name),
        "the fallback without either"
    );
    // A publisher started with SHMCAST_DIR is found by a subscriber that names the directory.
    let mut publisher = spawn(
        "publisher",
        &[
            own.join("live").to_str().unwrap().into(),
            "1".into(),
            "1".into(),
        ],
    );
    let mut sub = Subscriber::builder("live")
        .directory(&own)
        .connect_timeout(WATCHDOG)
        .connect()
        .unwrap();
    publisher.expect_line("published");
    assert_eq!(sub.recv().unwrap().seq(), 0);
    drop(sub);
    publisher.kill();
    // A relative SHMCAST_DIR would differ between working directories: refused, named.
    let relative = run_role(
        "bind",
        &[&name],
        &[("SHMCAST_DIR", Some(Path::new("topics")))],
        "error",
    );
    assert_eq!(
        relative,
        "SHMCAST_DIR=topics is not an absolute path: processes in other working directories \
         would look for topics elsewhere"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn no_publisher_says_where_it_looked_and_why() {
    let fds = FdGuard::new();
    let dir = scratch("why");
    let expect = |env: &[(&str, Option<&Path>)], path: PathBuf, why: &str| {
        let text = run_role("no-publisher", &["ticks"], env, "error");
        // A directory that does not exist is said not to.
        let missing = if path.exists() {
            ""
        } else {
            ", which does not exist"
        };
        assert_eq!(
            text,
            format!(
                "no publisher on {} ({why}{missing}; {} to look elsewhere)",
                path.join("ticks").display(),
                if why.contains("from SHMCAST_DIR") {
                    "change SHMCAST_DIR or set the `directory` option"
                } else {
                    "set SHMCAST_DIR or the `directory` option"
                }
            )
        );
    };
    expect(
        &[("SHMCAST_DIR", None), ("XDG_RUNTIME_DIR", Some(&dir))],
        dir.join("shmcast"),
        "the topic directory from XDG_RUNTIME_DIR",
    );
    expect(
        &[("SHMCAST_DIR", Some(&dir)), ("XDG_RUNTIME_DIR", Some(&dir))],
        dir.clone(),
        "the topic directory from SHMCAST_DIR",
    );
    let uid = std::fs::metadata(&dir).unwrap().uid();
    expect(
        &[("SHMCAST_DIR", None), ("XDG_RUNTIME_DIR", None)],
        PathBuf::from(format!("/tmp/shmcast-{uid}")),
        "the default topic directory, as neither SHMCAST_DIR nor XDG_RUNTIME_DIR is set",
    );
    let path = dir.join("given.sock");
    let err = Subscriber::connect(path.to_str().unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "no publisher on {} (the topic is a socket path)",
            path.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

#[test]
fn stale_topics_lists_and_remove_stale_removes_only_dead_sockets_of_ours() {
    let fds = FdGuard::new();
    let dir = scratch("clean");
    let dead = dir.join("dead");
    killed_publishers_socket(&dead);
    let live = dir.join("live");
    let publisher = Publisher::bind(live.to_str().unwrap()).unwrap();
    let file = dir.join("file");
    std::fs::write(&file, b"keep").unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&dead, &link).unwrap();
    let foreign = dir.join("foreign");
    if is_root() {
        dead_socket(&foreign);
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
    }
    assert_eq!(shmcast::stale_topics(&dir).unwrap(), vec![dead.clone()]);

    let kept = |path: &Path, err: CleanError, text: String| {
        let before = identity(path);
        assert_eq!(err.to_string(), text);
        assert_eq!(identity(path), before);
    };
    let err = shmcast::remove_stale(&live).unwrap_err();
    assert!(matches!(&err, CleanError::Live(p) if *p == live));
    kept(
        &live,
        err,
        format!(
            "{} is not stale: a publisher is listening on it",
            live.display()
        ),
    );
    let err = shmcast::remove_stale(&file).unwrap_err();
    assert!(matches!(
        &err,
        CleanError::NotASocket {
            kind: FileKind::Regular,
            ..
        }
    ));
    kept(
        &file,
        err,
        format!("{} is a regular file, not a topic socket", file.display()),
    );
    let err = shmcast::remove_stale(&link).unwrap_err();
    assert!(matches!(
        &err,
        CleanError::NotASocket {
            kind: FileKind::Symlink,
            ..
        }
    ));
    kept(
        &link,
        err,
        format!("{} is a symbolic link, not a topic socket", link.display()),
    );
    if is_root() {
        let err = shmcast::remove_stale(&foreign).unwrap_err();
        assert!(matches!(&err, CleanError::ForeignSocket { uid: 65534, .. }));
        kept(
            &foreign,
            err,
            format!(
                "{} is a socket of uid 65534, not ours to remove",
                foreign.display()
            ),
        );
    }

    shmcast::remove_stale(&dead).unwrap();
    assert!(!dead.exists());
    let err = shmcast::remove_stale(&dead).unwrap_err();
    assert!(matches!(&err, CleanError::Io { path, source }
        if *path == dead && source.kind() == std::io::ErrorKind::NotFound));
    assert_eq!(shmcast::stale_topics(&dir).unwrap(), Vec::<PathBuf>::new());
    let missing = dir.join("missing");
    assert!(matches!(
        shmcast::stale_topics(&missing),
        Err(CleanError::Io { path, .. }) if path == missing
    ));
    assert!(live.exists() && file.exists());
    drop(publisher);
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

/// A directory whose lock another process holds (publishers take turns there to replace stale
/// sockets) is reported as such after the wait, not as a topic in use.
#[test]
fn a_directory_kept_locked_is_reported_as_locked() {
    let fds = FdGuard::new();
    let dir = scratch("locked");
    let holder = std::fs::File::open(&dir).unwrap();
    rustix::fs::flock(&holder, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let err = Publisher::builder("t")
        .directory(&dir)
        .bind()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("another process kept the topic directory locked") && !err.contains("in use"),
        "{err}"
    );
    drop(holder);
    drop(Publisher::builder("t").directory(&dir).bind().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}

/// A topic path that holds a file of another kind is said to be one, at once, however long the
/// subscriber would wait for a publisher (no publisher ever appears on a regular file).
#[test]
fn a_subscriber_is_told_the_topic_path_is_not_a_socket() {
    let fds = FdGuard::new();
    let dir = scratch("not-socket");
    std::fs::write(dir.join("t"), b"not a socket").unwrap();
    let err = Subscriber::builder("t")
        .directory(&dir)
        .connect_timeout(Duration::from_secs(60))
        .connect()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "connecting to {}: it is a regular file, not a topic socket",
            dir.join("t").display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
    fds.check();
}
