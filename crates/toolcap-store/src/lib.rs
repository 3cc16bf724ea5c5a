//! Store: invocations, trees and indexes built from normalized spans.

// The layers below, under the module names the code uses.
use toolcap_model::{machine, model, redact};

pub mod store;
