//! Triage: what "failing" means for an invocation, in one place.
//!
//! [`facets`] computes an invocation's verdict facets (span errors, the evaluator's verdict, the
//! gold comparison). The list, the failure queue, the status bar, `dump`, `is:` queries and the
//! triage report all read them, so they cannot disagree about which runs fail.

pub mod facets;

pub use facets::{EvalFacet, Facet, Facets, GoldOutcome};
