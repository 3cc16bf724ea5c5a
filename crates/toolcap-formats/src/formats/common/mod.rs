//! Helpers shared by several format families: JSON records and their payloads, timestamps, and
//! shared strings for what repeats from span to span.

pub mod intern;
pub mod jsonrec;
pub mod ranges;
pub mod timestamp;
