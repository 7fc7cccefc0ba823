//! Shared memory a test controls as a hostile publisher would: a memfd mapped read-write before
//! any seal (a mapping made before `F_SEAL_FUTURE_WRITE` stays writable), sealed as much or as
//! little as the test likes, and written word by word afterwards.

use memmap2::{MmapOptions, MmapRaw};
use rustix::fs::{MemfdFlags, SealFlags};
use shmcast_core::Region;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// What a correct publisher seals its ring with (see the transport's `shm`).
pub const RING_SEALS: SealFlags = SealFlags::SHRINK
    .union(SealFlags::GROW)
    .union(SealFlags::FUTURE_WRITE)
    .union(SealFlags::SEAL);
/// What a correct publisher seals a control block with: its subscriber maps it read-write.
pub const CONTROL_SEALS: SealFlags = SealFlags::SHRINK
    .union(SealFlags::GROW)
    .union(SealFlags::SEAL);

/// A memfd that may be sealed, mapped read-write by the test before any seal.
pub struct Memfd {
    fd: OwnedFd,
    map: Option<Arc<MmapRaw>>,
    /// The file's length when it was created.
    pub len: u64,
}

impl Memfd {
    /// A memfd of `len` bytes, unsealed, and mapped unless it is empty.
    pub fn new(len: u64) -> Memfd {
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
    pub fn seal(&self, seals: SealFlags) {
        let missing = seals.difference(rustix::fs::fcntl_get_seals(&self.fd).unwrap());
        if !missing.is_empty() {
            rustix::fs::fcntl_add_seals(&self.fd, missing).unwrap();
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn map(&self) -> &Arc<MmapRaw> {
        self.map.as_ref().expect("an empty memfd has no mapping")
    }

    /// The mapping as a protocol region, for the real writer.
    pub fn region(&self) -> Region {
        let map = self.map();
        // SAFETY: the mapping is read-write, `map.len()` bytes and page-aligned; the Arc handed
        // over as owner keeps it mapped. Only the protocol and these tests' atomics touch it.
        unsafe { Region::from_raw_parts(map.as_mut_ptr(), map.len(), map.clone()) }
            .expect("a page-aligned mapping")
    }

    /// The 64-bit word at `off`.
    pub fn u64_at(&self, off: usize) -> &AtomicU64 {
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
    pub fn u32_at(&self, off: usize) -> &AtomicU32 {
        let map = self.map();
        assert!(
            off % 4 == 0 && off + 4 <= map.len(),
            "harness bug: word {off}"
        );
        // SAFETY: as in `u64_at`, for a 4-aligned 32-bit word.
        unsafe { AtomicU32::from_ptr(map.as_mut_ptr().add(off).cast()) }
    }

    pub fn store64(&self, off: usize, value: u64) {
        self.u64_at(off).store(value, Ordering::Relaxed);
    }

    pub fn store32(&self, off: usize, value: u32) {
        self.u32_at(off).store(value, Ordering::Relaxed);
    }
}

/// A word of a ring or control block, overwritten.
#[derive(Clone, Copy, Debug)]
pub enum Patch {
    U64(usize, u64),
    U32(usize, u32),
}

/// Overwrites the words `patches` name.
pub fn apply(memfd: &Memfd, patches: &[Patch]) {
    for p in patches {
        match *p {
            Patch::U64(off, v) => memfd.store64(off, v),
            Patch::U32(off, v) => memfd.store32(off, v),
        }
    }
}
