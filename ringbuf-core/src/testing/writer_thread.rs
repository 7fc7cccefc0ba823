//! A writer on its own thread, flat out: the race partner of the threaded protocol tests.

use crate::{ReserveError, Writer};
use std::thread::JoinHandle;

use super::Rng;

/// Sends `total` messages of random lengths up to `max_len` (drawn from `seed`), message `seq`
/// holding `payload(seq, len)`, yielding while the ring is full; then closes the stream and
/// hands the writer back (for its counters).
pub fn spawn_random_writer<A: Send + 'static>(
    mut w: Writer<A>,
    total: u64,
    seed: u64,
    max_len: u64,
    payload: fn(u64, usize) -> Vec<u8>,
) -> JoinHandle<Writer<A>> {
    std::thread::spawn(move || {
        let mut rng = Rng(seed);
        let mut seq = 0;
        while seq < total {
            let len = rng.below(max_len + 1) as usize;
            match w.try_reserve(len) {
                Ok(res) => {
                    w.write_payload(&res, &payload(seq, len));
                    w.commit(res, |_| {});
                    seq += 1;
                }
                Err(ReserveError::Full { .. }) => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        w.close(|_| {});
        w
    })
}
