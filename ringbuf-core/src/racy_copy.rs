//! A copy of bytes that a writer may be overwriting at the same time, at memcpy speed.
//!
//! A lossy reader copies a frame while the writer may already be reusing its bytes, and
//! validates the copy afterwards (the seqlock in `Reader::try_copy`). Word-sized relaxed atomic
//! loads make that race defined, but they copy one word at a time (about 2.5 GB/s here, a tenth
//! of memcpy), so with large messages a lossy reader needs ten times as long for one read as the
//! writer needs to write it, and the writer laps it while it copies.
//!
//! On x86-64 a `rep movsb` string copy performs the same loads as a loop of relaxed byte-sized
//! atomic loads would: each byte is read by one single-copy-atomic load, and torn or stale bytes
//! are possible only across bytes, which the caller's validation detects. It runs at memcpy
//! speed (the CPU's fast string microcode moves whole lines). Being inline assembly, it is opaque
//! to the compiler, so no optimisation can assume the bytes stable while it reads them. Miri
//! cannot run assembly and loom has a region of its own: both keep the word loop.
#![allow(unsafe_code)]

/// Copies `dst.len()` bytes from `src` into `dst` with one `rep movsb`.
///
/// # Safety
/// `src..src + dst.len()` is readable memory for the whole copy (a concurrent writer may change
/// it; the caller validates what was copied). `dst` does not overlap it.
#[inline]
pub(crate) unsafe fn string_copy(src: *const u8, dst: &mut [u8]) {
    let len = dst.len();
    // `rep movsb` copies upwards (the direction flag is clear on entry to inline assembly, by
    // the ABI); it changes no flags and uses no stack.
    // SAFETY: it reads `len` readable bytes at `src` (the caller's contract) and writes `len`
    // bytes at `dst`, a live, exclusive buffer of that length.
    unsafe {
        core::arch::asm!(
            "rep movsb",
            inout("rcx") len => _,
            inout("rsi") src => _,
            inout("rdi") dst.as_mut_ptr() => _,
            options(nostack, preserves_flags),
        );
    }
}
