//! What the model crate's process-level helpers can fail at.

use std::io;
use std::path::PathBuf;

/// An error of the model crate: setting up the program's own log.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The log file or its directory cannot be created or opened.
    #[error("{}: {source}", path.display())]
    Unwritable { path: PathBuf, source: io::Error },
    /// A logger is set already (the process sets one once).
    #[error(transparent)]
    LoggerSet(#[from] Box<dyn std::error::Error + Send + Sync>),
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn an_unwritable_log_names_its_path_then_the_cause() {
        let error = Error::Unwritable {
            path: "/nowhere/toolcap.log".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        assert_eq!(error.to_string(), "/nowhere/toolcap.log: permission denied");
    }
}
