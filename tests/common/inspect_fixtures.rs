//! The Inspect AI fixture logs (`tests/fixtures/inspect-ai`, see its SOURCES.md), for the test
//! families that read them.

use std::path::{Path, PathBuf};

/// Run `run`'s (`A` or `B`) log in the form `extension` names (`json` or `eval`).
pub fn inspect_log(run: &str, extension: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inspect-ai")
        .join(run);
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == extension))
        .expect("a log in that form")
}
