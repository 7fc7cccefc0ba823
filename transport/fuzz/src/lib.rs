//! Shared by the fuzz targets: how each target reads its input, the reader driver that checks
//! every result, and the seed corpora written from real writers and encoders.
//!
//! | module | what it holds |
//! |---|---|
//! | [`input`] | the input formats of `ring_validator` and `frame_reader`, both ways |
//! | [`drive`] | reads a ring until the reader stops, checking everything it returns |
//! | [`seeds`] | valid inputs for every target (`cargo run --example seed` writes them) |
//!
//! The input formats live here rather than in the targets because the seed example writes them
//! too; the reader driver because two targets share it.
#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod drive;
pub mod input;
pub mod seeds;
