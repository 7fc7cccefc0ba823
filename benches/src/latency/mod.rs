//! `latency`: the 2002 experiment. The publisher sends an 8-byte `CLOCK_MONOTONIC` timestamp
//! every `--interval-us` (100 µs) to `--listeners` (3) listener processes, each blocked until
//! woken; each listener subtracts the timestamp from its own clock reading when its receive
//! returns. Reports p50/p90/p99/p99.9/max per listener (HdrHistogram over every repetition),
//! CPU time per message over all processes, and the publisher's syscalls per message.
//!
//! * `unix-relay`: publisher → relay process → one unix datagram socket per listener.
//! * `unix-dgram`: the publisher sends to each listener's unix datagram socket.
//! * `udp-multicast`: one `sendto` to 239.255.83.67 on loopback (`IP_MULTICAST_IF` 127.0.0.1,
//!   `IP_MULTICAST_LOOP`, TTL 0: nothing leaves the host); every listener joined the group.
//! * `shmcast`: listeners block in `recv` (one futex wake for all parked listeners, no
//!   spinning).
//! * `shmcast-spin`: listeners busy-poll (`spin(u32::MAX)`); sane only with fewer listeners than
//!   cores, which the run warns about.
//! * `shmcast-poll`: listeners wait in `poll()` on the subscriber's descriptor and call
//!   `try_recv`, as an event loop does (one doorbell per parked listener); only with several
//!   listeners.
//!
//! * `shmcast-tokio`: each listener runs its own current-thread tokio runtime and awaits
//!   `AsyncSubscriber::recv` (a doorbell per parked listener, through tokio's reactor).
//! * `tokio-unix`: the same listeners on a unix stream socket each (`read_exact` of 8 bytes);
//!   the publisher sends to every socket. The socket fan-out a tokio program would write.
//! * `tokio-broadcast`: `tokio::sync::broadcast` inside one process, each listener a thread with
//!   its own runtime: the in-process anchor, with no process boundary to cross.
//!
//! A second group runs one listener, where `shmcast-spin` on an otherwise idle core shows the
//! floor of a busy-polling handoff.
//!
//! | module | holds |
//! |---|---|
//! | `transport` | the transports and the datagram wire of the socket ones |
//! | `trial` | one trial: the paced publisher and the listeners' figures |
//! | `listener` | the listener and relay processes |
//! | `iceoryx` | iceoryx2's publisher and listener |
//! | `tokio` | the tokio listeners and the in-process broadcast trial |
//! | `group` | the figures of a group of trials |
//! | `scenario` | the repetitions |
//! | `section` | the tables, verdicts, JSON and chart |

mod group;
#[cfg(feature = "iceoryx2")]
mod iceoryx;
mod listener;
mod scenario;
mod section;
mod tokio;
mod transport;
mod trial;

pub use listener::{LISTENER, RELAY, listener, relay};
pub use scenario::run;
