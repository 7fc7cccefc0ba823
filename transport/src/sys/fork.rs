//! Descriptors a child forked without `exec` must not keep: `pthread_atfork` and `dup3`.
//!
//! A peer learns that a publisher or a subscriber is gone when its end of their connection
//! closes. A child forked from the process (a pre-forking server, a daemon's worker) inherits
//! every descriptor, and its copy of a connection would keep that end open: a subscriber
//! destroyed in the parent would stay admitted (its publisher waiting for it up to the stall
//! bound), and a publisher that died would look alive to its subscribers for as long as the
//! child lives. Each such descriptor is held as a [`PrivateFd`]: in a forked child, a
//! placeholder (an eventfd of no use to anyone) takes its number at once, so the child holds
//! nothing of the connection, and the handle it inherited closes the placeholder when dropped.
//! A child must not use the inherited handles anyway (the crate docs, "Overload and failure").
//!
//! The registry is locked while a fork happens (`pthread_atfork`'s prepare handler takes the
//! lock, the parent's and the child's handlers release it), so the child's list is never half
//! written; a descriptor opened with [`PrivateFd::open`] is registered before any fork can see
//! it. `posix_spawn` (which `std::process::Command` uses when it can) runs no handlers: its
//! child execs at once, and every descriptor here is close-on-exec.

#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::io;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

/// A descriptor that a child forked from this process does not keep (see the module docs).
/// Dereferences to the [`OwnedFd`] it holds.
#[derive(Debug)]
pub(crate) struct PrivateFd {
    /// Closed in `drop`, under the registry's lock: its number may not be reused by another
    /// thread's open before it leaves the registry.
    fd: ManuallyDrop<OwnedFd>,
}

impl PrivateFd {
    /// Opens a descriptor with `open` (which must not block for long, nor fork) while no fork
    /// can happen, and makes it private: no child ever holds it.
    pub(crate) fn open(open: impl FnOnce() -> io::Result<OwnedFd>) -> io::Result<PrivateFd> {
        install();
        let _lock = Lock::take();
        let fd = open()?;
        register(fd.as_raw_fd());
        Ok(PrivateFd {
            fd: ManuallyDrop::new(fd),
        })
    }
}

impl Deref for PrivateFd {
    type Target = OwnedFd;
    fn deref(&self) -> &OwnedFd {
        &self.fd
    }
}

impl AsFd for PrivateFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for PrivateFd {
    fn drop(&mut self) {
        let _lock = Lock::take();
        // SAFETY: the lock is held; the registry is only touched under it.
        let fds = unsafe { &mut *REGISTRY.fds.get() };
        if let Some(at) = fds.iter().position(|&fd| fd == self.fd.as_raw_fd()) {
            fds.swap_remove(at);
        }
        // SAFETY: dropped once, here; the field is never used again.
        unsafe { ManuallyDrop::drop(&mut self.fd) };
    }
}

/// The open private descriptors, and the lock that guards them.
struct Registry {
    locked: AtomicBool,
    fds: UnsafeCell<Vec<RawFd>>,
}

// SAFETY: `fds` is only read or written by a thread that holds `locked` (a `Lock`, or the fork
// handlers between prepare and parent/child).
unsafe impl Sync for Registry {}

static REGISTRY: Registry = Registry {
    locked: AtomicBool::new(false),
    fds: UnsafeCell::new(Vec::new()),
};

static INSTALL: Once = Once::new();

/// The registry's lock, released when dropped (also on a panic of the code holding it).
struct Lock;

impl Lock {
    fn take() -> Lock {
        lock();
        Lock
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        unlock();
    }
}

/// Held for microseconds (a registration, a close, a fork): yielding suffices.
fn lock() {
    while REGISTRY
        .locked
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::thread::yield_now();
    }
}

fn unlock() {
    REGISTRY.locked.store(false, Ordering::Release);
}

/// Adds `fd`; the caller holds the lock.
fn register(fd: RawFd) {
    // SAFETY: the caller holds the lock.
    unsafe { &mut *REGISTRY.fds.get() }.push(fd);
}

/// `pthread_atfork(prepare, parent, child)`—once per process.
fn install() {
    INSTALL.call_once(|| {
        // SAFETY: the handlers are `extern "C"` functions valid for the whole process. On
        // failure (out of memory) children keep their copies, as without this module.
        let _ = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    });
}

extern "C" fn prepare() {
    lock();
}

extern "C" fn parent() {
    unlock();
}

/// In the child, alone: an `eventfd(0, EFD_CLOEXEC)` as the placeholder, `dup3(placeholder,
/// fd, O_CLOEXEC)` over every private descriptor, `close(placeholder)`. Async-signal-safe: no
/// allocation, no lock but ours, which this thread holds. A failure leaves the copies, as
/// without this module.
extern "C" fn child() {
    // SAFETY: the lock taken in `prepare` is held; the child has no other thread.
    let fds = unsafe { &*REGISTRY.fds.get() };
    if !fds.is_empty() {
        // SAFETY: plain syscalls on descriptors this process owns: the placeholder is new, and
        // each registered descriptor is open (replacing it is the point).
        unsafe {
            let placeholder = libc::eventfd(0, libc::EFD_CLOEXEC);
            if placeholder >= 0 {
                for &fd in fds {
                    libc::dup3(placeholder, fd, libc::O_CLOEXEC);
                }
                libc::close(placeholder);
            }
        }
    }
    unlock();
}
