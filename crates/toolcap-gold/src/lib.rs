//! Gold trajectories: reading them, aligning a run against them, and scoring.

// The layers below, under the module names the code uses.
use toolcap_formats::formats;
use toolcap_model::{model, redact};
use toolcap_store::store;

mod error;
pub mod gold;

pub use error::Error;
