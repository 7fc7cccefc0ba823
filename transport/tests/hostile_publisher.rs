//! A hostile publisher: this file plays the publisher's side of the handshake by hand against the
//! real [`Subscriber`], with descriptors, packets and shared memory that no correct publisher
//! sends, and checks that the subscriber answers with typed errors ([`ConnectError`],
//! [`RecvError::Corrupt`], `Lagged`, `Disconnected`, ...), never with a panic, a `SIGBUS`, a read
//! outside its mappings or a receive that does not return.
//!
//! Rings are built by the real protocol (`shmcast_core::Writer` over a memfd the harness maps
//! read-write before sealing it, so its mapping stays writable) and then damaged at the offsets
//! of the ABI structs [`RingHeader`] and [`ControlBlock`]. Every receive has a timeout. Each test
//! ends with this process's descriptor count back where it started, so the tests take one lock:
//! the count is process-wide. A watchdog aborts a test that hangs.

#[allow(dead_code)]
#[path = "common/rng.rs"]
mod rng;

use memmap2::{MmapOptions, MmapRaw};
use rng::Rng;
use rustix::fs::{MemfdFlags, SealFlags};
use shmcast::test_support::{encode_welcome, serve_one};
use shmcast::{ConnectError, FrameError, Mode, RecvError, Start, Subscriber};
use shmcast_core::frame::{FRAME_TAG, Kind};
use shmcast_core::layout::{
    CONTROL_MAGIC, ControlBlock, LAYOUT_VERSION, MODE_GATING, MODE_LOSSY, RingHeader, STATE_ACTIVE,
    STATE_EVICTED,
};
use shmcast_core::{
    CONTROL_BLOCK_LEN, ConfigError, HEADER_LEN, LayoutError, Region, RingConfig, Writer,
};
use std::collections::BTreeMap;
use std::mem::offset_of;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

/// Data area of the test rings.
const CAP: u64 = 4096;
/// Largest payload of the test rings.
const MAX: u64 = 1024;
/// Payload of the test messages: 112 bytes make a 128-byte frame, so the `n`th message after
/// the subscriber's start sits `128 n` bytes after it.
const MSG: usize = 112;
const SPAN: u64 = 128;
/// The highest frame-aligned position.
const TOP: u64 = !15;
/// Timeout of every receive that is expected to return at once.
const RECV: Duration = Duration::from_millis(200);
const WATCHDOG: Duration = Duration::from_secs(120);

/// What a correct publisher seals its ring and control blocks with (see the transport's `shm`).
const RING_SEALS: SealFlags = SealFlags::SHRINK
    .union(SealFlags::GROW)
    .union(SealFlags::FUTURE_WRITE)
    .union(SealFlags::SEAL);
const CONTROL_SEALS: SealFlags = SealFlags::SHRINK
    .union(SealFlags::GROW)
    .union(SealFlags::SEAL);

/// Offsets of the ring header's words.
mod hdr {
    use super::*;
    pub const MAGIC: usize = offset_of!(RingHeader, magic);
    pub const VERSION: usize = offset_of!(RingHeader, version);
    pub const HEADER_LEN_FIELD: usize = offset_of!(RingHeader, header_len);
    pub const CAPACITY: usize = offset_of!(RingHeader, capacity);
    pub const MAX_PAYLOAD: usize = offset_of!(RingHeader, max_payload);
    pub const FRAME_ALIGN: usize = offset_of!(RingHeader, frame_align);
    pub const TOTAL_LEN: usize = offset_of!(RingHeader, total_len);
    pub const COMMITTED: usize = offset_of!(RingHeader, committed);
    pub const NEXT_SEQ: usize = offset_of!(RingHeader, next_seq);
    pub const RESERVED: usize = offset_of!(RingHeader, reserved);
    pub const TAIL: usize = offset_of!(RingHeader, tail);
    pub const CLOSED: usize = offset_of!(RingHeader, closed);
    pub const WRITER_WAITING: usize = offset_of!(RingHeader, writer_waiting);
    pub const WAKE: usize = offset_of!(RingHeader, wake);
}

/// Offsets of the control block's publisher-written words.
mod ctl {
    use super::*;
    pub const MAGIC: usize = offset_of!(ControlBlock, magic);
    pub const VERSION: usize = offset_of!(ControlBlock, version);
    pub const STATE: usize = offset_of!(ControlBlock, state);
    pub const MODE: usize = offset_of!(ControlBlock, mode);
    pub const START_POS: usize = offset_of!(ControlBlock, start_pos);
    pub const START_SEQ: usize = offset_of!(ControlBlock, start_seq);
}

/// A frame's `meta` word, as the writer encodes it (any `kind` and `len` the caller likes).
fn meta(kind: u64, len: u32) -> u64 {
    u64::from(len) | kind << 32 | FRAME_TAG << 40
}

const MESSAGE: u64 = Kind::Message as u64;
const PADDING: u64 = Kind::Padding as u64;

/// The payload of message `seq`.
fn message(seq: u64) -> Vec<u8> {
    (0..MSG)
        .map(|i| (seq as u8).wrapping_mul(31).wrapping_add(i as u8))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Shared memory the harness controls.

/// A memfd that may be sealed, mapped read-write by the harness before any seal (a mapping
/// made before `F_SEAL_FUTURE_WRITE` stays writable).
struct Memfd {
    fd: OwnedFd,
    map: Option<Arc<MmapRaw>>,
    len: u64,
}

impl Memfd {
    fn new(len: u64) -> Memfd {
        let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
        let fd = rustix::fs::memfd_create("shmcast-hostile", flags).unwrap();
        rustix::fs::ftruncate(&fd, len).unwrap();
        let map = (len > 0).then(|| {
            let len = usize::try_from(len).unwrap();
            Arc::new(MmapOptions::new().len(len).map_raw(&fd).unwrap())
        });
        Memfd { fd, map, len }
    }

    /// Adds the seals it lacks of `seals` (once `F_SEAL_SEAL` is on, adding even none fails).
    fn seal(&self, seals: SealFlags) {
        let missing = seals.difference(rustix::fs::fcntl_get_seals(&self.fd).unwrap());
        if !missing.is_empty() {
            rustix::fs::fcntl_add_seals(&self.fd, missing).unwrap();
        }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn map(&self) -> &MmapRaw {
        self.map.as_ref().expect("an empty memfd has no mapping")
    }

    /// The mapping as a protocol region, for the real writer.
    fn region(&self) -> Region {
        let map = self.map.as_ref().expect("an empty memfd has no mapping");
        // SAFETY: the mapping is read-write, `map.len()` bytes and page-aligned; the Arc handed
        // over as owner keeps it mapped. Only the protocol and these tests' atomics touch it.
        unsafe { Region::from_raw_parts(map.as_mut_ptr(), map.len(), map.clone()) }
            .expect("a page-aligned mapping")
    }

    /// The 64-bit word at `off`.
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        let map = self.map();
        assert!(
            off % 8 == 0 && off + 8 <= map.len(),
            "harness bug: word {off}"
        );
        // SAFETY: in bounds and 8-aligned (checked; the base is page-aligned); the mapping lives
        // as long as `self`, and every access to these shared words is atomic.
        unsafe { AtomicU64::from_ptr(map.as_mut_ptr().add(off).cast()) }
    }

    /// The 32-bit word at `off`.
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        let map = self.map();
        assert!(
            off % 4 == 0 && off + 4 <= map.len(),
            "harness bug: word {off}"
        );
        // SAFETY: as in `u64_at`, for a 4-aligned 32-bit word.
        unsafe { AtomicU32::from_ptr(map.as_mut_ptr().add(off).cast()) }
    }

    fn store64(&self, off: usize, value: u64) {
        self.u64_at(off).store(value, Ordering::Relaxed);
    }

    fn store32(&self, off: usize, value: u32) {
        self.u32_at(off).store(value, Ordering::Relaxed);
    }
}

/// A ring built by the real writer, and one subscriber's control block admitted by it.
struct Image {
    ring: Memfd,
    cb: Memfd,
    writer: Writer<()>,
}

impl Image {
    /// A ring of `CAP` bytes with a control block admitted in `mode` at position 0.
    fn new(mode: Mode) -> Image {
        Image::after(mode, 0)
    }

    /// As [`new`](Self::new), but `before` messages are published before the admission, so the
    /// subscriber starts at position `128 before`.
    fn after(mode: Mode, before: u64) -> Image {
        let cfg = RingConfig::new(CAP, MAX).unwrap();
        let ring = Memfd::new(cfg.region_len() as u64);
        let writer = Writer::new(ring.region(), cfg).unwrap();
        let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
        let mut image = Image { ring, cb, writer };
        image.publish(before);
        image
            .writer
            .admit(image.cb.region(), mode, Start::Newest, ())
            .unwrap();
        image
    }

    fn publish(&mut self, n: u64) {
        for _ in 0..n {
            let seq = self.writer.next_seq();
            self.writer.send(&message(seq), |_| {}).unwrap();
        }
    }

    /// Seals both memfds as a correct publisher does.
    fn seal(&self) {
        self.ring.seal(RING_SEALS);
        self.cb.seal(CONTROL_SEALS);
    }

    /// An honest welcome.
    fn welcome(&self) -> Vec<u8> {
        encode_welcome(self.ring.len, CONTROL_BLOCK_LEN as u64)
    }

    fn fds(&self) -> [BorrowedFd<'_>; 2] {
        [self.ring.fd(), self.cb.fd()]
    }

    /// The meta and sequence words of the frame at position `pos`.
    fn frame(&self, pos: u64) -> (&AtomicU64, &AtomicU64) {
        let off = HEADER_LEN + (pos % CAP) as usize;
        (self.ring.u64_at(off), self.ring.u64_at(off + 8))
    }
}

// ---------------------------------------------------------------------------------------------
// The scene of each test: one at a time, a watchdog, a private socket directory, a leak check.

static ALONE: Mutex<()> = Mutex::new(());

struct Scene {
    dir: PathBuf,
    sockets: AtomicU32,
}

impl Drop for Scene {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Aborts the process if the test it guards runs longer than [`WATCHDOG`].
struct Watchdog {
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(name: &str) -> Watchdog {
        let (done, wait) = mpsc::channel::<()>();
        let name = name.to_owned();
        let thread = std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(WATCHDOG) {
                eprintln!("watchdog: `{name}` still running after {WATCHDOG:?}: aborting");
                std::process::abort();
            }
        });
        Watchdog {
            done: Some(done),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs one scenario alone, under a watchdog, and checks that it leaves this process exactly
/// the descriptors it found (whatever the hostile publisher sent was closed).
fn hostile(name: &str, body: impl FnOnce(&Scene)) {
    let _alone = ALONE.lock().unwrap_or_else(PoisonError::into_inner);
    let _watchdog = Watchdog::start(name);
    let dir = std::env::temp_dir().join(format!("shmcast-hostile-{}-{name}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    let scene = Scene {
        dir,
        sockets: AtomicU32::new(0),
    };
    let before = shmcast::test_support::open_fd_count().unwrap();
    body(&scene);
    let after = shmcast::test_support::open_fd_count().unwrap();
    assert_eq!(after, before, "{name}: descriptors left open");
}

impl Scene {
    /// Serves `reply` with `fds` to one subscriber connecting in `mode`; returns what its
    /// connect returned and the harness's end of the connection.
    fn connect(
        &self,
        reply: &[u8],
        fds: &[BorrowedFd<'_>],
        mode: Mode,
    ) -> (Result<Subscriber, ConnectError>, OwnedFd) {
        self.connect_then(reply, fds, mode, || {})
    }

    /// As [`connect`](Self::connect), and runs `after` in the harness right after the reply
    /// went out, while the subscriber checks it.
    fn connect_then(
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
    fn connected(&self, image: &Image, mode: Mode) -> (Subscriber, OwnedFd) {
        image.seal();
        let (sub, conn) = self.connect(&image.welcome(), &image.fds(), mode);
        (sub.expect("a correct image is accepted"), conn)
    }
}

fn refused(r: Result<Subscriber, ConnectError>) -> ConnectError {
    match r {
        Ok(sub) => panic!("the subscriber accepted a hostile publisher: {sub:?}"),
        Err(e) => e,
    }
}

/// The text of the protocol error a connect must have returned.
fn protocol(r: Result<Subscriber, ConnectError>) -> String {
    match refused(r) {
        ConnectError::Protocol(text) => text,
        e => panic!("expected a protocol error, got {e:?}"),
    }
}

/// The layout error a connect must have returned.
fn layout(r: Result<Subscriber, ConnectError>) -> LayoutError {
    match refused(r) {
        ConnectError::Layout(e) => e,
        e => panic!("expected a layout error, got {e:?}"),
    }
}

/// One receive, the payload copied out (nothing writes the ring meanwhile in these tests).
fn recv(sub: &mut Subscriber) -> Result<(u64, Vec<u8>), RecvError> {
    sub.recv_timeout(RECV).map(|s| (s.seq(), s.to_vec()))
}

fn expect_message(sub: &mut Subscriber, seq: u64) {
    match recv(sub) {
        Ok((got, payload)) => {
            assert_eq!(got, seq);
            assert_eq!(payload, message(seq), "payload of message {seq}");
        }
        Err(e) => panic!("expected message {seq}, got {e:?}"),
    }
}

/// The subscriber reports `expected` and keeps reporting it: it neither skips the bad frame
/// nor reads past it.
fn expect_corrupt(sub: &mut Subscriber, expected: FrameError) {
    for _ in 0..3 {
        match recv(sub) {
            Err(RecvError::Corrupt(e)) => assert_eq!(e, expected),
            other => panic!("expected Corrupt({expected:?}), got {other:?}"),
        }
    }
}

const BOTH: [Mode; 2] = [Mode::Gating, Mode::Lossy];

// ---------------------------------------------------------------------------------------------
// Refused at connect: descriptors, seals, sizes.

/// A ring without every seal is refused before it is mapped, so the harness shrinking it right
/// after the welcome (which it can, unsealed) cannot fault the subscriber.
#[test]
fn unsealed_rings_are_refused_before_they_are_mapped() {
    hostile("unsealed", |scene| {
        let partial = [
            SealFlags::empty(),
            SealFlags::SHRINK | SealFlags::GROW,
            RING_SEALS.difference(SealFlags::FUTURE_WRITE),
            RING_SEALS.difference(SealFlags::SEAL),
            RING_SEALS.difference(SealFlags::SHRINK),
        ];
        for seals in partial {
            for mode in BOTH {
                let mut image = Image::new(mode);
                image.publish(3);
                image.ring.seal(seals);
                image.cb.seal(CONTROL_SEALS);
                let shrink = || {
                    let shrunk = rustix::fs::ftruncate(image.ring.fd(), 0);
                    assert_eq!(shrunk.is_ok(), !seals.contains(SealFlags::SHRINK));
                };
                let (sub, _conn) = scene.connect_then(&image.welcome(), &image.fds(), mode, shrink);
                let text = protocol(sub);
                assert!(text.contains("missing seals"), "{seals:?}: {text}");
                // Do not touch the harness's own mapping: the file may be empty now.
                drop(image);
            }
        }
    });
}

/// A file too small for a header, or for the ring its header describes, is refused.
#[test]
fn rings_smaller_than_their_header_claims_are_refused() {
    hostile("too-small", |scene| {
        let image = Image::new(Mode::Lossy);
        image.seal();
        for len in [0, 64, HEADER_LEN as u64 - 8] {
            let short = Memfd::new(len);
            short.seal(RING_SEALS);
            let fds = [short.fd(), image.cb.fd()];
            let cb_len = CONTROL_BLOCK_LEN as u64;
            // Announced honestly: the welcome itself is impossible.
            let honest = encode_welcome(len, cb_len);
            let text = protocol(scene.connect(&honest, &fds, Mode::Lossy).0);
            assert!(text.contains("unexpected sizes"), "{len}: {text}");
            // Announced as a whole ring: the descriptor's size gives it away.
            let lying = encode_welcome(image.ring.len, cb_len);
            let text = protocol(scene.connect(&lying, &fds, Mode::Lossy).0);
            assert!(text.contains("fewer than"), "{len}: {text}");
        }

        // A correct header whose data area was cut in half before sealing.
        let mut cut = Image::new(Mode::Lossy);
        cut.publish(3);
        let len = HEADER_LEN as u64 + CAP / 2;
        rustix::fs::ftruncate(cut.ring.fd(), len).unwrap();
        cut.seal();
        let welcome = encode_welcome(len, CONTROL_BLOCK_LEN as u64);
        let (sub, _conn) = scene.connect(&welcome, &cut.fds(), Mode::Lossy);
        let need = HEADER_LEN as u64 + CAP;
        assert_eq!(layout(sub), LayoutError::TooSmall { len, need });
    });
}

/// A word of a ring or control block, overwritten.
#[derive(Clone, Copy, Debug)]
enum Patch {
    U64(usize, u64),
    U32(usize, u32),
}

fn apply(memfd: &Memfd, patches: &[Patch]) {
    for p in patches {
        match *p {
            Patch::U64(off, v) => memfd.store64(off, v),
            Patch::U32(off, v) => memfd.store32(off, v),
        }
    }
}

/// Every static header field, wrong in each way the validator names.
#[test]
fn corrupt_ring_headers_are_refused() {
    use Patch::{U32, U64};
    let len = HEADER_LEN as u64 + CAP;
    let field = |field, value| LayoutError::Field { field, value };
    let capacity = |c| LayoutError::Config(ConfigError::Capacity(c));
    let limit = RingConfig::payload_limit(CAP);
    let max_payload = |m| {
        LayoutError::Config(ConfigError::MaxPayload {
            max_payload: m,
            limit,
        })
    };
    let cases: Vec<(Vec<Patch>, LayoutError)> = vec![
        (vec![U64(hdr::MAGIC, 0)], LayoutError::BadMagic(0)),
        (
            vec![U64(hdr::MAGIC, CONTROL_MAGIC)],
            LayoutError::BadMagic(CONTROL_MAGIC),
        ),
        (
            vec![U32(hdr::VERSION, LAYOUT_VERSION + 1)],
            LayoutError::Version {
                found: LAYOUT_VERSION + 1,
                expected: LAYOUT_VERSION,
            },
        ),
        (
            vec![U32(hdr::HEADER_LEN_FIELD, 2 * HEADER_LEN as u32)],
            field("header_len", 2 * HEADER_LEN as u64),
        ),
        (vec![U32(hdr::HEADER_LEN_FIELD, 0)], field("header_len", 0)),
        (vec![U32(hdr::FRAME_ALIGN, 8)], field("frame_align", 8)),
        (vec![U64(hdr::CAPACITY, CAP - 1)], capacity(CAP - 1)),
        (vec![U64(hdr::CAPACITY, 0)], capacity(0)),
        (vec![U64(hdr::CAPACITY, 32)], capacity(32)),
        (vec![U64(hdr::CAPACITY, 1 << 41)], capacity(1 << 41)),
        (vec![U64(hdr::CAPACITY, u64::MAX)], capacity(u64::MAX)),
        (
            vec![U32(hdr::MAX_PAYLOAD, CAP as u32 / 2)],
            max_payload(CAP / 2),
        ),
        (
            vec![U32(hdr::MAX_PAYLOAD, u32::MAX)],
            max_payload(u32::MAX.into()),
        ),
        (
            vec![U64(hdr::TOTAL_LEN, len + 16)],
            field("total_len", len + 16),
        ),
        (
            vec![U64(hdr::TOTAL_LEN, len - 16)],
            field("total_len", len - 16),
        ),
        (vec![U64(hdr::TOTAL_LEN, 0)], field("total_len", 0)),
        (
            vec![U64(hdr::TOTAL_LEN, u64::MAX)],
            field("total_len", u64::MAX),
        ),
        // Consistent, but for a ring twice the size of the file.
        (
            vec![
                U64(hdr::CAPACITY, 2 * CAP),
                U64(hdr::TOTAL_LEN, HEADER_LEN as u64 + 2 * CAP),
            ],
            LayoutError::TooSmall {
                len,
                need: HEADER_LEN as u64 + 2 * CAP,
            },
        ),
    ];
    hostile("headers", |scene| {
        for (patches, expected) in cases {
            for mode in BOTH {
                let mut image = Image::new(mode);
                image.publish(2);
                apply(&image.ring, &patches);
                image.seal();
                let (sub, _conn) = scene.connect(&image.welcome(), &image.fds(), mode);
                assert_eq!(layout(sub), expected, "{patches:?}");
            }
        }
    });
}

/// Control blocks that are not one: wrong size, missing seals, not a memfd, not writable, or
/// holding garbage, another version or impossible admission fields.
#[test]
fn wrong_control_blocks_are_refused() {
    hostile("control-blocks", |scene| {
        let image = Image::new(Mode::Gating);
        image.seal();
        let welcome = image.welcome();
        let with_cb = |cb: BorrowedFd<'_>| {
            scene
                .connect(&welcome, &[image.ring.fd(), cb], Mode::Gating)
                .0
        };

        for len in [0, 256, CONTROL_BLOCK_LEN as u64 - 8, 4096] {
            let cb = Memfd::new(len);
            cb.seal(CONTROL_SEALS);
            let text = protocol(with_cb(cb.fd()));
            assert!(
                text.contains(&format!("not {CONTROL_BLOCK_LEN}")),
                "{len}: {text}"
            );
        }
        for seals in [
            SealFlags::empty(),
            CONTROL_SEALS.difference(SealFlags::SEAL),
        ] {
            let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
            cb.seal(seals);
            let text = protocol(with_cb(cb.fd()));
            assert!(text.contains("missing seals"), "{seals:?}: {text}");
        }
        // Sealed against writing: the subscriber cannot map it read-write.
        let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
        cb.seal(CONTROL_SEALS | SealFlags::FUTURE_WRITE);
        protocol(with_cb(cb.fd()));
        // The ring itself as the control block, and a descriptor that is no memfd at all.
        let text = protocol(with_cb(image.ring.fd()));
        assert!(text.contains("refused"), "{text}");
        let (pipe_r, _pipe_w) = rustix::pipe::pipe().unwrap();
        let text = protocol(with_cb(pipe_r.as_fd()));
        assert!(text.contains("missing seals"), "{text}");

        // Sealed, the right size, but not an admitted control block.
        let garbage = |fill: &dyn Fn(&Memfd)| {
            let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
            fill(&cb);
            cb.seal(CONTROL_SEALS);
            layout(with_cb(cb.fd()))
        };
        assert_eq!(garbage(&|_| {}), LayoutError::BadMagic(0));
        let mut rng = Rng(7);
        let words: Vec<u64> = (0..CONTROL_BLOCK_LEN / 8).map(|_| rng.next() | 1).collect();
        let e = garbage(&|cb| {
            for (i, w) in words.iter().enumerate() {
                cb.u64_at(8 * i).store(*w, Ordering::Relaxed);
            }
        });
        assert!(matches!(e, LayoutError::BadMagic(m) if m != 0), "{e:?}");
        // A correct one, then one field wrong.
        let admitted = |patches: &[Patch]| {
            garbage(&|cb| {
                let cfg = RingConfig::new(CAP, MAX).unwrap();
                let mut w: Writer<()> = Writer::new(Region::heap(cfg.region_len()), cfg).unwrap();
                w.admit(cb.region(), Mode::Gating, Start::Newest, ())
                    .unwrap();
                apply(cb, patches);
            })
        };
        use Patch::{U32, U64};
        assert_eq!(
            admitted(&[U64(ctl::MAGIC, !CONTROL_MAGIC)]),
            LayoutError::BadMagic(!CONTROL_MAGIC)
        );
        assert_eq!(
            admitted(&[U32(ctl::VERSION, 1)]),
            LayoutError::Version {
                found: 1,
                expected: LAYOUT_VERSION
            }
        );
        for state in [0, STATE_EVICTED, 99] {
            assert_eq!(
                admitted(&[U32(ctl::STATE, state)]),
                LayoutError::Field {
                    field: "state",
                    value: state.into()
                }
            );
        }
        for mode in [0, 3, u32::MAX] {
            assert_eq!(
                admitted(&[U32(ctl::MODE, mode)]),
                LayoutError::Field {
                    field: "mode",
                    value: mode.into()
                }
            );
        }
    });
}

/// Start positions the admitted control block names, against the ring's committed position. A
/// start more than a ring behind `committed` is impossible for a gating subscriber (the writer
/// waits for it from admission on) but only a lap for a lossy one, which may be lapped between
/// admission and attach: that one connects, and its receives give typed outcomes.
#[test]
fn impossible_start_positions_are_refused() {
    use Patch::U64;
    hostile("start", |scene| {
        for mode in BOTH {
            // The subscriber starts at 128 (one message before it), the ring is committed to 512.
            let committed = 4 * SPAN;
            // (control block patch, ring patch, refused value, a lap for a lossy subscriber)
            let cases: [(&[Patch], &[Patch], u64, bool); 6] = [
                (&[U64(ctl::START_POS, SPAN + 8)], &[], SPAN + 8, false),
                (
                    &[U64(ctl::START_POS, committed + 16)],
                    &[],
                    committed + 16,
                    false,
                ),
                (&[U64(ctl::START_POS, u64::MAX)], &[], u64::MAX, false),
                (&[], &[U64(hdr::COMMITTED, 0)], SPAN, false),
                (&[], &[U64(hdr::COMMITTED, SPAN + CAP + 16)], SPAN, true),
                (&[], &[U64(hdr::COMMITTED, TOP)], SPAN, true),
            ];
            for (cb_patch, ring_patch, value, lap) in cases {
                let mut image = Image::after(mode, 1);
                image.publish(3);
                assert_eq!(image.writer.committed(), committed);
                apply(&image.cb, cb_patch);
                apply(&image.ring, ring_patch);
                image.seal();
                let (sub, _conn) = scene.connect(&image.welcome(), &image.fds(), mode);
                if lap && mode == Mode::Lossy {
                    let mut sub = sub.expect("a lapped lossy start connects");
                    for _ in 0..3 {
                        match recv(&mut sub) {
                            Err(
                                RecvError::Timeout | RecvError::Lagged(_) | RecvError::Corrupt(_),
                            ) => {}
                            other => panic!("{ring_patch:?}: {other:?}"),
                        }
                    }
                    continue;
                }
                let expected = LayoutError::Field {
                    field: "start_pos",
                    value,
                };
                assert_eq!(layout(sub), expected, "{cb_patch:?} {ring_patch:?}");
            }
        }
    });
}

/// A welcome must carry exactly the ring and the control block; whatever else arrives is closed.
#[test]
fn wrong_descriptor_counts_are_refused_and_closed() {
    hostile("descriptor-counts", |scene| {
        let image = Image::new(Mode::Lossy);
        image.seal();
        let (ring, cb) = (image.ring.fd(), image.cb.fd());
        let welcome = image.welcome();
        // (descriptors, what the refusal says: any of these)
        let cases: [(&[BorrowedFd<'_>], &[&str]); 6] = [
            (&[], &["welcome without descriptors"]),
            (&[ring], &["expected 2 file descriptors, got 1"]),
            (&[ring, cb, cb], &["expected 2 file descriptors, got 3"]),
            (&[ring, cb, ring, cb, ring, cb], &["got 6"]),
            // As many as a packet may carry: received and closed, or cut off by the kernel
            // (depending on the room the receive makes).
            (
                &[ring, cb, ring, cb, ring, cb, ring, cb],
                &["got 8", "truncated"],
            ),
            // Swapped: the control block offered as the ring lacks F_SEAL_FUTURE_WRITE.
            (&[cb, ring], &["missing seals: F_SEAL_FUTURE_WRITE"]),
        ];
        for (fds, needles) in cases {
            let text = protocol(scene.connect(&welcome, fds, Mode::Lossy).0);
            assert!(
                needles.iter().any(|n| text.contains(n)),
                "{} descriptors: {text}",
                fds.len()
            );
        }
        // A refusal that carries descriptors anyway: refused, and they are closed.
        let mut refusal = welcome[..6].to_vec(); // magic and version
        refusal.extend_from_slice(&3u16.to_le_bytes()); // REFUSE
        refusal.extend_from_slice(&4u16.to_le_bytes()); // code
        refusal.extend_from_slice(&2u16.to_le_bytes()); // text length
        refusal.extend_from_slice(b"no");
        match refused(scene.connect(&refusal, &[ring, cb], Mode::Lossy).0) {
            ConnectError::Refused { reason } => assert_eq!(reason, "no"),
            e => panic!("expected a refusal, got {e:?}"),
        }
    });
}

/// Welcomes that lie about the sizes they announce, or are not welcomes.
#[test]
fn lying_welcomes_are_refused() {
    hostile("welcomes", |scene| {
        let image = Image::new(Mode::Gating);
        image.seal();
        let fds = image.fds();
        let ring_len = image.ring.len;
        let cb_len = CONTROL_BLOCK_LEN as u64;
        let refuse = |reply: &[u8], needle: &str| {
            let text = protocol(scene.connect(reply, &fds, Mode::Gating).0);
            assert!(text.contains(needle), "{reply:?}: {text}");
        };
        for cb_len in [0, cb_len - 1, cb_len + 1, 4096, u64::MAX] {
            refuse(&encode_welcome(ring_len, cb_len), "unexpected sizes");
        }
        for ring_len in [0, HEADER_LEN as u64 - 1] {
            refuse(&encode_welcome(ring_len, cb_len), "unexpected sizes");
        }
        for lie in [HEADER_LEN as u64, ring_len - 16, ring_len + 4096, u64::MAX] {
            refuse(&encode_welcome(lie, cb_len), "announces a ring");
        }

        let good = image.welcome();
        let with = |at: usize, bytes: &[u8]| {
            let mut w = good.clone();
            w[at..at + bytes.len()].copy_from_slice(bytes);
            w
        };
        refuse(&with(0, b"SHMX"), "not a shmcast packet");
        let version = u16::from_le_bytes([good[4], good[5]]);
        refuse(&with(4, &(version + 1).to_le_bytes()), "protocol version");
        refuse(&with(6, &1u16.to_le_bytes()), "unexpected packet kind");
        refuse(&with(6, &9u16.to_le_bytes()), "unexpected packet kind");
        refuse(&with(8, &1u32.to_le_bytes()), "invalid field `flags`");
        refuse(&good[..good.len() - 1], "wrong length");
        let mut longer = good.clone();
        longer.push(0);
        refuse(&longer, "wrong length");
        // A doorbell instead of a welcome, and a packet larger than any control packet.
        refuse(&[1], "wrong length");
        refuse(&[0u8; 300], "truncated");
    });
}

/// A ring that is sealed cannot be shrunk, grown, punched or written through its descriptor
/// while a subscriber reads it; the harness's own mapping, made before sealing, still writes.
#[test]
fn a_sealed_ring_cannot_be_shrunk_under_a_subscriber() {
    use rustix::fs::FallocateFlags;
    hostile("sealed", |scene| {
        for mode in BOTH {
            let mut image = Image::new(mode);
            image.publish(2);
            image.seal();
            let (mut sub, conn) = scene.connected(&image, mode);
            expect_message(&mut sub, 0);
            let fd = image.ring.fd();
            let denied = |r: rustix::io::Result<()>| assert_eq!(r, Err(rustix::io::Errno::PERM));
            denied(rustix::fs::ftruncate(fd, 0));
            denied(rustix::fs::ftruncate(fd, HEADER_LEN as u64));
            denied(rustix::fs::ftruncate(fd, 2 * image.ring.len));
            denied(rustix::fs::fallocate(
                fd,
                FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
                0,
                image.ring.len,
            ));
            assert_eq!(
                rustix::io::pwrite(fd, &[0xff; 8], 0),
                Err(rustix::io::Errno::PERM)
            );
            assert_eq!(
                rustix::fs::fstat(fd).unwrap().st_size as u64,
                image.ring.len
            );
            expect_message(&mut sub, 1);
            // Enough to lap a lossy subscriber; all a gating one lets the writer publish.
            image.publish(if mode == Mode::Gating { 30 } else { 40 });
            let mut seq = 2;
            loop {
                match recv(&mut sub) {
                    Ok((s, payload)) => {
                        assert_eq!((s, payload), (seq, message(seq)));
                        seq += 1;
                    }
                    Err(RecvError::Lagged(n)) => seq += n,
                    Err(RecvError::Timeout) => break,
                    Err(e) => panic!("{e:?}"),
                }
            }
            assert_eq!(seq, image.writer.next_seq());
            drop(conn);
            assert!(matches!(recv(&mut sub), Err(RecvError::Disconnected)));
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Accepted at connect, damaged afterwards: receives report it.

/// Frame headers that point outside the data area, past the committed position or past the
/// largest payload, or that are not frames at all.
#[test]
fn frames_pointing_outside_the_ring_are_corrupt() {
    hostile("frames", |scene| {
        for mode in BOTH {
            let too_long = |len| FrameError::TooLong {
                len,
                max: MAX as u32,
            };
            let bad_tag = meta(MESSAGE, 16) ^ 1 << 41;
            // The last frame slot: 128 bytes of room, reached after 31 messages.
            let last = CAP - SPAN;
            // (messages before the subscriber's start, position of the damaged frame (the
            // subscriber receives the messages before it first), its meta, the error)
            let cases = [
                (0, 0, 0, FrameError::BadMeta(0)),
                (0, 0, bad_tag, FrameError::BadMeta(bad_tag)),
                (0, 0, meta(7, 16), FrameError::BadMeta(meta(7, 16))),
                (
                    0,
                    0,
                    meta(MESSAGE, MAX as u32 + 16),
                    too_long(MAX as u32 + 16),
                ),
                (0, 0, meta(MESSAGE, u32::MAX), too_long(u32::MAX)),
                (31, last, meta(MESSAGE, 200), FrameError::CrossesEnd),
                (31, last, meta(MESSAGE, MAX as u32), FrameError::CrossesEnd),
                (0, 0, meta(PADDING, 0), FrameError::BadPadding),
                (31, last, meta(PADDING, 200), FrameError::BadPadding),
                // Three messages are committed up to 384: these would end at 416 and 480.
                (0, 0, meta(MESSAGE, 400), FrameError::BeyondCommit),
                (0, 2 * SPAN, meta(MESSAGE, 200), FrameError::BeyondCommit),
            ];
            for (before, pos, bad, expected) in cases {
                let mut image = Image::after(mode, before);
                image.publish(3);
                let (mut sub, _conn) = scene.connected(&image, mode);
                for seq in before..before + (pos - before * SPAN) / SPAN {
                    expect_message(&mut sub, seq);
                }
                image.frame(pos).0.store(bad, Ordering::Relaxed);
                expect_corrupt(&mut sub, expected);
            }
        }
    });
}

/// Sequence numbers that go backwards or jump, in messages, padding and after a lap; and that
/// wrap at `u64::MAX`.
#[test]
fn sequence_numbers_out_of_order_are_corrupt() {
    hostile("sequence", |scene| {
        for mode in BOTH {
            // (frame, its new sequence number, messages received before, expected seq)
            let cases = [
                (SPAN, 0, 1, 1),
                (SPAN, 7, 1, 1),
                (0, u64::MAX, 0, 0),
                (2 * SPAN, 1, 2, 2),
            ];
            for (pos, bad, good, expected) in cases {
                let mut image = Image::new(mode);
                image.publish(3);
                let (mut sub, _conn) = scene.connected(&image, mode);
                for seq in 0..good {
                    expect_message(&mut sub, seq);
                }
                image.frame(pos).1.store(bad, Ordering::Relaxed);
                expect_corrupt(
                    &mut sub,
                    FrameError::Sequence {
                        expected,
                        found: bad,
                    },
                );
            }

            // A padding frame (at the end of the data area) whose number goes backwards.
            let mut image = Image::after(mode, 31);
            image.writer.send(&[5; 200], |_| {}).unwrap(); // pads 3968..4096 first
            let (mut sub, _conn) = scene.connected(&image, mode);
            image.frame(31 * SPAN).1.store(30, Ordering::Relaxed);
            expect_corrupt(
                &mut sub,
                FrameError::Sequence {
                    expected: 31,
                    found: 30,
                },
            );
        }

        // A lossy subscriber that was lapped resumes at the tail frame: exactly the messages
        // overwritten are reported missing, unless the tail frame's number lies.
        for lie in [None, Some(1), Some(0)] {
            let mut image = Image::new(Mode::Lossy);
            image.publish(3);
            let (mut sub, _conn) = scene.connected(&image, Mode::Lossy);
            expect_message(&mut sub, 0);
            expect_message(&mut sub, 1);
            image.publish(40);
            let tail = image.ring.u64_at(hdr::TAIL).load(Ordering::Relaxed);
            let tail_seq = image.frame(tail).1.load(Ordering::Relaxed);
            match lie {
                None => {
                    match recv(&mut sub) {
                        Err(RecvError::Lagged(n)) => assert_eq!(n, tail_seq - 2),
                        other => panic!("expected Lagged, got {other:?}"),
                    }
                    expect_message(&mut sub, tail_seq);
                }
                Some(found) => {
                    image.frame(tail).1.store(found, Ordering::Relaxed);
                    expect_corrupt(&mut sub, FrameError::Sequence { expected: 2, found });
                }
            }
        }

        // Numbers wrap instead of overflowing: a stream the admission says starts at u64::MAX,
        // and a lap onto a frame numbered u64::MAX.
        let seq_of = |got: Result<(u64, Vec<u8>), RecvError>| match got {
            Ok((seq, _)) => seq,
            Err(e) => panic!("expected a message, got {e:?}"),
        };
        for mode in BOTH {
            let mut image = Image::new(mode);
            image.publish(3);
            image.cb.store64(ctl::START_SEQ, u64::MAX);
            for (i, seq) in [u64::MAX, 0, 1].into_iter().enumerate() {
                image.frame(i as u64 * SPAN).1.store(seq, Ordering::Relaxed);
            }
            let (mut sub, _conn) = scene.connected(&image, mode);
            for expected in [u64::MAX, 0, 1] {
                assert_eq!(seq_of(recv(&mut sub)), expected);
            }
        }
        let mut image = Image::new(Mode::Lossy);
        image.publish(3);
        let (mut sub, _conn) = scene.connected(&image, Mode::Lossy);
        expect_message(&mut sub, 0);
        image.publish(40);
        let tail = image.ring.u64_at(hdr::TAIL).load(Ordering::Relaxed);
        image.frame(tail).1.store(u64::MAX, Ordering::Relaxed);
        image.frame(tail + SPAN).1.store(0, Ordering::Relaxed);
        assert!(matches!(recv(&mut sub), Err(RecvError::Lagged(n)) if n == u64::MAX - 1));
        assert_eq!(seq_of(recv(&mut sub)), u64::MAX);
        assert_eq!(seq_of(recv(&mut sub)), 0);
        assert_eq!(sub.stats().lagged, u64::MAX - 1);
    });
}

/// `committed`, `tail` and `reserved` set to impossible values after the subscriber read two of
/// three messages (its position is 256, the ring is committed to 384).
#[test]
fn impossible_positions_are_corrupt_or_time_out() {
    use Patch::U64;
    #[derive(Debug)]
    enum Expect {
        Corrupt(FrameError),
        /// Message 2 first: a gating subscriber saw it committed before the patch, and gating
        /// frames stay put until released, so it reads it without reloading `committed`.
        MessageThen(FrameError),
        Message,
        Timeout,
    }
    use Expect::{Corrupt, Message, MessageThen, Timeout};
    use FrameError::{BadMeta, Position};
    let pos = 2 * SPAN;
    let far = pos + CAP + 16;
    // (patch, expected for a gating subscriber, for a lossy one)
    let cases = [
        (
            U64(hdr::COMMITTED, SPAN),
            MessageThen(Position(SPAN)),
            Corrupt(Position(SPAN)),
        ),
        (
            U64(hdr::COMMITTED, 0),
            MessageThen(Position(0)),
            Corrupt(Position(0)),
        ),
        (
            U64(hdr::COMMITTED, pos + 8),
            MessageThen(Position(pos + 8)),
            Corrupt(Position(pos + 8)),
        ),
        // More than a ring ahead of message 2. The gating subscriber, once past message 2, is
        // less than a ring behind it and finds no frame there; the lossy one takes it for a
        // lap, finds the tail not past it and waits (it may be a lap in flight).
        (U64(hdr::COMMITTED, far), MessageThen(BadMeta(0)), Timeout),
        (
            U64(hdr::COMMITTED, TOP),
            MessageThen(Position(TOP)),
            Timeout,
        ),
        // A reservation more than a ring ahead: only lossy subscribers look, and wait too.
        (U64(hdr::RESERVED, u64::MAX), Message, Timeout),
        (U64(hdr::RESERVED, 0), Message, Message),
        // Only a lapped lossy subscriber reads the tail; nobody reads `next_seq`.
        (U64(hdr::TAIL, TOP), Message, Message),
        (U64(hdr::NEXT_SEQ, 0), Message, Message),
    ];
    hostile("positions", |scene| {
        for (patch, gating, lossy) in &cases {
            for (mode, expect) in [(Mode::Gating, gating), (Mode::Lossy, lossy)] {
                let mut image = Image::new(mode);
                image.publish(3);
                let (mut sub, _conn) = scene.connected(&image, mode);
                expect_message(&mut sub, 0);
                expect_message(&mut sub, 1);
                apply(&image.ring, &[*patch]);
                match expect {
                    Corrupt(e) => expect_corrupt(&mut sub, *e),
                    MessageThen(e) => {
                        expect_message(&mut sub, 2);
                        expect_corrupt(&mut sub, *e);
                    }
                    Message => expect_message(&mut sub, 2),
                    Timeout => {
                        for _ in 0..2 {
                            let got = recv(&mut sub);
                            assert!(matches!(got, Err(RecvError::Timeout)), "{patch:?}: {got:?}");
                        }
                    }
                }
            }
        }

        // A lossy subscriber lapped for real, then the tail moved somewhere impossible.
        // Given the committed position and the true tail: past the committed position,
        // misaligned, or near the end of the position space.
        let bad_tails: [fn(u64, u64) -> u64; 3] = [|c, _| c + 16, |_, t| t + 8, |_, _| TOP];
        for bad_tail in bad_tails {
            let mut image = Image::new(Mode::Lossy);
            image.publish(3);
            let (mut sub, _conn) = scene.connected(&image, Mode::Lossy);
            expect_message(&mut sub, 0);
            expect_message(&mut sub, 1);
            image.publish(40);
            let committed = image.writer.committed();
            let real = image.ring.u64_at(hdr::TAIL).load(Ordering::Relaxed);
            let bad = bad_tail(committed, real);
            image.ring.store64(hdr::TAIL, bad);
            expect_corrupt(&mut sub, FrameError::Position(bad));
        }
    });
}

/// Words of the ring and the control block a publisher legitimately writes, written at the
/// wrong time or with values it never writes.
#[test]
fn publisher_written_words_make_typed_outcomes() {
    hostile("publisher-words", |scene| {
        // Evicted, whatever non-active value the state holds, for as long as it holds it.
        for state in [STATE_EVICTED, 0, 77] {
            for mode in BOTH {
                let mut image = Image::new(mode);
                image.publish(2);
                let (mut sub, _conn) = scene.connected(&image, mode);
                expect_message(&mut sub, 0);
                image.cb.store32(ctl::STATE, state);
                for _ in 0..3 {
                    assert!(matches!(recv(&mut sub), Err(RecvError::Evicted)));
                }
                image.cb.store32(ctl::STATE, STATE_ACTIVE);
                expect_message(&mut sub, 1);
            }
        }
        // Demoted by any mode but gating: told once, then reading on as a lossy subscriber.
        for mode_word in [MODE_LOSSY, 0, 99] {
            let mut image = Image::new(Mode::Gating);
            image.publish(3);
            let (mut sub, _conn) = scene.connected(&image, Mode::Gating);
            expect_message(&mut sub, 0);
            image.cb.store32(ctl::MODE, mode_word);
            assert!(matches!(recv(&mut sub), Err(RecvError::Demoted)));
            assert!(!sub.is_gating());
            expect_message(&mut sub, 1);
            image.cb.store32(ctl::MODE, MODE_GATING);
            expect_message(&mut sub, 2);
            assert!(!sub.is_gating(), "a demotion is final");
        }
        // Closed: what is committed is received, then the stream has ended, while the
        // connection stays open. Waking words and flags hold anything: receives time out.
        for mode in BOTH {
            let mut image = Image::new(mode);
            image.publish(2);
            let (mut sub, _conn) = scene.connected(&image, mode);
            for (off, value) in [(hdr::WAKE, u32::MAX), (hdr::WRITER_WAITING, 7)] {
                image.ring.store32(off, value);
            }
            expect_message(&mut sub, 0);
            image.ring.store32(hdr::CLOSED, u32::MAX);
            expect_message(&mut sub, 1);
            assert!(matches!(recv(&mut sub), Err(RecvError::Disconnected)));
            image.ring.store32(hdr::CLOSED, 0);
            assert!(matches!(recv(&mut sub), Err(RecvError::Timeout)));
        }
    });
}

/// CPU time this thread has used.
/// Waits up to `timeout` for a subscriber's descriptor to become readable, as an event loop
/// would.
fn wait_readable(sub: &Subscriber, timeout: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(sub, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: timeout.as_secs() as i64,
        tv_nsec: timeout.subsec_nanos().into(),
    };
    rustix::event::poll(&mut fds, Some(&timeout)).expect("poll");
}

fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `t` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// A ring left where a lossy subscriber can read nothing but may not sleep either (it was
/// lapped, yet the tail is not past it): a receive waits out its timeout napping, not spinning.
/// Then the publisher hangs up: with no writer left the ring never changes, so receives end with
/// `Disconnected` instead of waiting on it.
#[test]
fn a_hang_up_ends_receives_on_a_ring_that_cannot_progress() {
    hostile("stuck-then-gone", |scene| {
        // (a) Hostile: committed more than a ring ahead of the subscriber, the tail not moved.
        // (b) A correct writer that dies mid-reservation: a message that needs the whole ring
        //     has moved the tail up to the committed position (everything committed may be
        //     overwritten), and is never committed.
        for dies_mid_reservation in [false, true] {
            for blocking in [true, false] {
                let cfg = if dies_mid_reservation {
                    RingConfig::new(CAP, RingConfig::payload_limit(CAP)).unwrap()
                } else {
                    RingConfig::new(CAP, MAX).unwrap()
                };
                let ring = Memfd::new(cfg.region_len() as u64);
                let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
                let mut writer: Writer<()> = Writer::new(ring.region(), cfg).unwrap();
                writer
                    .admit(cb.region(), Mode::Lossy, Start::Newest, ())
                    .unwrap();
                for seq in 0..3 {
                    writer.send(&message(seq), |_| {}).unwrap();
                }
                ring.seal(RING_SEALS);
                cb.seal(CONTROL_SEALS);
                let welcome = encode_welcome(ring.len, CONTROL_BLOCK_LEN as u64);
                let (sub, conn) = scene.connect(&welcome, &[ring.fd(), cb.fd()], Mode::Lossy);
                let mut sub = sub.unwrap();
                expect_message(&mut sub, 0);
                expect_message(&mut sub, 1);
                if dies_mid_reservation {
                    // 15 frames of 128 bytes, then one of 256 that spans the middle of the data
                    // area: the 2048-byte frame that follows pads to the end first, and the tail
                    // it needs is the first frame boundary past the middle, the committed end.
                    for seq in 3..15 {
                        writer.send(&message(seq), |_| {}).unwrap();
                    }
                    writer.send(&[15; 240], |_| {}).unwrap();
                    let res = writer.try_reserve(cfg.max_payload()).unwrap();
                    let tail = ring.u64_at(hdr::TAIL).load(Ordering::Relaxed);
                    assert_eq!(
                        tail,
                        writer.committed(),
                        "the scenario needs tail == committed"
                    );
                    writer.abandon(res);
                } else {
                    ring.store64(hdr::COMMITTED, 2 * SPAN + CAP + 16);
                }
                let cpu_before = thread_cpu();
                if blocking {
                    let got = sub.recv_timeout(RECV).map(|_| ());
                    assert!(matches!(got, Err(RecvError::Timeout)), "{got:?}");
                } else {
                    // An event loop: wait for the descriptor, try, for as long as `recv` waits.
                    let end = Instant::now() + RECV;
                    while let Some(left) = end.checked_duration_since(Instant::now()) {
                        let got = sub.try_recv().map(|_| ());
                        assert!(matches!(got, Err(RecvError::Empty)), "{got:?}");
                        wait_readable(&sub, left);
                    }
                }
                // While the publisher is connected the wait lasts its whole timeout, napping
                // between looks rather than spinning on a core: a bound of a quarter of the
                // wait, where a spinning receive takes all of it.
                let cpu = thread_cpu() - cpu_before;
                assert!(
                    cpu < RECV / 4,
                    "dies mid-reservation: {dies_mid_reservation}, blocking: {blocking}: \
                     {cpu:?} of CPU in a {RECV:?} wait"
                );
                drop(conn);
                let got = if blocking {
                    sub.recv_timeout(Duration::from_secs(10)).map(|_| ())
                } else {
                    // The hang-up makes the descriptor readable; the next try ends the stream.
                    wait_readable(&sub, Duration::from_secs(10));
                    sub.try_recv().map(|_| ())
                };
                assert!(
                    matches!(got, Err(RecvError::Disconnected)),
                    "dies mid-reservation: {dies_mid_reservation}, blocking: {blocking}: {got:?}"
                );
            }
        }
    });
}

/// Doorbells are one byte without descriptors; a publisher flooding the connection with packets
/// of any size carrying descriptors gets them closed, and its hang-up still ends the stream.
#[test]
fn doorbells_carrying_descriptors_are_closed() {
    use rustix::event::{PollFd, PollFlags};
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::mem::MaybeUninit;
    hostile("doorbells", |scene| {
        for mode in BOTH {
            let mut image = Image::new(mode);
            image.publish(1);
            image.seal();
            let (mut sub, conn) = scene.connected(&image, mode);
            let stray = Memfd::new(4096);
            let mut sent = 0;
            for i in 0..512usize {
                let fds = [stray.fd(), image.ring.fd(), image.cb.fd(), stray.fd()];
                let fds = &fds[..i % fds.len() + 1];
                let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
                let mut control = SendAncillaryBuffer::new(&mut space);
                assert!(control.push(SendAncillaryMessage::ScmRights(fds)));
                let bytes = vec![1u8; 1 + i % 40];
                let iov = [rustix::io::IoSlice::new(&bytes)];
                let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
                match rustix::net::sendmsg(&conn, &iov, &mut control, flags) {
                    Ok(_) => sent += 1,
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            assert!(sent > 0);
            expect_message(&mut sub, 0);
            // try_recv takes the doorbells when it finds nothing to read.
            for _ in 0..sent / 8 + 2 {
                assert!(matches!(sub.try_recv(), Err(RecvError::Empty)));
            }
            // Its descriptor is quiet again: every packet was taken (and what it carried closed).
            let mut pollfd = [PollFd::new(&sub, PollFlags::IN)];
            let zero = rustix::event::Timespec::default();
            assert_eq!(rustix::event::poll(&mut pollfd, Some(&zero)), Ok(0));
            image.publish(1);
            expect_message(&mut sub, 1);
            drop(conn);
            let mut outcome = sub.try_recv().map(|_| ());
            for _ in 0..sent / 8 + 2 {
                if !matches!(outcome, Err(RecvError::Empty)) {
                    break;
                }
                outcome = sub.try_recv().map(|_| ());
            }
            assert!(
                matches!(outcome, Err(RecvError::Disconnected)),
                "{outcome:?}"
            );
        }
    });
}

/// A publisher that never reads the subscriber's doorbells, or shuts the reading side of its end,
/// cannot block the subscriber: every release rings the doorbell (the harness announces a new
/// wait for space before each message), the doorbells that find the queue full or shut are
/// dropped, and every message still arrives, in order, until the hang-up ends the stream.
#[test]
fn a_publisher_that_never_takes_its_doorbells_does_not_block_the_subscriber() {
    use rustix::net::{RecvFlags, Shutdown};
    hostile("unread-doorbells", |scene| {
        for shut in [false, true] {
            let mut image = Image::new(Mode::Gating);
            let (mut sub, conn) = scene.connected(&image, Mode::Gating);
            if shut {
                rustix::net::shutdown(&conn, Shutdown::Read).unwrap();
            }
            // More doorbells than any default queue limit (`net.unix.max_dgram_qlen`, the
            // send buffer) lets through.
            const ROUNDS: u64 = 4096;
            for seq in 0..ROUNDS {
                image.publish(1);
                image.ring.store32(hdr::WRITER_WAITING, seq as u32 + 1);
                expect_message(&mut sub, seq);
            }
            let mut queued = 0u64;
            let mut byte = [0u8; 16];
            while let Ok(n) = rustix::net::recv(&conn, &mut byte, RecvFlags::DONTWAIT) {
                if n.0 == 0 {
                    break;
                }
                queued += 1;
            }
            if shut {
                assert_eq!(queued, 0, "a shut end takes no doorbells");
            } else {
                // Rung on every release, queued until the queue was full, the rest dropped.
                assert!(
                    0 < queued && queued < ROUNDS,
                    "{queued} doorbells queued of {ROUNDS} rung"
                );
            }
            drop(conn);
            let end = sub.recv_timeout(Duration::from_secs(10)).map(|s| s.seq());
            assert!(
                matches!(end, Err(RecvError::Disconnected)),
                "shut: {shut}: {end:?}"
            );
        }
    });
}

// ---------------------------------------------------------------------------------------------
// A thread scribbling over the whole ring while a subscriber reads.

/// How the receives went, by kind.
#[derive(Debug, Default)]
struct Tally {
    messages: u64,
    timeouts: u64,
    lagged: u64,
    disconnected: u64,
    evicted: u64,
    demoted: u64,
    corrupt: BTreeMap<&'static str, u64>,
    /// Anything a hostile ring must not produce from `recv_timeout`.
    unexpected: Vec<String>,
}

impl Tally {
    fn receives(&self) -> u64 {
        self.messages
            + self.timeouts
            + self.lagged
            + self.disconnected
            + self.evicted
            + self.demoted
            + self.corrupt.values().sum::<u64>()
            + self.unexpected.len() as u64
    }

    fn count(&mut self, got: Result<usize, RecvError>) {
        match got {
            Ok(len) if len <= MAX as usize => self.messages += 1,
            Ok(len) => self.unexpected.push(format!("a message of {len} bytes")),
            Err(RecvError::Timeout) => self.timeouts += 1,
            Err(RecvError::Lagged(_)) => self.lagged += 1,
            Err(RecvError::Disconnected) => self.disconnected += 1,
            Err(RecvError::Evicted) => self.evicted += 1,
            Err(RecvError::Demoted) => self.demoted += 1,
            Err(RecvError::Corrupt(e)) => {
                let kind = match e {
                    FrameError::BadMeta(_) => "bad meta",
                    FrameError::TooLong { .. } => "too long",
                    FrameError::CrossesEnd => "crosses end",
                    FrameError::BadPadding => "bad padding",
                    FrameError::BeyondCommit => "beyond commit",
                    FrameError::Sequence { .. } => "sequence",
                    FrameError::Position(_) => "position",
                };
                *self.corrupt.entry(kind).or_default() += 1;
            }
            Err(e) => self.unexpected.push(format!("{e:?}")),
        }
    }
}

/// The harness's publisher while scribbling: the real writer runs over a private copy of the
/// ring (so its own bookkeeping never reads the damage), each round is copied into the shared
/// ring, and then the damage is done there.
struct Scribbler<'a> {
    shadow: Region,
    writer: Writer<()>,
    ring: &'a Memfd,
    cb: &'a Memfd,
    rng: Rng,
    /// Consecutive rounds the gating subscriber held the writer back.
    full: u32,
    sent: u64,
    damage: u64,
}

impl Scribbler<'_> {
    fn shadow_word(&self, off: usize) -> &AtomicU64 {
        assert!(off % 8 == 0 && off + 8 <= self.shadow.len());
        // SAFETY: in bounds and 8-aligned (the region base is 128-aligned); the region lives
        // as long as `self`, and only this thread's writer and atomics touch it.
        unsafe { AtomicU64::from_ptr(self.shadow.as_ptr().add(off).cast()) }
    }

    /// Publishes a few messages on the private ring and copies it into the shared one.
    fn publish(&mut self) {
        let mut futex = false;
        for _ in 0..1 + self.rng.below(4) {
            let len = self.rng.below(MAX + 1) as usize;
            let seq = self.writer.next_seq();
            match self.writer.send(&vec![seq as u8; len], |_| {}) {
                Ok(w) => {
                    futex |= w.futex;
                    self.sent += 1;
                    self.full = 0;
                }
                Err(_) => {
                    self.full += 1;
                    if self.full == 2000 {
                        // The stall bound a real publisher would have: stop waiting for it.
                        let id = shmcast_core::SubscriberId(1);
                        self.writer.demote(id);
                    }
                    break;
                }
            }
        }
        for off in (0..self.shadow.len()).step_by(8) {
            let word = self.shadow_word(off).load(Ordering::Relaxed);
            self.ring.store64(off, word);
        }
        self.cb.store32(ctl::STATE, STATE_ACTIVE);
        if futex {
            let _ = rustix::thread::futex::wake(
                self.ring.u32_at(hdr::WAKE),
                rustix::thread::futex::Flags::empty(),
                u32::MAX,
            );
        }
    }

    /// Random damage: anywhere, to the positions, to the static header, to frame headers, to
    /// sequence numbers, to the flags, to the control block.
    fn scribble(&mut self) {
        let len = self.ring.len;
        let rng = &mut self.rng;
        let frame_off = |rng: &mut Rng| HEADER_LEN + (rng.below(CAP / 16) * 16) as usize;
        match rng.below(16) {
            0..=3 => {
                let off = (rng.below(len / 8) * 8) as usize;
                self.ring.store64(off, rng.next());
            }
            4..=5 => {
                let off = (rng.below(len / 8) * 8) as usize;
                self.ring
                    .u64_at(off)
                    .fetch_xor(1 << rng.below(64), Ordering::Relaxed);
            }
            6..=8 => {
                let offs = [hdr::COMMITTED, hdr::NEXT_SEQ, hdr::RESERVED, hdr::TAIL];
                let word = self.ring.u64_at(offs[rng.below(4) as usize]);
                let now = word.load(Ordering::Relaxed);
                let value = match rng.below(5) {
                    0 => rng.next(),
                    1 => now.wrapping_add((rng.below(9) * 16).wrapping_sub(64)),
                    2 => now.wrapping_add(8),
                    3 => now.wrapping_add(CAP + 16),
                    _ => [0, u64::MAX, TOP][rng.below(3) as usize],
                };
                word.store(value, Ordering::Relaxed);
            }
            9 => {
                let offs = [
                    hdr::MAGIC,
                    hdr::VERSION,
                    hdr::CAPACITY,
                    hdr::MAX_PAYLOAD,
                    hdr::TOTAL_LEN,
                ];
                let off = offs[rng.below(5) as usize] & !7;
                self.ring.store64(off, rng.next());
            }
            10..=11 => {
                let kind = [MESSAGE, PADDING, rng.below(256)][rng.below(3) as usize];
                let len = [rng.below(MAX + 64), rng.next() & 0xffff_ffff][rng.below(2) as usize];
                let off = frame_off(rng);
                self.ring.store64(off, meta(kind, len as u32));
            }
            12..=13 => {
                let off = frame_off(rng) + 8;
                let word = self.ring.u64_at(off);
                let now = word.load(Ordering::Relaxed);
                let value = [now.wrapping_sub(1), now.wrapping_add(1), rng.next(), 0];
                word.store(value[rng.below(4) as usize], Ordering::Relaxed);
            }
            14 => {
                let offs = [hdr::CLOSED, hdr::WRITER_WAITING, hdr::WAKE];
                let value = [0, 1, rng.next() as u32][rng.below(3) as usize];
                self.ring.store32(offs[rng.below(3) as usize], value);
            }
            _ => {
                let (off, value) = match rng.below(4) {
                    0 => (ctl::STATE, STATE_EVICTED),
                    1 => (ctl::STATE, rng.next() as u32),
                    2 => (ctl::MODE, MODE_LOSSY),
                    _ => (ctl::START_POS, rng.next() as u32),
                };
                self.cb.store32(off, value);
            }
        }
        self.damage += 1;
    }
}

/// Where the scribbler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScribbleFrom {
    /// A thread of this process: a gating subscriber reads only the lengths of in-place
    /// samples, as reading their bytes would race the thread outside Rust's model.
    Thread,
    /// A child process forked from this one: the subscriber reads every byte, as it would
    /// under a hostile publisher process.
    Process,
}

/// The loop a scribbler runs until `stop`: publish now and then, damage a few words, breathe.
fn scribble_until(scribbler: &mut Scribbler<'_>, stop: &AtomicU64) {
    let mut round = 0u64;
    while stop.load(Ordering::Relaxed) == 0 {
        if scribbler.rng.below(4) != 0 {
            scribbler.publish();
        }
        for _ in 0..scribbler.rng.below(4) {
            scribbler.scribble();
        }
        round += 1;
        if round % 8 == 0 {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            std::thread::yield_now();
        }
    }
}

/// Scribbles over a ring one subscriber reads in `mode`, for `run_for` and at least 2000
/// receives; returns how they went.
fn scribble_while_receiving(
    scene: &Scene,
    mode: Mode,
    seed: u64,
    run_for: Duration,
    from: ScribbleFrom,
) -> Tally {
    const MIN_RECEIVES: u64 = 2000;
    let cfg = RingConfig::new(CAP, MAX).unwrap();
    let ring = Memfd::new(cfg.region_len() as u64);
    let cb = Memfd::new(CONTROL_BLOCK_LEN as u64);
    // The stop flag and what the scribbler reports, shared with a forked scribbler.
    let shared = Memfd::new(4096);
    let (stop, sent, damage) = (shared.u64_at(0), shared.u64_at(8), shared.u64_at(16));
    let shadow = Region::heap(cfg.region_len());
    let mut writer = Writer::new(shadow.clone(), cfg).unwrap();
    writer.admit(cb.region(), mode, Start::Newest, ()).unwrap();
    let mut scribbler = Scribbler {
        shadow,
        writer,
        ring: &ring,
        cb: &cb,
        // Never zero: xorshift would stay there.
        rng: Rng(seed | 1),
        full: 0,
        sent: 0,
        damage: 0,
    };
    scribbler.publish();
    ring.seal(RING_SEALS);
    cb.seal(CONTROL_SEALS);
    let welcome = encode_welcome(ring.len, CONTROL_BLOCK_LEN as u64);
    let (sub, conn) = scene.connect(&welcome, &[ring.fd(), cb.fd()], mode);
    let mut sub = sub.expect("the ring is correct when the subscriber connects");

    let mut tally = Tally::default();
    // The first message arrives before any scribbling, so every run has one that got through.
    tally.count(sub.recv_timeout(Duration::from_secs(60)).map(|s| s.len()));
    assert_eq!(tally.messages, 1, "{mode:?}: the untouched ring: {tally:?}");
    let receive = |sub: &mut Subscriber, tally: &mut Tally| {
        let start = Instant::now();
        let mut buf = Vec::new();
        let mut checksum = 0u64;
        // Until the run time, the receive count and a noticed damage are all reached; only a
        // subscriber that never notices damage meets the bound.
        while start.elapsed() < run_for
            || tally.receives() < MIN_RECEIVES
            || tally.corrupt.is_empty()
        {
            if start.elapsed() > Duration::from_secs(30) {
                break;
            }
            let got = sub.recv_timeout(Duration::from_millis(2)).map(|sample| {
                if mode == Mode::Lossy {
                    // A lossy sample is the subscriber's own validated copy.
                    buf.clear();
                    buf.extend_from_slice(&sample);
                } else if from == ScribbleFrom::Process {
                    // In place, in the ring the other process scribbles on.
                    checksum = sample
                        .iter()
                        .fold(checksum, |a, &b| a.rotate_left(5) ^ b as u64);
                }
                sample.len()
            });
            tally.count(got);
        }
        std::hint::black_box(checksum);
    };
    match from {
        ScribbleFrom::Thread => std::thread::scope(|s| {
            let harness = s.spawn(|| {
                scribble_until(&mut scribbler, stop);
                sent.store(scribbler.sent, Ordering::Relaxed);
                damage.store(scribbler.damage, Ordering::Relaxed);
            });
            receive(&mut sub, &mut tally);
            stop.store(1, Ordering::Relaxed);
            harness.join().unwrap();
        }),
        ScribbleFrom::Process => {
            // SAFETY: the child only runs the scribbling loop (its memory is a copy of ours, the
            // ring, control block and flags shared mappings) and leaves with `_exit`, never
            // returning into the test harness; glibc's malloc is safe to use after `fork`.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
            if pid == 0 {
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    scribble_until(&mut scribbler, stop);
                    sent.store(scribbler.sent, Ordering::Relaxed);
                    damage.store(scribbler.damage, Ordering::Relaxed);
                }));
                // SAFETY: ends the child at once, without running the parent's exit handlers.
                unsafe { libc::_exit(i32::from(run.is_err())) };
            }
            receive(&mut sub, &mut tally);
            stop.store(1, Ordering::Relaxed);
            let mut status = 0;
            // SAFETY: waits for our own child; `status` is a valid out-pointer.
            let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
            assert_eq!(rc, pid, "waitpid: {}", std::io::Error::last_os_error());
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "the scribbling process failed: status {status:#x}"
            );
        }
    }
    drop(conn);
    drop(sub);
    let (sent, damage) = (sent.load(Ordering::Relaxed), damage.load(Ordering::Relaxed));
    println!(
        "{mode:?}, scribbler in a {from:?} (seed {seed:#x}): {sent} messages sent, {damage} \
         words damaged: {tally:?}"
    );
    tally
}

/// The outcomes every scribbled run must show: only typed ones, some messages, some damage.
fn check_scribbled(mode: Mode, tally: &Tally) {
    assert!(
        tally.unexpected.is_empty(),
        "{mode:?}: {:?}",
        tally.unexpected
    );
    assert!(
        tally.messages > 0,
        "{mode:?}: no message got through: {tally:?}"
    );
    let corrupt: u64 = tally.corrupt.values().sum();
    assert!(corrupt > 0, "{mode:?}: no damage was noticed: {tally:?}");
}

/// Scribbles from `from` while a gating and then a lossy subscriber receive, each for 1.5 s,
/// and checks each run.
fn scribble_in_both_modes(name: &str, from: ScribbleFrom) {
    let seed = scribble_seed();
    hostile(name, |scene| {
        for (i, mode) in BOTH.into_iter().enumerate() {
            let run = Duration::from_millis(1500);
            let seed = seed.wrapping_add(i as u64);
            let tally = scribble_while_receiving(scene, mode, seed, run, from);
            check_scribbled(mode, &tally);
        }
    });
}

/// The seed of a scribbling run: `SHMCAST_HOSTILE_SEED=<hex>` replays a printed one.
fn scribble_seed() -> u64 {
    std::env::var("SHMCAST_HOSTILE_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            t.map_or(1, |d| d.as_nanos() as u64) ^ u64::from(std::process::id())
        })
}

/// A thread publishes through the real writer and scribbles random bytes over the whole ring
/// (header and data) and the control block while the subscriber receives: every receive
/// returns a message or a typed error, some of each. `SHMCAST_HOSTILE_SEED=<hex>` replays a
/// printed run: the gating subscriber's scribbler uses that seed, the lossy one's the next.
#[test]
fn scribbling_over_the_whole_ring_yields_only_typed_outcomes() {
    scribble_in_both_modes("scribble", ScribbleFrom::Thread);
}

/// The same scribbler as a separate process, as a hostile publisher would be: now the gating
/// subscriber reads every byte of its in-place samples while the other process writes them.
/// Every receive still returns a message or a typed error, some of each.
#[test]
fn a_scribbler_in_another_process_yields_only_typed_outcomes() {
    scribble_in_both_modes("scribble-process", ScribbleFrom::Process);
}
