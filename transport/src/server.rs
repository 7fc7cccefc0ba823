//! The publisher's server thread: accepts connections on the topic socket, checks credentials,
//! runs the publisher's half of the handshake, hands over the descriptors, admits subscribers
//! into the ring, and removes each one the moment its connection hangs up.
//!
//! # Overload and failure
//!
//! * A client of a uid the policy does not admit is refused before any descriptor is sent.
//! * A client that sends garbage, a wrong version, descriptors, or nothing within the handshake
//!   timeout is refused or dropped; others are not delayed (everything here is non-blocking).
//! * More than `max_pending` clients mid-handshake: new ones are refused as busy.
//! * `max_subscribers` admitted, or the process short of descriptors (less than an eighth of
//!   `RLIMIT_NOFILE` free, see [`descriptor_reserve`](crate::policy::descriptor_reserve)): new
//!   subscribers are refused as busy when their HELLO arrives. Inspections take no slot and
//!   are still answered; short of descriptors, a client is accepted only while no other is
//!   mid-handshake, so that requests never hold more than one descriptor of the reserve.
//! * A hang-up removes the subscriber and signals a publisher waiting for space.
//! * A client that sends INSPECT instead of HELLO gets the topic's snapshot (see
//!   `introspect_serve`: bounded in size and rate, no descriptor) and its connection is closed.
//! * A HELLO whose expectation the topic's contract does not meet is refused before anything
//!   is admitted (counted as refused). The WELCOME declares the topic's message type; a
//!   subscriber that finds it does not meet its expectation all the same (a publisher that
//!   ignored it) leaves at once, handled as any hang-up.

use crate::contract::Contract;
use crate::events;
use crate::handshake::{self, Hello, RefuseReason, Reply, Request};
use crate::introspect_serve::{self, AnswerBudget};
use crate::policy;
use crate::shared::Shared;
use crate::shm::{self, SharedMemory};
use crate::sys::{self, fork::PrivateFd, packet::RecvFdsError};
use crate::wake::{self, Link};
use shmcast_core::{CONTROL_BLOCK_LEN, Mode, SubscriberId};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TOKEN_LISTENER: u64 = 0;
const TOKEN_SHUTDOWN: u64 = 1;
const FIRST_CONN: u64 = 2;

enum State {
    Handshake {
        deadline: Instant,
    },
    Admitted {
        id: SubscriberId,
        /// The mode it asked for (the writer knows the one it has now).
        requested: Mode,
    },
}

struct Conn {
    sock: Arc<PrivateFd>,
    state: State,
}

struct Server {
    shared: Arc<Shared>,
    listener: PrivateFd,
    epoll: OwnedFd,
    shutdown: Arc<OwnedFd>,
    conns: HashMap<u64, Conn>,
    next_token: u64,
    /// What the topic carries, as every WELCOME declares it, and its maximum message: what a
    /// subscriber's expectation is held against.
    contract: Contract,
    /// When the topic started being served, for the snapshots' uptime.
    started: Instant,
    /// How many more snapshots this second allows.
    answers: AnswerBudget,
}

/// Starts the server thread for the topic socket `listener`, declaring `message` to every
/// subscriber; it ends when `shutdown` is signalled.
pub(crate) fn spawn(
    listener: PrivateFd,
    shared: Arc<Shared>,
    shutdown: Arc<OwnedFd>,
    contract: Contract,
) -> io::Result<JoinHandle<()>> {
    sys::net::set_nonblocking(listener.as_fd(), true)?;
    let epoll = sys::event::epoll_create()?;
    sys::event::epoll_add(epoll.as_fd(), listener.as_fd(), TOKEN_LISTENER)?;
    sys::event::epoll_add(epoll.as_fd(), shutdown.as_fd(), TOKEN_SHUTDOWN)?;
    let mut server = Server {
        shared,
        listener,
        epoll,
        shutdown,
        conns: HashMap::new(),
        next_token: FIRST_CONN,
        contract,
        started: Instant::now(),
        answers: AnswerBudget::new(Instant::now()),
    };
    std::thread::Builder::new()
        .name("shmcast-server".into())
        .spawn(move || server.run())
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "starting the publisher's thread that admits subscribers (shmcast-server): \
                     {e}{}",
                    if e.kind() == io::ErrorKind::WouldBlock {
                        " (too many processes or threads: see `ulimit -u`)"
                    } else {
                        ""
                    }
                ),
            )
        })
}

impl Server {
    fn run(&mut self) {
        let mut tokens = [0u64; 32];
        loop {
            let timeout = self
                .conns
                .values()
                .filter_map(|c| match c.state {
                    State::Handshake { deadline } => Some(deadline),
                    State::Admitted { .. } => None,
                })
                .min()
                .map(|d| d.saturating_duration_since(Instant::now()));
            let n = match sys::event::epoll_wait(self.epoll.as_fd(), &mut tokens, timeout) {
                Ok(n) => n,
                Err(_) => {
                    // epoll itself failing leaves nothing to serve with; back off and retry.
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            for &token in &tokens[..n] {
                match token {
                    TOKEN_SHUTDOWN => return,
                    TOKEN_LISTENER => self.accept_all(),
                    t => self.service(t),
                }
            }
            self.expire_handshakes();
        }
    }

    fn accept_all(&mut self) {
        loop {
            // Private: a child forked from the publisher never holds a subscriber's connection.
            let accepted =
                PrivateFd::open(|| sys::net::seqpacket_accept(self.listener.as_fd(), true));
            let sock = match accepted {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // Out of descriptors and the like: leave the rest queued, and pause so that a
                // listener that stays readable does not spin this thread.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    return;
                }
            };
            let uid = match sys::net::peer_cred(sock.as_fd()) {
                Ok(c) => c.uid,
                Err(_) => {
                    self.refuse(
                        &sock,
                        RefuseReason::Internal,
                        "cannot read peer credentials",
                    );
                    continue;
                }
            };
            if !self.shared.admission.admits(uid) {
                self.refuse(
                    &sock,
                    RefuseReason::PermissionDenied,
                    &format!("uid {uid} is not admitted"),
                );
                continue;
            }
            let pending = self
                .conns
                .values()
                .filter(|c| matches!(c.state, State::Handshake { .. }))
                .count();
            if pending >= self.shared.max_pending {
                self.refuse(&sock, RefuseReason::Busy, "too many pending handshakes");
                continue;
            }
            // The subscriber limit is checked at admission (an inspection takes no slot and
            // must be answered when the topic is full: that is when it is needed). Short of
            // descriptors, one request at a time is read, so that an inspection is answered
            // while requests cannot eat into the descriptors kept for the rest of the program.
            if pending > 0
                && let Some(why) = policy::descriptor_shortage(sock.as_fd())
            {
                self.refuse(&sock, RefuseReason::Busy, &why);
                continue;
            }
            let token = self.next_token;
            self.next_token += 1;
            if sys::event::epoll_add(self.epoll.as_fd(), sock.as_fd(), token).is_err() {
                continue;
            }
            let deadline = Instant::now() + self.shared.handshake_timeout;
            self.conns.insert(
                token,
                Conn {
                    sock: Arc::new(sock),
                    state: State::Handshake { deadline },
                },
            );
        }
    }

    /// Why a new subscriber cannot be admitted now, if it cannot (see
    /// [`policy::capacity_refusal`]).
    fn full(&self, sock: &OwnedFd) -> Option<String> {
        let admitted = self
            .conns
            .values()
            .filter(|c| matches!(c.state, State::Admitted { .. }))
            .count();
        policy::capacity_refusal(admitted, self.shared.max_subscribers, sock.as_fd())
    }

    fn refuse(&self, sock: &OwnedFd, code: RefuseReason, text: &str) {
        self.shared.refused.fetch_add(1, Ordering::Relaxed);
        events::refused(&self.shared.topic, sock.as_fd(), code, text);
        let _ = sys::packet::send_packet(sock.as_fd(), &Reply::refuse(code, text).encode());
    }

    fn service(&mut self, token: u64) {
        let Some(conn) = self.conns.get(&token) else {
            return;
        };
        if let State::Admitted { id, requested } = conn.state {
            // A lossy subscriber's data is dropped; a gating one is registered for hang-ups
            // only (its doorbells are the publisher's to read). Any other event is the
            // subscriber leaving.
            if requested == Mode::Lossy && wake::drain_doorbells(conn.sock.as_fd()) {
                return;
            }
            if let Some(conn) = self.conns.remove(&token) {
                self.depart(id, conn.sock);
            }
            return;
        }
        let mut buf = [0u8; handshake::MAX_PACKET];
        let received = sys::packet::recv_packet(conn.sock.as_fd(), &mut buf);
        match (&conn.state, received) {
            (_, Err(RecvFdsError::Io(e))) if e.kind() == io::ErrorKind::WouldBlock => {}
            (State::Handshake { .. }, Ok(n)) => {
                let conn = self.conns.remove(&token).expect("present");
                match Request::decode(&buf[..n]) {
                    Ok(Request::Hello(hello)) if !hello.expect.is_met_by(&self.contract) => {
                        self.refuse_mismatch(&conn.sock, &hello);
                    }
                    Ok(Request::Hello(hello)) => {
                        if let Some(id) = self.admit(token, &conn.sock, &hello) {
                            self.conns.insert(
                                token,
                                Conn {
                                    sock: conn.sock,
                                    state: State::Admitted {
                                        id,
                                        requested: hello.mode,
                                    },
                                },
                            );
                        }
                    }
                    // Answered once; dropping the connection closes it.
                    Ok(Request::Inspect) => self.answer_inspect(&conn.sock),
                    Err(e) => {
                        self.shared.refused.fetch_add(1, Ordering::Relaxed);
                        let reason = RefuseReason::of(&e);
                        events::refused(
                            &self.shared.topic,
                            conn.sock.as_fd(),
                            reason,
                            &e.to_string(),
                        );
                        let refusal = Reply::refusal_of(&e);
                        let _ = sys::packet::send_packet(conn.sock.as_fd(), &refusal);
                    }
                }
            }
            (State::Handshake { .. }, Err(e)) => {
                let conn = self.conns.remove(&token).expect("present");
                if !matches!(e, RecvFdsError::HungUp) {
                    self.refuse(&conn.sock, RefuseReason::BadRequest, &e.to_string());
                }
            }
            (State::Admitted { .. }, _) => unreachable!("handled above"),
        }
    }

    /// Refuses a subscriber whose expectation the topic's contract does not meet, before
    /// anything is admitted: it is counted as refused, never as admitted, so nobody waiting for
    /// subscribers counts it, and it learns the contract it was refused.
    fn refuse_mismatch(&self, sock: &OwnedFd, hello: &Hello) {
        self.shared.refused.fetch_add(1, Ordering::Relaxed);
        let reply = Reply::mismatch(&hello.expect, &self.contract);
        if let Reply::Mismatch { text, .. } = &reply {
            events::refused(
                &self.shared.topic,
                sock.as_fd(),
                RefuseReason::Contract,
                text,
            );
        }
        let _ = sys::packet::send_packet(sock.as_fd(), &reply.encode());
    }

    fn admit(&self, token: u64, sock: &Arc<PrivateFd>, hello: &Hello) -> Option<SubscriberId> {
        // Others may have been admitted since this client was accepted.
        if let Some(why) = self.full(sock) {
            self.refuse(sock, RefuseReason::Busy, &why);
            return None;
        }
        let prepared = (|| -> Result<_, Box<dyn std::error::Error>> {
            // Only the mapping stays: the descriptor is closed once sent.
            let (cb, cb_fd) =
                SharedMemory::create_control_block("shmcast-cb", CONTROL_BLOCK_LEN)?.into_mapping();
            let region = shm::writable_region(cb)?;
            // From now on the connection's data is doorbells, which never carry descriptors:
            // refused where the kernel can, so that no subscriber parks one in our queue (its
            // own end, which would keep the connection open after its process exits).
            sys::net::refuse_descriptors(sock.as_fd())?;
            // What it queued before that, between its request and now, goes (descriptors
            // closed): a gating connection is otherwise read only while the publisher waits.
            wake::drain_admitted(sock.as_fd());
            sys::event::epoll_del(self.epoll.as_fd(), sock.as_fd())?;
            // A lossy subscriber has nothing to say: whatever it sends is read and dropped here,
            // descriptors included where the kernel cannot refuse them. A gating subscriber's
            // doorbells are the publisher's, read while it waits for space.
            let lossy = hello.mode == Mode::Lossy;
            sys::event::epoll_add_hangup(self.epoll.as_fd(), sock.as_fd(), token, lossy)?;
            Ok((cb_fd, region))
        })();
        let (cb_fd, region) = match prepared {
            Ok(p) => p,
            Err(e) => {
                self.refuse(
                    sock,
                    RefuseReason::Internal,
                    &format!("cannot set up shared memory: {e}"),
                );
                return None;
            }
        };
        let (id, ring_len) = {
            let mut w = self.shared.lock();
            let ring_len = w.ring().len() as u64;
            match w.admit(region, hello.mode, hello.start, Link { conn: sock.clone() }) {
                // Counted under the lock that `Publisher::stats` takes, as departures are: no
                // snapshot shows a subscriber that is not counted as admitted.
                Ok(id) => {
                    self.shared.admitted.fetch_add(1, Ordering::Relaxed);
                    (id, ring_len)
                }
                Err(e) => {
                    drop(w);
                    self.refuse(sock, RefuseReason::Internal, &e.to_string());
                    return None;
                }
            }
        };
        let welcome = Reply::Welcome {
            flags: if self.shared.imported {
                handshake::FLAG_IMPORTED
            } else {
                0
            },
            ring_len,
            cb_len: CONTROL_BLOCK_LEN as u64,
            message: self.contract.message.clone(),
        }
        .encode();
        let fds = [self.shared.ring_ro.as_fd(), cb_fd.as_fd()];
        debug_assert_eq!(fds.len(), handshake::WELCOME_FDS);
        if sys::packet::send_with_fds(sock.as_fd(), &welcome, &fds).is_err()
            || self.shared.space.watch(sock.as_fd(), id).is_err()
        {
            // Admitted, so its removal is a departure.
            let mut w = self.shared.lock();
            w.remove(id);
            self.shared.departed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        events::admitted(&self.shared.topic, sock.as_fd(), id, hello.mode);
        self.shared.joined.notify_all();
        let _ = sys::event::eventfd_signal(self.shared.joined_fd.as_fd());
        Some(id)
    }

    /// Sends the topic's snapshot to an INSPECT client, or refuses it as busy past the budget.
    fn answer_inspect(&mut self, sock: &OwnedFd) {
        if !self.answers.take(Instant::now()) {
            // Not a subscriber refused: `refused` counts subscriber connections only.
            let text = "too many introspection requests";
            events::refused(&self.shared.topic, sock.as_fd(), RefuseReason::Busy, text);
            let reply = Reply::refuse(RefuseReason::Busy, text).encode();
            let _ = sys::packet::send_packet(sock.as_fd(), &reply);
            return;
        }
        let conns = &self.conns;
        let info =
            introspect_serve::snapshot(&self.shared, self.started, &self.contract.message, |id| {
                conns.values().find_map(|c| match c.state {
                    State::Admitted { id: at, requested } if at == id => {
                        Some((c.sock.as_fd(), requested))
                    }
                    _ => None,
                })
            });
        // The socket is non-blocking: a client that cannot take the record now loses it.
        let _ = sys::packet::try_send_packet(sock.as_fd(), &info.encode());
    }

    /// Removes a subscriber whose connection hung up, and wakes the publisher in case it was
    /// waiting for that subscriber's space.
    fn depart(&self, id: SubscriberId, sock: Arc<PrivateFd>) {
        events::hung_up(&self.shared.topic, sock.as_fd(), id);
        self.shared.space.unwatch(sock.as_fd());
        // The writer's link holds the last other reference: the connection is closed by the
        // removal, before anyone can see the subscriber gone.
        drop(sock);
        {
            // Counted under the lock that `Publisher::stats` takes, so that no snapshot shows
            // the subscriber gone but not departed (a publisher freed by the removal may ask
            // at once).
            let mut w = self.shared.lock();
            w.remove(id);
            self.shared.departed.fetch_add(1, Ordering::Relaxed);
        }
        self.shared.space.kick();
    }

    fn expire_handshakes(&mut self) {
        let now = Instant::now();
        let expired: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| matches!(c.state, State::Handshake { deadline } if deadline <= now))
            .map(|(&t, _)| t)
            .collect();
        for token in expired {
            if let Some(conn) = self.conns.remove(&token) {
                self.refuse(&conn.sock, RefuseReason::BadRequest, "handshake timed out");
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Closing every connection tells each subscriber the publisher is gone.
        self.conns.clear();
        let _ = &self.shutdown;
    }
}
