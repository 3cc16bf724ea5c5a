//! App state and the two mutators: [`update`] for actions (keys, mouse, resize, tick) and
//! [`ingest`] for data from sources. Everything else (rendering included) only reads.
//!
//! Selection, fold state and scroll are keyed by invocation id and span id, never by row
//! number, so live inserts never move the cursor.

use std::collections::{HashMap, HashSet};

use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::action::Action;
use super::config::Config;
use super::inspect;
use super::keymap::Scope;
use super::tree_nav::{self, scroll_to_show};
use super::ui::layout::Regions;
use crate::model::Health;
use crate::redact::Reveal;
use crate::sources::{IngestEvent, SourceStatus};
use crate::store::{Invocation, Store};

/// The three panes, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pane {
    #[default]
    List,
    Tree,
    Detail,
}

impl Pane {
    pub fn scope(self) -> Scope {
        match self {
            Pane::List => Scope::List,
            Pane::Tree => Scope::Tree,
            Pane::Detail => Scope::Detail,
        }
    }
    fn next(self) -> Pane {
        match self {
            Pane::List => Pane::Tree,
            Pane::Tree => Pane::Detail,
            Pane::Detail => Pane::List,
        }
    }
    fn prev(self) -> Pane {
        match self {
            Pane::List => Pane::Detail,
            Pane::Tree => Pane::List,
            Pane::Detail => Pane::Tree,
        }
    }
}

/// The invocation list as shown: ids newest first, filtered by the search.
#[derive(Debug, Default, Clone)]
pub struct ListView {
    pub ids: Vec<String>,
    pub offset: usize,
    key: Option<(u64, String)>,
}

/// The selected invocation's visible tree rows.
#[derive(Debug, Default, Clone)]
pub struct TreeView {
    /// Indices into `tree().rows`, ascending.
    pub visible: Vec<usize>,
    pub offset: usize,
    key: Option<(u64, String, u64)>,
}

/// The detail pane's lines for the selected span.
#[derive(Debug, Default, Clone)]
pub struct DetailView {
    pub lines: Vec<Line<'static>>,
    /// First line of the payload sections (the full-screen view opens there).
    pub payload_start: usize,
    pub scroll: usize,
    key: Option<DetailKey>,
    payloads: Option<(String, String, inspect::LoadedPayloads)>,
}

type DetailKey = (u64, String, String, Reveal, u16);

#[derive(Debug)]
pub struct App {
    pub store: Store,
    pub config: Config,
    pub reveal: Reveal,
    pub focus: Pane,
    pub show_help: bool,
    pub show_problems: bool,
    /// Scroll of whichever overlay (help or problems) is open.
    pub help_scroll: usize,
    pub payload_fullscreen: bool,
    /// Typing into the search line.
    pub searching: bool,
    pub search: String,
    pub screen: Rect,
    /// One-shot note for the status bar (cleared by the next key).
    pub message: Option<String>,
    pub sources: Vec<SourceStatus>,
    pub should_quit: bool,
    pub selected_invocation: Option<String>,
    selected_span: HashMap<String, String>,
    collapsed: HashMap<String, HashSet<String>>,
    fold_version: u64,
    pub list: ListView,
    pub tree: TreeView,
    pub detail: DetailView,
    /// Bumped by every state change, so the loop redraws only when something changed.
    pub version: u64,
}

impl App {
    pub fn new(store: Store, config: Config, reveal: Reveal) -> Self {
        let message = config.warnings.first().cloned();
        let mut app = App {
            store,
            config,
            reveal,
            focus: Pane::List,
            show_help: false,
            show_problems: false,
            help_scroll: 0,
            payload_fullscreen: false,
            searching: false,
            search: String::new(),
            screen: Rect::new(0, 0, 80, 24),
            message,
            sources: Vec::new(),
            should_quit: false,
            selected_invocation: None,
            selected_span: HashMap::new(),
            collapsed: HashMap::new(),
            fold_version: 0,
            list: ListView::default(),
            tree: TreeView::default(),
            detail: DetailView::default(),
            version: 0,
        };
        refresh(&mut app);
        app
    }

    pub fn regions(&self) -> Regions {
        Regions::compute(self.screen, self.payload_fullscreen, self.list.ids.len())
    }

    /// The scopes keys are looked up in, most specific first.
    pub fn key_scopes(&self) -> Vec<Scope> {
        if self.payload_fullscreen {
            vec![Scope::Payload, Scope::Global]
        } else {
            vec![self.focus.scope(), Scope::Global]
        }
    }

    pub fn invocation(&self) -> Option<&Invocation> {
        self.store.get(self.selected_invocation.as_deref()?)
    }

    /// Index into the selected invocation's spans of the selected span.
    pub fn selected_span_index(&self) -> Option<usize> {
        let inv = self.invocation()?;
        let id = self.selected_span.get(&inv.id)?;
        inv.span_by_id(id)
    }

    /// Position of the selected span within `tree.visible`.
    pub fn selected_visible_position(&self) -> Option<usize> {
        let inv = self.invocation()?;
        let row = *inv.tree().row_of_span.get(self.selected_span_index()?)?;
        self.tree.visible.binary_search(&row).ok()
    }

    pub fn selected_list_position(&self) -> Option<usize> {
        let id = self.selected_invocation.as_ref()?;
        self.list.ids.iter().position(|x| x == id)
    }

    pub fn is_collapsed(&self, inv: &str, span_id: &str) -> bool {
        self.collapsed
            .get(inv)
            .is_some_and(|set| set.contains(span_id))
    }
}

/// Applies data from a source.
pub fn ingest(app: &mut App, event: IngestEvent) {
    match event {
        IngestEvent::Batch(batch) => {
            app.store.ingest(batch);
        }
        IngestEvent::Forget(path) => app.store.remove_origin(&path),
        IngestEvent::Status(status) => {
            let same_source = |a: &SourceStatus| {
                std::mem::discriminant(a) == std::mem::discriminant(&status)
                    && source_name(a) == source_name(&status)
            };
            match app.sources.iter_mut().find(|s| same_source(s)) {
                Some(slot) => *slot = status,
                None => app.sources.push(status),
            }
            app.version += 1;
        }
    }
    refresh(app);
}

fn source_name(status: &SourceStatus) -> String {
    match status {
        SourceStatus::Watching { root, .. } => root.display().to_string(),
        SourceStatus::Listening { http, .. } => http.clone(),
        SourceStatus::Attached { url, .. } => url.clone(),
    }
}

/// The only mutator for user and terminal actions.
pub fn update(app: &mut App, action: Action) {
    if action == Action::Tick {
        return;
    }
    app.version += 1;
    if !matches!(action, Action::Resize { .. }) {
        app.message = None;
    }
    if app.show_help || app.show_problems {
        match action {
            Action::Down => app.help_scroll += 1,
            Action::Up => app.help_scroll = app.help_scroll.saturating_sub(1),
            Action::PageDown => app.help_scroll += 10,
            Action::PageUp => app.help_scroll = app.help_scroll.saturating_sub(10),
            Action::Top => app.help_scroll = 0,
            Action::ToggleHelp | Action::ToggleProblems | Action::Cancel => {
                app.show_help = false;
                app.show_problems = false;
            }
            Action::Quit => app.should_quit = true,
            Action::Resize { width, height } => app.screen = Rect::new(0, 0, width, height),
            _ => {}
        }
        refresh(app);
        return;
    }
    match action {
        Action::Quit => app.should_quit = true,
        Action::ToggleHelp => {
            app.show_help = true;
            app.help_scroll = 0;
        }
        Action::ToggleProblems => {
            app.show_problems = true;
            app.help_scroll = 0;
        }
        Action::ToggleReveal => app.reveal = app.reveal.toggled(),
        // TODO(diff): open the gold-vs-actual view from `tui::diff` here.
        Action::ToggleDiff => app.message = Some("gold diff view is not available yet".into()),
        Action::StartSearch => {
            app.searching = true;
            app.focus = Pane::List;
        }
        Action::SearchInput(c) => app.search.push(c),
        Action::SearchBackspace => {
            app.search.pop();
        }
        Action::SearchAccept => app.searching = false,
        Action::Cancel => {
            if app.payload_fullscreen {
                app.payload_fullscreen = false;
            } else if app.searching || !app.search.is_empty() {
                app.searching = false;
                app.search.clear();
            }
        }
        Action::FocusNext => app.focus = app.focus.next(),
        Action::FocusPrev => app.focus = app.focus.prev(),
        Action::Up => move_by(app, -1),
        Action::Down => move_by(app, 1),
        Action::PageUp => move_by(app, -page(app)),
        Action::PageDown => move_by(app, page(app)),
        Action::Top => move_by(app, isize::MIN / 2),
        Action::Bottom => move_by(app, isize::MAX / 2),
        Action::ToggleFold => toggle_fold(app),
        Action::Expand => match app.focus {
            Pane::List => app.focus = Pane::Tree,
            _ => set_fold(app, false),
        },
        Action::Collapse => match app.focus {
            Pane::Detail => app.focus = Pane::Tree,
            _ => collapse_or_parent(app),
        },
        Action::ExpandAll => {
            if let Some(id) = app.selected_invocation.clone() {
                app.collapsed.remove(&id);
                app.fold_version += 1;
            }
        }
        Action::CollapseAll => collapse_all(app),
        Action::NextFailure => jump_to_failure(app, true),
        Action::PrevFailure => jump_to_failure(app, false),
        Action::JumpToRequester => jump_to_requester(app),
        Action::TogglePayloadFullscreen => {
            app.payload_fullscreen = !app.payload_fullscreen;
            // Rebuilt at the new width below; the payload then opens at its first line.
            app.detail.key = None;
        }
        Action::Resize { width, height } => app.screen = Rect::new(0, 0, width, height),
        Action::Click { column, row } => click(app, column, row),
        Action::ScrollUp { column, row } => scroll_at(app, column, row, -3),
        Action::ScrollDown { column, row } => scroll_at(app, column, row, 3),
        Action::Tick => {}
    }
    refresh(app);
}

fn page(app: &App) -> isize {
    let regions = app.regions();
    let height = match (app.payload_fullscreen, app.focus) {
        (true, _) | (false, Pane::Detail) => regions.detail_body().height,
        (false, Pane::List) => regions.list_body().height,
        (false, Pane::Tree) => regions.tree_body().height,
    };
    (height.max(2) - 1) as isize
}

fn step(pos: Option<usize>, delta: isize, len: usize) -> Option<usize> {
    if len == 0 {
        return None;
    }
    let pos = pos.unwrap_or(0) as isize;
    Some(pos.saturating_add(delta).clamp(0, len as isize - 1) as usize)
}

fn move_by(app: &mut App, delta: isize) {
    if app.payload_fullscreen || app.focus == Pane::Detail {
        let max = app.detail.lines.len().saturating_sub(1);
        app.detail.scroll = (app.detail.scroll as isize)
            .saturating_add(delta)
            .clamp(0, max as isize) as usize;
        return;
    }
    match app.focus {
        Pane::List => {
            if let Some(pos) = step(app.selected_list_position(), delta, app.list.ids.len()) {
                select_invocation(app, pos);
            }
        }
        Pane::Tree => {
            if let Some(pos) = step(
                app.selected_visible_position(),
                delta,
                app.tree.visible.len(),
            ) {
                select_visible(app, pos);
            }
        }
        Pane::Detail => {}
    }
}

fn select_invocation(app: &mut App, pos: usize) {
    if let Some(id) = app.list.ids.get(pos) {
        app.selected_invocation = Some(id.clone());
    }
}

fn select_visible(app: &mut App, pos: usize) {
    let Some(&row) = app.tree.visible.get(pos) else {
        return;
    };
    select_row(app, row);
}

fn select_row(app: &mut App, row: usize) {
    let Some(inv) = app.invocation() else {
        return;
    };
    let Some(span) = inv.tree().rows.get(row).and_then(|r| inv.spans.get(r.span)) else {
        return;
    };
    let (inv_id, span_id) = (inv.id.clone(), span.span_id.clone());
    app.selected_span.insert(inv_id, span_id);
}

fn current_row(app: &App) -> Option<usize> {
    let inv = app.invocation()?;
    inv.tree()
        .row_of_span
        .get(app.selected_span_index()?)
        .copied()
}

/// The selected span's id and whether it can fold.
fn selected_foldable(app: &App) -> Option<(String, String, bool)> {
    let inv = app.invocation()?;
    let row = inv.tree().rows.get(current_row(app)?)?;
    let span = inv.spans.get(row.span)?;
    Some((inv.id.clone(), span.span_id.clone(), row.child_count > 0))
}

fn set_fold(app: &mut App, fold: bool) {
    let Some((inv, span, foldable)) = selected_foldable(app) else {
        return;
    };
    if !foldable {
        return;
    }
    let set = app.collapsed.entry(inv).or_default();
    let changed = if fold {
        set.insert(span)
    } else {
        set.remove(&span)
    };
    if changed {
        app.fold_version += 1;
    }
}

fn toggle_fold(app: &mut App) {
    let Some((inv, span, _)) = selected_foldable(app) else {
        return;
    };
    let folded = app.is_collapsed(&inv, &span);
    set_fold(app, !folded);
}

/// `h`: folds an open node; on a leaf or a folded node, moves to the parent.
fn collapse_or_parent(app: &mut App) {
    let Some((inv, span, foldable)) = selected_foldable(app) else {
        return;
    };
    if foldable && !app.is_collapsed(&inv, &span) {
        set_fold(app, true);
        return;
    }
    let parent = app
        .invocation()
        .zip(current_row(app))
        .and_then(|(inv, row)| tree_nav::ancestors(inv, row).first().copied());
    if let Some(parent) = parent {
        select_row(app, parent);
    }
}

fn collapse_all(app: &mut App) {
    let Some(inv) = app.invocation() else {
        return;
    };
    let all = tree_nav::foldable_span_ids(inv);
    // The selection moves to its top-level ancestor, which stays visible.
    let top = current_row(app).and_then(|row| tree_nav::ancestors(inv, row).last().copied());
    let id = inv.id.clone();
    app.collapsed.insert(id, all);
    app.fold_version += 1;
    if let Some(top) = top {
        select_row(app, top);
    }
}

/// Unfolds every ancestor of `row` so it is visible.
fn reveal_row(app: &mut App, row: usize) {
    let Some(inv) = app.invocation() else {
        return;
    };
    let ids: Vec<String> = tree_nav::ancestors(inv, row)
        .into_iter()
        .filter_map(|r| inv.tree().rows.get(r).and_then(|x| inv.spans.get(x.span)))
        .map(|s| s.span_id.clone())
        .collect();
    let inv_id = inv.id.clone();
    if let Some(set) = app.collapsed.get_mut(&inv_id) {
        for id in ids {
            set.remove(&id);
        }
        app.fold_version += 1;
    }
}

fn jump_to_failure(app: &mut App, forward: bool) {
    if app.focus == Pane::List && !app.payload_fullscreen {
        let len = app.list.ids.len();
        let start = app.selected_list_position();
        let failing = |i: usize| {
            app.list
                .ids
                .get(i)
                .and_then(|id| app.store.get(id))
                .is_some_and(|inv| inv.summary().health != Health::Ok)
        };
        let found = (1..=len).find_map(|k| {
            let base = start.unwrap_or(if forward { len.saturating_sub(1) } else { 0 });
            let i = if forward {
                (base + k) % len
            } else {
                (base + len - k % len) % len
            };
            failing(i).then_some(i)
        });
        match found {
            Some(pos) => select_invocation(app, pos),
            None => app.message = Some("no failing invocations".into()),
        }
        return;
    }
    let found = app
        .invocation()
        .and_then(|inv| tree_nav::next_failure(inv, current_row(app), forward));
    match found {
        Some((row, wrapped)) => {
            reveal_row(app, row);
            select_row(app, row);
            if wrapped {
                app.message = Some("search wrapped".into());
            }
        }
        None => app.message = Some("no failed spans in this invocation".into()),
    }
}

fn jump_to_requester(app: &mut App) {
    let target = app
        .invocation()
        .zip(app.selected_span_index())
        .and_then(|(inv, i)| {
            let requester = inv.spans.get(i)?.tool.as_ref()?.requested_by.as_ref()?;
            let span = inv.span_by_id(requester)?;
            inv.tree().row_of_span.get(span).copied()
        });
    match target {
        Some(row) => {
            reveal_row(app, row);
            select_row(app, row);
            app.focus = Pane::Tree;
        }
        None => app.message = Some("no requesting LLM span is linked to this span".into()),
    }
}

fn click(app: &mut App, column: u16, row: u16) {
    let regions = app.regions();
    let at = ratatui::layout::Position::new(column, row);
    if app.payload_fullscreen {
        return;
    }
    if regions.list.contains(at) {
        app.focus = Pane::List;
        let body = regions.list_body();
        if row >= body.y && row < body.bottom() {
            let pos = app.list.offset + (row - body.y) as usize;
            if pos < app.list.ids.len() {
                select_invocation(app, pos);
            }
        }
    } else if regions.tree.contains(at) {
        let was_focused = app.focus == Pane::Tree;
        app.focus = Pane::Tree;
        let body = regions.tree_body();
        if row >= body.y && row < body.bottom() {
            let pos = app.tree.offset + (row - body.y) as usize;
            if pos < app.tree.visible.len() {
                if was_focused && app.selected_visible_position() == Some(pos) {
                    toggle_fold(app);
                } else {
                    select_visible(app, pos);
                }
            }
        }
    } else if regions.detail.contains(at) {
        app.focus = Pane::Detail;
    }
}

fn scroll_at(app: &mut App, column: u16, row: u16, delta: isize) {
    let regions = app.regions();
    let at = ratatui::layout::Position::new(column, row);
    let saved = app.focus;
    if !app.payload_fullscreen {
        if regions.list.contains(at) {
            app.focus = Pane::List;
        } else if regions.tree.contains(at) {
            app.focus = Pane::Tree;
        } else if regions.detail.contains(at) {
            app.focus = Pane::Detail;
        } else {
            return;
        }
    }
    let delta = if app.focus == Pane::Detail || app.payload_fullscreen {
        delta
    } else {
        delta.signum()
    };
    move_by(app, delta);
    app.focus = saved;
}

/// Recomputes what depends on the store, the selection and the fold state, and keeps every
/// selection visible. Cheap when nothing it depends on changed.
pub fn refresh(app: &mut App) {
    refresh_list(app);
    refresh_tree(app);
    refresh_detail(app);
}

fn refresh_list(app: &mut App) {
    let key = (app.store.generation(), app.search.clone());
    if app.list.key.as_ref() != Some(&key) {
        let previous_pos = app.selected_list_position();
        let matcher = SkimMatcherV2::default().ignore_case();
        app.list.ids = app
            .store
            .newest_first()
            .into_iter()
            .filter(|inv| app.search.is_empty() || matches_search(&matcher, inv, &app.search))
            .map(|inv| inv.id.clone())
            .collect();
        app.list.key = Some(key);
        let still_there = app
            .selected_invocation
            .as_ref()
            .is_some_and(|id| app.list.ids.contains(id));
        if !still_there {
            let pos = previous_pos
                .unwrap_or(0)
                .min(app.list.ids.len().saturating_sub(1));
            app.selected_invocation = app.list.ids.get(pos).cloned();
        }
    }
    let height = app.regions().list_body().height as usize;
    if let Some(pos) = app.selected_list_position() {
        app.list.offset = scroll_to_show(app.list.offset, pos, height);
    }
    app.list.offset = app.list.offset.min(app.list.ids.len().saturating_sub(1));
}

fn matches_search(matcher: &SkimMatcherV2, inv: &Invocation, query: &str) -> bool {
    let summary = inv.summary();
    let mut haystack = format!("{} {}", summary.name, inv.id);
    for call in &summary.tool_calls {
        haystack.push(' ');
        haystack.push_str(&call.name);
    }
    matcher.fuzzy_match(&haystack, query).is_some()
}

fn refresh_tree(app: &mut App) {
    let Some(inv_id) = app.selected_invocation.clone() else {
        app.tree = TreeView::default();
        return;
    };
    let key = (app.store.generation(), inv_id.clone(), app.fold_version);
    if app.tree.key.as_ref() != Some(&key) {
        let changed_invocation = app.tree.key.as_ref().is_none_or(|k| k.1 != inv_id);
        let empty = HashSet::new();
        let collapsed = app.collapsed.get(&inv_id).unwrap_or(&empty);
        app.tree.visible = app
            .store
            .get(&inv_id)
            .map(|inv| tree_nav::visible_rows(inv, collapsed))
            .unwrap_or_default();
        app.tree.key = Some(key);
        if changed_invocation {
            app.tree.offset = 0;
        }
    }
    // A span that vanished or is folded away: fall back to the first visible row.
    if app.selected_visible_position().is_none()
        && let Some(&first) = app.tree.visible.first()
    {
        select_row(app, first);
    }
    let height = app.regions().tree_body().height as usize;
    if let Some(pos) = app.selected_visible_position() {
        app.tree.offset = scroll_to_show(app.tree.offset, pos, height);
    }
}

fn refresh_detail(app: &mut App) {
    let width = app.regions().detail_body().width;
    let (inv_id, span_id) = match (app.invocation(), app.selected_span_index()) {
        (Some(inv), Some(i)) => (inv.id.clone(), inv.spans[i].span_id.clone()),
        _ => {
            app.detail = DetailView::default();
            return;
        }
    };
    let key = (
        app.store.generation(),
        inv_id.clone(),
        span_id.clone(),
        app.reveal,
        width,
    );
    if app.detail.key.as_ref() == Some(&key) {
        return;
    }
    let same_span = app
        .detail
        .key
        .as_ref()
        .is_some_and(|k| k.1 == inv_id && k.2 == span_id);
    // Payloads are read (from memory or disk) once per selected span, not per frame.
    let cached = app
        .detail
        .payloads
        .take()
        .filter(|(i, s, _)| *i == inv_id && *s == span_id)
        .map(|(_, _, p)| p);
    let (Some(inv), Some(index)) = (app.invocation(), app.selected_span_index()) else {
        return;
    };
    let payloads = cached.unwrap_or_else(|| inspect::LoadedPayloads::load(&inv.spans[index]));
    let built = inspect::span_lines(inv, index, &payloads, app.reveal, &app.config.theme, width);
    app.detail.lines = built.lines;
    app.detail.payload_start = built.payload_start;
    app.detail.payloads = Some((inv_id, span_id, payloads));
    if !same_span {
        app.detail.scroll = 0;
    }
    if app.payload_fullscreen && !same_span {
        app.detail.scroll = app.detail.payload_start;
    }
    app.detail.scroll = app
        .detail
        .scroll
        .min(app.detail.lines.len().saturating_sub(1));
    app.detail.key = Some(key);
}
