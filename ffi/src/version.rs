//! The library's version, for programs that check what they linked against.

use std::ffi::c_char;

use crate::error;

/// The library's version, e.g. `"0.1.0"`.
///
/// Returns a static NUL-terminated string; never `NULL`. Never blocks. Thread-safe.
///
/// # Safety
///
/// None: callable at any time from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn shmcast_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    error::guard_value(c"".as_ptr(), || VERSION.as_ptr().cast())
}
