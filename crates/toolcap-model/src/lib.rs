//! The bottom layer: the one span model every format produces ([`model`]), the one masking
//! pass every output goes through ([`redact`]), and the process-level helpers the layers above
//! share: system calls ([`system`]), the parallel helper ([`machine`]) and logging ([`logging`]).
//!
//! `unsafe` is allowed in two files only, `system.rs` and `model/packed.rs`, and there every
//! block says why it is sound (a `SAFETY:` comment, checked by clippy); the other crates forbid
//! it.

#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod error;
pub mod logging;
pub mod machine;
pub mod model;
pub mod redact;
#[allow(unsafe_code)]
pub mod system;

pub use error::Error;
