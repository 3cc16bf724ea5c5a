//! The bottom layer: the one span model every format produces ([`model`]), the one masking
//! pass every output goes through ([`redact`]), and the process-level helpers the layers above
//! share: system calls ([`system`]), the parallel helper ([`machine`]) and logging ([`logging`]).

mod error;
pub mod logging;
pub mod machine;
pub mod model;
pub mod redact;
pub mod system;

pub use error::Error;
