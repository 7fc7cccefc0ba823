//! Support for tests and fuzz targets (the `test-support` feature; not part of the stable API):
//! checkers of what the protocol promises whatever its input, shared by the property tests and
//! the fuzz targets, and the deterministic generator every test of the workspace draws from.

mod hostile;
mod rng;
mod steps;

pub use hostile::check_hostile_control_blocks;
pub use rng::Rng;
pub(crate) use steps::fire as fire_step;
pub use steps::{StepGuard, on_step};
