//! Following sources live: the directory watcher and its tailer, attaching to a `serve` feed,
//! sources that are not plain files, problems and their severity, and the watcher agreeing with
//! `dump` on the whole corpus.
//!
//! One test binary for the family, so the library is linked once for all of it.

mod attach_feed;
mod inspect_live;
#[path = "../common/inspect_many.rs"]
mod inspect_many;
#[path = "../common/inspect_real.rs"]
mod inspect_real;
mod long_lines;
mod problems_severity;
mod sources_special;
mod support;
mod watch_live;
mod watch_otlp;
mod watch_same_as_dump;
mod watch_steady;
mod watch_tail;
