//! Overlays: the views drawn over the panes that take the keys while open. Each is one file
//! and declares its [`KeyContext`] (its own keymap scope plus the global actions it honours);
//! its footer, its title and its section of the help are generated from that, so a rebound
//! key shows up everywhere it works.
//!
//! The help, the problems, the gold diff, the note prompt and the summary are components: a state type with `update` (an
//! action in, an [`Outcome`] out) and `render` (a pure function of that state and the app).
//! At most one is open, [`App::overlay`](crate::tui::app::App::overlay), and `app::update`
//! hands every action to it first. The search prompt has a key context too (so it is listed
//! with them in the help) but is not one of them: see [`OverlayKind::Search`].

pub mod diff;
pub mod help;
pub mod note;
pub mod problems;
pub mod search;
pub mod summary;
pub mod transcript;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::action::Action;
use super::app::App;
use super::keymap::{KeyContext, Keymap};
use super::layout::{Regions, centered};
use super::theme::Role;

/// The open overlay and its state (the diff's report is large: boxed, so an app without an
/// open diff does not carry its size).
#[derive(Debug)]
pub enum Overlay {
    Help(help::Help),
    Problems(problems::Problems),
    GoldDiff(Box<diff::DiffOverlay>),
    Note(note::NotePrompt),
    Transcript(Box<transcript::Transcript>),
    Summary(Box<summary::Summary>),
}

/// What an overlay made of an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The overlay used it (or it means nothing while the overlay is open); it stays open.
    Handled,
    /// The overlay is done: the app drops it.
    Close,
    /// Not the overlay's (quit, resize, reveal): the app applies it as usual, the overlay
    /// stays open.
    NotHandled,
}

impl Overlay {
    pub fn kind(&self) -> OverlayKind {
        match self {
            Overlay::Help(_) => OverlayKind::Help,
            Overlay::Problems(_) => OverlayKind::Problems,
            Overlay::GoldDiff(_) => OverlayKind::GoldDiff,
            Overlay::Note(_) => OverlayKind::Note,
            Overlay::Transcript(_) => OverlayKind::Transcript,
            Overlay::Summary(_) => OverlayKind::Summary,
        }
    }

    /// Applies an action. `app` is everything but this overlay: the app takes the overlay out
    /// while it runs (see `app::update`).
    pub fn update(&mut self, action: Action, app: &mut App) -> Outcome {
        match self {
            Overlay::Help(help) => help.update(action, app),
            Overlay::Problems(problems) => problems.update(action, app),
            Overlay::GoldDiff(diff) => diff.update(action, app),
            Overlay::Note(prompt) => prompt.update(action, app),
            Overlay::Transcript(transcript) => transcript.update(action, app),
            Overlay::Summary(summary) => summary.update(action, app),
        }
    }

    /// Draws the overlay over what `regions` says the panes were drawn in.
    pub fn render(&self, frame: &mut Frame, regions: &Regions, app: &App) {
        let screen = frame.area();
        match self {
            Overlay::Help(help) => help.render(frame, screen, app),
            Overlay::Problems(problems) => problems.render(frame, screen, app),
            Overlay::GoldDiff(diff) => {
                // The diff covers the panes; the status bar and the footer (its keys) stay.
                let body = Rect::new(0, 0, screen.width, regions.status.y.min(screen.height));
                diff.render(frame, body, app);
            }
            Overlay::Note(prompt) => prompt.render(frame, screen, app),
            Overlay::Transcript(transcript) => {
                // Like the diff: the status bar (the find prompt) and the footer stay.
                let body = Rect::new(0, 0, screen.width, regions.status.y.min(screen.height));
                transcript.render(frame, body, app);
            }
            Overlay::Summary(summary) => summary.render(frame, screen, app),
        }
    }

    /// The footer while the overlay is open, instead of the panes' hints; `None` for those
    /// that name their keys in their title (help, problems).
    pub fn footer(&self) -> Option<&'static [FooterItem]> {
        match self {
            Overlay::GoldDiff(_) => Some(diff::FOOTER),
            Overlay::Transcript(_) => Some(transcript::FOOTER),
            Overlay::Help(_) | Overlay::Problems(_) | Overlay::Note(_) | Overlay::Summary(_) => {
                None
            }
        }
    }

    pub fn gold_diff(&self) -> Option<&diff::DiffOverlay> {
        match self {
            Overlay::GoldDiff(diff) => Some(diff),
            _ => None,
        }
    }
}

/// What takes the keys instead of the panes: an overlay, or the search prompt. Each has its own
/// [`KeyContext`] and its own section of the help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlayKind {
    /// The search prompt is a line in the status bar, not a view over the panes: they stay
    /// live under it (the list filters and the tree jumps to matches as you type, the mouse
    /// acts on them) and it opens over the full-screen payload too. What it edits outlives it
    /// (the query in force, the history, a kept find), so it lives in `App::list_search` and
    /// `App::find`, not in [`Overlay`].
    Search,
    Help,
    Problems,
    GoldDiff,
    /// The note prompt (`a`) over the panes.
    Note,
    Transcript,
    /// The failure summary (`S`) of the listed runs.
    Summary,
}

impl OverlayKind {
    /// What has the keys, if not the panes: the search prompt while typing, else the open
    /// overlay.
    pub fn taking_keys(app: &App) -> Option<OverlayKind> {
        if app.searching || app.find.editing || app.detail_find.editing {
            Some(OverlayKind::Search)
        } else {
            app.overlay.as_ref().map(Overlay::kind)
        }
    }

    pub fn keys(self) -> &'static KeyContext {
        match self {
            OverlayKind::Search => &search::KEYS,
            OverlayKind::Help => &help::KEYS,
            OverlayKind::Problems => &problems::KEYS,
            OverlayKind::GoldDiff => &diff::KEYS,
            OverlayKind::Note => &note::KEYS,
            OverlayKind::Transcript => &transcript::KEYS,
            OverlayKind::Summary => &summary::KEYS,
        }
    }

    /// The heading of its section in the help; the diff's names the key that opens it.
    pub fn heading(self, keymap: &Keymap) -> String {
        let title = self.keys().scope.title();
        match (self, global_key(keymap, Action::ToggleDiff)) {
            (OverlayKind::GoldDiff, Some(key)) => format!("{title} ({key})"),
            _ => title.to_owned(),
        }
    }

    /// The action for a key while this has the keys.
    pub fn action_for_key(self, app: &App, key: &KeyEvent) -> Option<Action> {
        match self {
            OverlayKind::Search => search::action_for_key(app, key),
            OverlayKind::Note => note::action_for_key(app, key),
            _ => app.config.keymap.lookup_in(self.keys(), key),
        }
    }
}

/// Scrolls a text overlay (help, problems) by the movement keys. Either toggle closes it, as
/// the other would otherwise stack a second overlay; quitting and resizing are the app's; the
/// rest reaches nothing under the overlay.
fn scroll_text(scroll: &mut usize, action: Action) -> Outcome {
    match action {
        Action::Down => *scroll += 1,
        Action::Up => *scroll = scroll.saturating_sub(1),
        Action::PageDown => *scroll += 10,
        Action::PageUp => *scroll = scroll.saturating_sub(10),
        Action::Top => *scroll = 0,
        Action::ToggleHelp | Action::ToggleProblems | Action::Cancel => return Outcome::Close,
        Action::Quit | Action::Resize { .. } => return Outcome::NotHandled,
        _ => {}
    }
    Outcome::Handled
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
/// `scroll` may run past the end (the keys do not know the length); the last page is shown.
pub(crate) fn draw_scrolled(
    frame: &mut Frame,
    screen: Rect,
    app: &App,
    title: &str,
    lines: Vec<Line<'static>>,
    scroll: usize,
) {
    let theme = &app.config.theme;
    let area = centered(screen, 80, 90);
    let height = area.height.saturating_sub(2) as usize;
    // Wrapped at words, not cut: a problem's file, line and message all stay readable.
    let lines: Vec<Line<'static>> = lines
        .into_iter()
        .flat_map(|line| crate::tui::wrap::wrap_line_at_words(line, area.width.saturating_sub(2)))
        .collect();
    let scroll = scroll.min(lines.len().saturating_sub(height));
    let block = Block::bordered()
        .title(Span::styled(title.to_owned(), theme.style(Role::Title)))
        .border_style(theme.border(true));
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines.into_iter().skip(scroll).collect::<Vec<_>>()).block(block),
        area,
    );
}
