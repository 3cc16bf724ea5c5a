//! Sources: where bytes come from (files and directories, the directory watcher, the OTLP
//! receiver, an attached `serve` feed). Sources hand parsed [`crate::model::Batch`]es onward.

pub mod attach;
pub mod files;
pub mod jaeger;
pub mod listen;
pub mod live;
pub mod live_spool;
pub mod load;
pub mod phoenix;
pub mod pieces;
pub mod remote;
pub mod tail;
pub mod watch;

use std::path::PathBuf;

use crate::model::Batch;

/// What live sources send to the app's ingest channel (and what `dump` applies in one go).
#[derive(Debug)]
pub enum IngestEvent {
    /// New spans, problems, verdicts.
    Batch(Batch),
    /// A file was truncated, rewritten or removed: forget what was read from it (a fresh
    /// `Batch` follows when it is re-read).
    Forget(PathBuf),
    /// A source's state changed, for the status bar.
    Status(SourceStatus),
}

/// The status-bar facts one live source reports about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceStatus {
    /// Directory watcher: files followed, and initial-load progress (done of total files).
    Watching {
        root: PathBuf,
        files: usize,
        loaded: usize,
        total: usize,
    },
    /// Embedded OTLP receiver.
    Listening {
        http: String,
        grpc: Option<String>,
        requests: u64,
        rejected: u64,
    },
    /// A big file being read piece by piece: bytes read of its size, and the rate so far.
    Reading {
        path: PathBuf,
        read: u64,
        total: u64,
        bytes_per_sec: u64,
    },
    /// Attached to a running `serve` feed.
    Attached {
        url: String,
        connected: bool,
        retry_in_ms: Option<u64>,
        /// The last answer was 401: the token is wrong or missing.
        unauthorized: bool,
    },
}

impl SourceStatus {
    /// A file read to its end: sent after the read's last runs, so nothing more follows it.
    pub fn is_finished_read(&self) -> bool {
        matches!(self, SourceStatus::Reading { read, total, .. } if read >= total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(read: u64, total: u64) -> SourceStatus {
        SourceStatus::Reading {
            path: PathBuf::from("big.jsonl"),
            read,
            total,
            bytes_per_sec: 1,
        }
    }

    #[test]
    fn only_a_read_at_its_end_is_finished() {
        assert!(!reading(0, 100).is_finished_read());
        assert!(!reading(99, 100).is_finished_read());
        assert!(reading(100, 100).is_finished_read());
        let listening = SourceStatus::Listening {
            http: "127.0.0.1:4318".into(),
            grpc: None,
            requests: 0,
            rejected: 0,
        };
        assert!(
            !listening.is_finished_read(),
            "a receiver never ends a read"
        );
    }
}
