//! App state and the two mutators: [`update`] for actions (keys, mouse, resize) and
//! [`ingest`] for data from sources. Everything else (rendering included) only reads.
//!
//! Selection, fold state and scroll are keyed by invocation id and span id, never by row
//! number, so live inserts never move the cursor.

use std::collections::{HashMap, HashSet};

use ratatui::layout::Rect;
use ratatui::text::Line;

pub mod export;
mod filter;
mod find;
mod gold_diff;
pub mod listing;
mod memo;
mod memory_release;
mod nav;
pub mod notes;
mod refresh;
pub mod triage;

pub use filter::{
    INLINE_RUNS, ListFilter, SCREENS_WHILE_SEARCHING, finish_search, receive_search_result,
};
pub(crate) use find::set_list_filter as apply_list_filter;
pub use gold_diff::GoldContext;
pub use listing::{ListRow, ListView, SortKey};
pub use memo::Memo;
pub use refresh::refresh;
pub use triage::{TriageKey, TriageView};

use nav::{
    click, collapse_all, collapse_or_parent, jump_to_requester, move_by, page, scroll_at, set_fold,
    toggle_fold,
};

use super::action::Action;
use super::config::Config;
use super::inspect;
use super::keymap::Scope;
use super::layout::Regions;
use super::overlays::diff::DiffOverlay;
use super::overlays::{Outcome, Overlay, help, problems};
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

/// The selected invocation's visible tree rows.
#[derive(Debug, Default, Clone)]
pub struct TreeView {
    /// Indices into `tree().rows`, ascending.
    pub visible: Memo<TreeKey, Vec<usize>>,
    pub offset: usize,
}

/// What the visible tree rows are computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeKey {
    generation: u64,
    invocation: String,
    /// Bumped by every fold and by every change of the find's matches (only-matches view).
    folds: u64,
}

/// The detail pane for the selected span.
#[derive(Debug, Default, Clone)]
pub struct DetailView {
    /// The selected span's lines, computed once per span, mode, width and store change.
    pub content: Memo<DetailKey, DetailLines>,
    pub scroll: usize,
    /// The payloads of the span last shown: read (from memory or disk) once per span, not
    /// per rebuild of its lines.
    payloads: Option<(String, String, inspect::LoadedPayloads)>,
}

/// The detail pane's lines.
#[derive(Debug, Default, Clone)]
pub struct DetailLines {
    pub lines: Vec<Line<'static>>,
    /// First line of the payload sections (the full-screen view opens there).
    pub payload_start: usize,
}

/// What the detail lines are computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetailKey {
    generation: u64,
    gold_scores: u64,
    invocation: String,
    span: String,
    reveal: Reveal,
    width: u16,
    chat: Option<crate::tui::chat::ChatLayout>,
}

impl DetailView {
    /// Makes the next refresh rebuild the lines (and keep the scroll set by the caller).
    pub fn force_rebuild(&mut self) {
        self.content.invalidate();
    }
}

#[derive(Debug)]
pub struct App {
    pub store: Store,
    pub config: Config,
    pub reveal: Reveal,
    pub focus: Pane,
    /// The help, problems or gold diff view over the panes, while open; it has the keys.
    pub overlay: Option<Overlay>,
    /// The detail pane has the whole body. Not an overlay: the global keys still work in it,
    /// and the overlays open over it and close back to it.
    pub payload_fullscreen: bool,
    /// Text found in the detail pane (`/` while it has the focus).
    pub detail_find: crate::tui::search::DetailFind,
    /// Messages are shown as their raw JSON, not as a conversation.
    pub raw_payloads: bool,
    /// System prompts in conversations are shown whole, not folded to their first line.
    pub expand_system: bool,
    /// Typing into the search line.
    pub searching: bool,
    pub search: String,
    pub screen: Rect,
    /// Where the last frame drew the panes (`ui::render` returns it): clicks and the wheel are
    /// hit-tested against what the user saw. `None` until the first frame.
    pub drawn: Option<Regions>,
    /// One-shot note for the status bar (cleared by the next key).
    pub message: Option<String>,
    pub sources: Vec<SourceStatus>,
    pub should_quit: bool,
    pub selected_invocation: Option<String>,
    /// Until the user picks a run, the cursor stays on the newest one as data streams in.
    pub follow_newest: bool,
    /// Spans seen when freed memory was last given back (see [`release_due`]).
    spans_at_last_release: u64,
    selected_span: HashMap<String, String>,
    collapsed: HashMap<String, HashSet<String>>,
    fold_version: u64,
    pub list: ListView,
    pub tree: TreeView,
    pub detail: DetailView,
    /// Bumped by every state change, so the loop redraws only when something changed.
    pub version: u64,
    /// Golds known to the app (`--gold`, sidecars, golds in traces) and list scores.
    pub gold: GoldContext,
    /// Facets of the listed runs and the failure queue (`n`/`N`, `]`/`[`).
    pub triage: Memo<TriageKey, TriageView>,
    pub sort: SortKey,
    /// Folded conversation rows, by conversation id.
    pub folded_conversations: HashSet<String>,
    folded_version: u64,
    /// The list cursor sits on this conversation's row (the tree shows its first turn).
    pub selected_conversation: Option<String>,
    /// Whether the app captures the mouse; off lets the terminal select text natively.
    pub mouse_capture: bool,
    /// Text `y` copied, waiting for the event loop to send it to the terminal (OSC 52).
    pub clipboard: Option<String>,
    /// The list search prompt: line being edited, history, the filter in force.
    pub list_search: crate::tui::search::ListSearch,
    /// Find in the selected trace.
    pub find: crate::tui::search::Find,
    /// Which runs the list search matches, evaluated off the UI thread.
    pub filter: ListFilter,
    /// Where triage notes are read from and appended to (`None`: no local source and no
    /// `--notes`, so `a` says so).
    pub notes_file: Option<notes::NotesFile>,
}

impl App {
    pub fn new(store: Store, config: Config, reveal: Reveal) -> Self {
        let message = config.warnings.first().cloned();
        let mut app = App {
            store,
            config,
            reveal,
            focus: Pane::List,
            overlay: None,
            payload_fullscreen: false,
            detail_find: Default::default(),
            raw_payloads: false,
            expand_system: false,
            searching: false,
            search: String::new(),
            screen: Rect::new(0, 0, 80, 24),
            drawn: None,
            message,
            sources: Vec::new(),
            should_quit: false,
            selected_invocation: None,
            follow_newest: true,
            spans_at_last_release: 0,
            selected_span: HashMap::new(),
            collapsed: HashMap::new(),
            fold_version: 0,
            list: ListView::default(),
            tree: TreeView::default(),
            detail: DetailView::default(),
            version: 0,
            gold: GoldContext::default(),
            triage: Memo::default(),
            sort: SortKey::default(),
            folded_conversations: HashSet::new(),
            folded_version: 0,
            selected_conversation: None,
            mouse_capture: true,
            clipboard: None,
            list_search: Default::default(),
            find: Default::default(),
            filter: Default::default(),
            notes_file: None,
        };
        refresh(&mut app);
        app
    }

    /// The regions the next frame will use (page sizes, scroll windows).
    pub fn regions(&self) -> Regions {
        Regions::compute(self.screen, self.payload_fullscreen, self.list.rows().len())
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
    /// Index into the selected invocation's spans of the selected span: the one the user
    /// picked, else the first visible row.
    pub fn selected_span_index(&self) -> Option<usize> {
        let inv = self.invocation()?;
        if let Some(index) = self
            .selected_span
            .get(&*inv.id.text())
            .and_then(|id| inv.span_by_id(id))
        {
            return Some(index);
        }
        let row = *self.tree.visible.first()?;
        inv.tree().rows.get(row).map(|r| r.span())
    }

    /// Position of the selected span within `tree.visible`.
    pub fn selected_visible_position(&self) -> Option<usize> {
        let inv = self.invocation()?;
        let row = inv.tree().row_of(self.selected_span_index()?)?;
        self.tree.visible.binary_search(&row).ok()
    }

    /// Position of the list cursor within `list.rows()`: the selected conversation's row, the
    /// selected run's row, or its conversation's row when the run is folded away.
    pub fn selected_list_position(&self) -> Option<usize> {
        if let Some(conversation) = &self.selected_conversation
            && let Some(pos) = self.list.conversation_row(conversation)
        {
            return Some(pos);
        }
        let pos = self.selected_order_position()?;
        self.list
            .rows()
            .iter()
            .position(|r| *r == ListRow::Invocation(pos))
            .or_else(|| {
                let id = self.selected_invocation.as_ref()?;
                self.list.conversation_row_of(id)
            })
    }

    /// Position of the selected run in reading order (`list.runs()`).
    pub fn selected_order_position(&self) -> Option<usize> {
        self.list.position(self.selected_invocation.as_ref()?)
    }

    /// Facets of the selected run, when it fails.
    pub fn facets(&self) -> Option<&crate::triage::Facets> {
        self.triage.facets_at(self.selected_order_position()?)
    }

    /// Stop `k` of the failure queue: (run id, span index).
    pub fn stop(&self, k: usize) -> Option<(String, usize)> {
        let (pos, span) = self.triage.stop(k)?;
        Some((self.list.id(pos)?.to_string(), span))
    }

    /// Facets of listed run `id`, when it fails.
    pub fn facets_of(&self, id: &str) -> Option<&crate::triage::Facets> {
        self.triage.facets_at(self.list.position(id)?)
    }

    /// The gold diff, while open.
    pub fn gold_diff(&self) -> Option<&DiffOverlay> {
        self.overlay.as_ref().and_then(Overlay::gold_diff)
    }

    pub fn is_collapsed(&self, inv: &str, span_id: &str) -> bool {
        self.collapsed
            .get(inv)
            .is_some_and(|set| set.contains(span_id))
    }
}

/// Applies data from a source.
pub fn ingest(app: &mut App, event: IngestEvent) {
    ingest_many(app, std::iter::once(event));
}

/// Applies a drained batch of source events, then recomputes the views once.
pub fn ingest_many(app: &mut App, events: impl IntoIterator<Item = IngestEvent>) {
    take_in(app, events);
    settle(app);
}

/// Applies source events to the store without recomputing the views: while data streams in
/// (a big file read in pieces, a burst of live requests), the event loop takes in several
/// drains per [`settle`].
pub fn take_in(app: &mut App, events: impl IntoIterator<Item = IngestEvent>) {
    let mut released = false;
    for event in events {
        // A source's status changes no run: a drain of statuses alone (a read's end, a
        // receiver's counts) keeps the list as it is, and the next settle rebuilds nothing.
        if !released && !matches!(event, IngestEvent::Status(_)) {
            release_list(app);
            released = true;
        }
        apply_ingest(app, event);
    }
}

/// The list lets go of its runs before the store changes them, so the store changes them in
/// place instead of copying the ones it shares; the next settle rebuilds the list.
fn release_list(app: &mut App) {
    app.filter.release_order();
    let selected = app.selected_invocation.clone();
    app.list.release(selected.as_deref());
    // Lists replaced earlier may still be held by the thread dropping them.
    memory_release::wait_until_dropped();
}

/// Rebuilds what the events taken in since the last settle changed, then the views, once.
pub fn settle(app: &mut App) {
    app.store.settle();
    refresh(app);
}

/// Whether enough was loaded since freed memory was last given back for giving it back again
/// to pay. The event loop asks once data has been quiet for a moment and the work between
/// events is done (indexing and settling free as much as loading did), then calls
/// [`release_memory`]: the allocator otherwise keeps every page a load freed, and the TUI
/// lives on for hours.
pub fn release_due(app: &App) -> bool {
    app.store
        .stats()
        .spans_seen
        .saturating_sub(app.spans_at_last_release)
        >= RELEASE_AFTER_SPANS
}

/// Gives the heap's free pages back to the system, on the releasing thread.
pub fn release_memory(app: &mut App) {
    app.spans_at_last_release = app.store.stats().spans_seen;
    memory_release::release_memory_in_background();
}

/// Spans loaded since memory was last given back before it is worth doing again.
const RELEASE_AFTER_SPANS: u64 = 20_000;

fn apply_ingest(app: &mut App, event: IngestEvent) {
    match event {
        IngestEvent::Batch(batch) => app.store.apply(batch),
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
}

fn source_name(status: &SourceStatus) -> String {
    match status {
        SourceStatus::Watching { root, .. } => root.display().to_string(),
        SourceStatus::Reading { path, .. } => path.display().to_string(),
        SourceStatus::Listening { http, .. } => http.clone(),
        SourceStatus::Attached { url, .. } => url.clone(),
    }
}

/// Takes in results of the list search from the query worker; redraws when they were the
/// running search's (stale ones change nothing).
pub fn query_results(app: &mut App, chunks: impl IntoIterator<Item = crate::query::worker::Chunk>) {
    let was_searching = app.filter.is_searching();
    if filter::receive(app, chunks) || was_searching != app.filter.is_searching() {
        app.version += 1;
        refresh(app);
    }
}

/// The channel the query worker answers on, for the event loop (taken once).
pub fn take_query_results(
    app: &mut App,
) -> Option<tokio::sync::mpsc::UnboundedReceiver<crate::query::worker::Chunk>> {
    app.filter.take_receiver()
}

/// Records where a frame drew the panes. Not a state change: nothing redraws because of it.
pub fn record_frame(app: &mut App, regions: Regions) {
    app.drawn = Some(regions);
}

/// Whether the app has work to do between events (gold scores of rows not drawn yet, search
/// indexes of runs settled since the last step).
pub fn has_background_work(app: &App) -> bool {
    gold_diff::scoring_pending(app) || app.store.has_search_indexes_to_build()
}

/// One bounded step of that work, for when no key and no data is waiting. Redraws only when
/// it changed something shown.
pub fn background_step(app: &mut App) {
    if gold_diff::scoring_pending(app) && gold_diff::score_offscreen(app) {
        app.version += 1;
        refresh(app);
    }
    // Search indexes change no row: queries find the same runs with or without them.
    app.store.build_search_indexes(SEARCH_INDEX_STEP_SPANS);
}

/// The open summary's due time came (see `overlays::summary::due`): computed again and drawn.
pub fn summary_due(app: &mut App) {
    crate::tui::overlays::summary::refresh(app);
    app.version += 1;
}

/// Spans indexed per background step: a few milliseconds, so a key waits at most that long.
const SEARCH_INDEX_STEP_SPANS: usize = 2_000;

/// The only mutator for user and terminal actions.
pub fn update(app: &mut App, action: Action) {
    app.version += 1;
    if !matches!(action, Action::Resize { .. }) {
        app.message = None;
        // Whatever the user is looking at must not be swapped for a newer run under them.
        app.follow_newest = false;
    }
    // The open overlay has the first say. It runs taken out of the app, so it can act on the
    // rest of the app; what it leaves (quit, resize, reveal) goes on below with it still open.
    if let Some(mut overlay) = app.overlay.take() {
        match overlay.update(action, app) {
            Outcome::Handled => app.overlay = Some(overlay),
            Outcome::Close => {}
            Outcome::NotHandled => {
                app.overlay = Some(overlay);
                apply_to_panes(app, action);
            }
        }
    } else {
        apply_to_panes(app, action);
    }
    refresh(app);
}

/// An action no overlay took: the panes, the search prompt and the global keys.
fn apply_to_panes(app: &mut App, action: Action) {
    match action {
        Action::Quit => app.should_quit = true,
        Action::ToggleHelp => app.overlay = Some(Overlay::Help(help::Help::default())),
        Action::ToggleProblems => {
            app.overlay = Some(Overlay::Problems(problems::Problems::default()));
        }
        Action::NextMessage => find::step_message(app, true),
        Action::PrevMessage => find::step_message(app, false),
        Action::ToggleTranscript => {
            if let Some(inv) = app.invocation() {
                let transcript = crate::tui::overlays::transcript::Transcript::of(inv);
                // A find in the detail does not carry over: `/` starts the transcript's own.
                app.detail_find = Default::default();
                app.overlay = Some(Overlay::Transcript(Box::new(transcript)));
            }
        }
        Action::ToggleReveal => {
            app.reveal = app.reveal.toggled();
            // Payload text is searched only while revealed: results depend on the mode.
            app.list.force_rebuild();
            app.find.computed_at = None;
        }
        Action::ToggleDiff => gold_diff::open(app),
        Action::Annotate => notes::open_prompt(app),
        Action::ToggleSummary => crate::tui::overlays::summary::open(app),
        Action::Copy => export::copy(app),
        Action::Export => export::export(app, Reveal::Redacted),
        Action::ExportRevealed => export::export(app, Reveal::Revealed),
        Action::StartSearch => find::start(app),
        Action::SearchInput(c) => find::input(app, c),
        Action::SearchBackspace => find::backspace(app),
        Action::SearchEdit(key) => find::edit(app, key),
        Action::SearchAccept => find::accept(app),
        Action::Preset(n) => find::preset(app, n),
        Action::ToggleFindOnly => find::toggle_only_matches(app),
        Action::Cancel => {
            if find::end_detail_find(app) {
            } else if app.payload_fullscreen {
                app.payload_fullscreen = false;
            } else {
                find::cancel(app);
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
        Action::ToggleFold if app.focus == Pane::List => nav::toggle_conversation(app),
        Action::ToggleFold if app.focus == Pane::Detail || app.payload_fullscreen => {
            app.expand_system = !app.expand_system;
        }
        Action::ToggleFold => toggle_fold(app),
        Action::Expand => match app.focus {
            Pane::List if app.selected_conversation.is_some() => nav::toggle_conversation(app),
            Pane::List => app.focus = Pane::Tree,
            _ => set_fold(app, false),
        },
        Action::Collapse => match app.focus {
            Pane::Detail => app.focus = Pane::Tree,
            Pane::List => nav::set_conversation_fold(app, true),
            _ => collapse_or_parent(app),
        },
        Action::ExpandAll => {
            if let Some(id) = app.selected_invocation.clone() {
                app.collapsed.remove(&id);
                app.fold_version += 1;
            }
        }
        Action::CollapseAll => collapse_all(app),
        // While a find is active, n/N walk its matches; Esc ends it and they walk failures.
        Action::NextFailure if app.detail_find.active => find::step_in_detail(app, true),
        Action::PrevFailure if app.detail_find.active => find::step_in_detail(app, false),
        Action::NextFailure if app.find.active => find::cycle(app, true),
        Action::PrevFailure if app.find.active => find::cycle(app, false),
        Action::NextFailure => triage::step_failure(app, true),
        Action::PrevFailure => triage::step_failure(app, false),
        Action::NextFailingInvocation => triage::step_failing_invocation(app, true),
        Action::PrevFailingInvocation => triage::step_failing_invocation(app, false),
        Action::CycleSort => {
            app.sort = app.sort.next();
            app.message = Some(format!("sorted {}", app.sort.label()));
        }
        Action::ToggleMouseCapture => {
            app.mouse_capture = !app.mouse_capture;
            let again = app
                .config
                .keymap
                .first_key(&[Scope::Global], Action::ToggleMouseCapture)
                .map(|key| format!(" ({key} captures again)"))
                .unwrap_or_default();
            app.message = Some(if app.mouse_capture {
                "mouse captured: click and scroll in panes".into()
            } else {
                format!("mouse released: select text with the terminal{again}")
            });
        }
        Action::JumpToRequester => jump_to_requester(app),
        Action::ToggleRawPayload => app.raw_payloads = !app.raw_payloads,
        Action::TogglePayloadFullscreen => {
            app.payload_fullscreen = !app.payload_fullscreen;
            // Rebuilt at the new width below; the payload then opens at its first line.
            app.detail.force_rebuild();
        }
        Action::Resize { width, height } => app.screen = Rect::new(0, 0, width, height),
        Action::Click { column, row } => click(app, column, row),
        Action::ScrollUp { column, row } => scroll_at(app, column, row, -3),
        Action::ScrollDown { column, row } => scroll_at(app, column, row, 3),
        // Only the gold diff overlay answers these; its keys reach nothing else.
        Action::NextDifference
        | Action::PrevDifference
        | Action::CycleAlignment
        | Action::GoToCall => {}
        // Only the note prompt answers it.
        Action::SaveNote => {}
        // Only the summary answers it.
        Action::ApplyRowFilter => {}
    }
}

#[cfg(test)]
mod memory_release_tests {
    use super::*;
    use crate::model::{Batch, Span};

    fn spans(count: u64) -> IngestEvent {
        IngestEvent::Batch(Batch {
            spans: (0..count)
                .map(|n| Span {
                    trace_id: format!("t{}", n / 4).into(),
                    span_id: format!("s{n}").into(),
                    name: "step".into(),
                    provenance: crate::model::Provenance::shared(None, None, "test".into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }

    fn releases_asked() -> u64 {
        memory_release::RELEASES_ASKED.with(|asked| asked.get())
    }

    #[test]
    fn freed_memory_goes_back_once_per_big_load() {
        let mut app = App::new(Store::new(), Config::default(), Reveal::Redacted);
        ingest_many(&mut app, [spans(15_000)]);
        assert!(!release_due(&app), "a small load keeps its pages");
        ingest_many(&mut app, [spans(10_000)]);
        assert!(release_due(&app), "25,000 spans are a big load");
        release_memory(&mut app);
        assert_eq!(releases_asked(), 1);
        assert!(!release_due(&app), "once per load");
        ingest_many(&mut app, [spans(10)]);
        assert!(!release_due(&app), "a few spans more are no new load");
        ingest_many(&mut app, [spans(20_000)]);
        assert!(release_due(&app), "the next big load is");
    }

    /// The TUI lists runs before indexing them; idle steps then build every index, and
    /// nothing shown changes while they do.
    #[test]
    fn idle_steps_build_the_search_indexes_without_redrawing() {
        let mut app = App::new(
            Store::new().indexing_later(),
            Config::default(),
            Reveal::Redacted,
        );
        ingest_many(&mut app, [spans(4_000)]);
        assert_eq!(app.list.len(), 1_000, "every run is listed at once");
        assert!(has_background_work(&app));
        let version = app.version;
        let mut steps = 0;
        while has_background_work(&app) {
            background_step(&mut app);
            steps += 1;
            assert!(steps < 100, "the steps end");
        }
        assert!(steps >= 2, "4,000 spans take more than one step");
        assert_eq!(app.version, version, "no redraw for an index");
        assert!(
            app.store
                .invocations()
                .all(|run| run.search_index().heap_bytes() > 0),
            "every run has its index"
        );
    }
}
