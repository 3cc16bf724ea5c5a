//! Loading files and directories once (the watcher builds on this for live updates).

use std::path::{Path, PathBuf};

use crate::formats::{self, Loaded};
use crate::model::{Batch, Origin, Problem};

/// Extensions that are never traces: skipped silently inside directories (a file named
/// explicitly on the command line is always tried).
const NOT_TRACES: &[&str] = &[
    "md", "txt", "yaml", "yml", "toml", "py", "rs", "lock", "sh", "html", "css", "js", "png",
    "jpg", "svg", "snap",
];

/// Every file under `path` worth trying, sorted for a stable load order. Hidden entries
/// (starting with `.`) are skipped inside directories.
pub fn trace_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            let child = entry.path();
            // file_type does not follow symlinks, so a symlink loop cannot trap the walk.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(child);
            } else if kind.is_file() && is_candidate(&child) {
                out.push(child);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Whether a file inside a directory should be tried as a trace.
pub fn is_candidate(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let ext = Path::new(name)
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Gold trajectories are `check` inputs, and toolscore's own reports (toolscore-result.json,
    // toolscore-record.json) sit next to the traces it scored: neither is a trace.
    if crate::formats::message_log::is_gold_name(&Origin::File(std::sync::Arc::new(
        path.to_path_buf(),
    ))) || (name.starts_with("toolscore-") && ext == "json")
    {
        return false;
    }
    !NOT_TRACES.contains(&ext.as_str()) && !name.ends_with(".meta.json")
}

/// Reads and parses one file.
pub fn load_file(path: &Path) -> Loaded {
    let origin = Origin::File(std::sync::Arc::new(path.to_path_buf()));
    match std::fs::read(path) {
        Ok(bytes) => formats::load_bytes(origin, &bytes),
        Err(e) => {
            let mut batch = Batch::default();
            batch
                .problems
                .push(Problem::error(&origin, None, e.to_string()));
            Loaded {
                origin,
                detection: formats::Detection {
                    format: None,
                    reason: "unreadable".into(),
                },
                batch,
            }
        }
    }
}

/// Loads every source (files or directories, recursively). Unreadable paths become problems.
pub fn load_sources(sources: &[PathBuf]) -> Vec<Loaded> {
    let mut out = Vec::new();
    for source in sources {
        match trace_files(source) {
            Ok(files) => out.extend(files.iter().map(|f| load_file(f))),
            Err(message) => {
                let origin = Origin::File(std::sync::Arc::new(source.clone()));
                let mut batch = Batch::default();
                batch.problems.push(Problem::error(&origin, None, message));
                out.push(Loaded {
                    origin,
                    detection: formats::Detection {
                        format: None,
                        reason: "not found".into(),
                    },
                    batch,
                });
            }
        }
    }
    out
}
