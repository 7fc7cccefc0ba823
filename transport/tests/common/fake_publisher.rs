//! A hostile publisher played by hand: the test serves the publisher's side of the handshake
//! (`shmcast::test_support::serve_one`) to the real [`Subscriber`], with whatever packet and
//! descriptors it likes, usually an [`Image`](super::image::Image) it damages afterwards.
//!
//! Each scenario runs alone under a [`Watchdog`], in a private socket directory, and holds an
//! [`FdGuard`]: it ends with this process's descriptors exactly as it found them, so whatever
//! the hostile publisher sent was closed.

use super::FdGuard;
use super::image::Image;
use super::watchdog::Watchdog;
use shmcast::test_support::serve_one;
use shmcast::{ConnectError, Mode, Subscriber};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Bound of one scenario; only a hang reaches it.
const WATCHDOG: Duration = Duration::from_secs(120);

/// Where one scenario's subscribers connect: a directory of its own, one socket per connect.
pub struct Scene {
    dir: PathBuf,
    sockets: AtomicU32,
}

impl Drop for Scene {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs one scenario alone, under a watchdog, and checks that it leaves this process exactly
/// the descriptors it found.
pub fn hostile(name: &str, body: impl FnOnce(&Scene)) {
    let fds = FdGuard::new();
    let _watchdog = Watchdog::start(name, WATCHDOG);
    let dir = std::env::temp_dir().join(format!("shmcast-hostile-{}-{name}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    let scene = Scene {
        dir,
        sockets: AtomicU32::new(0),
    };
    body(&scene);
    drop(scene);
    fds.check();
}

impl Scene {
    /// Serves `reply` with `fds` to one subscriber connecting in `mode`; returns what its
    /// connect returned and the harness's end of the connection.
    pub fn connect(
        &self,
        reply: &[u8],
        fds: &[BorrowedFd<'_>],
        mode: Mode,
    ) -> (Result<Subscriber, ConnectError>, OwnedFd) {
        self.connect_then(reply, fds, mode, || {})
    }

    /// As [`connect`](Self::connect), and runs `after` in the harness right after the reply
    /// went out, while the subscriber checks it.
    pub fn connect_then(
        &self,
        reply: &[u8],
        fds: &[BorrowedFd<'_>],
        mode: Mode,
        after: impl FnOnce() + Send,
    ) -> (Result<Subscriber, ConnectError>, OwnedFd) {
        let n = self.sockets.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{n}.sock"));
        std::thread::scope(|s| {
            let harness = s.spawn(|| {
                let conn = serve_one(&path, reply, fds);
                after();
                conn
            });
            let sub = Subscriber::builder(path.to_str().unwrap())
                .mode(mode)
                .connect_timeout(Duration::from_secs(5))
                .handshake_timeout(Duration::from_secs(5))
                .connect();
            let conn = harness
                .join()
                .unwrap()
                .expect("the harness served the subscriber");
            (sub, conn)
        })
    }

    /// Seals a correct image and connects to it; the test damages it afterwards through the
    /// harness's mapping.
    pub fn connected(&self, image: &Image, mode: Mode) -> (Subscriber, OwnedFd) {
        image.seal();
        let (sub, conn) = self.connect(&image.welcome(), &image.fds(), mode);
        (sub.expect("a correct image is accepted"), conn)
    }
}
