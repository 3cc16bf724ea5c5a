//! The problems overlay (`p`): errors and warnings the sources reported, then the notes.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::{Outcome, any_key};
use crate::redact;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::keymap::{KeyContext, Keymap, Scope};
use crate::tui::theme::Role;

/// The same keys as the help: either toggle or Cancel closes, movement scrolls.
pub const KEYS: KeyContext = KeyContext {
    scope: Scope::Problems,
    inherits: &[
        Action::ToggleProblems,
        Action::ToggleHelp,
        Action::Cancel,
        Action::Down,
        Action::Up,
        Action::PageDown,
        Action::PageUp,
        Action::Top,
        Action::Quit,
    ],
    text_input: false,
};

/// The problems overlay's lines: errors and warnings in arrival order, then the notes (files
/// skipped because they are not traces, an Inspect log's coverage) under their own heading, so
/// they never read as failures.
pub fn problem_lines(app: &App) -> Vec<Line<'static>> {
    let theme = &app.config.theme;
    let problems = app.store.problems();
    let (counted, notes): (Vec<_>, Vec<_>) = problems.iter().partition(|p| p.is_counted());
    let mut lines: Vec<Line<'static>> = counted
        .iter()
        .map(|p| {
            let role = match p.severity {
                crate::model::Severity::Error => Role::StatusError,
                _ => Role::StatusDegraded,
            };
            Line::styled(
                redact::shown_line(&p.to_string(), app.reveal),
                theme.style(role),
            )
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::styled("no problems", theme.style(Role::Dim)));
    }
    if !notes.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!("notes ({}), not counted as problems", notes.len()),
            theme.style(Role::Dim),
        ));
        lines.extend(notes.iter().map(|p| {
            Line::styled(
                redact::shown_line(&p.to_string(), app.reveal),
                theme.style(Role::Dim),
            )
        }));
    }
    lines
}

/// ` Problems — p or Esc closes `, with the keys bound now.
pub fn title(keymap: &Keymap) -> String {
    match any_key(keymap, &KEYS, &[Action::ToggleProblems, Action::Cancel]) {
        Some(close) => format!(" Problems — {close} closes "),
        None => " Problems ".into(),
    }
}

/// The open problems list: how far it is scrolled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Problems {
    pub scroll: usize,
}

impl Problems {
    pub fn update(&mut self, action: Action, _app: &mut App) -> Outcome {
        super::scroll_text(&mut self.scroll, action)
    }

    pub fn render(&self, frame: &mut Frame, screen: Rect, app: &App) {
        super::draw_scrolled(
            frame,
            screen,
            app,
            &title(&app.config.keymap),
            problem_lines(app),
            self.scroll,
        );
    }
}
