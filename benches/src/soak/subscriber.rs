//! A subscriber process: connects with its plan, checks every receive until its lifetime ends
//! or the stream does, compares its counts with the subscriber's own statistics and reports them
//! to the parent.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use shmcast::{RecvError, Subscriber};
use shmcast_bench::error::{BenchError, Result, failed, sys};
use shmcast_bench::harness::STARTUP;
use shmcast_bench::process;

use crate::check::{Check, Step};
use crate::plan::{Plan, Wait};

/// The child role of a soak subscriber.
pub const ROLE: &str = "soak-subscriber";

/// The child side: `soak-subscriber TOPIC SEED MAX_SIZE MODE START WAIT SPIN LIFETIME_MS`.
pub fn run(args: &[String]) -> Result<()> {
    let [topic, seed, max, plan @ ..] = args else {
        return Err(BenchError::Usage(format!(
            "{ROLE} takes 8 arguments, got {}",
            args.len()
        )));
    };
    let seed: u64 = process::parse_arg(seed)?;
    let max: usize = process::parse_arg(max)?;
    let plan = Plan::parse(plan)?;
    let connected = Subscriber::builder(topic.as_str())
        .mode(plan.mode)
        .start(plan.start)
        .spin(plan.spin)
        .connect_timeout(STARTUP)
        .connect();
    let mut sub = match connected {
        Ok(sub) => sub,
        Err(e) => return Err(failed("connecting a soak subscriber")(e)),
    };
    process::say("ready")?;
    let leave_at = Instant::now() + plan.lifetime;
    let mut check = Check::new(plan.mode, seed, max);
    let end = loop {
        let left = leave_at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break "left";
        }
        let wait = left.min(Duration::from_secs(1));
        let step = match plan.wait {
            Wait::Block => check.take(sub.recv_timeout(wait))?,
            Wait::Poll => {
                let got = sub.try_recv();
                if let Err(RecvError::Empty) = got {
                    // The result may hold a sample, which borrows the subscriber until dropped.
                    drop(got);
                    shmcast_bench::sys::wait_readable(sub.as_fd(), wait)
                        .map_err(sys("poll on a subscriber"))?;
                    Step::Idle
                } else {
                    check.take(got)?
                }
            }
        };
        match step {
            Step::Went | Step::Idle => {}
            Step::End => break "stream-end",
            // The sample is dropped (released) by now; a demotion shows at the next receive.
            Step::Suspect(err) => match sub.try_recv() {
                Err(RecvError::Demoted) => check.overwritten_after_demotion(),
                _ => return Err(err),
            },
        }
    };
    check.against(sub.stats())?;
    process::say(&check.report(end))
}
