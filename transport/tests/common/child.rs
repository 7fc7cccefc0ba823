//! Real processes: a test binary re-executes itself in a child *role*, so publishers and
//! subscribers live in separate processes with separate address spaces. The binary must have an
//! ignored test named `role_entry` that dispatches on [`role`].
//!
//! Every wait on a child is bounded by [`WATCHDOG`], which only a hang reaches; none of these
//! helpers asserts on time. A [`Proc`] that goes out of scope kills and reaps its process, so a
//! failing test leaves nothing running.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bound of every wait on another process.
pub const WATCHDOG: Duration = Duration::from_secs(300);

const ROLE: &str = "SHMCAST_ROLE";
const ARGS: &str = "SHMCAST_ARGS";
/// Separates the arguments in [`ARGS`] (paths may hold spaces).
const SEP: char = '\x1f';

/// The role and arguments this process was started in, or `None` in the test process itself.
pub fn role() -> Option<(String, Vec<String>)> {
    let role = std::env::var(ROLE).ok()?;
    let args = std::env::var(ARGS).unwrap_or_default();
    Some((role, args.split(SEP).map(str::to_owned).collect()))
}

/// Starts this test binary in `role` with `args` and waits for it to print `ready`.
pub fn spawn_ready(role: &str, args: &[String]) -> Proc {
    let mut child = spawn(role, args);
    child.expect_line("ready");
    child
}

/// Starts this test binary in `role` with `args`.
pub fn spawn(role: &str, args: &[String]) -> Proc {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "role_entry",
            "--nocapture",
            "--include-ignored",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(ARGS, args.join(&SEP.to_string()))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel();
    // One reader for the child's whole life: no line is lost between two `expect_line`s.
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    Proc {
        name: format!("{role} child {}", child.id()),
        child,
        lines,
        reader: Some(reader),
        reaped: false,
    }
}

/// A child process started by [`spawn`], with its standard output read line by line.
pub struct Proc {
    child: Child,
    lines: Receiver<String>,
    reader: Option<JoinHandle<()>>,
    name: String,
    reaped: bool,
}

impl Proc {
    /// The child's process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Reads the child's output until a line containing `needle` and returns that line.
    /// (libtest prints `test role_entry ... ` in front of the child's first line.)
    pub fn expect_line(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + WATCHDOG;
        let mut skipped = String::new();
        loop {
            match self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(line) if line.contains(needle) => return line,
                Ok(line) => {
                    skipped.push_str(&line);
                    skipped.push('\n');
                }
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "{} ended before printing {needle:?}; it printed:\n{skipped}",
                    self.name
                ),
                Err(RecvTimeoutError::Timeout) => panic!(
                    "watchdog: no {needle:?} from {} after {WATCHDOG:?}",
                    self.name
                ),
            }
        }
    }

    /// Whether the child has printed a line containing `needle` since the last look, without
    /// waiting; the lines read are consumed.
    pub fn printed(&mut self, needle: &str) -> bool {
        self.lines.try_iter().any(|line| line.contains(needle))
    }

    /// Sends `signal` to the child.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill has no memory preconditions; the pid is our unreaped child's, so it
        // cannot name another process.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "kill({}, {signal})", self.name);
    }

    /// Stops the child (SIGSTOP) and waits until the kernel reports it stopped.
    pub fn stop(&self) {
        self.signal(libc::SIGSTOP);
        let deadline = Instant::now() + WATCHDOG;
        while self.state() != 'T' {
            assert!(
                Instant::now() < deadline,
                "watchdog: {} never stopped",
                self.name
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Lets a stopped child continue (SIGCONT).
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// The state letter of `/proc/PID/stat` (`R`, `S`, `T`, …).
    fn state(&self) -> char {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        // The command name is in parentheses and may hold anything, so split after the last.
        let after = &stat[stat.rfind(')').expect("stat format") + 1..];
        after.trim_start().chars().next().expect("stat state")
    }

    /// Kills the child with SIGKILL and reaps it, asserting it was still running until then.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        self.reaped = true;
        self.join_reader();
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "{} had exited before it was killed: {status}",
            self.name
        );
    }

    /// Waits for the child to exit successfully and returns what it printed since the last
    /// [`expect_line`](Proc::expect_line).
    pub fn finish(mut self) -> String {
        let deadline = Instant::now() + WATCHDOG;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "watchdog: {} still running after {WATCHDOG:?}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        self.reaped = true;
        self.join_reader();
        let out: String = self.lines.try_iter().map(|l| l + "\n").collect();
        assert!(status.success(), "{} failed: {status}\n{out}", self.name);
        out
    }

    /// The reader ends at end of file, which a reaped child's pipe has reached.
    fn join_reader(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        self.join_reader();
    }
}
