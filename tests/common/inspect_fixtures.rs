//! The Inspect AI fixture logs (`tests/fixtures/inspect-ai`, see its SOURCES.md), for the test
//! families that read them.

use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inspect-ai")
}

/// The log in the form `extension` names in `dir`.
fn log_in(dir: &Path, extension: &str) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == extension))
        .expect("a log in that form")
}

/// Run `run`'s (`A` or `B`) log in the form `extension` names (`json` or `eval`).
pub fn inspect_log(run: &str, extension: &str) -> PathBuf {
    log_in(&fixtures().join(run), extension)
}

/// Run `run`'s (`A` or `B`) `.eval` log of the task run for three epochs, some of whose samples'
/// epochs disagree (`tests/fixtures/inspect-ai/epochs`, see its SOURCES.md).
pub fn inspect_epochs_log(run: &str) -> PathBuf {
    log_in(&fixtures().join("epochs").join(run), "eval")
}
