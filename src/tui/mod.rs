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
//! `?` (help), `p` (problems), `d` (gold diff) and `/` (search prompt) are [`overlays`] that take
//! the keys while open; `f` gives the detail pane the whole body.
//!
//! Data flow: sources → ingest channel → [`app::ingest`] → store; keys/mouse/resize →
//! [`keymap`] → [`action::Action`] → [`app::update`]; [`ui::render`] only reads the [`app::App`]
//! and returns the [`layout::Regions`] it drew, which mouse hit-testing uses.

pub mod action;
pub mod app;
pub mod chat;
pub mod compare;
pub mod config;
pub mod event_loop;
pub mod facts;
pub mod format;
pub mod inspect;
pub mod keymap;
pub mod layout;
pub mod overlays;
pub mod payload;
pub mod search;
pub mod theme;
pub mod tree_nav;
pub mod ui;
pub mod verdict;
pub mod wrap;

use tokio::sync::mpsc;

use crate::sources::IngestEvent;

/// Takes over the terminal, runs the event loop until the user quits, and gives the terminal
/// back (also on a panic). The caller has checked [`terminal_check`] and started the sources.
pub async fn show(app: &mut app::App, ingest: mpsc::Receiver<IngestEvent>) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    let mouse = crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture);
    install_mouse_release_on_panic();
    let outcome = event_loop::run(&mut terminal, app, ingest).await;
    if mouse.is_ok() {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
    }
    ratatui::restore();
    outcome
}

/// The text of drawn lines, one per line: what tests compare.
#[cfg(test)]
pub(crate) fn plain_text(lines: &[ratatui::text::Line]) -> String {
    lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The TUI draws on stdout and reads keys from stdin: without a terminal on both it would
/// panic or draw into a pipe, so it refuses in one line and points at the headless view.
pub fn terminal_check() -> Result<(), crate::Error> {
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
    Err(crate::Error::NoTerminal { missing })
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
