//! Where the program's own log lines go: the receiver's and the sources' runtime messages
//! (a spool write that failed, a feed reader dropped, a request rejected).
//!
//! The TUI owns the terminal while it draws, so there they go to a file only (`--log-file`,
//! by default under the user's state directory); anything written to stderr would tear the
//! screen. Headless `serve` writes them to stderr, and to `--log-file` as well when given.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::fmt::writer::MakeWriterExt as _;

use crate::Error;

/// Name of the log file inside the state directory.
const LOG_FILE_NAME: &str = "toolcap-tui.log";

/// Where the TUI logs when no `--log-file` is given: the platform's state directory
/// (`$XDG_STATE_HOME/toolcap-tui` on Linux), or its local data directory where there is none.
pub fn default_log_file() -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "toolcap-tui")?;
    let dir = dirs
        .state_dir()
        .unwrap_or_else(|| dirs.data_local_dir())
        .to_path_buf();
    Some(dir.join(LOG_FILE_NAME))
}

/// Opens `path` for appending, creating it and its directory; readable by the owner only,
/// since log lines can name hosts, files and rejected requests.
fn open_log(path: &Path) -> Result<File, Error> {
    let unwritable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Unwritable { path, source }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(unwritable(dir))?;
    }
    crate::system::owner_only_file()
        .create(true)
        .append(true)
        .open(path)
        .map_err(unwritable(path))
}

/// Logs to `path` only, never to the terminal: for the TUI.
pub fn to_file_only(path: &Path) -> Result<(), Error> {
    let file = open_log(path)?;
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_target(false)
        .log_internal_errors(false)
        .with_writer(Mutex::new(file))
        .try_init()?;
    Ok(())
}

/// Logs to stderr, and to `path` too when given: for headless commands.
pub fn to_stderr(path: Option<&Path>) -> Result<(), Error> {
    // A log line that cannot be written (a full disk, a file-size limit on stderr) is lost,
    // never reported with `eprintln!`, which would panic the task serving the request.
    let builder = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_target(false)
        .log_internal_errors(false);
    let result = match path {
        Some(path) => {
            let file = open_log(path)?;
            builder
                .with_writer(std::io::stderr.and(Mutex::new(file)))
                .try_init()
        }
        None => builder.with_writer(std::io::stderr).try_init(),
    };
    Ok(result?)
}

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    #[test]
    fn a_log_path_planted_as_a_link_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("someone-elses-file");
        std::fs::write(&target, "precious").unwrap();
        let log = dir.path().join("toolcap.log");
        std::os::unix::fs::symlink(&target, &log).unwrap();
        assert!(super::open_log(&log).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }
}
