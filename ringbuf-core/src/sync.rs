//! The one place the protocol takes its synchronisation primitives from.
//!
//! Under `--cfg shmcast_loom` these are loom's model-checked types; otherwise the standard ones.
//! Protocol code imports atomics and fences only from here, so the loom models check the very
//! source the transport runs.

#[cfg(shmcast_loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

#[cfg(not(shmcast_loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

#[cfg(shmcast_loom)]
pub(crate) use loom::cell::UnsafeCell;

/// A spin-loop hint; under loom, a yield so the model can schedule the thread we wait for.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(shmcast_loom)]
    loom::thread::yield_now();
    #[cfg(not(shmcast_loom))]
    core::hint::spin_loop();
}
