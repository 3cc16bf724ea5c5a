//! toolcap-tui: explore the traces of tool-calling LLM agents.
//!
//! Data flows one way: [`sources`] (files, watcher, receiver) → [`formats`] (one module per
//! format, all producing [`model::Span`]s) → [`store`] (invocations, trees, indexes) →
//! views ([`views::dump`], the TUI, `check`), which share everything but rendering.

pub mod commands;
pub mod formats;
pub mod fuzzing;
pub mod gold;
pub mod logging;
pub mod machine;
pub mod model;
pub mod query;
pub mod receiver;
pub mod redact;
pub mod sources;
pub mod store;
pub mod system;
pub mod triage;
pub mod tui;
pub mod views;

#[cfg(test)]
mod layering;
#[cfg(test)]
mod test_layout;
