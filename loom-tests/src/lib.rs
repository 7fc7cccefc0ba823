//! Loom models of the shmcast ring protocol.
//!
//! The models live in `tests/models.rs` and run the `shmcast-core` source itself, compiled with
//! `--cfg shmcast_loom` so that its atomics, fences and payload cells are loom's:
//!
//! ```text
//! RUSTFLAGS="--cfg shmcast_loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p shmcast-loom --profile loom --target-dir target/loom
//! ```
//!
//! Without that cfg the models compile to nothing, so a plain `cargo test --workspace` skips them.
#![deny(missing_docs)]
