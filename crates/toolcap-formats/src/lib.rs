//! Normalize: one module per trace format, each turning bytes into the one span model.

// The layers below, under the module names the code uses.
use toolcap_model::{machine, model};

mod error;
pub mod formats;
pub mod messages;

pub use error::{Error, Malformed};
