//! What the command's tests share: a private topic directory per test (removed when the test
//! ends), the `shmcast` binary as a child process (killed when its guard drops), runs bounded
//! by a watchdog, and waits for a condition with a deadline.
#![allow(dead_code)]

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Longest any single command may take before the test fails.
pub const WATCHDOG: Duration = Duration::from_secs(60);

/// A fresh private topic directory for one test (mode 0700, as topic directories must be),
/// removed with everything in it when the guard drops at the end of the test.
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("shmcast-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o700)).unwrap();
    Scratch(dir)
}

/// A test's scratch directory, used as a path (`&dir` where a `&Path` goes). Declared before
/// the processes that use it, it drops after them: by then they are killed and reaped.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    /// Removes the tree; what cannot be removed (another user's file in it, say) is left, as
    /// a test's cleanup must not fail the test.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `shmcast --dir DIR ARGS...`, with no input and its output captured.
pub fn shmcast(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_shmcast"));
    cmd.arg("--dir").arg(dir).args(args);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A child process, killed and reaped when dropped.
pub struct Proc(pub Child);

impl Proc {
    pub fn spawn(mut cmd: Command) -> Proc {
        Proc(cmd.spawn().expect("spawn shmcast"))
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid, which is not reaped while `self` lives.
        let rc = unsafe { libc::kill(self.0.id() as i32, signal) };
        assert_eq!(rc, 0, "kill {}", self.0.id());
    }

    /// Waits for the process to exit on its own (the watchdog kills it otherwise) and returns
    /// its output.
    pub fn finish(mut self) -> Output {
        let mut stdout = self.0.stdout.take();
        let mut stderr = self.0.stderr.take();
        let out = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(s) = stdout.as_mut() {
                s.read_to_end(&mut buf).unwrap();
            }
            buf
        });
        let err = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(s) = stderr.as_mut() {
                s.read_to_end(&mut buf).unwrap();
            }
            buf
        });
        let deadline = Instant::now() + WATCHDOG;
        let status = loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.0.kill();
                panic!(
                    "watchdog: shmcast (pid {}) still running after {WATCHDOG:?}",
                    self.pid()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Output {
            status,
            stdout: out.join().unwrap(),
            stderr: err.join().unwrap(),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `cmd` to its end, bounded by the watchdog.
pub fn run(cmd: Command) -> Output {
    Proc::spawn(cmd).finish()
}

/// The exit code of a finished command.
pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not killed")
}

/// The command's standard output as JSON (it must have succeeded).
pub fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// Calls `f` until it returns a value, for at most `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        // Slower than the publisher answers `stat` (20 a second).
        std::thread::sleep(Duration::from_millis(60));
    }
}

/// `stat TOPIC --json` once the topic has `n` subscribers.
pub fn stat_with(dir: &Path, topic: &str, n: usize) -> Value {
    wait_for(
        &format!("{n} subscribers on {topic}"),
        Duration::from_secs(20),
        || {
            let out = shmcast(dir, &["stat", topic, "--json"]).output().unwrap();
            if !out.status.success() {
                return None;
            }
            let v: Value = serde_json::from_slice(&out.stdout).ok()?;
            (v["subscribers"].as_array()?.len() == n).then_some(v)
        },
    )
}

/// A listening SOCK_SEQPACKET socket at `path` that is not a shmcast publisher.
pub fn impostor(path: &Path) -> OwnedFd {
    // SAFETY: socket(2) with constant arguments; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0);
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str());
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes, alive for the call.
    let rc = unsafe { libc::bind(fd, (&raw const addr).cast(), len) };
    assert_eq!(rc, 0);
    // SAFETY: listen(2) on a socket we own.
    assert_eq!(unsafe { libc::listen(fd, 8) }, 0);
    sock
}

/// Accepts one connection per reply on `listener`, sends it the reply and closes it.
pub fn serve(listener: OwnedFd, replies: Vec<Vec<u8>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for reply in replies {
            // SAFETY: accept(2) on our listening socket; the result is checked.
            let conn = unsafe {
                libc::accept(
                    listener.as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            assert!(conn >= 0);
            // SAFETY: `conn` is a fresh descriptor that nothing else owns.
            let conn = unsafe { OwnedFd::from_raw_fd(conn) };
            // SAFETY: send(2) of a live buffer on a socket we own.
            unsafe {
                libc::send(
                    conn.as_raw_fd(),
                    reply.as_ptr().cast(),
                    reply.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    })
}

/// A REFUSE record as a publisher of protocol version 3 sends it: a reason code (3: bad request,
/// 4: busy) and its text.
pub fn refusal(code: u16, text: &[u8]) -> Vec<u8> {
    let mut refuse = b"SHMC".to_vec();
    for word in [3u16, 3, code, text.len() as u16] {
        refuse.extend_from_slice(&word.to_le_bytes());
    }
    refuse.extend_from_slice(text);
    refuse
}
