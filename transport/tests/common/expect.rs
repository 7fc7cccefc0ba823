//! What a subscriber facing a hostile publisher must answer: a typed refusal at connect, and at
//! receive a message, a typed error or a timeout, never a panic or a hang.

use super::image::message;
use shmcast::{ConnectError, FrameError, RecvError, Subscriber};
use shmcast_core::LayoutError;
use std::time::Duration;

/// Timeout of every receive that is expected to return at once.
pub const RECV: Duration = Duration::from_millis(200);

/// The error a connect must have returned.
pub fn refused(r: Result<Subscriber, ConnectError>) -> ConnectError {
    match r {
        Ok(sub) => panic!("the subscriber accepted a hostile publisher: {sub:?}"),
        Err(e) => e,
    }
}

/// The text of the protocol error a connect must have returned.
pub fn protocol(r: Result<Subscriber, ConnectError>) -> String {
    match refused(r) {
        ConnectError::Protocol(e) => e.to_string(),
        e => panic!("expected a protocol error, got {e:?}"),
    }
}

/// The layout error a connect must have returned.
pub fn layout(r: Result<Subscriber, ConnectError>) -> LayoutError {
    match refused(r) {
        ConnectError::Layout(e) => e,
        e => panic!("expected a layout error, got {e:?}"),
    }
}

/// One receive, the payload copied out (nothing writes the ring meanwhile in these tests).
pub fn recv(sub: &mut Subscriber) -> Result<(u64, Vec<u8>), RecvError> {
    sub.recv_timeout(RECV).map(|s| (s.seq(), s.to_vec()))
}

/// The subscriber receives test message `seq`, intact.
pub fn expect_message(sub: &mut Subscriber, seq: u64) {
    match recv(sub) {
        Ok((got, payload)) => {
            assert_eq!(got, seq);
            assert_eq!(payload, message(seq), "payload of message {seq}");
        }
        Err(e) => panic!("expected message {seq}, got {e:?}"),
    }
}

/// The subscriber reports `expected` and keeps reporting it: it neither skips the bad frame
/// nor reads past it.
pub fn expect_corrupt(sub: &mut Subscriber, expected: FrameError) {
    for _ in 0..3 {
        match recv(sub) {
            Err(RecvError::Corrupt(e)) => assert_eq!(e, expected),
            other => panic!("expected Corrupt({expected:?}), got {other:?}"),
        }
    }
}
