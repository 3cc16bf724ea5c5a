//! Helpers shared by several format families: JSON records and their payloads, and timestamps.

pub mod jsonrec;
pub mod ranges;
pub mod timestamp;
