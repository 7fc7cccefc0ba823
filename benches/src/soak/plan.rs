//! What one subscriber does: its mode, start position, way of waiting, spinning and lifetime,
//! drawn by the parent and handed to the child as arguments.

use std::time::Duration;

use shmcast::{Mode, Start};
use shmcast_bench::error::{BenchError, Result};
use shmcast_bench::process;
use shmcast_bench::rng::Rng;

use crate::schedule::LIFETIME;

/// How a subscriber waits for its next message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// `recv_timeout`.
    Block,
    /// `try_recv`, and `poll` on the subscriber's descriptor when it is empty.
    Poll,
}

/// What one subscriber does.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Gating or lossy.
    pub mode: Mode,
    /// Where it starts reading.
    pub start: Start,
    /// How it waits.
    pub wait: Wait,
    /// Empty polls before it parks.
    pub spin: u32,
    /// How long it stays before it leaves by itself.
    pub lifetime: Duration,
}

impl Plan {
    /// A random plan.
    pub fn random(rng: &mut Rng) -> Plan {
        Plan {
            mode: rng.pick(&[Mode::Gating, Mode::Lossy]),
            start: rng.pick(&[Start::Newest, Start::Newest, Start::Oldest]),
            wait: rng.pick(&[Wait::Block, Wait::Poll]),
            spin: rng.pick(&[0, 0, 64]),
            lifetime: rng.duration(LIFETIME.0, LIFETIME.1),
        }
    }

    /// The plan as the child's arguments.
    pub fn args(&self) -> [String; 5] {
        [
            mode_name(self.mode).into(),
            match self.start {
                Start::Newest => "newest",
                Start::Oldest => "oldest",
            }
            .into(),
            match self.wait {
                Wait::Block => "block",
                Wait::Poll => "poll",
            }
            .into(),
            self.spin.to_string(),
            self.lifetime.as_millis().to_string(),
        ]
    }

    /// The plan from the child's arguments.
    pub fn parse(args: &[String]) -> Result<Plan> {
        let [mode, start, wait, spin, lifetime_ms] = args else {
            return Err(BenchError::Usage("a soak plan has 5 words".into()));
        };
        Ok(Plan {
            mode: match mode.as_str() {
                "gating" => Mode::Gating,
                "lossy" => Mode::Lossy,
                _ => return Err(BenchError::Usage(format!("unknown mode {mode:?}"))),
            },
            start: match start.as_str() {
                "newest" => Start::Newest,
                "oldest" => Start::Oldest,
                _ => return Err(BenchError::Usage(format!("unknown start {start:?}"))),
            },
            wait: match wait.as_str() {
                "block" => Wait::Block,
                "poll" => Wait::Poll,
                _ => return Err(BenchError::Usage(format!("unknown wait {wait:?}"))),
            },
            spin: process::parse_arg(spin)?,
            lifetime: Duration::from_millis(process::parse_arg(lifetime_ms)?),
        })
    }
}

/// `mode`'s name in arguments and messages.
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Gating => "gating",
        Mode::Lossy => "lossy",
    }
}
