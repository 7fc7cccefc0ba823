//! How `echo` and `hz` subscribe: in the directory `--dir` names, waiting `--wait` for a
//! publisher, and for its answer no longer than the command waits. A publisher that accepts
//! the connection but does not answer (stopped by a signal, or overloaded) is a failure of
//! its own, naming the process that did not answer.

use std::time::Duration;

use shmcast::{ConnectError, Subscriber, SubscriberBuilder};

use crate::Place;
use crate::exit::Failure;
use crate::peer;

/// How long a publisher may take to answer when the command gives no `--wait`: the library's
/// own default.
const HANDSHAKE: Duration = Duration::from_secs(5);

/// The least time a publisher is given to answer: `--wait 0` means "do not wait for one to
/// appear", not "refuse the one that is there".
const MIN_HANDSHAKE: Duration = Duration::from_millis(200);

/// Connects `builder` (for `topic`) as `--dir` and `--wait SECS` say.
pub fn connect(
    place: &Place,
    topic: &str,
    wait: Option<Duration>,
    mut builder: SubscriberBuilder,
) -> Result<Subscriber, Failure> {
    if let Some(dir) = &place.dir {
        builder = builder.directory(dir);
    }
    let mut handshake = HANDSHAKE;
    if let Some(wait) = wait {
        handshake = wait.clamp(MIN_HANDSHAKE, HANDSHAKE);
        builder = builder.connect_timeout(wait);
    }
    builder
        .handshake_timeout(handshake)
        .connect()
        .map_err(|e| match e {
            ConnectError::HandshakeTimeout => peer::unanswered(place, topic, handshake),
            e => Failure::connect(topic, e),
        })
}
