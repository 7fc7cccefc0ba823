//! The subscriber: connects to a topic, maps the ring read-only, and receives messages in place
//! (gating) or by validated copy (lossy).
//!
//! # Overload and failure
//!
//! * A lossy subscriber that falls a ring behind gets [`RecvError::Lagged`] with the exact
//!   number of messages it missed, then continues in order.
//! * A gating subscriber that stalls past the publisher's stall bound gets
//!   [`RecvError::Demoted`] once and continues as a lossy one.
//! * When the publisher ends or dies, every committed message is still received, then
//!   [`RecvError::Disconnected`] (a lossy subscriber loses those that a dying publisher's last,
//!   uncommitted reservation may have overwritten). A corrupt ring gives
//!   [`RecvError::Corrupt`], never a crash.
//!
//! ```no_run
//! use shmcast::{RecvError, Subscriber};
//! use std::time::Duration;
//!
//! let mut sub = Subscriber::builder("doc-example").connect_timeout(Duration::from_secs(5)).connect()?;
//! loop {
//!     match sub.recv() {
//!         Ok(sample) => println!("message {} of {} bytes", sample.seq(), sample.len()),
//!         Err(RecvError::Lagged(n)) => eprintln!("missed {n}"),
//!         Err(RecvError::Disconnected) => break,
//!         Err(e) => return Err(e.into()),
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![allow(unsafe_code)]

use crate::error::{ConnectError, PodError, RecvError};
use crate::handshake::{self, Hello, Reply};
use crate::publisher::Admission;
use crate::shm;
use crate::sys::{self, RecvFdsError};
use crate::topic;
use shmcast_core::{CONTROL_BLOCK_LEN, Frame, HEADER_LEN, Mode, ReadError, Reader, Region, Start};
use std::io;
use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const TOKEN_SELF: u64 = 1;
const TOKEN_SOCKET: u64 = 2;

/// Settings for a [`Subscriber`].
#[derive(Clone, Debug)]
pub struct SubscriberBuilder {
    topic: String,
    mode: Mode,
    start: Start,
    spin: u32,
    connect_timeout: Option<Duration>,
    handshake_timeout: Duration,
    publisher: Admission,
}

impl SubscriberBuilder {
    /// Defaults: gating, start at the newest message, no spinning, fail at once if no publisher
    /// exists, 5 s handshake timeout, trust only a publisher of our own uid.
    pub fn new(topic: impl Into<String>) -> Self {
        SubscriberBuilder {
            topic: topic.into(),
            mode: Mode::Gating,
            start: Start::Newest,
            spin: 0,
            connect_timeout: None,
            handshake_timeout: Duration::from_secs(5),
            publisher: Admission::SameUid,
        }
    }

    /// Gating (reliable, may slow the publisher) or lossy (never slows it).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Shorthand for `mode(Mode::Lossy)`.
    pub fn lossy(self) -> Self {
        self.mode(Mode::Lossy)
    }

    /// Start with the next message (default) or with the oldest still in the ring.
    pub fn start(mut self, start: Start) -> Self {
        self.start = start;
        self
    }

    /// How many times a blocking receive polls before parking. Only worth it with fewer
    /// spinning subscribers than idle cores.
    pub fn spin(mut self, polls: u32) -> Self {
        self.spin = polls;
        self
    }

    /// Wait up to `timeout` for a publisher to appear (default: fail at once).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// How long the publisher may take to answer.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Which publishers to trust: the uid of the process serving the socket (`SO_PEERCRED`) is
    /// checked right after connecting, before anything is sent or received, and any other uid
    /// is [`ConnectError::UntrustedPublisher`]. Default [`Admission::SameUid`]: our own uid.
    ///
    /// A named topic lives in our own private directory, so only a process of our uid (or root)
    /// can serve it; a topic given as a path can lie in a directory that others may write, where
    /// anyone could have bound the socket. Trust a service account's publisher by its uid:
    ///
    /// ```no_run
    /// use shmcast::{Admission, Subscriber};
    ///
    /// let sub = Subscriber::builder("/run/sensors/imu.sock")
    ///     .publisher(Admission::Uids(vec![998]))
    ///     .connect()?;
    /// # Ok::<(), shmcast::ConnectError>(())
    /// ```
    pub fn publisher(mut self, trusted: Admission) -> Self {
        self.publisher = trusted;
        self
    }

    /// Connects.
    pub fn connect(self) -> Result<Subscriber, ConnectError> {
        Subscriber::open(self)
    }
}

/// Subscriber statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubscriberStats {
    /// Messages received.
    pub received: u64,
    /// Messages missed (sum of `Lagged(n)`).
    pub lagged: u64,
    /// `Lagged` reports.
    pub lag_events: u64,
    /// Times the subscriber blocked waiting for a signal.
    pub parks: u64,
    /// Whether it is (still) gating.
    pub gating: bool,
}

/// One subscription to a topic.
pub struct Subscriber {
    reader: Reader,
    /// The connection: the publisher's doorbells arrive on it (for an armed `try_recv`), ours
    /// go out on it (space released while the publisher waits), and its hang-up is the
    /// publisher's death.
    sock: OwnedFd,
    /// The publisher hung up.
    gone: bool,
    /// What [`AsFd`] exposes: `sock` and `own`, level-triggered.
    epoll: OwnedFd,
    /// A timer only this subscriber holds, registered edge-triggered in `epoll` and never
    /// read: `try_recv` arms it to make the descriptor readable by itself, at once or after a
    /// nap.
    own: OwnedFd,
    /// Consecutive `try_recv` calls that found data announced but nothing readable.
    stuck: u32,
    buf: Vec<u8>,
    spin: u32,
    demotion_reported: bool,
    parks: u64,
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("reader", &self.reader)
            .finish_non_exhaustive()
    }
}

enum Got {
    InPlace(Frame),
    Copied { seq: u64, len: usize },
}

impl Subscriber {
    /// Settings for a subscriber of `topic` (a name, or a socket path containing `/`).
    pub fn builder(topic: impl Into<String>) -> SubscriberBuilder {
        SubscriberBuilder::new(topic)
    }

    /// A gating subscriber of `topic` with default settings.
    pub fn connect(topic: &str) -> Result<Subscriber, ConnectError> {
        SubscriberBuilder::new(topic).connect()
    }

    fn open(b: SubscriberBuilder) -> Result<Subscriber, ConnectError> {
        let path = topic::resolve(&b.topic, false)?;
        let deadline = b
            .connect_timeout
            .and_then(|t| Instant::now().checked_add(t));
        let mut backoff = Duration::from_millis(1);
        let sock = loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            match sys::seqpacket_connect(
                &path,
                Some(
                    left.unwrap_or(b.handshake_timeout)
                        .max(Duration::from_millis(1)),
                ),
            ) {
                Ok(s) => break s,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                    ) =>
                {
                    match left {
                        Some(left) if !left.is_zero() => {
                            std::thread::sleep(backoff.min(left));
                            backoff = (backoff * 2).min(Duration::from_millis(50));
                        }
                        _ => return Err(ConnectError::NoPublisher(path)),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        };

        // Whoever bound the socket: an explicit path may lie where others can bind.
        let uid = sys::peer_cred(sock.as_fd())?.uid;
        if !b.publisher.admits(uid) {
            return Err(ConnectError::UntrustedPublisher { path, uid });
        }

        // A publisher that refuses us at once (credentials, overload) may already have closed
        // the connection: its refusal is still queued, so read the reply even if sending failed.
        let hello = Hello {
            mode: b.mode,
            start: b.start,
        };
        let sent = sys::send_packet(sock.as_fd(), &hello.encode());
        sys::set_recv_timeout(sock.as_fd(), Some(b.handshake_timeout))?;
        let mut buf = [0u8; handshake::MAX_PACKET];
        let (n, fds) =
            match sys::recv_with_fds_of(sock.as_fd(), &mut buf, &[0, handshake::WELCOME_FDS]) {
                Ok(r) => r,
                Err(RecvFdsError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(ConnectError::HandshakeTimeout);
                }
                Err(RecvFdsError::HungUp) => {
                    return Err(match sent {
                        // It closed before reading our request: a refusal whose text was lost.
                        Err(_) => ConnectError::Refused {
                            reason: "the publisher closed the connection before the handshake"
                                .into(),
                        },
                        Ok(()) => ConnectError::Protocol("publisher closed the connection".into()),
                    });
                }
                Err(RecvFdsError::Io(e)) => return Err(e.into()),
                Err(e) => return Err(ConnectError::Protocol(e.to_string())),
            };
        let (ring_len, cb_len) = match Reply::decode(&buf[..n]) {
            Ok(Reply::Refuse { text, .. }) => return Err(ConnectError::Refused { reason: text }),
            Ok(Reply::Welcome {
                ring_len, cb_len, ..
            }) if fds.len() == handshake::WELCOME_FDS => (ring_len, cb_len),
            Ok(Reply::Welcome { .. }) => {
                return Err(ConnectError::Protocol("welcome without descriptors".into()));
            }
            Err(e) => return Err(ConnectError::Protocol(e.to_string())),
        };
        if cb_len != CONTROL_BLOCK_LEN as u64 || ring_len < HEADER_LEN as u64 {
            return Err(ConnectError::Protocol(format!(
                "unexpected sizes: ring {ring_len}, control block {cb_len}"
            )));
        }
        let [ring_fd, cb_fd]: [OwnedFd; handshake::WELCOME_FDS] = fds
            .try_into()
            .map_err(|_| ConnectError::Protocol("descriptor count".into()))?;

        let map_err =
            |e: shm::MapError| ConnectError::Protocol(format!("shared memory refused: {e}"));
        let ring = Arc::new(shm::map_ring_readonly(ring_fd, HEADER_LEN).map_err(map_err)?);
        // The announced size is the publisher's claim about its own descriptor: a mismatch means
        // it lies or sent the wrong file.
        if ring.len() as u64 != ring_len {
            return Err(ConnectError::Protocol(format!(
                "the welcome announces a ring of {ring_len} bytes, its descriptor has {}",
                ring.len()
            )));
        }
        let cb = Arc::new(shm::map_control_block(cb_fd, CONTROL_BLOCK_LEN).map_err(map_err)?);
        let (ring_ptr, ring_len) = (ring.as_ptr().cast_mut(), ring.len());
        // SAFETY: read-only mapping, sealed against shrinking (checked by map_ring_readonly),
        // page-aligned, kept alive by the Arc owner; the reader never stores into it.
        let ring = unsafe { Region::from_raw_parts(ring_ptr, ring_len, ring.clone()) }
            .ok_or_else(|| ConnectError::Protocol("misaligned ring mapping".into()))?;
        // SAFETY: the control block mapping is read-write, CONTROL_BLOCK_LEN bytes, sealed
        // against shrinking, page-aligned and kept alive by the Arc owner.
        let cb = unsafe { Region::from_raw_parts(cb.as_ptr(), cb.len(), cb.clone()) }
            .ok_or_else(|| ConnectError::Protocol("misaligned control block".into()))?;
        let reader = Reader::attach(ring, cb).map_err(ConnectError::Layout)?;

        sys::set_nonblocking(sock.as_fd(), true)?;
        let own = sys::timerfd_create()?;
        let epoll = sys::epoll_create()?;
        sys::epoll_add(epoll.as_fd(), sock.as_fd(), TOKEN_SOCKET)?;
        // Edge-triggered and never read: each expiry makes one event.
        sys::epoll_add_edge(epoll.as_fd(), own.as_fd(), TOKEN_SELF)?;
        Ok(Subscriber {
            reader,
            sock,
            gone: false,
            epoll,
            own,
            stuck: 0,
            buf: Vec::new(),
            spin: b.spin,
            demotion_reported: false,
            parks: 0,
        })
    }

    /// Receives the next message, blocking until one arrives.
    pub fn recv(&mut self) -> Result<Sample<'_>, RecvError> {
        self.recv_until(None)
    }

    /// Receives the next message, waiting at most `timeout`.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Sample<'_>, RecvError> {
        self.recv_until(Some(timeout))
    }

    /// Receives the next message if one is ready; [`RecvError::Empty`] otherwise. On `Empty`
    /// the subscriber's descriptor ([`AsFd`]) is armed: it becomes readable when a message
    /// may be waiting, so an event loop can wait on it and call `try_recv` again.
    pub fn try_recv(&mut self) -> Result<Sample<'_>, RecvError> {
        if let Some(got) = self.next()? {
            self.stuck = 0;
            return Ok(self.sample(got));
        }
        // Consume stale readiness, learn of a hang-up, then announce that we wait.
        self.poll_events(Some(Duration::ZERO))?;
        for _ in 0..3 {
            if self.reader.prepare_park() {
                self.stuck = 0;
                return Err(RecvError::Empty);
            }
            self.reader.unpark();
            if let Some(got) = self.next()? {
                self.stuck = 0;
                return Ok(self.sample(got));
            }
        }
        if self.gone {
            // Nothing writes the ring any more: what these looks did not find never comes.
            return Err(RecvError::Disconnected);
        }
        // Data is announced but not yet readable: a lapped reader racing the writer (brief), or
        // a ring left where no read can progress. Make our descriptor readable by itself so an
        // event loop comes back: at once at first, after a nap once the race should have settled
        // (as `recv` does), so a loop on a stuck ring does not spin. A hang-up still wakes it.
        self.stuck = self.stuck.saturating_add(1);
        let after = if self.stuck <= crate::STUCK_SPINS {
            Duration::ZERO
        } else {
            crate::STUCK_NAP
        };
        sys::timerfd_arm(self.own.as_fd(), after).map_err(RecvError::Io)?;
        Err(RecvError::Empty)
    }

    /// Receives the next message as a copy into `buf` (resized to fit), waiting at most
    /// `timeout` (`None`: without limit). Returns its sequence number.
    pub fn recv_into(
        &mut self,
        buf: &mut Vec<u8>,
        timeout: Option<Duration>,
    ) -> Result<u64, RecvError> {
        let sample = self.recv_until(timeout)?;
        buf.clear();
        buf.extend_from_slice(&sample);
        Ok(sample.seq())
    }

    /// Receives, waiting at most `timeout` (`None`: without limit). The deadline counts from the
    /// first look that finds nothing, so a receive that finds a message reads no clock.
    fn recv_until(&mut self, timeout: Option<Duration>) -> Result<Sample<'_>, RecvError> {
        let mut fruitless = 0u32;
        let mut deadline: Option<Instant> = None;
        loop {
            if let Some(got) = self.next()? {
                return Ok(self.sample(got));
            }
            for _ in 0..self.spin {
                std::hint::spin_loop();
                if let Some(got) = self.next()? {
                    return Ok(self.sample(got));
                }
            }
            let timeout = match timeout {
                Some(t) => {
                    let now = Instant::now();
                    let d = *deadline
                        .get_or_insert_with(|| now.checked_add(t).unwrap_or_else(far_future));
                    match d.checked_duration_since(now) {
                        Some(left) if !left.is_zero() => left.min(crate::PARK_RECHECK),
                        _ => return Err(RecvError::Timeout),
                    }
                }
                None => crate::PARK_RECHECK,
            };
            // Sleep on the ring's wake word: one FUTEX_WAKE from the publisher wakes every
            // subscriber sleeping there. A dead publisher wakes nobody: its hang-up is noticed
            // after a sleep that ends with the word unchanged (a timeout, at most PARK_RECHECK).
            if let Some(word) = self.reader.prepare_park_futex() {
                self.parks += 1;
                let waited = sys::futex_wait(self.reader.wake_word(), word, timeout);
                self.reader.unpark();
                waited.map_err(RecvError::Io)?;
                if self.reader.wake_word().load(Ordering::Relaxed) == word {
                    self.poll_events(Some(Duration::ZERO))?;
                }
            } else if self.gone {
                // The reader never sleeps once the publisher is gone, and nothing writes the ring
                // any more: a second look that finds nothing (the first may have moved a lapped
                // reader to the tail) means nothing will ever be readable.
                return match self.next()? {
                    Some(got) => Ok(self.sample(got)),
                    None => Err(RecvError::Disconnected),
                };
            } else {
                // Nothing readable, yet no sleep allowed: a lapped reader racing the writer
                // (brief), or a ring left where no read can progress. Look for a hang-up, which
                // ends the latter; once the race should have settled, nap between looks.
                fruitless = fruitless.saturating_add(1);
                let nap = if fruitless <= crate::STUCK_SPINS {
                    Duration::ZERO
                } else {
                    timeout.min(crate::STUCK_NAP)
                };
                self.poll_events(Some(nap))?;
            }
        }
    }

    /// Waits on the epoll set; notes a publisher hang-up.
    fn poll_events(&mut self, timeout: Option<Duration>) -> Result<(), RecvError> {
        let mut tokens = [0u64; 4];
        let n = sys::epoll_wait(self.epoll.as_fd(), &mut tokens, timeout).map_err(RecvError::Io)?;
        if tokens[..n].contains(&TOKEN_SOCKET) {
            self.check_socket();
        }
        Ok(())
    }

    /// Takes the publisher's doorbells; notes a hang-up.
    fn check_socket(&mut self) {
        if !self.gone && !sys::doorbell_drain(self.sock.as_fd()) {
            // Hung up: the publisher is gone; its last commit happened before the hang-up.
            self.gone = true;
            self.reader.set_writer_gone();
        }
    }

    fn next(&mut self) -> Result<Option<Got>, RecvError> {
        if self.reader.is_gating() {
            match self.reader.try_peek() {
                Ok(frame) => return Ok(Some(Got::InPlace(frame))),
                Err(ReadError::Demoted) if !self.demotion_reported => {
                    self.demotion_reported = true;
                    return Err(RecvError::Demoted);
                }
                Err(ReadError::Demoted) => {}
                Err(e) => return map_read(e),
            }
        }
        match self.reader.try_copy(&mut self.buf) {
            Ok(c) => Ok(Some(Got::Copied {
                seq: c.seq,
                len: c.len,
            })),
            Err(ReadError::Demoted) => Ok(None),
            Err(e) => map_read(e),
        }
    }

    fn sample(&mut self, got: Got) -> Sample<'_> {
        match got {
            Got::InPlace(frame) => Sample {
                seq: frame.seq(),
                len: frame.len(),
                frame: Some(frame),
                sub: self,
            },
            Got::Copied { seq, len } => Sample {
                seq,
                len,
                frame: None,
                sub: self,
            },
        }
    }

    /// Whether the publisher still gates on this subscriber.
    pub fn is_gating(&self) -> bool {
        self.reader.is_gating()
    }

    /// Counters.
    pub fn stats(&self) -> SubscriberStats {
        let s = self.reader.stats();
        SubscriberStats {
            received: s.received,
            lagged: s.lagged,
            lag_events: s.lag_events,
            parks: self.parks,
            gating: self.reader.is_gating(),
        }
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(60 * 60 * 24 * 365)
}

fn map_read(e: ReadError) -> Result<Option<Got>, RecvError> {
    match e {
        ReadError::Empty => Ok(None),
        ReadError::Closed => Err(RecvError::Disconnected),
        ReadError::Lagged(n) => Err(RecvError::Lagged(n)),
        ReadError::Evicted => Err(RecvError::Evicted),
        ReadError::Corrupt(f) => Err(RecvError::Corrupt(f)),
        ReadError::Demoted => Err(RecvError::Demoted),
    }
}

impl AsFd for Subscriber {
    /// Readable when a message may be waiting (after `try_recv` returned `Empty`) or the
    /// publisher went away. Level-triggered: poll, then `try_recv` until `Empty`.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.epoll.as_fd()
    }
}

/// A received message. For a gating subscriber it is a view of the ring itself, released when
/// dropped; for a lossy one, a validated copy.
pub struct Sample<'a> {
    sub: &'a mut Subscriber,
    frame: Option<Frame>,
    seq: u64,
    len: usize,
}

impl Sample<'_> {
    /// The message's sequence number (0 for the publisher's first message).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The payload as a `T`.
    pub fn as_pod<T: bytemuck::Pod>(&self) -> Result<&T, PodError> {
        bytemuck::try_from_bytes(self).map_err(crate::publisher::pod_error::<T>(self.len))
    }
}

impl Deref for Sample<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.frame {
            // A demotion (only past a configured stall bound) ends the promise below:
            // docs/architecture.md, "Demotion".
            // SAFETY: in-place frames are gating ones; the publisher does not write them before
            // their release in Drop, after every borrow of this slice has ended.
            Some(frame) => unsafe { self.sub.reader.payload(frame) },
            None => &self.sub.buf[..self.len],
        }
    }
}

impl Drop for Sample<'_> {
    fn drop(&mut self) {
        if let Some(frame) = self.frame.take()
            && self.sub.reader.release(frame)
            && !self.sub.gone
        {
            // Never blocks; a full queue means the publisher already has a doorbell pending.
            let _ = sys::doorbell_ring(self.sub.sock.as_fd());
        }
    }
}

impl std::fmt::Debug for Sample<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sample")
            .field("seq", &self.seq)
            .field("len", &self.len)
            .finish()
    }
}
