//! Loading sources once into a fresh store: what `dump`, `check` and `report` read (the TUI
//! starts the same sources live, in [`super::live`]).

use std::path::PathBuf;

use crate::formats::Loaded;
use crate::model::Severity;
use crate::store::Store;

use super::files;
use super::remote::{self, RemoteOptions};

/// Loads every source into a fresh store; returns it with the per-source load records.
pub fn load_store(sources: &[PathBuf]) -> (Store, Vec<SourceReport>) {
    load_store_with(sources, &RemoteOptions::default())
}

/// [`load_store`], reaching remote sources with `remote`'s token and headers. A remote source
/// is read as a snapshot: what it holds now, in order with the files around it.
pub fn load_store_with(sources: &[PathBuf], remote: &RemoteOptions) -> (Store, Vec<SourceReport>) {
    let mut store = Store::new();
    let mut reports = Vec::new();
    let mut take = |loaded: Loaded| {
        reports.push(SourceReport::of(&loaded));
        // Settled once at the end: a trace split over many files is assembled once, not
        // once per file.
        store.apply(loaded.batch);
    };
    for source in sources {
        match source.to_str().filter(|s| remote::is_remote_source(s)) {
            Some(url) => remote::snapshot(url, remote)
                .into_iter()
                .for_each(&mut take),
            None => files::load_sources(std::slice::from_ref(source))
                .into_iter()
                .for_each(&mut take),
        }
    }
    store.settle();
    (store, reports)
}

/// What `--explain` says about one source.
#[derive(Debug, Clone)]
pub struct SourceReport {
    pub source: String,
    pub format: Option<&'static str>,
    pub reason: String,
    pub spans: usize,
    /// Every problem of this source as `line N: message` (all severities).
    pub warnings: Vec<String>,
    /// The severity of each entry of `warnings`.
    pub severities: Vec<Severity>,
}

impl SourceReport {
    fn of(loaded: &Loaded) -> Self {
        SourceReport {
            source: loaded.origin.to_string(),
            format: loaded.detection.format,
            reason: loaded.detection.reason.clone(),
            spans: loaded.batch.spans.len(),
            warnings: loaded
                .batch
                .problems
                .iter()
                .map(|p| match p.line {
                    Some(line) => format!("line {line}: {}", p.message),
                    None => p.message.clone(),
                })
                .collect(),
            severities: loaded.batch.problems.iter().map(|p| p.severity).collect(),
        }
    }
}
