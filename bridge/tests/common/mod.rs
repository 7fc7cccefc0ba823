//! What the bridge's tests share: two "hosts" on this machine (a private topic directory each,
//! removed when the test ends), bridge processes (this test binary re-run in the `bridge`
//! role) connected over Zenoh TCP on the loopback interface with scouting off, messages any
//! side can rebuild and check, and waits bounded by a watchdog.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use shmcast_zenoh::{Bridge, BridgeConfig};

/// Longest any wait of a test may last before it fails.
pub const WATCHDOG: Duration = Duration::from_secs(90);

/// Runs the tests of one binary one at a time: each starts several processes on a machine
/// of few cores. (`bash .ci/test-all` runs each test in a process of its own; the `bridges`
/// test group of `.config/nextest.toml` keeps them one at a time there.)
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fresh private topic directory: one host, removed with everything in it when the test
/// ends.
pub fn host(test: &str, name: &str) -> Host {
    let dir = std::env::temp_dir().join(format!(
        "shmcast-bridge-{}-{test}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o700)).unwrap();
    Host(dir)
}

/// A host's topic directory, used as a path (`&a` where a `&Path` goes, and where a builder's
/// `directory` takes one). Not `Clone`: a thread that needs the path takes `a.to_path_buf()`,
/// so that one guard alone removes the tree. Declared before the bridges and publishers that
/// use it, it drops after them: by then the processes are killed and reaped.
#[derive(Debug)]
pub struct Host(PathBuf);

impl std::ops::Deref for Host {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Host {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

/// So that `&Host` converts into a `PathBuf` as `&Path` does (`PathBuf: From<&T>` for
/// `T: AsRef<OsStr>`).
impl AsRef<std::ffi::OsStr> for Host {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Host {
    /// Removes the tree, sockets that killed processes left included; what cannot be removed
    /// is left, as a test's cleanup must not fail the test.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A TCP port of the loopback interface that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `done` until it holds; panics naming `what` when the watchdog expires.
pub fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WATCHDOG;
    while !done() {
        assert!(Instant::now() < deadline, "watchdog: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Message `i`: 8 to 1007 bytes, its number in the first 8, then a pattern of it.
pub fn message(i: u64) -> Vec<u8> {
    let len = 8 + (i.wrapping_mul(7919) % 1000) as usize;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&i.to_le_bytes());
    m.extend((8..len).map(|j| (i as usize).wrapping_mul(31).wrapping_add(j) as u8));
    m
}

/// The number of a message, after checking every byte of it.
pub fn check(bytes: &[u8]) -> u64 {
    assert!(bytes.len() >= 8, "a message of {} bytes", bytes.len());
    let i = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    assert_eq!(bytes, message(i).as_slice(), "message {i} differs");
    i
}

/// A bridge process: events on its standard error, counters on its standard output, ended
/// by closing its standard input (or killed when dropped).
pub struct BridgeProc {
    child: Child,
    stdin: Option<ChildStdin>,
    stats: Arc<Mutex<Vec<Value>>>,
    events: Arc<Mutex<Vec<String>>>,
    /// The threads reading standard output and error, which end at the process's exit.
    readers: Vec<JoinHandle<()>>,
}

impl BridgeProc {
    /// Starts a bridge process with `config` (JSON, as `BridgeConfig::from_json` reads it).
    pub fn start(config: &Value) -> BridgeProc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "role_entry", "--nocapture", "--test-threads=1"])
            .env("SHMCAST_BRIDGE_ROLE", config.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stats = Arc::new(Mutex::new(Vec::new()));
        let events = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().unwrap();
        let s = stats.clone();
        let out = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(json) = line.strip_prefix("stats ") {
                    *s.lock().unwrap() = serde_json::from_str(json).unwrap();
                }
            }
        });
        let err = child.stderr.take().unwrap();
        let e = events.clone();
        let err = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("[bridge] {line}");
                e.lock().unwrap().push(line);
            }
        });
        let stdin = child.stdin.take();
        BridgeProc {
            child,
            stdin,
            stats,
            events,
            readers: vec![out, err],
        }
    }

    /// Waits until everything the exited process wrote has been read.
    fn drain(&mut self) {
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
    }

    /// The latest counters of each topic, in configuration order.
    pub fn stats(&self) -> Vec<Value> {
        self.stats.lock().unwrap().clone()
    }

    /// The latest counters of topic number `n`, once the process has reported any.
    pub fn topic(&self, n: usize) -> Value {
        until("the bridge's first counters", || self.stats().len() > n);
        self.stats()[n].clone()
    }

    /// Every event line so far.
    pub fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }

    /// Waits until an event line contains `text`.
    pub fn wait_event(&self, text: &str) -> String {
        let mut found = None;
        until(&format!("an event containing {text:?}"), || {
            found = self.events().into_iter().find(|l| l.contains(text));
            found.is_some()
        });
        found.unwrap()
    }

    /// Ends the bridge as its operator would and returns its final counters.
    pub fn stop(self) -> Vec<Value> {
        self.stop_with_events().0
    }

    /// Ends the bridge as its operator would and returns its final counters and every event
    /// it reported.
    pub fn stop_with_events(mut self) -> (Vec<Value>, Vec<String>) {
        drop(self.stdin.take());
        let deadline = Instant::now() + WATCHDOG;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "bridge exited with {status}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "watchdog: the bridge did not stop"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        self.drain();
        (self.stats(), self.events())
    }

    /// Sends `signal` (`STOP`, `CONT`) to the bridge.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal}");
    }

    /// SIGKILLs the bridge.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to exit by itself; its exit code.
    pub fn exit_code(mut self) -> Option<i32> {
        let deadline = Instant::now() + WATCHDOG;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                self.drain();
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "watchdog: the bridge did not exit"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for BridgeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of the `bridge` role: runs a bridge with the configuration in
/// `SHMCAST_BRIDGE_ROLE`, prints its counters every 50 ms (`stats [...]`) and its events, and
/// stops when standard input closes. Returns `false` when this process is not in that role.
pub fn role() -> bool {
    let Ok(json) = std::env::var("SHMCAST_BRIDGE_ROLE") else {
        return false;
    };
    let config = match BridgeConfig::from_json(&json) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let bridge = match Bridge::builder(config)
        .on_event(|e| eprintln!("{e}"))
        .start()
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let print = |stats: Vec<shmcast_zenoh::TopicStats>| {
        let all: Vec<Value> = stats.iter().map(|t| t.to_json()).collect();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "stats {}", Value::Array(all));
        let _ = out.flush();
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        let _ = tx.send(());
    });
    while rx.recv_timeout(Duration::from_millis(50)).is_err() {
        print(bridge.stats());
    }
    // The final counters, once no message can move them.
    print(bridge.stop());
    true
}

/// A Zenoh session of the test's own listening on `port` of the loopback interface, with a
/// publisher on `key`, once a subscriber (an importer connected to `port`) matches it: what an
/// exporter puts, the test writes by hand.
pub fn raw_publisher(port: u16, key: &str) -> (zenoh::Session, zenoh::pubsub::Publisher<'static>) {
    use zenoh::Wait;
    let mut config = zenoh::Config::default();
    for (k, v) in [
        ("listen/endpoints", format!(r#"["tcp/127.0.0.1:{port}"]"#)),
        ("scouting/multicast/enabled", "false".into()),
        ("scouting/gossip/enabled", "false".into()),
    ] {
        config.insert_json5(k, &v).unwrap();
    }
    let session = zenoh::open(config).wait().unwrap();
    let publisher = session.declare_publisher(key.to_owned()).wait().unwrap();
    until("an importer matching the key", || {
        publisher.matching_status().wait().unwrap().matching()
    });
    (session, publisher)
}

/// A topic directory as JSON.
pub fn dir(p: &Path) -> Value {
    Value::String(p.display().to_string())
}
