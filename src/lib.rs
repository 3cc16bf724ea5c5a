//! toolcap-tui: explore the traces of tool-calling LLM agents.
//!
//! Data flows one way: [`sources`] (files, watcher, receiver) → [`formats`] (one module per
//! format, all producing [`model::Span`]s) → [`store`] (invocations, trees, indexes) →
//! views ([`views::dump`], the TUI, `check`), which share everything but rendering.
//!
//! Each layer below the views is a crate of its own (`crates/`), so the compiler refuses an
//! import against the flow; this crate re-exports them under their module names.

pub use toolcap_formats::formats;
pub use toolcap_gold::gold;
pub use toolcap_model::{logging, machine, model, redact, system};
pub use toolcap_query::{breakdown, query, triage};
pub use toolcap_receiver::receiver;
pub use toolcap_sources::sources;
pub use toolcap_store::{notes, store};

pub mod commands;
mod error;
pub mod fuzzing;
pub mod tui;
pub mod views;

pub use error::Error;

#[cfg(test)]
mod test_layout;
