//! The interactive `toolcap-tui compare A B`: the cases of two runs by class, and one case's
//! two runs side by side.
//!
//! ```text
//! A runs/a.json  →  B runs/b.json                                                       header
//! pass rate 50.0% → 37.5% · failing 4 of 8 → 5 of 8 · paired by case · newly failing 3 · …
//! ┌ Cases (8) ─────────────────┐┌ A │ B · redacted ──────────────────────────────────┐
//! │newly failing (3)           ││geo-03 · 1 · newly failing                          │
//! │› geo-03 · 1 ✓ ✗ expected_… ││A ✓ passing              │ B ✗ failing              │
//! │  geo-04 · 1 ✓ ✗ expected_… ││── tool calls · A 1 → B 1 · first divergence ▶ ──   │
//! │fixed (2)                   ││▶ 1   population(…)      │ ✗ country_capital(…)     │
//! └────────────────────────────┘└────────────────────────────────────────────────────┘
//!  REDACTED  8 cases · 3 newly failing in B                                             status
//! j/k ↓/↑ move  n/N newly failing  Tab ]/[ class  r reveal  …                           footer
//! ```
//!
//! State is plain data ([`state::CompareState`]); [`state::update`] is the one place it
//! changes, from an [`keys::Action`] a key maps to; [`render::render`] draws it and changes
//! nothing. The event loop waits on the terminal alone: nothing here changes by itself.

pub mod detail;
pub mod export;
pub mod keys;
pub mod render;
pub mod state;
pub mod summary;

use std::io;

use crossterm::event::EventStream;
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::Backend;

pub use state::{CompareState, update};

/// Takes over the terminal, runs the view until the user quits, and gives the terminal back
/// (also on a panic: ratatui's hook restores it). The caller has checked
/// [`crate::tui::terminal_check`].
pub async fn show(state: &mut CompareState) -> io::Result<()> {
    let mut terminal = ratatui::init();
    let outcome = run(&mut terminal, state).await;
    ratatui::restore();
    outcome
}

/// Draws, then waits for the next terminal event and applies it, until the user quits or the
/// terminal's input ends. A frame is drawn only after an event that meant something.
pub async fn run<B: Backend>(terminal: &mut Terminal<B>, state: &mut CompareState) -> io::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let mut input = EventStream::new();
    if let Ok(size) = terminal.size() {
        update(
            state,
            keys::Action::Resize {
                width: size.width,
                height: size.height,
            },
        );
    }
    let mut changed = true;
    loop {
        if changed {
            terminal
                .draw(|frame| render::render(frame, state))
                .map_err(io::Error::other)?;
            changed = false;
        }
        if state.should_quit {
            return Ok(());
        }
        tokio::select! {
            event = input.next() => match event {
                Some(Ok(event)) => {
                    if let Some(action) = keys::action_for_event(state.key_scope(), &event) {
                        update(state, action);
                        changed = true;
                    }
                }
                Some(Err(why)) => return Err(why),
                None => return Ok(()),
            },
        }
    }
}
