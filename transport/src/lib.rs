//! placeholder
#![deny(unsafe_code)]
mod shm;
mod sys;
