//! The keymap as data: (scope, key) → action. The same table drives key handling, the footer
//! hints, the `?` help and every overlay title, so they cannot drift apart. The config file can
//! rebind any key. Each overlay (`tui::overlays`) reads keys through a [`KeyContext`]: its own
//! scope, then the few global actions it honours.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;

/// Where a binding applies. The focused pane's scope is consulted before `Global`; an open
/// overlay's scope replaces both (see [`KeyContext`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    Global,
    List,
    Tree,
    Detail,
    Payload,
    Help,
    Problems,
    Diff,
    Search,
    Note,
    Transcript,
    Summary,
}

impl Scope {
    pub const ALL: [Scope; 12] = [
        Scope::Global,
        Scope::List,
        Scope::Tree,
        Scope::Detail,
        Scope::Payload,
        Scope::Help,
        Scope::Problems,
        Scope::Diff,
        Scope::Search,
        Scope::Note,
        Scope::Transcript,
        Scope::Summary,
    ];
    /// The scopes of the three panes and the full-screen payload: the help lists each under
    /// its own heading; overlays list theirs with what they inherit.
    pub const PANES: [Scope; 5] = [
        Scope::Global,
        Scope::List,
        Scope::Tree,
        Scope::Detail,
        Scope::Payload,
    ];
    /// Name in the config file's `[keys.<scope>]` tables and in the help overlay.
    pub fn key(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::List => "list",
            Scope::Tree => "tree",
            Scope::Detail => "detail",
            Scope::Payload => "payload",
            Scope::Help => "help",
            Scope::Problems => "problems",
            Scope::Diff => "diff",
            Scope::Search => "search",
            Scope::Note => "note",
            Scope::Transcript => "transcript",
            Scope::Summary => "summary",
        }
    }
    /// Its heading in the help overlay.
    pub fn title(self) -> &'static str {
        match self {
            Scope::Global => "Everywhere",
            Scope::List => "Invocation list",
            Scope::Tree => "Span tree",
            Scope::Detail => "Detail pane",
            Scope::Payload => "Full-screen detail",
            Scope::Help => "Help overlay",
            Scope::Problems => "Problems overlay",
            Scope::Diff => "Gold diff view",
            Scope::Search => "Search prompt",
            Scope::Note => "Note prompt",
            Scope::Transcript => "Transcript",
            Scope::Summary => "Summary overlay",
        }
    }
    pub fn from_key(key: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.key() == key)
    }
}

/// A key plus modifiers, parsed from `j`, `G`, `<enter>`, `<ctrl-c>`, `<s-tab>`, `<pgdn>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeySpec {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl KeySpec {
    pub fn parse(text: &str) -> Result<KeySpec, crate::Error> {
        let bad = || crate::Error::UnknownKey { text: text.into() };
        let mut chars = text.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            return Ok(KeySpec {
                code: KeyCode::Char(c),
                ctrl: false,
                alt: false,
            });
        }
        let inner = text
            .strip_prefix('<')
            .and_then(|t| t.strip_suffix('>'))
            .ok_or_else(bad)?;
        let mut ctrl = false;
        let mut alt = false;
        let mut shift = false;
        let mut rest = inner;
        loop {
            let lower = rest.to_ascii_lowercase();
            if let Some(r) = ["ctrl-", "c-"].iter().find(|p| lower.starts_with(**p)) {
                ctrl = true;
                rest = &rest[r.len()..];
            } else if let Some(r) = ["alt-", "a-", "m-"].iter().find(|p| lower.starts_with(**p)) {
                alt = true;
                rest = &rest[r.len()..];
            } else if let Some(r) = ["shift-", "s-"].iter().find(|p| lower.starts_with(**p)) {
                shift = true;
                rest = &rest[r.len()..];
            } else {
                break;
            }
        }
        let mut rest_chars = rest.chars();
        let code = match (rest_chars.next(), rest_chars.next()) {
            (Some(c), None) => KeyCode::Char(if shift { c.to_ascii_uppercase() } else { c }),
            _ => match rest.to_ascii_lowercase().as_str() {
                "enter" | "cr" | "return" => KeyCode::Enter,
                "space" => KeyCode::Char(' '),
                "tab" if shift => KeyCode::BackTab,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "esc" | "escape" => KeyCode::Esc,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "pgup" | "pageup" => KeyCode::PageUp,
                "pgdn" | "pagedown" => KeyCode::PageDown,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "backspace" | "bs" => KeyCode::Backspace,
                "delete" | "del" => KeyCode::Delete,
                f if f.starts_with('f') => KeyCode::F(f[1..].parse().map_err(|_| bad())?),
                _ => return Err(bad()),
            },
        };
        Ok(KeySpec { code, ctrl, alt })
    }

    /// The spec a pressed key matches. Shift is folded into the character (`G`) and `BackTab`.
    pub fn of_event(event: &KeyEvent) -> KeySpec {
        KeySpec {
            code: event.code,
            ctrl: event.modifiers.contains(KeyModifiers::CONTROL),
            alt: event.modifiers.contains(KeyModifiers::ALT),
        }
    }

    /// How the help and footer print it.
    pub fn display(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "Space".to_owned(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "S-Tab".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::Backspace => "BS".into(),
            KeyCode::Delete => "Del".into(),
            KeyCode::F(n) => format!("F{n}"),
            other => format!("{other:?}"),
        };
        match (self.ctrl, self.alt) {
            (true, _) => format!("C-{base}"),
            (false, true) => format!("M-{base}"),
            _ => base,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    pub scope: Scope,
    pub key: KeySpec,
    pub action: Action,
}

/// The built-in bindings, in the order the help lists them.
const DEFAULTS: &[(Scope, &str, Action)] = &[
    (Scope::Global, "?", Action::ToggleHelp),
    (Scope::Global, "p", Action::ToggleProblems),
    (Scope::Global, "q", Action::Quit),
    (Scope::Global, "<ctrl-c>", Action::Quit),
    (Scope::Global, "r", Action::ToggleReveal),
    (Scope::Global, "<tab>", Action::FocusNext),
    (Scope::Global, "<backtab>", Action::FocusPrev),
    (Scope::Global, "j", Action::Down),
    (Scope::Global, "<down>", Action::Down),
    (Scope::Global, "k", Action::Up),
    (Scope::Global, "<up>", Action::Up),
    (Scope::Global, "<ctrl-d>", Action::PageDown),
    (Scope::Global, "<pgdn>", Action::PageDown),
    (Scope::Global, "<ctrl-u>", Action::PageUp),
    (Scope::Global, "<pgup>", Action::PageUp),
    (Scope::Global, "g", Action::Top),
    (Scope::Global, "<home>", Action::Top),
    (Scope::Global, "G", Action::Bottom),
    (Scope::Global, "<end>", Action::Bottom),
    (Scope::Global, "n", Action::NextFailure),
    (Scope::Global, "N", Action::PrevFailure),
    (Scope::Global, "]", Action::NextFailingInvocation),
    (Scope::Global, "[", Action::PrevFailingInvocation),
    (Scope::Global, "M", Action::ToggleMouseCapture),
    (Scope::Global, "/", Action::StartSearch),
    (Scope::Global, "d", Action::ToggleDiff),
    (Scope::Global, "y", Action::Copy),
    (Scope::Global, "x", Action::Export),
    (Scope::Global, "X", Action::ExportRevealed),
    (Scope::Global, "a", Action::Annotate),
    (Scope::Global, "t", Action::ToggleTranscript),
    (Scope::Global, "S", Action::ToggleSummary),
    (Scope::Global, "<esc>", Action::Cancel),
    (Scope::List, "<enter>", Action::Expand),
    (Scope::List, "l", Action::Expand),
    (Scope::List, "<right>", Action::Expand),
    (Scope::List, "<space>", Action::ToggleFold),
    (Scope::List, "h", Action::Collapse),
    (Scope::List, "<left>", Action::Collapse),
    (Scope::List, "s", Action::CycleSort),
    (Scope::Tree, "<enter>", Action::ToggleFold),
    (Scope::Tree, "<space>", Action::ToggleFold),
    (Scope::Tree, "l", Action::Expand),
    (Scope::Tree, "<right>", Action::Expand),
    (Scope::Tree, "h", Action::Collapse),
    (Scope::Tree, "<left>", Action::Collapse),
    (Scope::Tree, "E", Action::ExpandAll),
    (Scope::Tree, "C", Action::CollapseAll),
    (Scope::Tree, "o", Action::JumpToRequester),
    (Scope::Tree, "F", Action::ToggleFindOnly),
    (Scope::Tree, "f", Action::TogglePayloadFullscreen),
    (Scope::Tree, "J", Action::ToggleRawPayload),
    (Scope::Detail, "f", Action::TogglePayloadFullscreen),
    (Scope::Detail, "<enter>", Action::TogglePayloadFullscreen),
    (Scope::Detail, "o", Action::JumpToRequester),
    (Scope::Detail, "h", Action::Collapse),
    (Scope::Detail, "<left>", Action::Collapse),
    (Scope::Detail, "J", Action::ToggleRawPayload),
    (Scope::Detail, "}", Action::NextMessage),
    (Scope::Detail, "{", Action::PrevMessage),
    (Scope::Detail, "<space>", Action::ToggleFold),
    (Scope::Payload, "f", Action::TogglePayloadFullscreen),
    (Scope::Payload, "<enter>", Action::TogglePayloadFullscreen),
    (Scope::Payload, "J", Action::ToggleRawPayload),
    (Scope::Payload, "}", Action::NextMessage),
    (Scope::Payload, "{", Action::PrevMessage),
    (Scope::Payload, "<space>", Action::ToggleFold),
    (Scope::Diff, "n", Action::NextDifference),
    (Scope::Diff, "N", Action::PrevDifference),
    (Scope::Diff, "a", Action::CycleAlignment),
    (Scope::Diff, "<enter>", Action::GoToCall),
    (Scope::Diff, "q", Action::Cancel),
    (Scope::Search, "<enter>", Action::SearchAccept),
    (Scope::Search, "<esc>", Action::Cancel),
    (Scope::Note, "<enter>", Action::SaveNote),
    (Scope::Note, "<esc>", Action::Cancel),
    (Scope::Transcript, "n", Action::NextMessage),
    (Scope::Transcript, "N", Action::PrevMessage),
    (Scope::Transcript, "<enter>", Action::GoToCall),
    (Scope::Transcript, "<space>", Action::ToggleFold),
    (Scope::Summary, "<enter>", Action::ApplyRowFilter),
];

/// How an overlay reads keys: its own scope first, then the global bindings of the actions it
/// honours (so rebinding `cancel` globally also changes how every overlay closes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyContext {
    pub scope: Scope,
    /// Global actions that still work while the overlay is open, in the order its help lists them.
    pub inherits: &'static [Action],
    /// A text prompt: a plain character is typed, so an inherited binding counts only for keys
    /// that are not text (`C-c`, `F1`, `Esc`).
    pub text_input: bool,
}

impl KeySpec {
    /// A key a text prompt takes as typed text.
    pub fn is_text(&self) -> bool {
        matches!(self.code, KeyCode::Char(_)) && !self.ctrl && !self.alt
    }
}

/// Keys grouped by action for one scope, for the footer and help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    pub keys: Vec<String>,
    pub action: Action,
}

#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: Vec<Binding>,
}

impl Default for Keymap {
    fn default() -> Self {
        let bindings = DEFAULTS
            .iter()
            .filter_map(|&(scope, key, action)| {
                Some(Binding {
                    scope,
                    key: KeySpec::parse(key).ok()?,
                    action,
                })
            })
            .collect();
        Keymap { bindings }
    }
}

impl Keymap {
    pub fn bindings(&self) -> &[Binding] {
        &self.bindings
    }

    /// Binds `key` in `scope` to `action` (replacing what it did there), or unbinds it.
    pub fn bind(&mut self, scope: Scope, key: KeySpec, action: Option<Action>) {
        self.bindings
            .retain(|b| !(b.scope == scope && b.key == key));
        if let Some(action) = action {
            self.bindings.push(Binding { scope, key, action });
        }
    }

    /// The action for a key, looking in `scopes` in order.
    pub fn lookup(&self, scopes: &[Scope], event: &KeyEvent) -> Option<Action> {
        let spec = KeySpec::of_event(event);
        scopes.iter().find_map(|scope| {
            self.bindings
                .iter()
                .find(|b| b.scope == *scope && b.key == spec)
                .map(|b| b.action)
        })
    }

    /// The scope's actions with their keys, in the order the built-in table lists the actions
    /// (a rebound action keeps its place in the help and footer; one new to the scope goes last).
    pub fn hints(&self, scope: Scope) -> Vec<Hint> {
        let mut out: Vec<Hint> = Vec::new();
        for b in self.bindings.iter().filter(|b| b.scope == scope) {
            match out.iter_mut().find(|h| h.action == b.action) {
                Some(hint) => hint.keys.push(b.key.display()),
                None => out.push(Hint {
                    keys: vec![b.key.display()],
                    action: b.action,
                }),
            }
        }
        let built_in_place = |action: Action| {
            DEFAULTS
                .iter()
                .position(|&(s, _, a)| s == scope && a == action)
                .unwrap_or(usize::MAX)
        };
        out.sort_by_key(|hint| built_in_place(hint.action));
        out
    }

    pub fn is_bound(&self, action: Action) -> bool {
        self.bindings.iter().any(|b| b.action == action)
    }

    /// The keys that reach `action` through `scopes` (most specific first): a key an earlier
    /// scope binds to something else is shadowed and not listed.
    pub fn keys_for(&self, scopes: &[Scope], action: Action) -> Vec<String> {
        let mut out = Vec::new();
        for (i, scope) in scopes.iter().enumerate() {
            for b in self
                .bindings
                .iter()
                .filter(|b| b.scope == *scope && b.action == action)
            {
                let shadowed = self
                    .bindings
                    .iter()
                    .any(|e| scopes[..i].contains(&e.scope) && e.key == b.key);
                let shown = b.key.display();
                if !shadowed && !out.contains(&shown) {
                    out.push(shown);
                }
            }
        }
        out
    }

    /// The first key of `action` through `scopes`, for a title or message (`(s)`, `Esc clears`).
    pub fn first_key(&self, scopes: &[Scope], action: Action) -> Option<String> {
        self.keys_for(scopes, action).into_iter().next()
    }

    /// The action for a key while an overlay reading `context` is open.
    pub fn lookup_in(&self, context: &KeyContext, event: &KeyEvent) -> Option<Action> {
        let spec = KeySpec::of_event(event);
        self.own_or_inherited(context, spec)
    }

    fn own_or_inherited(&self, context: &KeyContext, spec: KeySpec) -> Option<Action> {
        let own = self
            .bindings
            .iter()
            .find(|b| b.scope == context.scope && b.key == spec);
        if let Some(b) = own {
            return Some(b.action);
        }
        if context.text_input && spec.is_text() {
            return None;
        }
        self.bindings
            .iter()
            .find(|b| b.scope == Scope::Global && b.key == spec)
            .map(|b| b.action)
            .filter(|action| context.inherits.contains(action))
    }

    /// The keys of `action` while an overlay reading `context` is open.
    pub fn keys_in(&self, context: &KeyContext, action: Action) -> Vec<String> {
        self.hints_in(context)
            .into_iter()
            .find(|h| h.action == action)
            .map(|h| h.keys)
            .unwrap_or_default()
    }

    /// Every action an overlay answers to with its keys: its own scope's bindings, then the
    /// inherited actions in the order the context lists them.
    pub fn hints_in(&self, context: &KeyContext) -> Vec<Hint> {
        let mut out = self.hints(context.scope);
        for &action in context.inherits {
            let keys: Vec<String> = self
                .bindings
                .iter()
                .filter(|b| b.scope == Scope::Global && b.action == action)
                .filter(|b| self.own_or_inherited(context, b.key) == Some(action))
                .map(|b| b.key.display())
                .collect();
            if keys.is_empty() {
                continue;
            }
            // The global key first: it is the one the user knows from everywhere else.
            match out.iter_mut().find(|h| h.action == action) {
                Some(hint) => {
                    hint.keys.splice(0..0, keys);
                }
                None => out.push(Hint { keys, action }),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_specs_parse_and_match_events() {
        let km = Keymap::default();
        let press = |code, modifiers| KeyEvent::new(code, modifiers);
        let scopes = [Scope::Tree, Scope::Global];
        assert_eq!(
            km.lookup(&scopes, &press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            km.lookup(&scopes, &press(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Action::Bottom)
        );
        assert_eq!(
            km.lookup(&scopes, &press(KeyCode::BackTab, KeyModifiers::SHIFT)),
            Some(Action::FocusPrev)
        );
        assert_eq!(
            km.lookup(&scopes, &press(KeyCode::Enter, KeyModifiers::NONE)),
            Some(Action::ToggleFold)
        );
        assert_eq!(
            km.lookup(
                &[Scope::List, Scope::Global],
                &press(KeyCode::Enter, KeyModifiers::NONE)
            ),
            Some(Action::Expand)
        );
        assert_eq!(KeySpec::parse("<s-tab>").unwrap().code, KeyCode::BackTab);
        assert_eq!(KeySpec::parse("<F5>").unwrap().code, KeyCode::F(5));
        assert!(KeySpec::parse("<hyper-x>").is_err());
    }

    #[test]
    fn rebinding_replaces_and_unbinds() {
        let mut km = Keymap::default();
        let x = KeySpec::parse("x").unwrap();
        km.bind(Scope::Global, x, Some(Action::Quit));
        let ev = KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE);
        assert_eq!(km.lookup(&[Scope::Global], &ev), Some(Action::Quit));
        km.bind(Scope::Global, x, None);
        assert_eq!(km.lookup(&[Scope::Global], &ev), None);
    }

    #[test]
    fn an_overlay_reads_its_own_scope_then_only_the_global_actions_it_inherits() {
        let km = Keymap::default();
        let context = KeyContext {
            scope: Scope::Diff,
            inherits: &[Action::Down, Action::Cancel, Action::Quit],
            text_input: false,
        };
        let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        assert_eq!(
            km.lookup_in(&context, &key('n')),
            Some(Action::NextDifference)
        );
        assert_eq!(km.lookup_in(&context, &key('j')), Some(Action::Down));
        // `q` is the diff's own close key, shadowing the global quit; `/` is not inherited.
        assert_eq!(km.lookup_in(&context, &key('q')), Some(Action::Cancel));
        assert_eq!(km.lookup_in(&context, &key('/')), None);
        assert_eq!(km.keys_in(&context, Action::Cancel), ["Esc", "q"]);
        assert!(
            km.keys_in(&context, Action::Quit)
                .contains(&"C-c".to_owned())
        );
        assert!(!km.keys_in(&context, Action::Quit).contains(&"q".to_owned()));
    }

    #[test]
    fn a_text_prompt_inherits_only_keys_that_are_not_text() {
        let mut km = Keymap::default();
        km.bind(
            Scope::Global,
            KeySpec::parse("Q").unwrap(),
            Some(Action::Quit),
        );
        let context = KeyContext {
            scope: Scope::Search,
            inherits: &[Action::Quit],
            text_input: true,
        };
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(km.lookup_in(&context, &ctrl_c), Some(Action::Quit));
        let typed = KeyEvent::new(KeyCode::Char('Q'), KeyModifiers::SHIFT);
        assert_eq!(km.lookup_in(&context, &typed), None);
        assert_eq!(km.keys_in(&context, Action::Quit), ["C-c"]);
    }
}
