//! Live directory watching: load what is there, then follow new files, appended lines,
//! rewrites, truncations, renames and documents still being written, recursively.
//!
//! [`spawn_watcher`] registers the watches before it returns, then a dedicated thread does
//! the initial load and follows the (debounced) notify events. The thread does blocking file
//! I/O and uses `Sender::blocking_send`, so it never stalls the tokio runtime the TUI runs on
//! and it waits — never drops — when the app's channel is full.
//!
//! Completeness rules: a JSON-lines file hands over only complete lines (a half-written line
//! waits for its newline, or — if it is whole JSON — for a quiet period); a JSON document is
//! loaded only once it parses, and reported as a problem once if it stays invalid for a quiet
//! period. A file that shrank, was rewritten or replaced is forgotten and read again.
//!
//! Maximum delay: the debouncer holds a path's events until they stop for `debounce`, so a
//! file written more often than that would never show anything new. A second, raw watcher
//! only notes which paths are being written; a path written to for `max_delay` without a
//! debounced event is looked at anyway (reading a file twice is harmless: the tailer sends
//! only what is new).

mod tracked;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use notify::{EventKind, RecursiveMode, Watcher, event::AccessKind, event::AccessMode};
use notify_debouncer_full::{
    DebounceEventResult, DebouncedEvent, Debouncer, RecommendedCache, new_debouncer,
};

use crate::Error;
use crate::formats::{self, Format};
use crate::model::{Batch, Problem};
use crate::sources::files::{is_candidate, notes_only, trace_files, walk};
use crate::sources::{IngestEvent, SourceStatus};
use tracked::{Closed, Ctx, Emitter, TrackedFile, Why};

/// How the watcher waits and which formats it tries.
#[derive(Clone)]
pub struct WatchOptions {
    /// notify events for a path are merged over this long before the watcher looks.
    pub debounce: Duration,
    /// How long a half-written last line or an unparsable document must stay unchanged
    /// before it is flushed (whole JSON without its newline) or reported as a problem.
    pub quiet: Duration,
    /// Formats to detect, in order. The default is [`formats::REGISTRY`].
    pub registry: &'static [&'static dyn Format],
    /// Minimum time between two progress reports during the initial load.
    pub progress_every: Duration,
    /// Longest a path that is being written waits for the debouncer before it is looked at
    /// anyway, so a steadily growing file shows new lines while it grows.
    pub max_delay: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            debounce: Duration::from_millis(200),
            quiet: Duration::from_secs(2),
            registry: formats::REGISTRY,
            progress_every: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
        }
    }
}

/// What the watch thread receives: debounced events, and hints that a path is being written.
enum WatchMsg {
    Debounced(DebounceEventResult),
    Written(Vec<PathBuf>),
}

/// Room for write hints; when full, hints are dropped (the paths are already noted).
const MESSAGES: usize = 4096;

/// Keeps the watch alive; dropping it stops watching (the thread ends soon after).
pub struct WatchHandle {
    debouncer: Option<Debouncer<notify::RecommendedWatcher, RecommendedCache>>,
    /// The raw watcher behind the maximum delay; dropping it stops its hints.
    raw: Option<notify::RecommendedWatcher>,
    worker: Option<JoinHandle<()>>,
}

impl WatchHandle {
    /// Stops watching and waits for the thread to finish. The app must keep draining (or
    /// drop) its receiver meanwhile, since the thread may be waiting to send.
    pub fn stop(mut self) {
        self.raw.take();
        if let Some(debouncer) = self.debouncer.take() {
            debouncer.stop();
        }
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        if let Some(debouncer) = self.debouncer.take() {
            debouncer.stop_nonblocking();
        }
    }
}

/// Watches `roots` (directories recursively; a file root is followed on its own) with the
/// default options. Callable from inside or outside a tokio runtime: it does not block on
/// the channel itself, its thread does.
pub fn spawn_watcher(
    roots: Vec<PathBuf>,
    tx: tokio::sync::mpsc::Sender<IngestEvent>,
) -> Result<WatchHandle, Error> {
    spawn_watcher_with(roots, tx, WatchOptions::default())
}

/// [`spawn_watcher`] with explicit options.
pub fn spawn_watcher_with(
    roots: Vec<PathBuf>,
    tx: tokio::sync::mpsc::Sender<IngestEvent>,
    options: WatchOptions,
) -> Result<WatchHandle, Error> {
    let cwd = std::env::current_dir().map_err(Error::CurrentDirectory)?;
    let (fs_tx, fs_rx) = std::sync::mpsc::sync_channel::<WatchMsg>(MESSAGES);
    let debounced_tx = fs_tx.clone();
    let mut debouncer = new_debouncer(options.debounce, None, move |r: DebounceEventResult| {
        // Debounced events are never dropped: wait for room.
        let _ = debounced_tx.send(WatchMsg::Debounced(r));
    })
    .map_err(Error::Watcher)?;
    let mut raw = raw_watcher(fs_tx)?;
    let mut watched = Vec::new();
    for root in roots {
        // notify reports absolute paths, so the watcher's own paths are absolute too.
        let path = if root.is_absolute() {
            root
        } else {
            cwd.join(root)
        };
        let meta = std::fs::metadata(&path).map_err(|source| Error::Unreadable {
            path: path.clone(),
            source,
        })?;
        let (target, mode) = if meta.is_dir() {
            (path.clone(), RecursiveMode::Recursive)
        } else {
            // Watching the directory, not the file, keeps following it across renames.
            let parent = path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| cwd.clone());
            (parent, RecursiveMode::NonRecursive)
        };
        let cannot_watch = |source| Error::CannotWatch {
            path: target.clone(),
            source,
        };
        debouncer.watch(&target, mode).map_err(cannot_watch)?;
        raw.watch(&target, mode).map_err(cannot_watch)?;
        watched.push(Root {
            path,
            is_dir: meta.is_dir(),
            reported_files: None,
        });
    }
    let ctx = Ctx {
        registry: options.registry,
        quiet: options.quiet,
    };
    let mut worker = Worker {
        roots: watched,
        files: BTreeMap::new(),
        ctx,
        out: Emitter { tx },
        progress_every: options.progress_every,
        max_delay: options.max_delay,
        written: HashMap::new(),
    };
    let thread = std::thread::Builder::new()
        .name("toolcap-watch".into())
        .spawn(move || {
            let _ = worker.run(fs_rx);
        })
        .map_err(Error::WatchThread)?;
    Ok(WatchHandle {
        debouncer: Some(debouncer),
        raw: Some(raw),
        worker: Some(thread),
    })
}

/// A watcher that only notes writes (content changes and creations) for the maximum delay.
fn raw_watcher(tx: SyncSender<WatchMsg>) -> Result<notify::RecommendedWatcher, Error> {
    notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && matches!(
                event.kind,
                EventKind::Modify(
                    notify::event::ModifyKind::Data(_) | notify::event::ModifyKind::Any
                ) | EventKind::Create(_)
            )
        {
            // A hint, not an event: dropped when the worker is behind anyway.
            let _ = tx.try_send(WatchMsg::Written(event.paths));
        }
    })
    .map_err(Error::Watcher)
}

struct Root {
    path: PathBuf,
    is_dir: bool,
    /// Files count last sent in a status, to send again only on change.
    reported_files: Option<usize>,
}

impl Root {
    /// Whether `path` belongs to this root and is worth trying as a trace.
    fn covers(&self, path: &Path) -> bool {
        if !self.is_dir {
            return path == self.path;
        }
        let Ok(relative) = path.strip_prefix(&self.path) else {
            return false;
        };
        let hidden = relative.components().any(|c| match c {
            Component::Normal(name) => name.to_string_lossy().starts_with('.'),
            _ => false,
        });
        !hidden && is_candidate(path)
    }

    /// The files to read now, and notes for what the walk skipped (as `dump` reports them).
    fn candidates(&self) -> (Vec<PathBuf>, Vec<Problem>) {
        match walk(&self.path) {
            Ok(found) => (found.files, found.notes),
            // Said as `dump` says it, rather than showing an empty list.
            Err(error) => (
                Vec::new(),
                vec![Problem::error(self.path.display(), None, error.to_string())],
            ),
        }
    }
}

struct Worker {
    roots: Vec<Root>,
    files: BTreeMap<PathBuf, TrackedFile>,
    ctx: Ctx,
    out: Emitter,
    progress_every: Duration,
    max_delay: Duration,
    /// Paths written to since their last debounced event, with when the first write was seen.
    written: HashMap<PathBuf, Instant>,
}

impl Worker {
    fn run(&mut self, events: Receiver<WatchMsg>) -> Result<(), Closed> {
        self.initial_load()?;
        loop {
            let overdue = self
                .written
                .values()
                .min()
                .map(|since| *since + self.max_delay);
            let timeout = self
                .next_deadline()
                .into_iter()
                .chain(overdue)
                .min()
                .map(|at| at.saturating_duration_since(Instant::now()))
                .unwrap_or(Duration::from_secs(3600));
            match events.recv_timeout(timeout) {
                Ok(WatchMsg::Debounced(Ok(batch))) => {
                    for event in &batch {
                        for path in &event.paths {
                            self.written.remove(path);
                        }
                    }
                    self.handle_events(batch)?
                }
                Ok(WatchMsg::Debounced(Err(errors))) => self.report_watch_errors(errors)?,
                Ok(WatchMsg::Written(paths)) => {
                    let now = Instant::now();
                    for path in paths {
                        self.written.entry(path).or_insert(now);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            self.look_at_overdue()?;
            self.settle_due()?;
            self.report_counts()?;
        }
    }

    /// Files written to for `max_delay` with no debounced event yet: looked at now.
    fn look_at_overdue(&mut self) -> Result<(), Closed> {
        let now = Instant::now();
        let due: Vec<PathBuf> = self
            .written
            .iter()
            .filter(|(_, since)| now.saturating_duration_since(**since) >= self.max_delay)
            .map(|(p, _)| p.clone())
            .collect();
        for path in due {
            self.written.remove(&path);
            // Only files: directories and vanished paths wait for their debounced events.
            if path.is_file() && (self.covered(&path) || self.files.contains_key(&path)) {
                self.process(&path, Why::Change)?;
            }
        }
        Ok(())
    }

    fn initial_load(&mut self) -> Result<(), Closed> {
        for index in 0..self.roots.len() {
            let Some(root) = self.roots.get(index) else {
                continue;
            };
            let root_path = root.path.clone();
            let (files, skipped) = root.candidates();
            let total = files.len();
            let mut last_report = Instant::now();
            self.status(&root_path, 0, total)?;
            for (done, path) in files.iter().enumerate() {
                let why = if quiet_since_before(path, self.ctx.quiet) {
                    Why::Settle
                } else {
                    Why::Change
                };
                self.process(path, why)?;
                if last_report.elapsed() >= self.progress_every {
                    last_report = Instant::now();
                    self.status(&root_path, done + 1, total)?;
                }
            }
            if !skipped.is_empty() {
                let notes = notes_only(&root_path, skipped).batch;
                self.out.send(IngestEvent::Batch(notes))?;
            }
            self.status(&root_path, total, total)?;
            let files = self.files_under(&root_path);
            if let Some(root) = self.roots.get_mut(index) {
                root.reported_files = Some(files);
            }
        }
        Ok(())
    }

    fn status(&self, root: &Path, loaded: usize, total: usize) -> Result<(), Closed> {
        self.out.send(IngestEvent::Status(SourceStatus::Watching {
            root: root.to_path_buf(),
            files: self.files_under(root),
            loaded,
            total,
        }))
    }

    fn files_under(&self, root: &Path) -> usize {
        self.files.keys().filter(|p| p.starts_with(root)).count()
    }

    /// Sends a root's status again when the number of followed files changed.
    fn report_counts(&mut self) -> Result<(), Closed> {
        for index in 0..self.roots.len() {
            let Some(root) = self.roots.get(index) else {
                continue;
            };
            let files = self.files_under(&root.path);
            if root.reported_files == Some(files) {
                continue;
            }
            self.out.send(IngestEvent::Status(SourceStatus::Watching {
                root: root.path.clone(),
                files,
                loaded: files,
                total: files,
            }))?;
            if let Some(root) = self.roots.get_mut(index) {
                root.reported_files = Some(files);
            }
        }
        Ok(())
    }

    fn handle_events(&mut self, events: Vec<DebouncedEvent>) -> Result<(), Closed> {
        let mut rescan = false;
        let mut paths = BTreeSet::new();
        for event in events {
            rescan |= event.need_rescan();
            if is_our_own_read(&event.kind) {
                continue;
            }
            paths.extend(event.event.paths);
        }
        if rescan {
            return self.rescan();
        }
        // Vanished paths first, so a rename's old name is forgotten before its new one loads.
        let (present, vanished): (Vec<PathBuf>, Vec<PathBuf>) = paths
            .into_iter()
            .partition(|p| std::fs::symlink_metadata(p).is_ok());
        for path in &vanished {
            self.forget_under(path)?;
        }
        for path in present {
            if path.is_dir() {
                // A new or moved-in directory: its files may predate the watch on it.
                for file in trace_files(&path).unwrap_or_default() {
                    if self.covered(&file) {
                        self.process(&file, Why::Change)?;
                    }
                }
            } else if self.covered(&path) || self.files.contains_key(&path) {
                self.process(&path, Why::Change)?;
            }
        }
        Ok(())
    }

    /// notify missed events: look at everything again and forget what is gone.
    fn rescan(&mut self) -> Result<(), Closed> {
        let gone: Vec<PathBuf> = self.files.keys().filter(|p| !p.exists()).cloned().collect();
        for path in &gone {
            self.forget_under(path)?;
        }
        let mut all = Vec::new();
        for root in &self.roots {
            all.extend(root.candidates().0);
        }
        for path in all {
            self.process(&path, Why::Change)?;
        }
        Ok(())
    }

    fn covered(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| r.covers(path))
    }

    fn process(&mut self, path: &Path, why: Why) -> Result<(), Closed> {
        let file = self
            .files
            .entry(path.to_path_buf())
            .or_insert_with(|| TrackedFile::new(path));
        if file.process(why, &self.ctx, &self.out)?.is_err() {
            self.forget_under(path)?;
        }
        Ok(())
    }

    /// Forgets `path` and, for a directory that went away, every file under it.
    fn forget_under(&mut self, path: &Path) -> Result<(), Closed> {
        let keys: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| p.starts_with(path))
            .cloned()
            .collect();
        for key in keys {
            if let Some(mut file) = self.files.remove(&key) {
                file.forget(&self.out)?;
            }
        }
        Ok(())
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.files.values().filter_map(|f| f.deadline).min()
    }

    fn settle_due(&mut self) -> Result<(), Closed> {
        let now = Instant::now();
        let due: Vec<PathBuf> = self
            .files
            .iter()
            .filter(|(_, f)| f.deadline.is_some_and(|at| at <= now))
            .map(|(p, _)| p.clone())
            .collect();
        for path in due {
            self.process(&path, Why::Settle)?;
        }
        Ok(())
    }

    fn report_watch_errors(&self, errors: Vec<notify::Error>) -> Result<(), Closed> {
        let mut batch = Batch::default();
        for error in errors {
            let source = error
                .paths
                .first()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "file watcher".into());
            batch.problems.push(Problem::warning(
                source,
                None,
                format!("file watcher: {error}"),
            ));
        }
        self.out.send(IngestEvent::Batch(batch))
    }
}

/// inotify reports our own opens and reads; only writes (and closing after writing) matter.
fn is_our_own_read(kind: &EventKind) -> bool {
    matches!(kind, EventKind::Access(access) if *access != AccessKind::Close(AccessMode::Write))
}

/// True when the file was last modified longer than `quiet` ago (so a pending last line or
/// an invalid document found at start-up needs no extra wait).
fn quiet_since_before(path: &Path, quiet: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified).ok())
        .is_some_and(|age| age >= quiet)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The triage notes' sidecar lives beside the traces in `.toolcap/`: neither the watcher nor
    /// the directory walk may take it for a trace (each append would be read as a new file).
    #[test]
    fn the_notes_sidecar_is_not_a_trace_to_the_watcher_or_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace.jsonl");
        std::fs::write(&trace, "{}\n").unwrap();
        let notes_dir = dir.path().join(toolcap_store::notes::NOTES_DIR);
        std::fs::create_dir(&notes_dir).unwrap();
        let notes = notes_dir.join(toolcap_store::notes::NOTES_FILE);
        std::fs::write(&notes, "{\"v\":1}\n").unwrap();
        let root = Root {
            path: dir.path().to_path_buf(),
            is_dir: true,
            reported_files: None,
        };
        assert!(root.covers(&trace), "a trace beside it is watched");
        assert!(!root.covers(&notes), "the sidecar is not");
        let (files, _) = root.candidates();
        assert_eq!(files, [trace]);
    }
}
