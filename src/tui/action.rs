//! Everything the app can be asked to do. Keys map to [`Action`]s through the keymap; terminal
//! events (resize, mouse, tick) become the internal variants, which a config file cannot bind.

use serde::Deserialize;

/// One flat list of intents. Movement actions mean "in the focused pane".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    // Application
    Quit,
    ToggleHelp,
    /// The list of problems found in the sources (bad lines, unknown formats).
    ToggleProblems,
    ToggleReveal,
    /// Gold-vs-actual diff view (`d`), drawn by `tui::diff`.
    ToggleDiff,
    StartSearch,
    /// Closes the topmost overlay (help, full-screen payload, search).
    Cancel,
    // Focus
    FocusNext,
    FocusPrev,
    // Movement in the focused pane
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    // Tree
    ToggleFold,
    Expand,
    Collapse,
    ExpandAll,
    CollapseAll,
    NextFailure,
    PrevFailure,
    /// `]` / `[`: failing invocation to failing invocation.
    NextFailingInvocation,
    PrevFailingInvocation,
    JumpToRequester,
    // List
    CycleSort,
    /// Releases the mouse so the terminal can select text natively (and takes it back).
    ToggleMouseCapture,
    /// While a find is active: show only matching spans and their ancestors.
    ToggleFindOnly,
    // Payload
    TogglePayloadFullscreen,
    /// Copy the focused thing (OSC 52): the run id, the span as JSON, the payload.
    Copy,
    /// Write a triage report of the listed runs (Markdown + dump JSON).
    Export,
    // Internal: produced by the event loop, never bound.
    #[serde(skip)]
    Resize {
        width: u16,
        height: u16,
    },
    #[serde(skip)]
    Click {
        column: u16,
        row: u16,
    },
    #[serde(skip)]
    ScrollUp {
        column: u16,
        row: u16,
    },
    #[serde(skip)]
    ScrollDown {
        column: u16,
        row: u16,
    },
    #[serde(skip)]
    SearchInput(char),
    #[serde(skip)]
    SearchBackspace,
    #[serde(skip)]
    SearchAccept,
    /// Readline editing and history inside a search prompt.
    #[serde(skip)]
    SearchEdit(crate::tui::search::EditKey),
    /// A number key in the list: the config file's Nth preset query.
    #[serde(skip)]
    Preset(u8),
    #[serde(skip)]
    Tick,
    /// A key while the gold diff overlay is open; the overlay has its own small keymap.
    #[serde(skip)]
    DiffKey(crossterm::event::KeyCode),
}

impl Action {
    /// Every action a key can be bound to (the keymap test checks each has a default binding).
    pub const BINDABLE: [Action; 31] = [
        Action::Quit,
        Action::ToggleHelp,
        Action::ToggleProblems,
        Action::ToggleReveal,
        Action::ToggleDiff,
        Action::StartSearch,
        Action::Cancel,
        Action::FocusNext,
        Action::FocusPrev,
        Action::Up,
        Action::Down,
        Action::PageUp,
        Action::PageDown,
        Action::Top,
        Action::Bottom,
        Action::ToggleFold,
        Action::Expand,
        Action::Collapse,
        Action::ExpandAll,
        Action::CollapseAll,
        Action::NextFailure,
        Action::PrevFailure,
        Action::NextFailingInvocation,
        Action::PrevFailingInvocation,
        Action::JumpToRequester,
        Action::CycleSort,
        Action::ToggleMouseCapture,
        Action::ToggleFindOnly,
        Action::TogglePayloadFullscreen,
        Action::Copy,
        Action::Export,
    ];

    /// What the help overlay and footer say; `None` for internal actions. The match is
    /// exhaustive, so a new variant cannot be added without deciding this.
    pub fn description(self) -> Option<&'static str> {
        Some(match self {
            Action::Quit => "quit",
            Action::ToggleHelp => "help",
            Action::ToggleProblems => "problems in the sources",
            Action::ToggleReveal => "reveal/redact payloads",
            Action::ToggleDiff => "gold diff",
            Action::StartSearch => "search / find",
            Action::Cancel => "close / clear",
            Action::FocusNext => "next pane",
            Action::FocusPrev => "previous pane",
            Action::Up => "up",
            Action::Down => "down",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::Top => "top",
            Action::Bottom => "bottom",
            Action::ToggleFold => "fold/unfold",
            Action::Expand => "expand / open",
            Action::Collapse => "collapse / parent",
            Action::ExpandAll => "expand all",
            Action::CollapseAll => "collapse all",
            Action::NextFailure => "next failure",
            Action::PrevFailure => "previous failure",
            Action::NextFailingInvocation => "next failing run",
            Action::PrevFailingInvocation => "previous failing run",
            Action::CycleSort => "cycle sort",
            Action::ToggleMouseCapture => "mouse capture (off: select text)",
            Action::JumpToRequester => "go to requesting LLM span",
            Action::ToggleFindOnly => "only spans the find matched",
            Action::TogglePayloadFullscreen => "full-screen payload",
            Action::Copy => "copy (OSC 52): id / span JSON / payload",
            Action::Export => "export triage report of the listed runs",
            Action::Resize { .. }
            | Action::Click { .. }
            | Action::ScrollUp { .. }
            | Action::ScrollDown { .. }
            | Action::SearchInput(_)
            | Action::SearchBackspace
            | Action::SearchAccept
            | Action::SearchEdit(_)
            | Action::Preset(_)
            | Action::Tick
            | Action::DiffKey(_) => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindable_actions_are_described_and_named_in_snake_case() {
        for action in Action::BINDABLE {
            assert!(action.description().is_some(), "{action:?}");
        }
        let parsed: Action = serde_json::from_str("\"toggle_reveal\"").unwrap();
        assert_eq!(parsed, Action::ToggleReveal);
        assert!(serde_json::from_str::<Action>("\"tick\"").is_err());
    }
}
