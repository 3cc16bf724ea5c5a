//! Views: everything that presents the store headless: `dump`'s text and JSON, the triage
//! report. The TUI lives in `tui`.

pub mod compare;
pub mod dump;
mod dump_json;
mod in_order;
pub mod out_file;
pub mod report;
pub mod summary;

#[cfg(test)]
mod dump_stream_tests;
