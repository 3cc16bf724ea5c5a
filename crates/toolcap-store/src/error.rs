//! What the store crate can fail at: reading and writing the triage notes' sidecar. Each
//! message is the one printed by `annotate` or shown as a problem.

use std::io;
use std::path::PathBuf;

/// An error of the notes' sidecar.
#[derive(Debug, thiserror::Error)]
pub enum NotesError {
    #[error("{}: {source}", path.display())]
    Unreadable { path: PathBuf, source: io::Error },
    #[error("{}: a symbolic link: notes are never written through one", path.display())]
    Link { path: PathBuf },
    #[error("{}: not a regular file", path.display())]
    NotAFile { path: PathBuf },
    #[error("a line of {bytes} bytes (at most {max})")]
    LineTooLong { bytes: usize, max: usize },
    #[error("{0}")]
    BadLine(String),
    #[error("version {version} (this program reads version 1)")]
    Version { version: u32 },
    #[error("no run id")]
    NoRun,
    #[error(
        "label {label:?}: a label is lower-case letters, digits, '-', '_' and '.', at most 40 of them"
    )]
    BadLabel { label: String },
    #[error("a note of {chars} characters (at most {max})")]
    NoteTooLong { chars: usize, max: usize },
    #[error("an author name longer than {max} characters")]
    AuthorTooLong { max: usize },
    #[error("a time that is not RFC 3339")]
    BadTime,
}
