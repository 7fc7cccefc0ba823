//! The child processes of a trial: a listener, which records how late each timestamp arrived,
//! and the relay of `unix-relay`.

use std::os::fd::{AsFd, OwnedFd};

use shmcast::{RecvError, Subscriber};

use super::transport::{END, Transport, send_dgram};
use crate::error::{BenchError, Result, failed, sys};
use crate::harness::{STALL, STARTUP, stalled};
use crate::process;
use crate::sys::{cpu_self_ns, now_ns};

/// The child role of a listener.
pub const LISTENER: &str = "latency-listener";
/// The child role of the relay.
pub const RELAY: &str = "latency-relay";

/// The child side: `latency-listener TRANSPORT ENDPOINT MESSAGES`.
pub fn listener(args: &[String]) -> Result<()> {
    let [transport, endpoint, messages] = args else {
        return Err(BenchError::Usage(format!(
            "{LISTENER} takes 3 arguments, got {}",
            args.len()
        )));
    };
    let transport = Transport::parse(transport)?;
    let messages: usize = process::parse_arg(messages)?;
    let mut samples: Vec<u64> = Vec::with_capacity(messages);
    let cpu0;
    match transport {
        Transport::UnixDgram | Transport::UnixRelay | Transport::UdpMulticast => {
            let fd = if transport == Transport::UdpMulticast {
                let port: u16 = process::parse_arg(endpoint)?;
                crate::sys::multicast_listener(crate::sys::multicast_group(port))
                    .map_err(sys("joining the multicast group on loopback"))?
            } else {
                crate::sys::adopt_inherited(process::fd_arg(endpoint)?)
                    .map_err(sys("adopting the datagram socket"))?
            };
            crate::sys::set_recv_timeout(fd.as_fd(), STALL).map_err(sys("setting SO_RCVTIMEO"))?;
            process::say("ready")?;
            cpu0 = cpu_self_ns();
            let mut buf = [0u8; 8];
            loop {
                let n = crate::sys::recv(fd.as_fd(), &mut buf)
                    .map_err(sys("recv"))?
                    .ok_or_else(|| stalled(transport.name()))?;
                let now = now_ns();
                let ts = u64::from_ne_bytes(buf);
                if n != 8 {
                    return Err(BenchError::Corrupt(format!("datagram of {n} bytes")));
                }
                if ts == END {
                    break;
                }
                samples.push(now.saturating_sub(ts));
            }
        }
        Transport::Shmcast | Transport::ShmcastSpin | Transport::ShmcastPoll => {
            let spin = if transport.spins() { u32::MAX } else { 0 };
            let mut sub = Subscriber::builder(endpoint.as_str())
                .spin(spin)
                .connect_timeout(STARTUP)
                .connect()
                .map_err(failed("connecting a shmcast listener"))?;
            process::say("ready")?;
            cpu0 = cpu_self_ns();
            // `recv` without a timeout: the parent bounds every trial and kills a stalled
            // child.
            // The same epoll instance, held apart so that waiting on it needs no borrow of `sub`.
            let event_fd = if transport == Transport::ShmcastPoll {
                Some(
                    sub.as_fd()
                        .try_clone_to_owned()
                        .map_err(sys("dup of the subscriber's descriptor"))?,
                )
            } else {
                None
            };
            loop {
                let got = if let Some(fd) = &event_fd {
                    match sub.try_recv() {
                        Err(RecvError::Empty) => {
                            crate::sys::wait_readable(fd.as_fd(), STALL)
                                .map_err(sys("poll on the subscriber"))?;
                            continue;
                        }
                        got => got,
                    }
                } else {
                    sub.recv()
                };
                match got {
                    Ok(sample) => {
                        let now = now_ns();
                        let ts = sample
                            .as_pod::<u64>()
                            .map_err(|e| BenchError::Corrupt(e.to_string()))?;
                        samples.push(now.saturating_sub(*ts));
                    }
                    Err(RecvError::Disconnected) => break,
                    Err(e) => return Err(failed("shmcast receive")(e)),
                }
            }
        }
        Transport::ShmcastTokio => cpu0 = super::tokio::listen_shmcast(endpoint, &mut samples)?,
        Transport::TokioUnix => cpu0 = super::tokio::listen_unix(endpoint, &mut samples)?,
        Transport::TokioBroadcast => {
            return Err(BenchError::Usage(
                "tokio-broadcast has no listener process".into(),
            ));
        }
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2 | Transport::Iceoryx2Busy => {
            cpu0 = super::iceoryx::listen(endpoint, transport.spins(), &mut samples)?;
        }
    }
    let cpu = cpu_self_ns() - cpu0;
    process::say(&format!("result received={} cpu_ns={cpu}", samples.len()))?;
    let mut line = String::from("samples");
    for s in &samples {
        line.push(' ');
        line.push_str(&s.to_string());
    }
    process::say(&line)
}

/// The child side: `latency-relay IN_FD OUT_FD...`: forwards every datagram to every output.
pub fn relay(args: &[String]) -> Result<()> {
    let fds: Vec<OwnedFd> = args
        .iter()
        .map(|a| {
            crate::sys::adopt_inherited(process::fd_arg(a)?).map_err(sys("adopting a relay socket"))
        })
        .collect::<Result<_>>()?;
    let Some((input, outputs)) = fds.split_first() else {
        return Err(BenchError::Usage(format!("{RELAY} needs an input socket")));
    };
    crate::sys::set_recv_timeout(input.as_fd(), STALL).map_err(sys("setting SO_RCVTIMEO"))?;
    process::say("ready")?;
    let cpu0 = cpu_self_ns();
    let mut buf = [0u8; 8];
    loop {
        crate::sys::recv(input.as_fd(), &mut buf)
            .map_err(sys("recv"))?
            .ok_or_else(|| stalled("unix-relay"))?;
        let ts = u64::from_ne_bytes(buf);
        for out in outputs {
            send_dgram(out, ts)?;
        }
        if ts == END {
            break;
        }
    }
    process::say(&format!("result cpu_ns={}", cpu_self_ns() - cpu0))
}
