//! The terminal UI.
//!
//! ```text
//! ┌ Invocations (N) ───────────────────────────────────────────────────────────┐  ui::list
//! │    name                     start     dur    tools  llm  tokens  eval      │  newest first,
//! │› ◐ travel_assistant         12:50:47  57ms   2 ✗1   2    533               │  selection by id
//! │  ✓ weather_ok · turn 1      12:50:09  111ms  1      2    517     ✓ 5.00    │
//! └────────────────────────────────────────────────────────────────────────────┘
//! ┌ Spans · <run> (shown of total) ─────────┐┌ Detail ─ redacted ──────────────┐
//! │ ▾ ● travel_assistant ◐  57ms ━━━━━━━━━━ ││⚒ tool get_stock_price           │  ui::tree: only the
//! │     ◆ ChatCompletion · gpt  8ms ···━━   ││status    ✗ error                │  visible window;
//! │›    ⚒ get_stock_price ✗   195µs ·····━  ││── input · 45 B · redacted ──    │  ui::detail: lines
//! │     ◆ chat ↻ attempt 2/2   3ms ······━━ ││{ "symbol": "string (4 chars)" } │  built by inspect
//! └─────────────────────────────────────────┘└─────────────────────────────────┘
//!  REDACTED  27 invocations · 218 spans · 2 errors (p) · watching ./traces       ui::status
//!  Enter fold/unfold  l expand  h collapse  n next failure  r reveal  ? help       (footer)
//! ```
//! `?` (help) and `p` (problems) draw an overlay on top; `f` gives the detail pane the whole body.
//!
//! Data flow: sources → ingest channel → [`app::ingest`] → store; keys/mouse/resize →
//! [`keymap`] → [`action::Action`] → [`app::update`]; [`ui::render`] only reads the [`app::App`].

pub mod action;
pub mod app;
pub mod config;
pub mod diff;
pub mod event_loop;
pub mod facts;
pub mod format;
pub mod inspect;
pub mod keymap;
pub mod payload;
pub mod search;
pub mod theme;
pub mod tree_nav;
pub mod ui;
pub mod verdict;
pub mod wrap;

use std::path::PathBuf;

use tokio::sync::mpsc;

use crate::cli::UiArgs;
use crate::redact::Reveal;
use crate::sources::remote::{self, RemoteOptions};
use crate::sources::{IngestEvent, attach, files, listen, watch};
use crate::store::{Budget, Store};

/// Capacity of the ingest channel; a full channel slows sources down instead of growing memory.
const INGEST_CAPACITY: usize = 1024;

/// `toolcap-tui [SOURCE...]`: runs the full-screen app; returns the process exit code.
pub fn run(args: UiArgs) -> i32 {
    // `--token-file` (e.g. the serve.token a `serve` wrote) stands for `--token`.
    let token = match (&args.token, &args.token_file) {
        (None, Some(path)) => match crate::receiver::token::read(path) {
            Ok(token) => Some(token),
            Err(why) => {
                eprintln!("toolcap-tui: --token-file: {why}");
                return 2;
            }
        },
        (token, _) => token.clone(),
    };
    let remote = match RemoteOptions::from_args(token, &args.headers) {
        Ok(remote) => RemoteOptions {
            ca_cert: args.cacert.clone(),
            ..remote
        },
        Err(why) => {
            eprintln!("toolcap-tui: {why}");
            return 2;
        }
    };
    if let Some(http) = &args.listen {
        let has_token = remote.token.is_some();
        let grpc = Some(&args.grpc).filter(|g| !g.is_empty());
        let addrs = std::iter::once(("--listen", http)).chain(grpc.map(|g| ("--grpc", g)));
        for (flag, addr) in addrs {
            match crate::receiver::exposure::check_bind(flag, addr, has_token, args.insecure) {
                Ok(None) => {}
                // Said before the screen is taken over, so it is seen.
                Ok(Some(warning)) => eprintln!("toolcap-tui: {warning}"),
                Err(refusal) => {
                    eprintln!("toolcap-tui: {refusal}");
                    return 2;
                }
            }
        }
    }
    if let Err(message) = terminal_check() {
        eprintln!("{message}");
        return 2;
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolcap-tui: cannot start the async runtime: {e}");
            return 2;
        }
    };
    let config = config::load(config::no_color_requested());
    let store = Store::with_budget(Budget {
        max_invocations: args.max_invocations,
        max_bytes: Some(args.max_memory_mb)
            .filter(|&mb| mb > 0)
            .map(|mb| mb.saturating_mul(1 << 20)),
    });
    let mut app = app::App::new(store, config, Reveal::from_flag(args.reveal));
    if let Some(path) = &args.gold {
        match crate::gold::source::load_gold_file(path) {
            Ok((file, problems)) => {
                app.gold = app::GoldContext::new(Some(file));
                if let Some(problem) = problems.first() {
                    app.message = Some(crate::redact::sanitize_line(&problem.to_string()));
                }
            }
            Err(why) => {
                eprintln!(
                    "toolcap-tui: --gold {}: {}",
                    path.display(),
                    crate::redact::sanitize_line(&why)
                );
                return 2;
            }
        }
    }
    let result = runtime.block_on(async {
        let (tx, rx) = mpsc::channel(INGEST_CAPACITY);
        let sources = spawn_sources(&args, &remote, tx).await;
        if let Some(note) = sources.notes.first() {
            app.message = Some(note.clone());
        }
        let mut terminal = ratatui::init();
        let mouse = crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture);
        install_mouse_release_on_panic();
        let outcome = event_loop::run(&mut terminal, &mut app, rx).await;
        if mouse.is_ok() {
            let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
        }
        ratatui::restore();
        if let Some(receiver) = sources.receiver {
            receiver.shutdown().await;
        }
        drop(sources.watch);
        outcome
    });
    // Background loaders may still be reading; they stop when the runtime drops.
    runtime.shutdown_background();
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("toolcap-tui: {e}");
            1
        }
    }
}

/// The TUI draws on stdout and reads keys from stdin: without a terminal on both it would
/// panic or draw into a pipe, so it refuses in one line and points at the headless view.
fn terminal_check() -> Result<(), String> {
    use std::io::IsTerminal as _;
    let missing = match (
        std::io::stdin().is_terminal(),
        std::io::stdout().is_terminal(),
    ) {
        (true, true) => return Ok(()),
        (false, true) => "stdin is not a terminal",
        (true, false) => "stdout is not a terminal",
        (false, false) => "stdin and stdout are not terminals",
    };
    Err(format!(
        "toolcap-tui: the TUI needs a terminal ({missing}); for text or JSON use `toolcap-tui dump SOURCE...`"
    ))
}

/// A panic must leave a usable terminal: release the mouse, then ratatui's hook restores the
/// screen and prints the panic.
fn install_mouse_release_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
        previous(info);
    }));
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
    args: &UiArgs,
    remote: &RemoteOptions,
    tx: mpsc::Sender<IngestEvent>,
) -> RunningSources {
    let mut running = RunningSources::default();
    let mut paths = Vec::new();
    for source in &args.sources {
        if source.starts_with(crate::sources::phoenix::SCHEME_PREFIX) {
            crate::sources::phoenix::spawn_poll(source.clone(), remote.clone(), tx.clone());
        } else if source.starts_with(crate::sources::jaeger::SCHEME_PREFIX) {
            crate::sources::jaeger::spawn_poll(source.clone(), remote.clone(), tx.clone());
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
    if args.sources.is_empty() && args.listen.is_none() {
        paths.push(PathBuf::from("."));
    }
    if let Some(http) = &args.listen {
        let grpc = Some(args.grpc.clone()).filter(|g| !g.is_empty());
        let config = listen::ListenConfig {
            http: http.clone(),
            grpc,
            token: remote.token.clone(),
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
