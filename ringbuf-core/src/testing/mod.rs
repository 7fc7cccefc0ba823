//! Support for tests and fuzz targets (the `test-support` feature; not part of the stable API):
//! checkers of what the protocol promises whatever its input, shared by the property tests and
//! the fuzz targets, and the deterministic generator every test of the workspace draws from.

mod hostile;
mod rng;
mod writer_thread;

pub use crate::step::{StepGuard, on_step};
pub use hostile::check_hostile_control_blocks;
pub use rng::Rng;
pub use writer_thread::spawn_random_writer;
