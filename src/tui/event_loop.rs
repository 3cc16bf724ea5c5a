//! The one event loop: `tokio::select!` over terminal input, the list search's results (the
//! query worker answers on a channel) and the ingest channel. Nothing on screen animates, so
//! an idle app sleeps until a key, a result or data arrives. Work left between events (gold
//! scores of rows not drawn yet) runs in short steps, after keys and data. Ingest events are
//! drained in batches; a frame is drawn only when the store or the UI state changed since the
//! last one.
//!
//! While data streams in (a big file read in pieces, a burst of live requests), the views are
//! rebuilt at most once per [`SETTLE_EVERY`]: each rebuild sorts and arranges every run listed
//! so far, so rebuilding at every drain would spend more on the list than on taking the data
//! in. Data after a quiet spell is shown at once, and so is the end of a file's read; one
//! timer settles what came in since the last rebuild when no more data follows; another brings
//! the open summary up to date once it is due (it is computed again at most as often as its
//! cost allows while runs arrive); a slow tick looks at the notes file for notes written by
//! another process. Once a big load is over (data quiet for [`QUIET_BEFORE_RELEASE`], the work
//! between events done), the memory it freed goes back to the system.

use std::io;
use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyEventKind, MouseEventKind};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc;

use super::action::Action;
use super::app::{self, App};
use super::overlays::OverlayKind;
use super::ui;
use crate::query::worker::Chunk;
use crate::sources::IngestEvent;

/// Most ingest events applied before the screen gets a chance to redraw.
const INGEST_BATCH: usize = 256;
/// Most query result chunks taken in before the screen gets a chance to redraw.
const RESULT_BATCH: usize = 64;
/// While data streams in, the views are rebuilt at most this often.
const SETTLE_EVERY: Duration = Duration::from_millis(100);
/// How often the notes file is looked at for notes written by another process.
const NOTES_EVERY: Duration = Duration::from_secs(2);
/// How long data must have been quiet before a big load's freed memory is given back: longer
/// than the gaps between a live sender's requests or a file's pieces, so it is not given back
/// in the middle of a load only to be taken again.
const QUIET_BEFORE_RELEASE: Duration = Duration::from_millis(250);

/// Sleeps until `due`; never ready without one.
async fn sleep_until_due(due: Option<tokio::time::Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due).await,
        None => std::future::pending().await,
    }
}

/// The next chunks of query results; never ready when there is no channel.
async fn next_results(
    results: &mut Option<mpsc::UnboundedReceiver<Chunk>>,
    into: &mut Vec<Chunk>,
) -> usize {
    match results {
        Some(rx) => rx.recv_many(into, RESULT_BATCH).await,
        None => std::future::pending().await,
    }
}

/// Turns one terminal event into an action (none when it means nothing here).
pub fn action_for_event(app: &App, event: &Event) -> Option<Action> {
    match event {
        Event::Key(key) if key.kind != KeyEventKind::Release => {
            if let Some(taking) = OverlayKind::taking_keys(app) {
                return taking.action_for_key(app, key);
            }
            app.config.keymap.lookup(&app.key_scopes(), key)
        }
        Event::Mouse(mouse) => match mouse.kind {
            MouseEventKind::Down(_) => Some(Action::Click {
                column: mouse.column,
                row: mouse.row,
            }),
            MouseEventKind::ScrollUp => Some(Action::ScrollUp {
                column: mouse.column,
                row: mouse.row,
            }),
            MouseEventKind::ScrollDown => Some(Action::ScrollDown {
                column: mouse.column,
                row: mouse.row,
            }),
            _ => None,
        },
        Event::Resize(width, height) => Some(Action::Resize {
            width: *width,
            height: *height,
        }),
        _ => None,
    }
}

/// Takes or releases the mouse; released, the terminal selects text natively.
fn set_mouse_capture(on: bool) {
    use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
    let result = if on {
        crossterm::execute!(io::stdout(), EnableMouseCapture)
    } else {
        crossterm::execute!(io::stdout(), DisableMouseCapture)
    };
    // A terminal without mouse support simply keeps its own behaviour.
    let _ = result;
}

/// Runs until the user quits (or the terminal's input ends).
pub async fn run<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    mut ingest_rx: mpsc::Receiver<IngestEvent>,
) -> io::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let mut input = EventStream::new();
    let mut ingest_open = true;
    let mut pending = Vec::with_capacity(INGEST_BATCH);
    let mut results = app::take_query_results(app);
    let mut chunks = Vec::with_capacity(RESULT_BATCH);
    let mut drawn: Option<(u64, u64)> = None;
    // The caller captured the mouse before the loop; `M` releases and retakes it.
    let mut mouse_captured = app.mouse_capture;
    if let Ok(size) = terminal.size() {
        app::update(
            app,
            Action::Resize {
                width: size.width,
                height: size.height,
            },
        );
    }
    // When the views were last rebuilt, and whether data came in since.
    let mut settled_at = tokio::time::Instant::now();
    let mut unsettled = false;
    // When data last came in.
    let mut data_at = tokio::time::Instant::now();
    let mut listed_anything = false;
    let mut notes_tick = tokio::time::interval(NOTES_EVERY);
    notes_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let watching_notes = app.notes_file.is_some();
    loop {
        let state = (app.store.generation(), app.version);
        // Data taken in but not settled changes nothing the list shows yet.
        if drawn != Some(state) && !unsettled {
            let mut regions = None;
            terminal
                .draw(|frame| regions = Some(ui::render(frame, app)))
                .map_err(io::Error::other)?;
            if let Some(regions) = regions {
                app::record_frame(app, regions);
            }
            drawn = Some(state);
        }
        if let Some(text) = app
            .clipboard
            .take()
            .filter(|text| text.len() <= app::export::OSC52_MAX_TEXT)
        {
            // Between frames, straight to the terminal: OSC 52 is not drawn, it is obeyed.
            // `y` refuses a longer copy with a message; nothing longer is ever written.
            use std::io::Write as _;
            let mut out = io::stdout();
            let _ = out.write_all(app::export::osc52(&text).as_bytes());
            let _ = out.flush();
        }
        if app.should_quit {
            return Ok(());
        }
        if mouse_captured != app.mouse_capture {
            mouse_captured = app.mouse_capture;
            set_mouse_capture(mouse_captured);
        }
        // The open summary, out of date while runs arrive, is computed again at this time.
        let summary_due =
            crate::tui::overlays::summary::due(app).map(tokio::time::Instant::from_std);
        tokio::select! {
            // Keys first, then what a running search found, then data; background work
            // (scoring rows off screen) only when none is waiting, one short step at a time.
            biased;
            event = input.next() => match event {
                Some(Ok(event)) => {
                    // A key acts on everything taken in so far.
                    if std::mem::take(&mut unsettled) {
                        app::settle(app);
                        settled_at = tokio::time::Instant::now();
                    }
                    if let Some(action) = action_for_event(app, &event) {
                        app::update(app, action);
                    }
                }
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
            received = next_results(&mut results, &mut chunks) => {
                if received == 0 {
                    results = None;
                }
                if std::mem::take(&mut unsettled) {
                    app::settle(app);
                    settled_at = tokio::time::Instant::now();
                }
                app::query_results(app, chunks.drain(..));
            }
            received = ingest_rx.recv_many(&mut pending, INGEST_BATCH), if ingest_open => {
                if received == 0 {
                    ingest_open = false;
                }
                // A file read to its end sends nothing more: no burst follows to wait for.
                let ends_a_read = pending.iter().any(|event| {
                    matches!(event, IngestEvent::Status(status) if status.is_finished_read())
                });
                app::take_in(app, pending.drain(..));
                unsettled = true;
                data_at = tokio::time::Instant::now();
                // The first runs are listed as soon as they arrive, and a read's last ones.
                if !listed_anything || ends_a_read || settled_at.elapsed() >= SETTLE_EVERY {
                    app::settle(app);
                    settled_at = tokio::time::Instant::now();
                    unsettled = false;
                    listed_anything |= !app.list.is_empty();
                }
            }
            () = tokio::time::sleep_until(settled_at + SETTLE_EVERY), if unsettled => {
                app::settle(app);
                settled_at = tokio::time::Instant::now();
                unsettled = false;
            }
            () = sleep_until_due(summary_due), if summary_due.is_some() => {
                app::summary_due(app);
            }
            _ = notes_tick.tick(), if watching_notes => {
                app::notes::reload_if_changed(app);
            }
            () = std::future::ready(()), if !unsettled && app::has_background_work(app) => {
                app::background_step(app);
            }
            () = tokio::time::sleep_until(data_at + QUIET_BEFORE_RELEASE),
                if !unsettled && app::release_due(app) && !app::has_background_work(app) => {
                app::release_memory(app);
            }
        }
    }
}
