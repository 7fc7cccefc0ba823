//! Child processes: a program re-executes itself as `PROGRAM __child PARENT_PID ROLE ...` for
//! every subscriber, listener or relay.
//!
//! A child talks to the parent through its stdout, one line per message (`ready`, `result
//! key=value ...`), and inherits exactly the descriptors the parent names. Every wait of the
//! parent has a deadline; a child that exits, stalls or reports an error ends the run with a
//! message naming it. Children die with the parent (`PR_SET_PDEATHSIG`), and a [`Fleet`] kills
//! and reaps every child it still holds when dropped, so no exit path leaves one behind. A fleet
//! can also be watched without waiting (the soak's churn): lines as they come, exits, signals to
//! one child, and children taken out once reaped.

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::error::{BenchError, Result, sys};

/// First argument that turns the binary into a child.
pub const CHILD_ARG: &str = "__child";

/// What to start.
pub struct Spec {
    /// Shown in errors and progress ("listener 2", "relay").
    pub name: String,
    /// The child role, which the program dispatches on after [`child_args`].
    pub role: &'static str,
    /// The role's arguments.
    pub args: Vec<String>,
    /// Descriptors the child inherits (their numbers are usually among `args`).
    pub fds: Vec<RawFd>,
}

/// One line a child printed: a tag and `key=value` words.
#[derive(Debug)]
pub struct Report {
    /// Whose line it is.
    pub who: String,
    /// The first word.
    pub tag: String,
    /// The remaining words.
    pub words: Vec<String>,
}

impl Report {
    /// The value of `key=...` parsed as `T`.
    pub fn get<T: std::str::FromStr>(&self, key: &str) -> Result<T> {
        self.words
            .iter()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| BenchError::Child {
                who: self.who.clone(),
                what: format!("report {:?} has no valid {key}=", self.tag),
            })
    }

    /// Every word parsed as `u64` (for `samples` lines).
    pub fn numbers(&self) -> Result<Vec<u64>> {
        self.words
            .iter()
            .map(|w| {
                w.parse().map_err(|_| BenchError::Child {
                    who: self.who.clone(),
                    what: format!("bad number {w:?} in a {:?} line", self.tag),
                })
            })
            .collect()
    }
}

struct Proc {
    name: String,
    child: Child,
    out: ChildStdout,
    buf: Vec<u8>,
}

/// The children of one trial. Dropping it kills and reaps every child it still holds.
pub struct Fleet {
    procs: Vec<Proc>,
    cpu_children_before: u64,
}

impl Fleet {
    /// An empty fleet; notes the CPU time of the children reaped so far.
    pub fn new() -> Fleet {
        Fleet {
            procs: Vec::new(),
            cpu_children_before: crate::sys::cpu_children_ns(),
        }
    }

    /// Number of children.
    pub fn len(&self) -> usize {
        self.procs.len()
    }

    /// Whether it holds no child.
    pub fn is_empty(&self) -> bool {
        self.procs.is_empty()
    }

    /// Starts a child. Returns its index.
    pub fn spawn(&mut self, spec: Spec) -> Result<usize> {
        self.spawn_on(spec, None)
    }

    /// [`spawn`](Self::spawn), the child's thread moved to `cpu` (if any) before its role
    /// starts ([`crate::pin`]).
    pub fn spawn_on(&mut self, spec: Spec, cpu: Option<usize>) -> Result<usize> {
        let exe = std::env::current_exe().map_err(sys("locating the executable"))?;
        let mut command = Command::new(exe);
        match cpu {
            Some(cpu) => command.env(crate::pin::ENV, cpu.to_string()),
            // Not one from this process's own environment either.
            None => command.env_remove(crate::pin::ENV),
        };
        command
            .arg(CHILD_ARG)
            .arg(std::process::id().to_string())
            .arg(spec.role)
            .args(&spec.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        crate::sys::prepare_child(&mut command, spec.fds);
        let mut child = command
            .spawn()
            .map_err(sys(format!("spawning {}", spec.name)))?;
        let out = child.stdout.take().expect("stdout is piped");
        rustix::io::ioctl_fionbio(&out, true).map_err(sys("making a child pipe non-blocking"))?;
        self.procs.push(Proc {
            name: spec.name,
            child,
            out,
            buf: Vec::new(),
        });
        Ok(self.procs.len() - 1)
    }

    /// Waits for child `i`'s next line, which must carry `tag`, until `deadline`.
    pub fn expect(&mut self, i: usize, tag: &str, deadline: Instant) -> Result<Report> {
        let proc = &mut self.procs[i];
        loop {
            if let Some(report) = proc.take_line() {
                if report.tag != tag {
                    return Err(BenchError::Child {
                        who: proc.name.clone(),
                        what: format!(
                            "expected a {tag:?} line, got {:?}",
                            [&[report.tag], &report.words[..]].concat().join(" ")
                        ),
                    });
                }
                return Ok(report);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(BenchError::Child {
                    who: proc.name.clone(),
                    what: format!("no {tag:?} line within the deadline (stalled)"),
                });
            }
            crate::sys::wait_readable(proc.out.as_fd(), left.min(Duration::from_millis(100)))
                .map_err(sys("poll on a child pipe"))?;
            let mut chunk = [0u8; 64 * 1024];
            match proc.out.read(&mut chunk) {
                Ok(0) => {
                    let status = wait_briefly(&mut proc.child);
                    return Err(BenchError::Child {
                        who: proc.name.clone(),
                        what: format!("exited ({status}) before sending a {tag:?} line"),
                    });
                }
                Ok(n) => proc.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(sys(format!("reading from {}", proc.name))(e)),
            }
        }
    }

    /// Child `i`'s next line, if it has printed a whole one; never waits. `None` as well once
    /// its output has ended.
    pub fn try_next(&mut self, i: usize) -> Result<Option<Report>> {
        let proc = &mut self.procs[i];
        loop {
            if let Some(report) = proc.take_line() {
                return Ok(Some(report));
            }
            let mut chunk = [0u8; 4096];
            match proc.out.read(&mut chunk) {
                Ok(0) => return Ok(None),
                Ok(n) => proc.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(sys(format!("reading from {}", proc.name))(e)),
            }
        }
    }

    /// Child `i`'s exit status if it has exited (it is reaped then); never waits.
    pub fn try_exit(&mut self, i: usize) -> Result<Option<ExitStatus>> {
        let proc = &mut self.procs[i];
        proc.child
            .try_wait()
            .map_err(sys(format!("waiting for {}", proc.name)))
    }

    /// Sends `signal` to child `i` (`SIGSTOP`, `SIGCONT`...).
    pub fn signal(&self, i: usize, signal: Signal) -> Result<()> {
        let proc = &self.procs[i];
        crate::sys::kill(proc.child.id(), signal)
            .map_err(sys(format!("signalling {} ({signal:?})", proc.name)))
    }

    /// Kills child `i` (`SIGKILL`) and reaps it. Returns its status: killed, or exited by
    /// itself just before. Its unread lines stay readable with [`try_next`](Self::try_next).
    pub fn kill(&mut self, i: usize) -> Result<ExitStatus> {
        let proc = &mut self.procs[i];
        let _ = proc.child.kill();
        proc.child
            .wait()
            .map_err(sys(format!("reaping {}", proc.name)))
    }

    /// Takes child `i`, which has exited and been reaped, out of the fleet; later children move
    /// down one index.
    pub fn remove(&mut self, i: usize) {
        self.procs.remove(i);
    }

    /// Child `i`'s name.
    pub fn name(&self, i: usize) -> &str {
        &self.procs[i].name
    }

    /// Waits for a `tag` line from every child, in order, until `deadline`.
    pub fn expect_all(&mut self, tag: &str, deadline: Instant) -> Result<Vec<Report>> {
        (0..self.procs.len())
            .map(|i| self.expect(i, tag, deadline))
            .collect()
    }

    /// Waits until every child has exited successfully, until `deadline`. Returns the CPU time
    /// (ns) of every child of this fleet over its whole life, from `getrusage(RUSAGE_CHILDREN)`.
    pub fn finish(mut self, deadline: Instant) -> Result<u64> {
        while let Some(mut proc) = self.procs.pop() {
            loop {
                match proc.child.try_wait() {
                    Ok(Some(status)) if status.success() => break,
                    Ok(Some(status)) => {
                        return Err(BenchError::Child {
                            who: proc.name,
                            what: format!("exited with {status}"),
                        });
                    }
                    Ok(None) if Instant::now() >= deadline => {
                        let _ = proc.child.kill();
                        let _ = proc.child.wait();
                        return Err(BenchError::Child {
                            who: proc.name,
                            what: "did not exit within the deadline".into(),
                        });
                    }
                    Ok(None) => std::thread::sleep(Duration::from_micros(200)),
                    Err(e) => return Err(sys(format!("waiting for {}", proc.name))(e)),
                }
            }
        }
        Ok(crate::sys::cpu_children_ns().saturating_sub(self.cpu_children_before))
    }
}

impl Default for Fleet {
    fn default() -> Fleet {
        Fleet::new()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for proc in &mut self.procs {
            let _ = proc.child.kill();
        }
        for proc in &mut self.procs {
            let _ = proc.child.wait();
        }
    }
}

impl Proc {
    /// The next whole line already read from the child, parsed.
    fn take_line(&mut self) -> Option<Report> {
        let pos = self.buf.iter().position(|&b| b == b'\n')?;
        let line: Vec<u8> = self.buf.drain(..=pos).collect();
        let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
        let mut words = text.split_ascii_whitespace().map(str::to_owned);
        Some(Report {
            who: self.name.clone(),
            tag: words.next().unwrap_or_default(),
            words: words.collect(),
        })
    }
}

/// The exit status of a child whose stdout closed, if it follows within a moment.
fn wait_briefly(child: &mut Child) -> String {
    let until = Instant::now() + Duration::from_millis(500);
    while Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            return status.to_string();
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    "still running".into()
}

/// The child side: the role and its arguments when `args` (the program's, after its name) are a
/// child's, `__child PARENT_PID ROLE ARGS...`; `None` for the parent. A child whose parent is not
/// `PARENT_PID` any more gets an error instead: it must not carry on alone.
pub fn child_args(args: &[String]) -> Option<Result<(&str, &[String])>> {
    let (first, args) = args.split_first()?;
    if first != CHILD_ARG {
        return None;
    }
    let [parent, role, rest @ ..] = args else {
        return Some(Err(BenchError::Usage(
            "a child needs a parent pid and a role".into(),
        )));
    };
    // The death signal was armed before exec; a parent that died before that left this child
    // re-parented, and it must not carry on alone.
    if std::os::unix::process::parent_id().to_string() != *parent {
        return Some(Err(BenchError::Usage("the parent is gone".into())));
    }
    Some(Ok((role.as_str(), rest)))
}

/// The child side: prints one line to the parent.
pub fn say(line: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(sys("writing to the parent"))
}

/// The child side: the raw descriptor number of an inherited fd argument.
pub fn fd_arg(arg: &str) -> Result<RawFd> {
    arg.parse()
        .map_err(|_| BenchError::Usage(format!("bad descriptor argument {arg:?}")))
}

/// The child side: parses a role argument.
pub fn parse_arg<T: std::str::FromStr>(arg: &str) -> Result<T> {
    arg.parse()
        .map_err(|_| BenchError::Usage(format!("bad child argument {arg:?}")))
}

/// The raw number of `fd`, to hand to a child.
pub fn raw<F: AsRawFd>(fd: &F) -> RawFd {
    fd.as_raw_fd()
}
