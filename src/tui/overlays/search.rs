//! The search prompt (`/`): a line of text in the status bar, for the run list or for a find
//! in the selected trace. Keys are text and readline editing; the keymap's `search` scope
//! decides which keys keep or restore the query, and a global binding reaches it only for
//! quitting with a key that is not text.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Span;

use super::any_key;
use crate::redact;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::keymap::{KeyContext, Keymap, Scope};
use crate::tui::search::EditKey;
use crate::tui::theme::Role;

pub const KEYS: KeyContext = KeyContext {
    scope: Scope::Search,
    inherits: &[Action::Quit],
    text_input: true,
};

/// The keymap first (so keep/restore can be rebound), then readline editing (C-u/w/a/e/b/f,
/// M-b/f, arrows, ↑/↓ history), then the key as typed text.
pub fn action_for_key(app: &App, key: &KeyEvent) -> Option<Action> {
    if let Some(action) = app.config.keymap.lookup_in(&KEYS, key) {
        return Some(action);
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        let edit = match key.code {
            KeyCode::Char('u') => EditKey::KillToStart,
            KeyCode::Char('w') | KeyCode::Backspace => EditKey::KillWordBack,
            KeyCode::Char('a') => EditKey::Home,
            KeyCode::Char('e') => EditKey::End,
            KeyCode::Char('b') => EditKey::Left,
            KeyCode::Char('f') => EditKey::Right,
            _ => return None,
        };
        return Some(Action::SearchEdit(edit));
    }
    if key.modifiers.contains(KeyModifiers::ALT) {
        return match key.code {
            KeyCode::Char('b') | KeyCode::Left => Some(Action::SearchEdit(EditKey::WordLeft)),
            KeyCode::Char('f') | KeyCode::Right => Some(Action::SearchEdit(EditKey::WordRight)),
            KeyCode::Backspace => Some(Action::SearchEdit(EditKey::KillWordBack)),
            _ => None,
        };
    }
    let edit = match key.code {
        KeyCode::Backspace => return Some(Action::SearchBackspace),
        KeyCode::Char(c) => return Some(Action::SearchInput(c)),
        KeyCode::Delete => EditKey::Delete,
        KeyCode::Left => EditKey::Left,
        KeyCode::Right => EditKey::Right,
        KeyCode::Home => EditKey::Home,
        KeyCode::End => EditKey::End,
        KeyCode::Up => EditKey::HistoryPrev,
        KeyCode::Down => EditKey::HistoryNext,
        _ => return None,
    };
    Some(Action::SearchEdit(edit))
}

/// `search runs · Enter keeps · Esc restores`, with the keys bound now.
pub fn hint(keymap: &Keymap, what: &str) -> String {
    let mut parts = vec![what.to_owned()];
    if let Some(keys) = any_key(keymap, &KEYS, &[Action::SearchAccept]) {
        parts.push(format!("{keys} keeps"));
    }
    if let Some(keys) = any_key(keymap, &KEYS, &[Action::Cancel]) {
        parts.push(format!("{keys} restores"));
    }
    parts.join(" · ")
}

/// The prompt for the status bar while a search is being typed: the line with its cursor,
/// then the parse error (the previous good query stays in force) or the key hint.
pub fn prompt_spans(app: &App) -> Option<Vec<Span<'static>>> {
    let theme = &app.config.theme;
    let (editor, error, what) = if app.detail_find.editing {
        (&app.detail_find.editor, &None, "find in the detail")
    } else if app.find.editing {
        (&app.find.editor, &app.find.error, "find in trace")
    } else if app.searching {
        (
            &app.list_search.editor,
            &app.list_search.error,
            "search runs",
        )
    } else {
        return None;
    };
    let text = redact::sanitize_line(editor.text());
    let cursor = editor.cursor_chars();
    let (before, after): (String, String) = (
        text.chars().take(cursor).collect(),
        text.chars().skip(cursor).collect(),
    );
    let mut spans = vec![Span::styled(
        format!("/{before}▏{after}"),
        theme.style(Role::Search),
    )];
    spans.push(match error {
        Some(e) => Span::styled(
            format!(
                "  ✗ col {}: {}",
                e.position + 1,
                redact::sanitize_line(&e.message)
            ),
            theme.style(Role::StatusError),
        ),
        None => Span::styled(
            format!("  {}", hint(&app.config.keymap, what)),
            theme.style(Role::Dim),
        ),
    });
    Some(spans)
}
