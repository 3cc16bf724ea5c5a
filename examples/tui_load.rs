//! Loads one trace file the way the TUI does, without a terminal, and exits when it is read:
//! the file watcher feeds the ingest channel, each drain is applied to the app (settle and
//! refresh) and a frame is drawn into an off-screen buffer, as the event loop does. For
//! profiling the TUI's load path (e.g. under `valgrind --tool=callgrind`) beside `dump`'s.
//!
//! `cargo run --release --example tui_load -- FILE`; prints the runs listed, the drains and
//! the frames drawn on stderr, and with `TOOLCAP_MEMORY=1` the store's memory as `dump --stats`
//! shows it, search indexes included.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;
use toolcap::redact::Reveal;
use toolcap::sources::{SourceStatus, watch};
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::{config, ui};

/// The event loop's batch: most ingest events applied before a frame.
const INGEST_BATCH: usize = 256;
const WIDTH: u16 = 160;
const HEIGHT: u16 = 45;

fn main() {
    let Some(file) = std::env::args_os().nth(1) else {
        eprintln!("usage: tui_load FILE");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let store = Store::with_budget(toolcap::store::Budget {
        max_invocations: None,
        max_bytes: Some(2048 << 20),
    })
    .indexing_later();
    let mut app = App::new(store, config::from_toml("", false), Reveal::Redacted);
    app::update(
        &mut app,
        Action::Resize {
            width: WIDTH,
            height: HEIGHT,
        },
    );
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("test backend");
    let (drains, frames) = runtime.block_on(async {
        let (tx, mut rx) = mpsc::channel(1024);
        let handle = watch::spawn_watcher(vec![file.into()], tx).expect("watch the file");
        let mut pending = Vec::with_capacity(INGEST_BATCH);
        let mut drawn = None;
        let (mut drains, mut frames) = (0usize, 0usize);
        loop {
            let state = (app.store.generation(), app.version);
            if drawn != Some(state) {
                let mut regions = None;
                terminal
                    .draw(|frame| regions = Some(ui::render(frame, &app)))
                    .expect("draw");
                if let Some(regions) = regions {
                    app::record_frame(&mut app, regions);
                }
                drawn = Some(state);
                frames += 1;
            }
            if finished(&app) {
                break;
            }
            if rx.recv_many(&mut pending, INGEST_BATCH).await == 0 {
                break;
            }
            app::ingest_many(&mut app, pending.drain(..));
            drains += 1;
        }
        drop(handle);
        (drains, frames)
    });
    eprintln!(
        "{} runs listed, {} spans, {drains} drains, {frames} frames",
        app.list.len(),
        app.store.stats().spans_kept
    );
    if std::env::var_os("TOOLCAP_MEMORY").is_some() {
        eprint!("{}", toolcap::views::dump::memory_text(&app.store));
    }
    runtime.shutdown_background();
    std::mem::forget(app);
}

/// What the status bar shows as done: every watched file loaded and every big read at its end.
fn finished(app: &App) -> bool {
    !app.sources.is_empty()
        && app.sources.iter().all(|s| match s {
            SourceStatus::Reading { read, total, .. } => read >= total,
            SourceStatus::Watching { loaded, total, .. } => loaded >= total,
            _ => true,
        })
}
