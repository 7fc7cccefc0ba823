//! The dispatch of a stream trial to its transport: the publisher side in the parent, the
//! subscriber side in a child, which then reports what it checked.

use super::trial::{Outcome, Transport, Trial, Wait};
use super::{memcpy, shmcast, subscribers, tokio, unix_stream};
use crate::error::{BenchError, Result, sys};
use crate::payload::Verifier;
use crate::pin::Pinned;
use crate::process;
use crate::sys::{cpu_self_ns, now_ns};

/// Runs one trial, on the CPUs it names (the publishing thread here, back on its own CPUs
/// after the trial).
pub fn run(trial: Trial) -> Result<Outcome> {
    let pinned = match trial.pin {
        Some(pin) => Some(Pinned::thread(pin.publisher()).map_err(sys("pinning the publisher"))?),
        None => None,
    };
    let outcome = match trial.transport {
        Transport::Memcpy => memcpy::publish(trial),
        Transport::UnixStream => unix_stream::publish(trial),
        Transport::ShmcastTokio => tokio::publish_shmcast(trial),
        Transport::TokioUnix => tokio::publish_unix(trial),
        Transport::TokioBroadcast => tokio::broadcast(trial),
        Transport::ShmcastGating
        | Transport::ShmcastLossy
        | Transport::ShmcastSleep
        | Transport::ShmcastLossyNewest
        | Transport::ShmcastLossyOldest
        | Transport::ShmcastLatest => shmcast::publish(trial),
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2 => super::iceoryx::publish(trial),
    }?;
    if let Some(pinned) = &pinned {
        pinned.check("the publisher")?;
    }
    Ok(outcome)
}

/// The child side: `stream-subscriber TRANSPORT ENDPOINT SIZE WAIT WORK_NS`.
pub fn child(args: &[String]) -> Result<()> {
    let [transport, endpoint, size, wait, work_ns] = args else {
        return Err(BenchError::Usage(format!(
            "{} takes 5 arguments, got {}",
            subscribers::ROLE,
            args.len()
        )));
    };
    let transport = Transport::parse(transport)?;
    let size: usize = process::parse_arg(size)?;
    let wait = Wait::parse(wait)?;
    let work_ns: u64 = process::parse_arg(work_ns)?;
    let mut verifier = Verifier::new(size, transport.lossy()).with_work(work_ns);
    let cpu0 = match transport {
        Transport::UnixStream => unix_stream::subscribe(endpoint, wait, &mut verifier)?,
        Transport::ShmcastTokio => tokio::subscribe_shmcast(endpoint, &mut verifier)?,
        Transport::TokioUnix => tokio::subscribe_unix(endpoint, &mut verifier)?,
        Transport::ShmcastGating
        | Transport::ShmcastLossy
        | Transport::ShmcastSleep
        | Transport::ShmcastLossyNewest
        | Transport::ShmcastLossyOldest
        | Transport::ShmcastLatest => shmcast::subscribe(transport, endpoint, wait, &mut verifier)?,
        #[cfg(feature = "iceoryx2")]
        Transport::Iceoryx2 => super::iceoryx::subscribe(endpoint, wait, &mut verifier)?,
        Transport::Memcpy | Transport::TokioBroadcast => {
            return Err(BenchError::Usage(format!(
                "{} has no subscriber process",
                transport.name()
            )));
        }
    };
    let end = now_ns();
    let cpu = cpu_self_ns() - cpu0;
    crate::pin::child_check()?;
    process::say(&format!(
        "result messages={} skipped={} end_ns={end} cpu_ns={cpu} behind={}",
        verifier.messages, verifier.skipped, verifier.behind
    ))
}
