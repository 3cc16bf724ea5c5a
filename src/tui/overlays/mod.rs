//! Overlays: the views drawn over the panes that take the keys while open. Each is one file
//! and declares its [`KeyContext`] (its own keymap scope plus the global actions it honours);
//! its footer, its title and its section of the help are generated from that, so a rebound
//! key shows up everywhere it works.

pub mod diff;
pub mod help;
pub mod problems;
pub mod search;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::action::Action;
use super::app::App;
use super::keymap::{KeyContext, Keymap};
use super::layout::centered;
use super::theme::Role;

/// The overlay that has the keys, topmost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    Search,
    Help,
    Problems,
    Diff,
}

impl Overlay {
    /// The topmost open overlay, if any.
    pub fn open(app: &App) -> Option<Overlay> {
        if app.searching || app.find.editing {
            Some(Overlay::Search)
        } else if app.show_help {
            Some(Overlay::Help)
        } else if app.show_problems {
            Some(Overlay::Problems)
        } else if app.diff.is_some() {
            Some(Overlay::Diff)
        } else {
            None
        }
    }

    pub fn keys(self) -> &'static KeyContext {
        match self {
            Overlay::Search => &search::KEYS,
            Overlay::Help => &help::KEYS,
            Overlay::Problems => &problems::KEYS,
            Overlay::Diff => &diff::KEYS,
        }
    }

    /// The heading of its section in the help; the diff's names the key that opens it.
    pub fn heading(self, keymap: &Keymap) -> String {
        let title = self.keys().scope.title();
        match (self, global_key(keymap, Action::ToggleDiff)) {
            (Overlay::Diff, Some(key)) => format!("{title} ({key})"),
            _ => title.to_owned(),
        }
    }

    /// The action for a key while this overlay is open.
    pub fn action_for_key(self, app: &App, key: &KeyEvent) -> Option<Action> {
        match self {
            Overlay::Search => search::action_for_key(app, key),
            _ => app.config.keymap.lookup_in(self.keys(), key),
        }
    }
}

/// A footer entry: the first key of each action, joined by `/`, then what they do together.
pub type FooterItem = (&'static [Action], &'static str);

/// The footer of an overlay: each item's keys as bound now; an item with no key is left out.
pub fn footer_hints(
    keymap: &Keymap,
    context: &KeyContext,
    items: &[FooterItem],
) -> Vec<(String, &'static str)> {
    items
        .iter()
        .filter_map(|(actions, what)| Some((first_keys(keymap, context, actions)?, *what)))
        .collect()
}

/// The first key of each action joined by `/` (`n/N`); `None` when none of them has a key.
pub fn first_keys(keymap: &Keymap, context: &KeyContext, actions: &[Action]) -> Option<String> {
    let keys: Vec<String> = actions
        .iter()
        .filter_map(|a| keymap.keys_in(context, *a).into_iter().next())
        .collect();
    (!keys.is_empty()).then(|| keys.join("/"))
}

/// Every key of the actions joined by ` or ` (`? or Esc`); `None` when there is none.
pub fn any_key(keymap: &Keymap, context: &KeyContext, actions: &[Action]) -> Option<String> {
    let mut keys: Vec<String> = Vec::new();
    for action in actions {
        for key in keymap.keys_in(context, *action) {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    (!keys.is_empty()).then(|| keys.join(" or "))
}

/// The first key of a global action, for hints outside an overlay (`(d)`, `(p)`).
pub fn global_key(keymap: &Keymap, action: Action) -> Option<String> {
    keymap
        .keys_for(&[super::keymap::Scope::Global], action)
        .into_iter()
        .next()
}

/// A centred, bordered, scrollable list of lines (the help and problems overlays).
pub(crate) fn draw_scrolled(
    frame: &mut Frame,
    screen: Rect,
    app: &App,
    title: &str,
    lines: Vec<Line<'static>>,
) {
    let theme = &app.config.theme;
    let area = centered(screen, 80, 90);
    let height = area.height.saturating_sub(2) as usize;
    let scroll = app.help_scroll.min(lines.len().saturating_sub(height));
    let block = Block::bordered()
        .title(Span::styled(title.to_owned(), theme.style(Role::Title)))
        .border_style(theme.border(true));
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines.into_iter().skip(scroll).collect::<Vec<_>>()).block(block),
        area,
    );
}
