//! Starting the TUI's sources live: files and directories watched, remote feeds followed,
//! Phoenix and Jaeger polled, the embedded receiver (`--listen`); each sends to one channel.

use std::path::PathBuf;

use tokio::sync::mpsc;

use super::remote::{self, RemoteOptions};
use super::{IngestEvent, attach, files, listen, watch};

/// The sources to start: what the command line named.
#[derive(Debug, Clone, Default)]
pub struct LiveSources {
    /// Files, directories, `-`, and URLs (`http(s)://` feeds, `phoenix+…`, `jaeger+…`).
    pub sources: Vec<String>,
    /// The embedded receiver's HTTP address (`--listen`).
    pub listen: Option<String>,
    /// Its gRPC address; `None` for none.
    pub grpc: Option<String>,
}

/// What keeps the live sources running; dropping it stops them.
#[derive(Default)]
pub struct RunningSources {
    /// Watches stop when this is dropped.
    pub watch: Option<watch::WatchHandle>,
    /// The embedded OTLP receiver (`--listen`), shut down on exit.
    pub receiver: Option<listen::ListenHandle>,
    /// Notes for the status bar (sources that could not start, features not wired yet).
    pub notes: Vec<String>,
}

/// Starts every source named on the command line, each sending to `tx`. Adding a source kind is one line here.
pub async fn spawn_sources(
    wanted: &LiveSources,
    remote: &RemoteOptions,
    tx: mpsc::Sender<IngestEvent>,
) -> RunningSources {
    let mut running = RunningSources::default();
    let mut paths = Vec::new();
    for source in &wanted.sources {
        if source.starts_with(super::phoenix::SCHEME_PREFIX) {
            super::phoenix::spawn_poll(source.clone(), remote.clone(), tx.clone());
        } else if source.starts_with(super::jaeger::SCHEME_PREFIX) {
            super::jaeger::spawn_poll(source.clone(), remote.clone(), tx.clone());
        } else if remote::is_remote(source) {
            let options = attach::AttachOptions {
                remote: remote.clone(),
                ..attach::AttachOptions::default()
            };
            attach::spawn_attach_with(source.clone(), tx.clone(), options);
        } else {
            paths.push(PathBuf::from(source));
        }
    }
    // `--listen` alone means "show what arrives": no surprise recursive watch of the cwd.
    if wanted.sources.is_empty() && wanted.listen.is_none() {
        paths.push(PathBuf::from("."));
    }
    if let Some(http) = &wanted.listen {
        let config = listen::ListenConfig {
            http: http.clone(),
            grpc: wanted.grpc.clone(),
            token: remote.token.clone(),
            spool_bytes: super::live_spool::DEFAULT_LIVE_SPOOL_BYTES,
            spool_parent: None,
        };
        match listen::spawn_listen(config, tx.clone()).await {
            Ok(handle) => running.receiver = Some(handle),
            Err(e) => running.notes.push(format!("--listen: {e}")),
        }
    }
    // Standard input, FIFOs and `<(…)` are read once: there is nothing to watch.
    let (read_once, paths): (Vec<PathBuf>, Vec<PathBuf>) = paths.into_iter().partition(|p| {
        p.as_path() == std::path::Path::new(files::STDIN)
            || std::fs::metadata(p).is_ok_and(|m| !m.is_dir() && !m.is_file())
    });
    if !read_once.is_empty() {
        spawn_file_load(read_once, tx.clone());
    }
    if !paths.is_empty() {
        match watch::spawn_watcher(paths.clone(), tx.clone()) {
            Ok(handle) => running.watch = Some(handle),
            Err(e) => {
                // Still show what is there now, just without following changes.
                running.notes.push(format!("not watching: {e}"));
                spawn_file_load(paths, tx);
            }
        }
    }
    running
}

/// Loads files and directories once, one file per batch so the list fills in as it goes.
pub fn spawn_file_load(paths: Vec<PathBuf>, tx: mpsc::Sender<IngestEvent>) {
    tokio::task::spawn_blocking(move || {
        for path in paths {
            let batches: Box<dyn Iterator<Item = _>> = match files::walk(&path) {
                Ok(found) => {
                    let notes = (!found.notes.is_empty())
                        .then(|| files::notes_only(&path, found.notes).batch);
                    Box::new(
                        found
                            .files
                            .into_iter()
                            .map(|f| files::load_file(&f).batch)
                            .chain(notes),
                    )
                }
                Err(_) => Box::new(
                    files::load_sources(std::slice::from_ref(&path))
                        .into_iter()
                        .map(|l| l.batch),
                ),
            };
            for batch in batches {
                if tx.blocking_send(IngestEvent::Batch(batch)).is_err() {
                    return;
                }
            }
        }
    });
}
