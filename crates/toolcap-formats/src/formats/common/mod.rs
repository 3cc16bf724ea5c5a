//! Helpers shared by several format families: JSON records and their payloads, and timestamps.
//! Texts that repeat from span to span are shared through the model's interner
//! (`model::interner`).

pub mod jsonrec;
pub mod ranges;
pub mod timestamp;
