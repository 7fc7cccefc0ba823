//! Command-line options of the soak.

use std::time::Duration;

use shmcast_bench::error::{BenchError, Result};
use shmcast_bench::options::positive;

/// Printed with every usage error.
pub const USAGE: &str = "\
usage: shmcast-soak [--seconds N] [--seed S] [--max-size BYTES]

one publisher, gating and lossy subscriber processes that join, leave, stop and are killed at
random; checks every byte, every gap and lag count, and that the publisher's descriptors and
memory do not grow

options:
  --seconds N        length of the soak (default 60)
  --seed S           seed of the schedule and the message sizes (default: from the clock, printed)
  --max-size BYTES   largest soak message (default 65536)";

/// What a soak runs.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// How long the publisher publishes.
    pub duration: Duration,
    /// Seed of the schedule and of the message sizes.
    pub seed: u64,
    /// Largest message in bytes.
    pub max_size: usize,
}

impl Options {
    /// Parses the arguments after the program name.
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options {
            duration: Duration::from_secs(60),
            seed: shmcast_bench::sys::now_ns() ^ u64::from(std::process::id()).rotate_left(32),
            max_size: 64 * 1024,
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = |name: &str| {
                args.next()
                    .cloned()
                    .ok_or_else(|| BenchError::Usage(format!("{name} needs a value")))
            };
            match arg.as_str() {
                "--seconds" => {
                    o.duration =
                        Duration::from_secs(positive("--seconds", &value("--seconds")?)? as u64);
                }
                "--seed" => {
                    let text = value("--seed")?;
                    o.seed = text.parse().map_err(|_| {
                        BenchError::Usage(format!("--seed takes a number, got {text:?}"))
                    })?;
                }
                "--max-size" => o.max_size = positive("--max-size", &value("--max-size")?)?,
                "-h" | "--help" => return Err(BenchError::Usage("help".into())),
                name => return Err(BenchError::Usage(format!("unknown argument {name:?}"))),
            }
        }
        Ok(o)
    }
}
