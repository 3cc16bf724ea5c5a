//! Loading sources once into a fresh store: what `dump`, `check` and `report` read (the TUI
//! starts the same sources live, in [`super::live`]).

use std::path::PathBuf;

use crate::formats::Loaded;
use crate::model::Severity;
use crate::store::Store;

use super::files::{self, Found};
use super::pieces::{self, PiecewiseLoad};
use super::remote::{self, RemoteOptions};

/// Loads every source into a fresh store; returns it with the per-source load records. The
/// store keeps no search index: a command reads it once, and an index would be built to be
/// read once, if at all (a query tests every span instead, and finds the same).
pub fn load_store(sources: &[PathBuf]) -> (Store, Vec<SourceReport>) {
    load_store_with(sources, &RemoteOptions::default())
}

/// [`load_store`], reaching remote sources with `remote`'s token and headers. A remote source
/// is read as a snapshot: what it holds now, in order with the files around it.
pub fn load_store_with(sources: &[PathBuf], remote: &RemoteOptions) -> (Store, Vec<SourceReport>) {
    load_into(Store::unindexed(), sources, remote)
}

/// Loads every source into `store` and settles it once at the end.
pub fn load_into(
    mut store: Store,
    sources: &[PathBuf],
    remote: &RemoteOptions,
) -> (Store, Vec<SourceReport>) {
    let reports = apply_sources(&mut store, sources, remote);
    store.settle();
    (store, reports)
}

/// Applies every source to `store` without settling it: a caller that looks at sources one by
/// one settles once when all are in.
pub fn apply_sources(
    store: &mut Store,
    sources: &[PathBuf],
    remote: &RemoteOptions,
) -> Vec<SourceReport> {
    let mut reports = Vec::new();
    // Settled once at the end: a trace split over many files is assembled once, not once per
    // file.
    let take = |store: &mut Store, reports: &mut Vec<SourceReport>, loaded: Loaded| {
        reports.push(SourceReport::of(&loaded));
        store.apply(loaded.batch);
    };
    for source in sources {
        match source.to_str().filter(|s| remote::is_remote_source(s)) {
            Some(url) => {
                for loaded in remote::snapshot(url, remote) {
                    take(store, &mut reports, loaded);
                }
            }
            None => files::visit(source, &mut |found| match found {
                Found::File(file) => {
                    match pieces::load_in_pieces(file, &mut |batch| store.apply(batch)) {
                        Some(load) => reports.push(SourceReport::of_pieces(file, load)),
                        None => take(store, &mut reports, files::load_file(file)),
                    }
                }
                Found::Record(loaded) => take(store, &mut reports, *loaded),
            }),
        }
    }
    reports
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
    fn of_pieces(file: &std::path::Path, load: PiecewiseLoad) -> Self {
        SourceReport {
            source: file.display().to_string(),
            format: load.detection.format,
            reason: load.detection.reason,
            spans: load.spans,
            warnings: load.problems.iter().map(Self::warning).collect(),
            severities: load.problems.iter().map(|p| p.severity).collect(),
        }
    }

    fn warning(problem: &crate::model::Problem) -> String {
        match problem.line {
            Some(line) => format!("line {line}: {}", problem.message),
            None => problem.message.clone(),
        }
    }

    fn of(loaded: &Loaded) -> Self {
        SourceReport {
            source: loaded.origin.to_string(),
            format: loaded.detection.format,
            reason: loaded.detection.reason.clone(),
            spans: loaded.batch.spans.len(),
            warnings: loaded.batch.problems.iter().map(Self::warning).collect(),
            severities: loaded.batch.problems.iter().map(|p| p.severity).collect(),
        }
    }
}
