//! Sealed memfds mapped with [`memmap2::MmapRaw`]: the data ring and the per-subscriber control
//! blocks.
//!
//! The publisher creates both kinds with [`SharedMemory`]: it sizes the memfd, maps it read-write,
//! and only then seals it, because `F_SEAL_FUTURE_WRITE` may be added while a writable mapping
//! exists and keeps that mapping writable. On the data ring it refuses every later writable
//! `mmap`, `write()`, `fallocate` and `mprotect`, by anyone holding the descriptor, including
//! through a re-open of `/proc/self/fd/N` (memfd inodes are mode 0666, so a read-only descriptor
//! alone protects nothing). Control blocks stay writable, since the subscriber writes its cursor
//! there; one subscriber never holds another's.
//!
//! Memory is only ever reached through raw pointers: another process may write it at any time.
//!
//! # Failure
//!
//! A subscriber maps only what it has checked: [`map_ring_readonly`] and [`map_control_block`]
//! refuse a descriptor that lacks the seals ([`MapError::NotSealed`]) or whose size is not the
//! one the protocol needs. `F_SEAL_SHRINK` is what makes the size check last: a sealed file
//! cannot be truncated under the mapping, so reading it cannot raise `SIGBUS`.

// Some accessors serve only the tests.
#![allow(dead_code)]
// Regions over mappings: the one place a mapping becomes a core `Region`.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use memmap2::{MmapOptions, MmapRaw};
use shmcast_core::layout::MAX_CAPACITY;
use shmcast_core::{HEADER_LEN, Region};

use crate::error::MapError;
use crate::sys::{self, fs::SealFlags, reaper::Received};

/// Seals of the data ring: fixed size, no new writers, no further seals.
pub(crate) const RING_SEALS: SealFlags = SealFlags::SHRINK
    .union(SealFlags::GROW)
    .union(SealFlags::FUTURE_WRITE)
    .union(SealFlags::SEAL);

/// Seals of a control block: fixed size and no further seals; both sides keep writing it.
pub(crate) const CONTROL_SEALS: SealFlags = SealFlags::SHRINK
    .union(SealFlags::GROW)
    .union(SealFlags::SEAL);

/// Largest region this module creates or maps: the largest ring (1 TiB of data) with its
/// header. A peer's descriptor claiming more is refused rather than mapped.
pub(crate) const MAX_MAPPING_LEN: u64 = HEADER_LEN as u64 + MAX_CAPACITY;

/// A memfd this process created, mapped read-write and sealed.
///
/// Unmapped and closed on drop; peers that received the descriptor keep the memory alive.
#[derive(Debug)]
pub(crate) struct SharedMemory {
    map: MmapRaw,
    fd: OwnedFd,
}

impl SharedMemory {
    /// Creates the data ring: `len` zeroed bytes sealed with [`RING_SEALS`].
    ///
    /// Only the returned mapping can write the ring; every other writer is refused by the kernel.
    pub(crate) fn create_sealed_ring(name: &str, len: usize) -> io::Result<Self> {
        Self::create(name, len, RING_SEALS)
    }

    /// Creates a subscriber's control block: `len` zeroed bytes sealed with [`CONTROL_SEALS`],
    /// which the subscriber may map writable.
    pub(crate) fn create_control_block(name: &str, len: usize) -> io::Result<Self> {
        Self::create(name, len, CONTROL_SEALS)
    }

    fn create(name: &str, len: usize, seals: SealFlags) -> io::Result<Self> {
        let size = u64::try_from(len).unwrap_or(u64::MAX);
        if len == 0 || size > MAX_MAPPING_LEN {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        // A memfd counts against the file size limit: sizing it past the limit would raise
        // SIGXFSZ, whose default action kills the whole process.
        let limit = sys::process::file_size_limit();
        if size > limit {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "{size} bytes of shared memory exceed this process's file size limit \
                     (RLIMIT_FSIZE, `ulimit -f`) of {limit} bytes"
                ),
            ));
        }
        let fd = sys::fs::memfd_create_sealable(name)?;
        sys::fs::ftruncate(fd.as_fd(), size)?;
        // Map before sealing: FUTURE_WRITE refuses new writable mappings but spares this one.
        let map = MmapOptions::new().len(len).map_raw(&fd)?;
        sys::fs::add_seals(fd.as_fd(), seals)?;
        Ok(Self { map, fd })
    }

    /// The start of the writable mapping. Other processes may read (and, for a control block,
    /// write) these bytes concurrently: access them only through raw pointers or atomics.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// The mapping's length in bytes, equal to the memfd's sealed size.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The memfd, to send to a subscriber.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Parts with the memfd, keeping only the mapping: for a control block, whose descriptor
    /// is sent once. Holding it open would let any process of our uid open the block read-write
    /// through `/proc/<pid>/fd` and write a subscriber's cursor.
    pub(crate) fn into_mapping(self) -> (WritableMapping, OwnedFd) {
        (WritableMapping { map: self.map }, self.fd)
    }

    /// The whole mapping as a core [`Region`], which keeps it (and the memfd) alive.
    pub(crate) fn region(self: &Arc<Self>) -> Result<Region, MapError> {
        // SAFETY: the mapping is `len()` bytes, page-aligned and read-write, and it lives as long
        // as the Arc handed over as the region's owner.
        unsafe { Region::from_raw_parts(self.as_ptr(), self.len(), self.clone()) }
            .ok_or(MapError::Misaligned)
    }
}

/// A subscriber's read-only view of the data ring, checked by [`map_ring_readonly`].
#[derive(Debug)]
pub(crate) struct ReadOnlyMapping {
    map: MmapRaw,
}

impl ReadOnlyMapping {
    /// The start of the mapping. The publisher writes these bytes concurrently, and a write
    /// through this pointer faults.
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.map.as_ptr()
    }

    /// The mapping's length in bytes, equal to the memfd's sealed size.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

/// A subscriber's read-write view of its control block, checked by [`map_control_block`].
#[derive(Debug)]
pub(crate) struct WritableMapping {
    map: MmapRaw,
}

impl WritableMapping {
    /// The start of the mapping. The publisher reads and writes these bytes concurrently.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// The mapping's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

/// The names of `seals` (`"SHRINK"`, ...), for errors that must not expose the syscall layer's
/// types.
fn seal_names(seals: SealFlags) -> Vec<&'static str> {
    seals.iter_names().map(|(name, _)| name).collect()
}

/// Fails unless `fd` carries every seal in `required`.
fn check_seals(fd: BorrowedFd<'_>, required: SealFlags) -> Result<(), MapError> {
    let seals = match sys::fs::get_seals(fd) {
        Ok(seals) => seals,
        // Not a sealable file at all.
        Err(err) if err.kind() == io::ErrorKind::InvalidInput => SealFlags::empty(),
        Err(err) => return Err(err.into()),
    };
    let missing = required.difference(seals);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(MapError::NotSealed {
            missing: seal_names(missing),
        })
    }
}

/// Maps a data ring received from the publisher, read-only, after checking it.
///
/// Requires [`RING_SEALS`] and a size of at least `min_len` bytes (and at least one, at most
/// [`MAX_MAPPING_LEN`]). The whole file is mapped; the descriptor is closed afterwards (the
/// mapping keeps the memory alive). The seals are checked before the size because only they make
/// the size final, and before the descriptor is kept: only sealed shared memory, whose close
/// never waits, is closed here; anything else goes to the reaper thread.
pub(crate) fn map_ring_readonly(fd: Received, min_len: usize) -> Result<ReadOnlyMapping, MapError> {
    check_seals(fd.as_fd(), RING_SEALS)?;
    let fd = fd.keep();
    let size = sys::fs::fstat_size(fd.as_fd())?;
    let min = u64::try_from(min_len).unwrap_or(u64::MAX).max(1);
    if size < min {
        return Err(MapError::TooSmall { size, min });
    }
    let too_large = MapError::TooLarge {
        size,
        max: MAX_MAPPING_LEN,
    };
    if size > MAX_MAPPING_LEN {
        return Err(too_large);
    }
    let len = usize::try_from(size).map_err(|_| too_large)?;
    let map = MmapOptions::new().len(len).map_raw_read_only(&fd)?;
    Ok(ReadOnlyMapping { map })
}

/// Maps a control block received from the publisher, read-write, after checking it.
///
/// Requires [`CONTROL_SEALS`] and a size of exactly `len` bytes (not zero). The descriptor is
/// kept once its seals are checked, as [`map_ring_readonly`] does, and closed afterwards.
pub(crate) fn map_control_block(fd: Received, len: usize) -> Result<WritableMapping, MapError> {
    check_seals(fd.as_fd(), CONTROL_SEALS)?;
    let fd = fd.keep();
    let size = sys::fs::fstat_size(fd.as_fd())?;
    let expected = u64::try_from(len).unwrap_or(u64::MAX);
    if len == 0 || size != expected {
        return Err(MapError::WrongSize { size, expected });
    }
    let map = MmapOptions::new().len(len).map_raw(&fd)?;
    Ok(WritableMapping { map })
}

/// Maps a data ring received from the publisher as [`map_ring_readonly`] does, as a core
/// [`Region`] that keeps the mapping alive.
pub(crate) fn ring_region(fd: Received, min_len: usize) -> Result<Region, MapError> {
    let map = Arc::new(map_ring_readonly(fd, min_len)?);
    let (ptr, len) = (map.as_ptr().cast_mut(), map.len());
    // SAFETY: read-only mapping of `len` bytes, sealed against shrinking (checked by
    // map_ring_readonly), page-aligned, kept alive by the Arc owner; a reader never stores into
    // a ring region.
    unsafe { Region::from_raw_parts(ptr, len, map) }.ok_or(MapError::Misaligned)
}

/// Maps a control block received from the publisher as [`map_control_block`] does, as a core
/// [`Region`] that keeps the mapping alive.
pub(crate) fn control_block_region(fd: Received, len: usize) -> Result<Region, MapError> {
    writable_region(map_control_block(fd, len)?)
}

/// A control block's mapping (a subscriber's, checked by [`map_control_block`], or the
/// publisher's own from [`SharedMemory::into_mapping`]) as a core [`Region`] that keeps it alive.
pub(crate) fn writable_region(map: WritableMapping) -> Result<Region, MapError> {
    let map = Arc::new(map);
    let (ptr, len) = (map.as_ptr(), map.len());
    // SAFETY: read-write mapping of `len` bytes of a memfd sealed against shrinking and growing
    // (created so, or checked by map_control_block), page-aligned, kept alive by the Arc owner.
    unsafe { Region::from_raw_parts(ptr, len, map) }.ok_or(MapError::Misaligned)
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;
    use std::fs::{File, OpenOptions};
    use std::io::Write;
    use std::os::fd::AsRawFd;

    const LEN: usize = 4096;

    /// A copy of `fd` as a subscriber receives it from its publisher.
    fn dup(fd: BorrowedFd<'_>) -> Received {
        Received::new(fd.try_clone_to_owned().unwrap())
    }

    /// What a hostile subscriber gets by re-opening its ring descriptor for writing.
    fn reopen_rw(fd: BorrowedFd<'_>) -> File {
        let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap()
    }

    fn assert_denied(result: io::Result<impl std::fmt::Debug>, what: &str) {
        let err = result.expect_err(what);
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{what}: {err}");
    }

    fn read(ptr: *const u8, at: usize) -> u8 {
        // SAFETY: every caller passes `at` < LEN into a live mapping of LEN bytes; volatile
        // because the same bytes are written through another mapping.
        unsafe { ptr.add(at).read_volatile() }
    }

    fn write(ptr: *mut u8, at: usize, value: u8) {
        // SAFETY: as in `read`; the mapping is writable and no reference covers these bytes.
        unsafe { ptr.add(at).write_volatile(value) }
    }

    #[test]
    fn ring_is_sealed_and_the_publisher_mapping_stays_writable() {
        let ring = SharedMemory::create_sealed_ring("shmcast-test-ring", LEN).unwrap();
        assert_eq!(ring.len(), LEN);
        assert!(sys::fs::get_seals(ring.fd()).unwrap().contains(RING_SEALS));
        assert_eq!(read(ring.as_ptr(), LEN - 1), 0, "a new ring is zeroed");

        let view = map_ring_readonly(dup(ring.fd()), LEN).unwrap();
        assert_eq!(view.len(), LEN);
        write(ring.as_ptr(), 0, 0xAB);
        write(ring.as_ptr(), LEN - 1, 0xCD);
        assert_eq!(read(view.as_ptr(), 0), 0xAB);
        assert_eq!(read(view.as_ptr(), LEN - 1), 0xCD);
    }

    /// Everything a subscriber holding the ring descriptor could try, refused by the kernel,
    /// while the publisher keeps writing.
    #[test]
    fn sealed_ring_refuses_every_other_writer() {
        let ring = SharedMemory::create_sealed_ring("shmcast-test-attack", LEN).unwrap();
        let fd = ring.fd();

        // (a) a new shared writable mapping of the descriptor itself.
        assert_denied(
            MmapOptions::new().len(LEN).map_raw(&fd),
            "mmap(PROT_WRITE, MAP_SHARED)",
        );

        // (b) re-opening /proc/self/fd/N for writing succeeds, but nothing written gets through.
        let mut file = reopen_rw(fd);
        assert_denied(
            MmapOptions::new().len(LEN).map_raw(&file),
            "mmap of the re-opened file",
        );
        assert_denied(file.write(b"x"), "write()");
        assert_denied(
            rustix::fs::fallocate(
                &file,
                rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
                0,
                LEN as u64,
            )
            .map_err(io::Error::from),
            "fallocate(PUNCH_HOLE)",
        );
        assert_denied(
            sys::fs::add_seals(file.as_fd(), SealFlags::WRITE),
            "adding seals",
        );

        // (c) resizing, through either descriptor.
        assert_denied(sys::fs::ftruncate(fd, 0), "ftruncate shrink");
        assert_denied(sys::fs::ftruncate(fd, 2 * LEN as u64), "ftruncate grow");
        assert_denied(file.set_len(1), "set_len on the re-opened file");

        // Upgrading a read-only mapping.
        let view = map_ring_readonly(dup(fd), LEN).unwrap();
        let upgrade = || {
            let flags = rustix::mm::MprotectFlags::READ | rustix::mm::MprotectFlags::WRITE;
            // SAFETY: the range is exactly the live mapping `view`; no reference covers it, so
            // changing its protection (which the kernel refuses here anyway) breaks nothing.
            unsafe { rustix::mm::mprotect(view.as_ptr().cast_mut().cast(), LEN, flags) }
        };
        assert_denied(upgrade().map_err(io::Error::from), "mprotect(PROT_WRITE)");

        // A private copy-on-write mapping may be written, but only the copy changes.
        // SAFETY: the mapping is private to this test and the file is never truncated (sealed).
        let mut private = unsafe { MmapOptions::new().len(LEN).map_copy(&file) }.unwrap();
        private[0] = 0xEE;
        assert_eq!(read(view.as_ptr(), 0), 0);

        // (d) the publisher's mapping, made before sealing, still writes.
        write(ring.as_ptr(), 0, 0x5A);
        assert_eq!(read(view.as_ptr(), 0), 0x5A);
        assert_eq!(sys::fs::fstat_size(fd).unwrap(), LEN as u64);
    }

    #[test]
    fn control_block_is_writable_by_both_sides_but_fixed_in_size() {
        let block = SharedMemory::create_control_block("shmcast-test-ctl", LEN).unwrap();
        let seals = sys::fs::get_seals(block.fd()).unwrap();
        assert!(seals.contains(CONTROL_SEALS));
        assert!(!seals.intersects(SealFlags::WRITE | SealFlags::FUTURE_WRITE));

        let theirs = map_control_block(dup(block.fd()), LEN).unwrap();
        assert_eq!(theirs.len(), LEN);
        write(theirs.as_ptr(), 8, 1);
        assert_eq!(read(block.as_ptr(), 8), 1);
        write(block.as_ptr(), 9, 2);
        assert_eq!(read(theirs.as_ptr(), 9), 2);

        assert_denied(sys::fs::ftruncate(block.fd(), 0), "ftruncate shrink");
        assert_denied(
            sys::fs::ftruncate(block.fd(), 2 * LEN as u64),
            "ftruncate grow",
        );
        assert_denied(
            sys::fs::add_seals(block.fd(), SealFlags::FUTURE_WRITE),
            "adding seals",
        );
    }

    #[test]
    fn control_block_is_not_accepted_as_a_ring() {
        let block = SharedMemory::create_control_block("shmcast-test-ctl", LEN).unwrap();
        match map_ring_readonly(dup(block.fd()), LEN) {
            Err(MapError::NotSealed { missing }) => {
                assert_eq!(missing, seal_names(SealFlags::FUTURE_WRITE))
            }
            other => panic!("expected NotSealed, got {other:?}"),
        }
    }

    #[test]
    fn unsealed_or_foreign_descriptors_are_refused() {
        let fd = sys::fs::memfd_create_sealable("shmcast-test-unsealed").unwrap();
        sys::fs::ftruncate(fd.as_fd(), LEN as u64).unwrap();
        match map_ring_readonly(dup(fd.as_fd()), LEN) {
            Err(MapError::NotSealed { missing }) => assert_eq!(missing, seal_names(RING_SEALS)),
            other => panic!("expected NotSealed, got {other:?}"),
        }
        sys::fs::add_seals(fd.as_fd(), SealFlags::SHRINK | SealFlags::GROW).unwrap();
        let err = map_ring_readonly(Received::new(fd), LEN).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("F_SEAL_FUTURE_WRITE") && text.contains("F_SEAL_SEAL"),
            "{text}"
        );
        assert!(!text.contains("SHRINK"), "{text}");

        let evfd = sys::event::eventfd_create(true).unwrap();
        match map_ring_readonly(Received::new(evfd), 1) {
            Err(MapError::NotSealed { missing }) => assert_eq!(missing, seal_names(RING_SEALS)),
            other => panic!("expected NotSealed, got {other:?}"),
        }
        let evfd = sys::event::eventfd_create(true).unwrap();
        assert!(matches!(
            map_control_block(Received::new(evfd), LEN),
            Err(MapError::NotSealed { .. })
        ));
    }

    /// A publisher's memfd sealed with exactly `seals` at `size` bytes, never mapped, as a
    /// subscriber receives it.
    fn sealed_memfd(size: u64, seals: SealFlags) -> Received {
        let fd = sys::fs::memfd_create_sealable("shmcast-test-sized").unwrap();
        sys::fs::ftruncate(fd.as_fd(), size).unwrap();
        sys::fs::add_seals(fd.as_fd(), seals).unwrap();
        Received::new(fd)
    }

    #[test]
    fn ring_of_the_wrong_size_is_refused() {
        let fd = sealed_memfd(LEN as u64, RING_SEALS);
        match map_ring_readonly(fd, 2 * LEN) {
            Err(MapError::TooSmall { size, min }) => {
                assert_eq!((size, min), (LEN as u64, 2 * LEN as u64));
            }
            other => panic!("expected TooSmall, got {other:?}"),
        }

        let empty = sealed_memfd(0, RING_SEALS);
        assert!(matches!(
            map_ring_readonly(empty, 0),
            Err(MapError::TooSmall { size: 0, min: 1 })
        ));

        // Sparse: no memory is used.
        let huge = sealed_memfd(MAX_MAPPING_LEN + 1, RING_SEALS);
        assert!(matches!(
            map_ring_readonly(huge, LEN),
            Err(MapError::TooLarge { .. })
        ));
    }

    #[test]
    fn control_block_of_the_wrong_size_is_refused() {
        let fd = sealed_memfd(LEN as u64, CONTROL_SEALS);
        assert!(matches!(
            map_control_block(dup(fd.as_fd()), LEN + 1),
            Err(MapError::WrongSize { .. })
        ));
        assert!(matches!(
            map_control_block(dup(fd.as_fd()), 0),
            Err(MapError::WrongSize { .. })
        ));
        assert!(map_control_block(fd, LEN).is_ok());
    }

    #[test]
    fn creating_an_empty_or_huge_region_is_invalid() {
        for len in [0, usize::MAX] {
            let err = SharedMemory::create_sealed_ring("shmcast-test-bad", len).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
    }
}
