//! The subscriber: connects to a topic, maps the ring read-only, and receives messages in place
//! (gating) or by validated copy (lossy), as samples released when dropped.

#![allow(unsafe_code)]

mod builder;
mod latest;
mod sample;
mod stream_end;

pub use builder::SubscriberBuilder;
pub use latest::Latest;
pub use sample::Sample;
pub use stream_end::StreamEnd;

use crate::connect;
use crate::contract::Contract;
use crate::deadline;
use crate::error::{ConnectError, RecvError};
use crate::handshake::Hello;
use crate::readiness::Readiness;
use crate::spin::Spin;
use crate::sys::{self, fork::PrivateFd};
use crate::topic;
use crate::wake::{self, Slept};
use shmcast_core::{Frame, ReadError, Reader};
use std::ops::ControlFlow;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::{Duration, Instant};

/// Subscriber statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubscriberStats {
    /// Messages received.
    pub received: u64,
    /// Messages missed: overwritten before this subscriber read them (the sum of every
    /// `Lagged(n)`, and the messages a latest read found overwritten while it read them, which
    /// it reports in [`Latest::skipped`] instead of a `Lagged`).
    pub lagged: u64,
    /// Laps: each `Lagged` reported, and each lap a latest read absorbed into its skipped
    /// count instead of reporting it.
    pub lag_events: u64,
    /// Messages passed over by latest reads ([`Subscriber::recv_latest`]), not counted in
    /// `lagged`: `received + lagged + skipped` is every message since the subscriber joined.
    pub skipped: u64,
    /// Times the subscriber blocked waiting for a signal.
    pub parks: u64,
    /// Whether its waits are patient: a sleep let its ring fill, so that it polls longer and
    /// sparser before the next one, until a sleep leaves the ring nearly empty (see
    /// `docs/architecture.md`, "Patient receives"). Only polling subscribers
    /// ([`SubscriberBuilder::spin_limit`](crate::SubscriberBuilder::spin_limit) not zero) wait
    /// differently while patient.
    pub patient: bool,
    /// Whether it is (still) gating.
    pub gating: bool,
}

/// One subscription to a topic: maps the ring read-only and receives messages in place (gating)
/// or by validated copy (lossy), as [`Sample`]s released when dropped.
///
/// # Overload and failure
///
/// * A lossy subscriber that falls a ring behind gets [`RecvError::Lagged`] with the exact
///   number of messages it missed, then continues in order.
/// * A gating subscriber that stalls past the publisher's stall bound gets
///   [`RecvError::Demoted`] once and continues as a lossy one.
/// * When the publisher ends or dies, every committed message is still received, then
///   [`RecvError::Disconnected`] (a lossy subscriber loses those that a dying publisher's last,
///   uncommitted reservation may have overwritten). A corrupt ring gives
///   [`RecvError::Corrupt`], never a crash.
///
/// ```no_run
/// use shmcast::{RecvError, Subscriber};
/// use std::time::Duration;
///
/// let mut sub = Subscriber::builder("doc-example").connect_timeout(Duration::from_secs(5)).connect()?;
/// loop {
///     match sub.recv() {
///         Ok(sample) => println!("message {} of {} bytes", sample.seq(), sample.len()),
///         Err(RecvError::Lagged(n)) => eprintln!("missed {n}"),
///         Err(RecvError::Disconnected) => break,
///         Err(e) => return Err(e.into()),
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Subscriber {
    reader: Reader,
    /// The connection: the publisher's doorbells arrive on it (for a `try_recv` that parked), ours
    /// go out on it (space released while the publisher waits), and its hang-up is the
    /// publisher's death. Private: a child forked from this process never holds it, so the
    /// publisher sees this subscriber leave when it does.
    sock: PrivateFd,
    /// The publisher hung up.
    gone: bool,
    /// What [`AsFd`] exposes: doorbells and hang-ups on `sock`, and a timer armed to make the
    /// descriptor readable by itself.
    readiness: Readiness,
    /// The timer expired and nothing has taken its event since: the descriptor is readable
    /// whatever the park state. The descriptor contract (readable whenever a receive would not
    /// return `Empty`) holds because at every return either this is set, or the subscriber is
    /// parked with its own signal (the next commit rings its doorbell), or the publisher hung up.
    primed: bool,
    /// Consecutive `try_recv` calls that found data announced but nothing readable.
    stuck: u32,
    buf: Vec<u8>,
    spin: u32,
    /// How long a blocking receive polls before it parks, learned from its last waits.
    recv_spin: Spin,
    demotion_reported: bool,
    parks: u64,
    /// What the publisher declared the topic carries.
    contract: Contract,
    /// The publisher declared that it republishes messages imported from elsewhere.
    imported: bool,
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("reader", &self.reader)
            .finish_non_exhaustive()
    }
}

/// What a receive found, before it is lent out as a [`Sample`] (which borrows the subscriber).
pub(crate) enum Got {
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
        if b.handshake_timeout.is_zero() {
            return Err(ConnectError::InvalidOption {
                option: "handshake_timeout",
                reason: "must be greater than zero: the publisher could never answer in time",
            });
        }
        b.expect
            .validate()
            .map_err(ConnectError::InvalidExpectation)?;
        let topic::Resolved { path, source } =
            topic::resolve(&b.topic, b.directory.as_deref(), false)?;
        let hello = Hello {
            mode: b.mode,
            start: b.start,
            expect: b.expect.clone(),
        };
        let (sock, welcome) = connect::handshake(
            &path,
            source,
            b.connect_timeout,
            b.handshake_timeout,
            &b.publisher,
            &hello,
        )?;
        let imported = welcome.imported;
        let (mut reader, contract) = connect::attach(welcome, &b.expect)?;
        reader.set_resume(b.resume);
        sys::net::set_nonblocking(sock.as_fd(), true)?;
        // The publisher's doorbells never carry descriptors (see the server's admission).
        sys::net::refuse_descriptors(sock.as_fd())?;
        let readiness = Readiness::new(sock.as_fd())?;
        // Readable from the start: messages already in the ring (`Start::Oldest`) or committed
        // before the first receive need no prior call to be seen.
        readiness.arm(Duration::ZERO)?;
        Ok(Subscriber {
            reader,
            sock,
            gone: false,
            readiness,
            primed: true,
            stuck: 0,
            buf: Vec::new(),
            spin: b.spin,
            recv_spin: Spin::new(b.spin_limit).spaced(),
            demotion_reported: false,
            parks: 0,
            contract,
            imported,
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

    /// Receives the next message if one is ready; [`RecvError::Empty`] otherwise.
    ///
    /// The subscriber's descriptor ([`AsFd`]) is readable whenever this would not return
    /// `Empty`; after `Empty` it becomes readable when a message, a lag, a demotion or the end
    /// of the stream arrives. A `try_recv` that finds a message makes no syscall.
    pub fn try_recv(&mut self) -> Result<Sample<'_>, RecvError> {
        match self.try_next()? {
            Some(got) => Ok(self.sample(got)),
            None => Err(RecvError::Empty),
        }
    }

    /// Receives the next message if one is already in the ring, and otherwise returns
    /// [`RecvError::Empty`] at once, without announcing a wait: no syscall either way. The shape
    /// for a blocking receiver that gathers what is ready after a [`recv`](Self::recv) (to
    /// batch it) and then blocks again, where [`try_recv`](Self::try_recv)'s `Empty` would prepare
    /// the descriptor for an event loop that never comes (a few syscalls and a doorbell from
    /// the publisher for the next message). It takes nothing from the descriptor contract: the
    /// descriptor stays readable whenever a receive would not return `Empty`. Other errors as
    /// [`try_recv`](Self::try_recv): `Disconnected` once a publisher that closed the stream has
    /// been read to its end; one that died without closing it shows as `Empty` here (only the
    /// hang-up tells), and the next [`recv`](Self::recv) reports it.
    ///
    /// ```no_run
    /// let mut sub = shmcast::Subscriber::connect("ticks")?;
    /// loop {
    ///     let mut batch = vec![sub.recv()?.to_vec()];
    ///     while let Ok(sample) = sub.try_recv_ready() {
    ///         batch.push(sample.to_vec());
    ///     }
    ///     println!("{} messages at once", batch.len());
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_recv_ready(&mut self) -> Result<Sample<'_>, RecvError> {
        match self.next()? {
            Some(got) => {
                self.stuck = 0;
                Ok(self.sample(got))
            }
            None => Err(RecvError::Empty),
        }
    }

    /// What [`try_recv`](Self::try_recv) finds, not yet lent out (`None`: `Empty`).
    pub(crate) fn try_next(&mut self) -> Result<Option<Got>, RecvError> {
        self.try_next_with(Self::next)
    }

    /// What `next` finds without waiting, not yet lent out; `None` (`Empty`) once this
    /// subscriber announced its wait, so that the descriptor becomes readable when a receive
    /// would find something.
    pub(crate) fn try_next_with(
        &mut self,
        mut next: impl FnMut(&mut Self) -> Result<Option<Got>, RecvError>,
    ) -> Result<Option<Got>, RecvError> {
        if let Some(got) = next(self)? {
            self.stuck = 0;
            return Ok(Some(got));
        }
        // Take the descriptor's readiness (doorbells, the timer's event), learn of a hang-up,
        // then announce that we wait. From here on, whatever this returns other than `Empty`
        // after a park must leave the descriptor readable again: `prime` does.
        self.poll_events(Some(Duration::ZERO))?;
        for _ in 0..3 {
            if self.reader.prepare_park() {
                // Parked with our own signal: the next commit rings our doorbell.
                self.stuck = 0;
                return Ok(None);
            }
            self.reader.unpark();
            match next(self) {
                Ok(Some(got)) => {
                    self.stuck = 0;
                    self.prime()?;
                    return Ok(Some(got));
                }
                Ok(None) => {}
                Err(e) => {
                    self.prime()?;
                    return Err(e);
                }
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
        if self.stuck <= wake::STUCK_SPINS {
            self.prime()?;
        } else {
            self.readiness.arm(wake::STUCK_NAP).map_err(RecvError::Io)?;
        }
        Ok(None)
    }

    /// Makes the descriptor readable by itself (its timer, at once) unless it already is.
    fn prime(&mut self) -> Result<(), RecvError> {
        if !self.primed {
            self.readiness.arm(Duration::ZERO).map_err(RecvError::Io)?;
            self.primed = true;
        }
        Ok(())
    }

    /// Receives every message until the publisher is gone, handing each to `f`, which returns
    /// [`ControlFlow::Break`] to stop early. Returns `Ok(())` at the end of the stream or on a
    /// break.
    ///
    /// A lag or a demotion does not stop the loop: they are counted in [`stats`](Self::stats)
    /// (`lagged`, `gating`). Any other error ends it. A [`Sample`] borrows the subscriber, so this
    /// lends each one to `f` for the duration of the call.
    ///
    /// ```no_run
    /// use std::ops::ControlFlow;
    ///
    /// let mut sub = shmcast::Subscriber::connect("ticks")?;
    /// let mut total = 0usize;
    /// sub.for_each(|sample| {
    ///     total += sample.len();
    ///     if total > 1 << 20 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_each(
        &mut self,
        mut f: impl FnMut(Sample<'_>) -> ControlFlow<()>,
    ) -> Result<(), RecvError> {
        loop {
            match self.recv() {
                Ok(sample) => {
                    if f(sample).is_break() {
                        return Ok(());
                    }
                }
                Err(RecvError::Lagged(_) | RecvError::Demoted) => {}
                Err(RecvError::Disconnected) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Receives every message that is ready now, without waiting, handing each to `f`; returns
    /// how many. The shape an event loop wants once the descriptor is readable: after it
    /// returns, the descriptor becomes readable again when something arrives (as after
    /// [`try_recv`](Self::try_recv) returned `Empty`). Lags and a demotion are counted in
    /// [`stats`](Self::stats) and do not stop it; the end of the stream is
    /// [`RecvError::Disconnected`], once everything was handed over.
    pub fn for_each_ready(&mut self, mut f: impl FnMut(Sample<'_>)) -> Result<usize, RecvError> {
        let mut n = 0;
        loop {
            match self.try_recv() {
                Ok(sample) => {
                    f(sample);
                    n += 1;
                }
                Err(RecvError::Lagged(_) | RecvError::Demoted) => {}
                Err(RecvError::Empty) => return Ok(n),
                Err(RecvError::Disconnected) if n > 0 => return Ok(n),
                Err(e) => return Err(e),
            }
        }
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
        self.wait_for(timeout, Self::next)
    }

    /// Takes what `next` finds, waiting at most `timeout` (`None`: without limit) while it
    /// finds nothing.
    fn wait_for(
        &mut self,
        timeout: Option<Duration>,
        mut next: impl FnMut(&mut Self) -> Result<Option<Got>, RecvError>,
    ) -> Result<Sample<'_>, RecvError> {
        if let Some(got) = next(self)? {
            return Ok(self.sample(got));
        }
        let got = self.wait_slow(timeout, next);
        // The wait may have overwritten a park with our own signal (sleeping on the wake word
        // replaces it) or taken the descriptor's readiness: whatever it returns, the descriptor
        // must again be readable whenever a receive would not return `Empty`. Without an event
        // loop the timer armed at connect is never taken, so this costs nothing.
        let primed = self.prime();
        let got = got?;
        primed?;
        Ok(self.sample(got))
    }

    /// The waiting part of [`wait_for`](Self::wait_for): spins, then sleeps on the wake word.
    fn wait_slow(
        &mut self,
        timeout: Option<Duration>,
        mut next: impl FnMut(&mut Self) -> Result<Option<Got>, RecvError>,
    ) -> Result<Got, RecvError> {
        let mut fruitless = 0u32;
        let mut deadline: Option<Instant> = None;
        loop {
            if let Some(got) = next(self)? {
                return Ok(got);
            }
            for _ in 0..self.spin {
                std::hint::spin_loop();
                if let Some(got) = next(self)? {
                    return Ok(got);
                }
            }
            // A publisher about to commit usually does so within microseconds: poll for it
            // before parking (see `spin` for the budget and when it is none). A zero timeout
            // asks for no wait at all, and nothing commits once the publisher is gone.
            if timeout != Some(Duration::ZERO) && !self.gone {
                let mut spin = self.recv_spin;
                let mut found = None;
                spin.spin(|| match next(self) {
                    Ok(None) => false,
                    got => {
                        found = Some(got);
                        true
                    }
                });
                self.recv_spin = spin;
                if let Some(got) = found.transpose()?.flatten() {
                    return Ok(got);
                }
            }
            let timeout = match timeout {
                Some(t) => {
                    let now = Instant::now();
                    let d = *deadline.get_or_insert_with(|| deadline::after(t));
                    match d.checked_duration_since(now) {
                        Some(left) if !left.is_zero() => left.min(wake::PARK_RECHECK),
                        _ => return Err(RecvError::Timeout),
                    }
                }
                None => wake::PARK_RECHECK,
            };
            // Sleep on the ring's wake word: one FUTEX_WAKE from the publisher wakes every
            // subscriber sleeping there. A dead publisher wakes nobody: its hang-up is noticed
            // after a sleep that ends with the word unchanged (a timeout, at most PARK_RECHECK).
            let slept = wake::sleep_on_word(&mut self.reader, timeout).map_err(RecvError::Io)?;
            if slept != Slept::NotParked {
                self.parks += 1;
                if slept == Slept::Unchanged {
                    self.poll_events(Some(Duration::ZERO))?;
                } else {
                    // What the publisher wrote while this subscriber slept says whether the
                    // sleep cost it anything (see `spin`, "Patient waits").
                    self.recv_spin.after_sleep(self.reader.backlog_256ths());
                }
            } else if self.gone {
                // The reader never sleeps once the publisher is gone, and nothing writes the ring
                // any more: a second look that finds nothing (the first may have moved a lapped
                // reader to the tail) means nothing will ever be readable.
                return next(self)?.ok_or(RecvError::Disconnected);
            } else {
                // Nothing readable, yet no sleep allowed: a lapped reader racing the writer
                // (brief), or a ring left where no read can progress. Look for a hang-up, which
                // ends the latter; once the race should have settled, nap between looks.
                fruitless = fruitless.saturating_add(1);
                let nap = if fruitless <= wake::STUCK_SPINS {
                    Duration::ZERO
                } else {
                    timeout.min(wake::STUCK_NAP)
                };
                self.poll_events(Some(nap))?;
            }
        }
    }

    /// Waits on the descriptor's set; notes a publisher hang-up.
    fn poll_events(&mut self, timeout: Option<Duration>) -> Result<(), RecvError> {
        self.primed = false;
        if self.readiness.poll(timeout).map_err(RecvError::Io)? {
            self.check_socket();
        }
        Ok(())
    }

    /// Takes the publisher's doorbells; notes a hang-up.
    fn check_socket(&mut self) {
        if !self.gone && !wake::drain_doorbells(self.sock.as_fd()) {
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

    /// Lends out what a receive found.
    pub(crate) fn sample(&mut self, got: Got) -> Sample<'_> {
        match got {
            Got::InPlace(frame) => Sample::in_place(self, frame),
            Got::Copied { seq, len } => Sample::copied(self, seq, len),
        }
    }

    /// The payload of an in-place frame.
    ///
    /// # Safety
    ///
    /// `frame` was peeked by this subscriber while gating and is not yet released: the
    /// publisher does not write it until then.
    pub(crate) unsafe fn payload(&self, frame: &Frame) -> &[u8] {
        // SAFETY: the caller's promise above.
        unsafe { self.reader.payload(frame) }
    }

    /// Whether an in-place frame still holds its message ([`Sample::is_intact`]).
    pub(crate) fn intact(&self, frame: &Frame) -> bool {
        self.reader.frame_intact(frame)
    }

    /// The copy the last lossy receive made.
    pub(crate) fn copied(&self, len: usize) -> &[u8] {
        &self.buf[..len]
    }

    /// Releases an in-place frame and, if the publisher waits for space, rings its doorbell.
    pub(crate) fn release(&mut self, frame: Frame) {
        if self.reader.release(frame) && !self.gone {
            // Never blocks; a full queue means the publisher already has a doorbell pending.
            let _ = wake::ring_doorbell(self.sock.as_fd());
        }
    }

    /// What the publisher declared the topic carries (its message type and maximum message
    /// size), whether or not this subscriber stated an expectation.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// Whether the publisher declared that it republishes messages imported from elsewhere
    /// ([`PublisherBuilder::imported`](crate::PublisherBuilder::imported)), as a bridge does for a
    /// topic it imports: a bridge refuses to export such a topic, so that no message can travel
    /// round a loop of bridges.
    pub fn imported(&self) -> bool {
        self.imported
    }

    /// How the stream ended, once it has: `None` while it goes on. After a receive returned
    /// [`RecvError::Disconnected`] it is always `Some`: [`StreamEnd::Closed`] if the publisher
    /// ended the stream, [`StreamEnd::Vanished`] if its process went away without ending it
    /// (killed or crashed), which a program may report, or count against the publisher.
    ///
    /// ```no_run
    /// use shmcast::{RecvError, StreamEnd, Subscriber};
    ///
    /// let mut sub = Subscriber::connect("ticks")?;
    /// loop {
    ///     match sub.recv() {
    ///         Ok(sample) => println!("{} bytes", sample.len()),
    ///         Err(RecvError::Disconnected) => break,
    ///         Err(e) => return Err(e.into()),
    ///     }
    /// }
    /// if sub.stream_end() == Some(StreamEnd::Vanished) {
    ///     eprintln!("the publisher died");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stream_end(&self) -> Option<StreamEnd> {
        if self.reader.writer_closed() {
            Some(StreamEnd::Closed)
        } else if self.gone {
            Some(StreamEnd::Vanished)
        } else {
            None
        }
    }

    /// Whether the publisher still gates on this subscriber, as of its last receive: a
    /// demotion shows here once a receive has reported it ([`RecvError::Demoted`]); a held
    /// sample tells it at once ([`Sample::is_intact`]).
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
            skipped: s.skipped,
            parks: self.parks,
            patient: self.recv_spin.is_patient(),
            gating: self.reader.is_gating(),
        }
    }
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
    /// Readable whenever a receive would not return [`RecvError::Empty`] (a message, a lag, a
    /// demotion, the end of the stream), from the moment `connect` returns, with no prior call:
    /// wait for it first or try first; level-triggered with one receive per wakeup or until
    /// `Empty`, edge-triggered until `Empty` (an edge is not repeated while messages wait). It may also be readable with nothing to receive (a receive then returns
    /// `Empty` and the descriptor stops being readable until something arrives).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.readiness.as_fd()
    }
}

impl AsRawFd for Subscriber {
    /// The descriptor of [`as_fd`](AsFd::as_fd), for APIs that take a raw one (tokio's
    /// `AsyncFd`, C event loops). It stays owned by the subscriber: do not close it.
    fn as_raw_fd(&self) -> RawFd {
        self.readiness.as_fd().as_raw_fd()
    }
}
