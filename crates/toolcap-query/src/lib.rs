//! Triage (failing turns and their facets) and queries (search and filters) over the store.

// The layers below, under the module names the code uses.
use toolcap_formats::formats;
use toolcap_model::{machine, model, redact};
use toolcap_store::{notes, store};

pub mod breakdown;
mod error;
pub mod query;
pub mod triage;

pub use error::QueryError as Error;
