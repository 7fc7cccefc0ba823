//! Shared by the integration tests: compiling the C programs in `tests/c/` against the library
//! cargo just built, running them as real processes under a watchdog (optionally under valgrind
//! memcheck), and the message generator the C programs also use (`tests/c/common.h`).

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Warnings are errors in every C compilation, as the header promises.
pub const C_FLAGS: &[&str] = &["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"];
pub const CXX_FLAGS: &[&str] = &["-std=c++11", "-Wall", "-Wextra", "-Werror", "-pedantic"];

pub fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn include_dir() -> PathBuf {
    manifest_dir().join("include")
}

/// Where `libshmcast.so` and `libshmcast.a` are for this test run: beside the test executable.
///
/// The library is a `cdylib` and a `staticlib` only, which cargo does not build for an
/// integration test, so the first call builds it with the same profile and target directory as
/// the test itself (cargo knows whether the sources changed).
pub fn lib_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_library).clone()
}

fn build_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().expect("test executable directory").to_owned();
    let profile_dir = dir.parent().expect("profile directory");
    let target_dir = profile_dir.parent().expect("target directory");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => panic!("no profile in {}", profile_dir.display()),
    };
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "shmcast-ffi",
            "--lib",
            "--profile",
            profile,
        ])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(manifest_dir())
        .status()
        .expect("run cargo to build the library");
    assert!(status.success(), "building libshmcast failed: {status}");
    for lib in ["libshmcast.so", "libshmcast.a"] {
        assert!(
            dir.join(lib).exists(),
            "{lib} not found in {} after building it",
            dir.display()
        );
    }
    dir
}

/// A scratch directory for compiled programs and generated files.
pub fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shmcast-c-tests");
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

/// How a C program links the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Link {
    /// `-lshmcast` against `libshmcast.so`, found at run time through the rpath.
    Shared,
    /// `libshmcast.a` and the system libraries Rust's standard library needs.
    Static,
}

/// System libraries a static Rust library needs on Linux (`rustc --print native-static-libs`).
pub const STATIC_DEPS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

/// Runs a compiler and panics with its output if it fails.
pub fn run_compiler(compiler: &str, args: &[&std::ffi::OsStr]) {
    let out = Command::new(compiler)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        out.status.success(),
        "{compiler} {:?} failed:\n{}{}",
        args,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `tests/c/<name>.c` (once per test process) and returns the executable.
///
/// Test processes that run side by side compile the same programs to the same path: each writes
/// its own file and renames it into place, so no process starts a program that another is still
/// writing (`ETXTBSY`), and one that runs the previous file keeps it.
pub fn compile(name: &str, link: Link) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<(String, Link), PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(exe) = built.get(&(name.to_owned(), link)) {
        return exe.clone();
    }
    let src = manifest_dir().join("tests/c").join(format!("{name}.c"));
    let exe = out_dir().join(match link {
        Link::Shared => name.to_owned(),
        Link::Static => format!("{name}-static"),
    });
    let lib = lib_dir();
    let mut args: Vec<std::ffi::OsString> = C_FLAGS.iter().map(Into::into).collect();
    args.extend(["-g", "-O1", "-D_POSIX_C_SOURCE=200809L"].map(Into::into));
    args.push(format!("-I{}", include_dir().display()).into());
    args.push(src.into_os_string());
    let partial = exe.with_extension(format!("{}.partial", std::process::id()));
    args.push("-o".into());
    args.push(partial.clone().into_os_string());
    match link {
        Link::Shared => {
            args.push(format!("-L{}", lib.display()).into());
            args.push("-lshmcast".into());
            args.push(format!("-Wl,-rpath,{}", lib.display()).into());
        }
        Link::Static => {
            args.push(lib.join("libshmcast.a").into_os_string());
            args.extend(STATIC_DEPS.iter().map(Into::into));
        }
    }
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    run_compiler("cc", &refs);
    std::fs::rename(&partial, &exe).unwrap_or_else(|e| {
        panic!(
            "cannot move {} to {}: {e}",
            partial.display(),
            exe.display()
        )
    });
    built.insert((name.to_owned(), link), exe.clone());
    exe
}

/// Whether valgrind can be run.
pub fn valgrind_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        Command::new("valgrind")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// How the C programs of one test run.
#[derive(Clone, Copy, Debug)]
pub struct Runner {
    /// Under valgrind memcheck: any memory error, or a definite leak, fails the program.
    pub valgrind: bool,
}

impl Runner {
    /// Generous per-program limits: valgrind slows programs down a lot.
    pub fn limit(&self) -> Duration {
        if self.valgrind {
            Duration::from_secs(600)
        } else {
            Duration::from_secs(120)
        }
    }

    /// A name unique to this process and runner, for topics.
    pub fn topic(&self, name: &str) -> String {
        let kind = if self.valgrind { "vg" } else { "n" };
        format!("ffi-{}-{kind}-{name}", std::process::id())
    }

    /// Starts `exe` with `args`; stdout lines are collected as they come.
    pub fn spawn(&self, exe: &Path, args: &[&str]) -> Proc {
        let mut cmd = if self.valgrind {
            let mut c = Command::new("valgrind");
            c.args([
                "--error-exitcode=1",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
                "--quiet",
            ]);
            c.arg(exe);
            c
        } else {
            Command::new(exe)
        };
        // Like any C program, find the library through the rpath it was linked with, not
        // through the search path cargo sets for tests (which may hold an older build).
        cmd.args(args)
            .env_remove("LD_LIBRARY_PATH")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let name = format!(
            "{}{} {}",
            if self.valgrind { "valgrind " } else { "" },
            exe.file_name().unwrap_or_default().to_string_lossy(),
            args.join(" ")
        );
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = channel();
        let out_reader = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                all.push_str(&line);
                all.push('\n');
                let _ = tx.send(line);
            }
            all
        });
        let err_reader = std::thread::spawn(move || {
            let mut all = String::new();
            let _ = stderr.read_to_string(&mut all);
            all
        });
        Proc {
            name,
            stdin: child.stdin.take(),
            child,
            lines,
            out_reader: Some(out_reader),
            err_reader: Some(err_reader),
            limit: self.limit(),
            started: Instant::now(),
        }
    }
}

/// A running C program. Dropping it kills the program if it is still running.
pub struct Proc {
    pub name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    out_reader: Option<JoinHandle<String>>,
    err_reader: Option<JoinHandle<String>>,
    limit: Duration,
    started: Instant,
}

/// A finished program.
#[derive(Debug)]
pub struct Finished {
    pub name: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// Panics with everything the program said unless it exited with status 0.
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.status.success(),
            "{} failed with {}\n--- stdout\n{}--- stderr\n{}",
            self.name,
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// The whitespace-separated value after `key` on the stdout line starting with `line`.
    pub fn value(&self, line: &str, key: &str) -> u64 {
        let found = self
            .stdout
            .lines()
            .find(|l| l.starts_with(line))
            .unwrap_or_else(|| {
                panic!(
                    "{}: no line starting with {line:?} in\n{}",
                    self.name, self.stdout
                )
            });
        let mut words = found.split_whitespace();
        while let Some(w) = words.next() {
            if w == key {
                let v = words.next().expect("value after key");
                return v
                    .parse()
                    .unwrap_or_else(|_| panic!("{}: {key} {v:?} is not a number", self.name));
            }
        }
        panic!("{}: no {key:?} in {found:?}", self.name)
    }
}

impl Proc {
    /// Waits until the program prints a line starting with `prefix`.
    pub fn expect_line(&mut self, prefix: &str) -> String {
        let deadline = self.started + self.limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    panic!(
                        "watchdog: {} did not print {prefix:?} within {:?}; killed",
                        self.name, self.limit
                    );
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let done = self.finish();
                    panic!("{} exited before printing {prefix:?}: {done:#?}", done.name);
                }
            }
        }
    }

    /// Waits until `cond` holds, failing early if the program exits and after its limit.
    pub fn wait_for(&mut self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = self.started + self.limit;
        while !cond() {
            if !matches!(self.child.try_wait(), Ok(None)) {
                let done = self.finish();
                panic!("{} exited while waiting for {what}: {done:#?}", done.name);
            }
            if Instant::now() > deadline {
                self.kill();
                let done = self.finish();
                panic!(
                    "watchdog: {what} did not happen within {:?}: {done:#?}",
                    self.limit
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Writes one line to the program's stdin.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{line}").expect("write to the program's stdin");
        stdin.flush().expect("flush the program's stdin");
    }

    /// Closes the program's stdin: it reads the end of input, as from `/dev/null`.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the program to exit, killing it (and failing) if it outlives its limit.
    pub fn wait(mut self) -> Finished {
        self.stdin = None;
        let deadline = self.started + self.limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return self.finish(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Ok(None) => {
                    self.kill();
                    let done = self.finish();
                    panic!(
                        "watchdog: {} still running after {:?}; killed\n--- stdout\n{}--- stderr\n{}",
                        done.name, self.limit, done.stdout, done.stderr
                    );
                }
                Err(e) => panic!("waiting for {}: {e}", self.name),
            }
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
    }

    fn finish(&mut self) -> Finished {
        self.stdin = None;
        let status = self.child.wait().expect("wait for the program");
        let stdout = self
            .out_reader
            .take()
            .map(|r| r.join().unwrap_or_default())
            .unwrap_or_default();
        let stderr = self
            .err_reader
            .take()
            .map(|r| r.join().unwrap_or_default())
            .unwrap_or_default();
        Finished {
            name: self.name.clone(),
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
            let _ = self.child.wait();
        }
    }
}

// The message generator and checksum: the same as in tests/c/common.h.

pub fn gen_len(seq: u64) -> usize {
    ((seq.wrapping_mul(37).wrapping_add(11)) % 1000) as usize
}

pub fn gen_byte(seq: u64, i: usize) -> u8 {
    let i = i as u64;
    (seq.wrapping_mul(131)
        .wrapping_add(i.wrapping_mul(7))
        .wrapping_add(i >> 8)
        ^ (seq >> 3)) as u8
}

pub fn gen_message(seq: u64) -> Vec<u8> {
    (0..gen_len(seq)).map(|i| gen_byte(seq, i)).collect()
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// Folds one message into a running checksum.
pub fn checksum_add(mut h: u64, seq: u64, data: &[u8]) -> u64 {
    let mut byte = |b: u8| h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    seq.to_le_bytes().into_iter().for_each(&mut byte);
    (data.len() as u64)
        .to_le_bytes()
        .into_iter()
        .for_each(&mut byte);
    data.iter().copied().for_each(&mut byte);
    h
}

/// The checksum of messages `0..count` as the generator makes them.
pub fn expected_checksum(count: u64) -> u64 {
    (0..count).fold(FNV_OFFSET, |h, seq| checksum_add(h, seq, &gen_message(seq)))
}

pub fn checksum_start() -> u64 {
    FNV_OFFSET
}
