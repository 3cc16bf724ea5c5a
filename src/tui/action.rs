//! Everything the app can be asked to do. Keys map to [`Action`]s through the keymap; terminal
//! events (resize, mouse) become the internal variants, which a config file cannot bind.

use serde::Deserialize;

/// Defines [`Action`] from two lists: the bindable actions with their descriptions, and the
/// internal variants. [`Action::BINDABLE`] and [`Action::description`] are generated from the
/// first list, so a new bindable action cannot be left out of either.
macro_rules! actions {
    (
        bindable {
            $( $(#[doc = $doc:literal])* $name:ident => $description:literal, )*
        }
        internal { $($internal:tt)* }
    ) => {
        /// One flat list of intents. Movement actions mean "in the focused pane" (or in the
        /// open overlay).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Action {
            $( $(#[doc = $doc])* $name, )*
            $($internal)*
        }

        impl Action {
            /// Every action a key can be bound to, in declaration order.
            pub const BINDABLE: [Action; [$(Action::$name),*].len()] = [$(Action::$name),*];

            /// What the help overlay and footer say; `None` for internal actions.
            pub fn description(self) -> Option<&'static str> {
                match self {
                    $( Action::$name => Some($description), )*
                    _ => None,
                }
            }
        }
    };
}

actions! {
    bindable {
        Quit => "quit",
        ToggleHelp => "help",
        /// The list of problems found in the sources (bad lines, unknown formats).
        ToggleProblems => "problems in the sources",
        ToggleReveal => "reveal/redact payloads",
        /// Gold-vs-actual diff overlay, `tui::overlays::diff`.
        ToggleDiff => "gold diff",
        StartSearch => "search / find",
        /// Closes the topmost overlay (help, full-screen payload, search, diff).
        Cancel => "close / clear",
        FocusNext => "next pane",
        FocusPrev => "previous pane",
        Up => "up",
        Down => "down",
        PageUp => "page up",
        PageDown => "page down",
        Top => "top",
        Bottom => "bottom",
        ToggleFold => "fold/unfold",
        Expand => "expand / open",
        Collapse => "collapse / parent",
        ExpandAll => "expand all",
        CollapseAll => "collapse all",
        NextFailure => "next failure",
        PrevFailure => "previous failure",
        /// Failing invocation to failing invocation.
        NextFailingInvocation => "next failing run",
        PrevFailingInvocation => "previous failing run",
        JumpToRequester => "go to requesting LLM span",
        CycleSort => "cycle sort",
        /// Releases the mouse so the terminal can select text natively (and takes it back).
        ToggleMouseCapture => "mouse capture (off: select text)",
        /// While a find is active: show only matching spans and their ancestors.
        ToggleFindOnly => "only spans the find matched",
        TogglePayloadFullscreen => "full-screen payload",
        /// Chat messages as a conversation, or the payload's raw JSON.
        ToggleRawPayload => "messages as chat / raw JSON",
        /// The selected run as one conversation.
        ToggleTranscript => "transcript of the run",
        NextMessage => "next message / tool call",
        PrevMessage => "previous message / tool call",
        /// Copy the focused thing (OSC 52): the run id, the span as JSON, the payload.
        Copy => "copy (OSC 52): id / span JSON / payload",
        /// Write a triage report of the listed runs (Markdown + dump JSON).
        Export => "export triage report of the listed runs",
        /// The same report with payloads revealed (secrets masked): the TUI's one way to write them.
        ExportRevealed => "export the report REVEALED (payloads written)",
        /// The failure summary of the listed runs (`tui::overlays::summary`).
        ToggleSummary => "failure summary of the listed runs",
        /// In the summary: filter the list by the selected row's query.
        ApplyRowFilter => "filter the list by the row",
        /// A triage note (a label and free text) on the selected run, in a small prompt.
        Annotate => "triage note on the selected run",
        /// In the note prompt: append the note to the notes file.
        SaveNote => "save the note",
        /// In the search prompt: keep the query typed (Cancel restores the previous one).
        SearchAccept => "keep the search",
        /// In the gold diff: the next row whose verdict is not a match.
        NextDifference => "next difference",
        PrevDifference => "previous difference",
        /// In the gold diff: align by name, then by position (the report is re-aligned).
        CycleAlignment => "cycle alignment",
        /// In the gold diff: show the selected row's actual call in the span tree.
        GoToCall => "go to the call's span",
    }
    internal {
        #[serde(skip)]
        Resize { width: u16, height: u16 },
        #[serde(skip)]
        Click { column: u16, row: u16 },
        #[serde(skip)]
        ScrollUp { column: u16, row: u16 },
        #[serde(skip)]
        ScrollDown { column: u16, row: u16 },
        #[serde(skip)]
        SearchInput(char),
        #[serde(skip)]
        SearchBackspace,
        /// Readline editing and history inside a search prompt.
        #[serde(skip)]
        SearchEdit(crate::tui::search::EditKey),
        /// A number key in the list: the config file's Nth preset query.
        #[serde(skip)]
        Preset(u8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The config file names actions in snake_case: each bindable one must parse under its
    /// own name, and an internal one must not parse at all.
    #[test]
    fn bindable_actions_are_described_and_named_in_snake_case() {
        for action in Action::BINDABLE {
            assert!(action.description().is_some(), "{action:?}");
            let name = snake_case(&format!("{action:?}"));
            let parsed: Action = serde_json::from_value(serde_json::Value::String(name)).unwrap();
            assert_eq!(parsed, action);
        }
        assert!(serde_json::from_str::<Action>("\"search_backspace\"").is_err());
        assert!(serde_json::from_str::<Action>("\"preset\"").is_err());
        let internal = Action::Resize {
            width: 1,
            height: 1,
        };
        assert_eq!(internal.description(), None);
        assert!(!Action::BINDABLE.contains(&internal));
    }

    fn snake_case(camel: &str) -> String {
        let mut out = String::new();
        for c in camel.chars() {
            if c.is_uppercase() && !out.is_empty() {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        }
        out
    }
}
