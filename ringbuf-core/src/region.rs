//! A memory region the protocol runs over: a base pointer and a length.
//!
//! The transport hands in a memfd mapping; tests hand in heap memory. Every shared word is reached
//! through an atomic reference produced here, and payload bytes through the copy helpers, so the
//! protocol never holds a `&[u8]` over memory another process may be writing unless the protocol
//! itself guarantees nobody writes it (a gating reader's frame, a writer's reservation).
//!
//! Under `--cfg shmcast_loom` the region is a heap array of loom cells and atomics with the same
//! offsets, so the loom models run the protocol code unchanged.
#![allow(unsafe_code)]

/// Alignment every region's base must have: one cache-line pair, so the layout's 128-byte lines
/// really are separate lines.
pub const REGION_ALIGN: usize = 128;

#[cfg(not(shmcast_loom))]
pub use real::Region;

#[cfg(shmcast_loom)]
pub use model::Region;

#[cfg(not(shmcast_loom))]
mod real {
    use super::REGION_ALIGN;
    use crate::sync::{AtomicU32, AtomicU64, Ordering};
    use core::any::Any;
    use core::ptr::NonNull;
    use std::alloc::{Layout, alloc_zeroed, dealloc};
    use std::sync::Arc;

    /// Copies at least this long take the string-copy path of [`racy_copy`]; shorter ones the
    /// word loop, whose cost has no start-up part (`reader/lossy_copy` in the validate bench).
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    const RACY_STRING_COPY_MIN: usize = 256;

    /// A shared memory region: base pointer, length and whatever keeps the memory alive.
    ///
    /// Cloning is cheap (an `Arc`); the memory stays mapped while any clone lives.
    #[derive(Clone)]
    pub struct Region {
        ptr: NonNull<u8>,
        len: usize,
        _owner: Arc<dyn Any + Send + Sync>,
    }

    // SAFETY: a Region only hands out atomics and raw byte copies whose soundness is argued at
    // each call site; the memory it points to is kept alive by `_owner`, which is Send + Sync.
    unsafe impl Send for Region {}
    // SAFETY: as for Send: shared access goes through atomics or protocol-owned byte ranges.
    unsafe impl Sync for Region {}

    impl core::fmt::Debug for Region {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.debug_struct("Region")
                .field("ptr", &self.ptr)
                .field("len", &self.len)
                .finish()
        }
    }

    struct HeapBlock {
        ptr: NonNull<u8>,
        layout: Layout,
    }

    // SAFETY: the block is plain memory owned by this struct; it is only freed in Drop.
    unsafe impl Send for HeapBlock {}
    // SAFETY: HeapBlock itself exposes nothing; access goes through Region.
    unsafe impl Sync for HeapBlock {}

    impl Drop for HeapBlock {
        fn drop(&mut self) {
            // SAFETY: `ptr` came from `alloc_zeroed(self.layout)` and is freed exactly once.
            unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
        }
    }

    impl Region {
        /// Zeroed heap memory of `len` bytes, aligned to [`REGION_ALIGN`](super::REGION_ALIGN).
        ///
        /// For tests and for single-process use of the protocol.
        ///
        /// # Panics
        /// If the allocation fails or `len` overflows a layout.
        pub fn heap(len: usize) -> Region {
            let layout = Layout::from_size_align(len.max(1), REGION_ALIGN).expect("region layout");
            // SAFETY: the layout has a non-zero size.
            let raw = unsafe { alloc_zeroed(layout) };
            let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
            let owner = Arc::new(HeapBlock { ptr, layout });
            Region {
                ptr,
                len,
                _owner: owner,
            }
        }

        /// Wraps memory that something else owns (a memory mapping, for instance).
        ///
        /// Returns `None` if `ptr` is null or not aligned to [`REGION_ALIGN`](super::REGION_ALIGN).
        ///
        /// # Safety
        /// `[ptr, ptr + len)` must stay valid for reads for as long as `owner` lives, and for
        /// writes too if the protocol will write it (a writer's ring, either side's control
        /// block). Other processes may access it concurrently only through the shmcast protocol.
        pub unsafe fn from_raw_parts(
            ptr: *mut u8,
            len: usize,
            owner: Arc<dyn Any + Send + Sync>,
        ) -> Option<Region> {
            let ptr = NonNull::new(ptr)?;
            if ptr.as_ptr() as usize % REGION_ALIGN != 0 {
                return None;
            }
            Some(Region {
                ptr,
                len,
                _owner: owner,
            })
        }

        /// The region's length in bytes.
        pub fn len(&self) -> usize {
            self.len
        }

        /// Whether the region is empty.
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }

        /// The base pointer.
        pub fn as_ptr(&self) -> *mut u8 {
            self.ptr.as_ptr()
        }

        #[inline]
        fn check(&self, off: usize, len: usize, align: usize) {
            let end = off.checked_add(len);
            assert!(
                off % align == 0 && end.is_some_and(|e| e <= self.len),
                "region access {off}+{len} outside 0..{} (internal invariant)",
                self.len
            );
        }

        /// The 64-bit shared word at `off`.
        ///
        /// # Panics
        /// If `off` is misaligned or out of bounds: callers validate offsets derived from shared
        /// memory before calling, so this only fires on a bug in this crate.
        #[inline]
        pub(crate) fn u64_at(&self, off: usize) -> &AtomicU64 {
            self.check(off, 8, 8);
            // SAFETY: in bounds and 8-aligned (base is 128-aligned); the memory lives as long as
            // `self`, and every access to shared words goes through atomics.
            unsafe { &*self.ptr.as_ptr().add(off).cast::<AtomicU64>() }
        }

        /// The 32-bit shared word at `off`. Panics as [`u64_at`](Self::u64_at).
        #[inline]
        pub(crate) fn u32_at(&self, off: usize) -> &AtomicU32 {
            self.check(off, 4, 4);
            // SAFETY: in bounds and 4-aligned; as in `u64_at`.
            unsafe { &*self.ptr.as_ptr().add(off).cast::<AtomicU32>() }
        }

        /// Copies `dst.len()` bytes from `off` with word-sized atomic loads, so a concurrent
        /// overwrite yields stale or torn bytes but never undefined behaviour. The caller
        /// validates the copy afterwards.
        ///
        /// `off` must be 8-aligned and the copy is rounded up to whole words, which must lie in
        /// the region (frames are padded to 16 bytes, so they do).
        pub(crate) fn copy_racy(&self, off: usize, dst: &mut [u8]) {
            let words = dst.len().div_ceil(8);
            self.check(off, words * 8, 8);
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            if dst.len() >= RACY_STRING_COPY_MIN {
                // SAFETY: `[off, off + dst.len())` lies in the region (checked above) and `dst`
                // is a distinct, writable buffer of that length.
                unsafe { crate::racy_copy::string_copy(self.ptr.as_ptr().add(off), dst) };
                return;
            }
            let mut chunks = dst.chunks_mut(8);
            for (i, chunk) in chunks.by_ref().enumerate() {
                // SAFETY: word `i` lies inside the range checked above and is 8-aligned.
                let word = unsafe { &*self.ptr.as_ptr().add(off + i * 8).cast::<AtomicU64>() };
                let bytes = word.load(Ordering::Relaxed).to_ne_bytes();
                chunk.copy_from_slice(&bytes[..chunk.len()]);
            }
        }

        /// Copies `dst.len()` bytes from `off` with plain loads.
        ///
        /// # Safety
        /// Nobody writes `[off, off + dst.len())` during the copy, and its last write
        /// happens-before this call (the protocol's commit/acquire edge).
        pub(crate) unsafe fn read_bytes(&self, off: usize, dst: &mut [u8]) {
            self.check(off, dst.len(), 1);
            // SAFETY: in bounds (checked); no concurrent writer by the caller's contract.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    self.ptr.as_ptr().add(off),
                    dst.as_mut_ptr(),
                    dst.len(),
                )
            }
        }

        /// Writes `src` at `off` with word-sized atomic stores, zero-filling the last word, so
        /// that a lossy reader copying the same bytes concurrently (even in this process) races
        /// with nothing but atomics. `off` must be 8-aligned and the rounded-up range in bounds.
        pub(crate) fn write_words(&self, off: usize, src: &[u8]) {
            let words = src.len().div_ceil(8);
            self.check(off, words * 8, 8);
            for (i, chunk) in src.chunks(8).enumerate() {
                let mut bytes = [0u8; 8];
                bytes[..chunk.len()].copy_from_slice(chunk);
                // SAFETY: word `i` lies inside the range checked above and is 8-aligned.
                let word = unsafe { &*self.ptr.as_ptr().add(off + i * 8).cast::<AtomicU64>() };
                word.store(u64::from_ne_bytes(bytes), Ordering::Relaxed);
            }
        }

        /// A shared view of `[off, off + len)`.
        ///
        /// # Safety
        /// Nobody writes the range while the returned slice lives, and its last write
        /// happens-before this call.
        pub(crate) unsafe fn slice(&self, off: usize, len: usize) -> &[u8] {
            self.check(off, len, 1);
            // SAFETY: in bounds (checked); immutable for the slice's life by the caller's contract.
            unsafe { core::slice::from_raw_parts(self.ptr.as_ptr().add(off), len) }
        }

        /// An exclusive view of `[off, off + len)`.
        ///
        /// # Safety
        /// The caller owns the range for the slice's life (a writer's reservation)
        /// and creates no other reference to it meanwhile.
        #[allow(clippy::mut_from_ref)]
        pub(crate) unsafe fn slice_mut(&self, off: usize, len: usize) -> &mut [u8] {
            self.check(off, len, 1);
            // SAFETY: in bounds (checked); exclusive for the slice's life by the caller's contract.
            unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr().add(off), len) }
        }
    }
}

#[cfg(shmcast_loom)]
mod model {
    use crate::sync::{AtomicU32, AtomicU64, Ordering, UnsafeCell};
    use std::sync::Arc;

    /// One 8-byte word of the modelled region. Header and frame words are read and written as
    /// atomics (`a`, or `lo`/`hi` for 32-bit fields); payload bytes live in `cell`, so a payload
    /// access without a happens-before edge is a loom data race. Payload writes also mirror into
    /// `a`, which is what a lossy (racy, validate-after) copy reads.
    struct Word {
        a: AtomicU64,
        lo: AtomicU32,
        hi: AtomicU32,
        cell: UnsafeCell<u64>,
    }

    /// The loom model of a region: same offsets, loom-tracked words.
    #[derive(Clone)]
    pub struct Region {
        words: Arc<Vec<Word>>,
        len: usize,
    }

    // SAFETY: every word is a loom atomic or a loom cell; loom checks each access for races.
    unsafe impl Send for Region {}
    // SAFETY: as for Send.
    unsafe impl Sync for Region {}

    impl core::fmt::Debug for Region {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.debug_struct("Region").field("len", &self.len).finish()
        }
    }

    impl Region {
        /// A zeroed model region of `len` bytes (rounded up to whole words).
        pub fn heap(len: usize) -> Region {
            let words = (0..len.div_ceil(8))
                .map(|_| Word {
                    a: AtomicU64::new(0),
                    lo: AtomicU32::new(0),
                    hi: AtomicU32::new(0),
                    cell: UnsafeCell::new(0),
                })
                .collect();
            Region {
                words: Arc::new(words),
                len,
            }
        }

        /// The region's length in bytes.
        pub fn len(&self) -> usize {
            self.len
        }

        /// Whether the region is empty.
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }

        pub(crate) fn u64_at(&self, off: usize) -> &AtomicU64 {
            assert!(off % 8 == 0 && off + 8 <= self.len);
            &self.words[off / 8].a
        }

        pub(crate) fn u32_at(&self, off: usize) -> &AtomicU32 {
            assert!(off % 4 == 0 && off + 4 <= self.len);
            let w = &self.words[off / 8];
            if off % 8 == 0 { &w.lo } else { &w.hi }
        }

        pub(crate) fn copy_racy(&self, off: usize, dst: &mut [u8]) {
            assert!(off % 8 == 0);
            for (i, chunk) in dst.chunks_mut(8).enumerate() {
                let bytes = self.words[off / 8 + i]
                    .a
                    .load(Ordering::Relaxed)
                    .to_ne_bytes();
                chunk.copy_from_slice(&bytes[..chunk.len()]);
            }
        }

        /// # Safety
        /// As in the real region: the range's last write happens-before this call.
        pub(crate) unsafe fn read_bytes(&self, off: usize, dst: &mut [u8]) {
            let mut at = off;
            for chunk in Self::word_chunks(off, dst) {
                // SAFETY: loom checks this access for races; the pointer is the cell's own.
                let word = self.words[at / 8]
                    .cell
                    .with(|p| unsafe { *p })
                    .to_ne_bytes();
                chunk.copy_from_slice(&word[at % 8..at % 8 + chunk.len()]);
                at += chunk.len();
            }
        }

        /// # Safety
        /// As in the real region: the caller owns the range.
        pub(crate) unsafe fn write_bytes(&self, off: usize, src: &[u8]) {
            let mut at = off;
            let mut rest = src;
            while !rest.is_empty() {
                let n = (8 - at % 8).min(rest.len());
                let w = &self.words[at / 8];
                let new = w.cell.with_mut(|p| {
                    // SAFETY: loom checks this access for races; the pointer is the cell's own.
                    let mut bytes = unsafe { *p }.to_ne_bytes();
                    bytes[at % 8..at % 8 + n].copy_from_slice(&rest[..n]);
                    let v = u64::from_ne_bytes(bytes);
                    // SAFETY: as above.
                    unsafe { *p = v };
                    v
                });
                w.a.store(new, Ordering::Relaxed);
                at += n;
                rest = &rest[n..];
            }
        }

        /// Splits `dst` so that each piece lies within one word, starting at `off`.
        fn word_chunks(off: usize, dst: &mut [u8]) -> impl Iterator<Item = &mut [u8]> {
            let first = (8 - off % 8).min(dst.len());
            let (head, tail) = dst.split_at_mut(first);
            core::iter::once(head)
                .filter(|h| !h.is_empty())
                .chain(tail.chunks_mut(8))
        }
    }
}
