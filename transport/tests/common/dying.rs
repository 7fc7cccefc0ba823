//! A publisher going away during the handshake, played by hand: a listener at the topic's path
//! that accepts connections and answers none, as a publisher killed (or stopped) while
//! subscribers connect does. Dropping what it accepted is the connection closed unanswered;
//! [`Dying::gone`] is the process gone, its socket file with it, so the next publisher binds.

use std::os::fd::OwnedFd;
use std::path::PathBuf;

use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

/// A listener that never answers, at a topic's socket path.
pub struct Dying {
    listener: OwnedFd,
    path: PathBuf,
}

impl Dying {
    /// Listens at `topic`'s socket path (found by binding a publisher there and dropping it).
    pub fn at(topic: &str) -> Dying {
        let path = shmcast::Publisher::bind(topic).unwrap().path().to_owned();
        let listener = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        rustix::net::bind(&listener, &SocketAddrUnix::new(&path).unwrap()).unwrap();
        rustix::net::listen(&listener, 8).unwrap();
        Dying { listener, path }
    }

    /// The next connection a subscriber makes, accepted and left unanswered; `what` names the
    /// wait for the watchdog.
    pub fn accept(&self, what: &str) -> OwnedFd {
        let mut conn = None;
        super::until(what, || {
            conn = rustix::net::accept(&self.listener).ok();
            conn.is_some()
        });
        conn.unwrap()
    }

    /// The process is gone: its listener closed and its socket file removed.
    pub fn gone(self) {
        drop(self.listener);
        std::fs::remove_file(&self.path).unwrap();
    }
}
