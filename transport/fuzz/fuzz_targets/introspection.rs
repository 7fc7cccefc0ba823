//! The introspection decoders (the publisher's request decoder, HELLO or INSPECT; the client's
//! INFO decoder) against any bytes: a value or a typed error, never both, and an accepted packet
//! re-encodes to the bytes received. The checks are the ones the stable property tests make
//! (`transport/tests/introspect.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shmcast::test_support::check_introspection;

fuzz_target!(|p: &[u8]| {
    check_introspection(p);
});
