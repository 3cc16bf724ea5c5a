//! The comparison view's keys: one table says which key does what, and the footer, the help
//! overlay and [`action_for_key`] all read it, so a key listed is a key that works.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// Everything the comparison view can be asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Up,
    Down,
    Top,
    Bottom,
    /// The next case newly failing in B (wrapping round).
    NextNewlyFailing,
    PrevNewlyFailing,
    /// The first case of the next class that has cases (wrapping round).
    NextGroup,
    PrevGroup,
    DetailPageDown,
    DetailPageUp,
    ToggleReveal,
    /// The gold-vs-actual diffs of the selected case's runs.
    ToggleGold,
    /// Writes the comparison as Markdown to a new file.
    Export,
    ToggleHelp,
    /// Closes the open overlay; with none open, quits.
    Cancel,
    Quit,
    /// In the gold overlay: the other run's diff takes the keys.
    SwitchSide,
    /// In the gold overlay: align the focused diff by name, then by position.
    CycleAlignment,
    Resize {
        width: u16,
        height: u16,
    },
}

/// One line of the key table: the keys as the footer and help name them, what they do as the
/// help says it, and as the footer says it (the footer leaves some out; the help has all).
pub struct Binding {
    pub keys: &'static str,
    pub what: &'static str,
    pub footer: Option<&'static str>,
}

/// The list's and detail's keys, in the order the help lists them.
pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: "j/k ↓/↑",
        what: "move",
        footer: Some("move"),
    },
    Binding {
        keys: "g/G",
        what: "first/last row",
        footer: None,
    },
    Binding {
        keys: "n/N",
        what: "next/previous newly failing",
        footer: Some("newly failing"),
    },
    Binding {
        keys: "Tab ]/[",
        what: "next/previous class",
        footer: Some("class"),
    },
    Binding {
        keys: "PgDn/PgUp",
        what: "scroll the detail",
        footer: Some("scroll"),
    },
    Binding {
        keys: "r",
        what: "reveal/redact payloads",
        footer: Some("reveal"),
    },
    Binding {
        keys: "d",
        what: "gold diffs of the case",
        footer: Some("gold"),
    },
    Binding {
        keys: "x",
        what: "export Markdown (redacted)",
        footer: Some("export"),
    },
    Binding {
        keys: "?",
        what: "help",
        footer: Some("help"),
    },
    Binding {
        keys: "q Esc",
        what: "quit",
        footer: Some("quit"),
    },
];

/// The gold overlay's own keys.
pub const GOLD_BINDINGS: &[Binding] = &[
    Binding {
        keys: "j/k ↓/↑",
        what: "move in the focused diff",
        footer: Some("move"),
    },
    Binding {
        keys: "n/N",
        what: "next/previous difference",
        footer: Some("difference"),
    },
    Binding {
        keys: "a",
        what: "cycle alignment",
        footer: None,
    },
    Binding {
        keys: "Tab",
        what: "the other run's diff",
        footer: Some("other run"),
    },
    Binding {
        keys: "r",
        what: "reveal/redact",
        footer: Some("reveal"),
    },
    Binding {
        keys: "d Esc",
        what: "close",
        footer: Some("close"),
    },
];

/// Whether an overlay is open decides what Tab and Esc mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyScope {
    List,
    Help,
    Gold,
}

/// The action a terminal event asks for in `scope`, if any.
pub fn action_for_event(scope: KeyScope, event: &Event) -> Option<Action> {
    match event {
        Event::Key(key) if key.kind != KeyEventKind::Release => action_for_key(scope, key),
        Event::Resize(width, height) => Some(Action::Resize {
            width: *width,
            height: *height,
        }),
        _ => None,
    }
}

/// The action a key asks for in `scope`, if any.
pub fn action_for_key(scope: KeyScope, key: &KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return match key.code {
            KeyCode::Char('c') => Some(Action::Quit),
            KeyCode::Char('d') => Some(Action::DetailPageDown),
            KeyCode::Char('u') => Some(Action::DetailPageUp),
            _ => None,
        };
    }
    let action = match key.code {
        KeyCode::Char('j') | KeyCode::Down => Action::Down,
        KeyCode::Char('k') | KeyCode::Up => Action::Up,
        KeyCode::Char('g') | KeyCode::Home => Action::Top,
        KeyCode::Char('G') | KeyCode::End => Action::Bottom,
        KeyCode::Char('r') => Action::ToggleReveal,
        KeyCode::Char('d') => Action::ToggleGold,
        KeyCode::Char('?') => Action::ToggleHelp,
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Esc => Action::Cancel,
        KeyCode::PageDown => Action::DetailPageDown,
        KeyCode::PageUp => Action::DetailPageUp,
        KeyCode::Tab if scope == KeyScope::Gold => Action::SwitchSide,
        KeyCode::Tab | KeyCode::Char(']') => Action::NextGroup,
        KeyCode::BackTab | KeyCode::Char('[') => Action::PrevGroup,
        KeyCode::Char('n') => Action::NextNewlyFailing,
        KeyCode::Char('N') => Action::PrevNewlyFailing,
        KeyCode::Char('x') => Action::Export,
        KeyCode::Char('a') => Action::CycleAlignment,
        _ => return None,
    };
    Some(action)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn tab_moves_between_classes_in_the_list_and_between_runs_in_the_gold_overlay() {
        let tab = key(KeyCode::Tab);
        assert_eq!(
            action_for_key(KeyScope::List, &tab),
            Some(Action::NextGroup)
        );
        assert_eq!(
            action_for_key(KeyScope::Gold, &tab),
            Some(Action::SwitchSide)
        );
    }

    #[test]
    fn every_key_the_table_names_maps_to_an_action() {
        // One key of each binding, as a user would type it.
        for (code, want) in [
            (KeyCode::Char('j'), Action::Down),
            (KeyCode::Up, Action::Up),
            (KeyCode::Char('G'), Action::Bottom),
            (KeyCode::Char('n'), Action::NextNewlyFailing),
            (KeyCode::Char('N'), Action::PrevNewlyFailing),
            (KeyCode::Char('['), Action::PrevGroup),
            (KeyCode::PageDown, Action::DetailPageDown),
            (KeyCode::Char('r'), Action::ToggleReveal),
            (KeyCode::Char('d'), Action::ToggleGold),
            (KeyCode::Char('x'), Action::Export),
            (KeyCode::Char('?'), Action::ToggleHelp),
            (KeyCode::Esc, Action::Cancel),
        ] {
            assert_eq!(action_for_key(KeyScope::List, &key(code)), Some(want));
        }
        let release = Event::Key(KeyEvent {
            kind: KeyEventKind::Release,
            ..key(KeyCode::Char('j'))
        });
        assert_eq!(action_for_event(KeyScope::List, &release), None);
    }
}
