//! Store: invocations, trees and indexes built from normalized spans, and the triage notes kept
//! beside them.

// The layers below, under the module names the code uses.
use toolcap_model::{machine, model, redact, system};

mod error;
pub mod notes;
pub mod store;

pub use error::NotesError;
