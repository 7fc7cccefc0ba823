//! The handshake decoders (HELLO on the publisher's side, WELCOME and REFUSE on the subscriber's)
//! against any bytes: a message or a typed error, and an accepted message re-encodes to the bytes
//! received (a REFUSE's text excepted: it is decoded lossily and may be shortened). The checks are
//! the ones the stable property tests make (`transport/tests/decoders.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shmcast::test_support::check_decoders;

fuzz_target!(|p: &[u8]| {
    check_decoders(p);
});
