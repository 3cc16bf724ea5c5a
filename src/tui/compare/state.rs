//! The comparison view's state, plain data, and [`update`], the one place it changes.
//!
//! The comparison is computed once, revealed (secrets masked): every text from it is masked
//! again under the screen's mode when drawn, so `r` costs nothing per case. A case's runs are
//! read only when it is selected ([`CaseDetail`]), and its lines are built once per selection
//! and mode ([`Shown`]); a key costs the visible rows and the selected case, never a pass over
//! every case.

use std::path::PathBuf;

use super::detail::{Block, CaseDetail, case_blocks};
use super::export;
use super::keys::{Action, KeyScope};
use super::render;
use super::summary::class_blocks;
use crate::gold::check::SidecarCache;
use crate::gold::conversation::Conversations;
use crate::gold::report::DiffReport;
use crate::redact::Reveal;
use crate::store::Store;
use crate::tui::action::Action as DiffAction;
use crate::tui::config::Config;
use crate::tui::overlays::diff::{self, DiffViewState};
use crate::views::compare::{Comparison, Entry, KeyRule};

/// A row of the case list: a class's title, or one of its cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListRow {
    /// The class, as an index into [`Comparison::classes`].
    Class(usize),
    /// The `entry`th case of class `class`.
    Case { class: usize, entry: usize },
}

impl ListRow {
    pub fn class(self) -> usize {
        match self {
            ListRow::Class(class) | ListRow::Case { class, .. } => class,
        }
    }
}

/// What a side needs to find a run's gold as the main view's `d` does: the store's
/// conversations (for a whole-conversation gold) and the sidecar files read so far.
#[derive(Debug, Default)]
pub struct Golds {
    pub conversations: Conversations,
    pub sidecars: SidecarCache,
}

/// The open overlay, which takes the keys while open.
#[derive(Debug)]
pub enum Overlay {
    Help,
    Gold(Box<GoldView>),
}

/// The gold diffs of the selected case: one per run that has a gold, A's first.
#[derive(Debug)]
pub struct GoldView {
    pub case: String,
    pub sides: Vec<GoldSide>,
    /// The side the movement keys act on.
    pub focus: usize,
}

#[derive(Debug)]
pub struct GoldSide {
    pub name: &'static str,
    pub report: DiffReport,
    pub view: DiffViewState,
}

/// The selected row's detail lines, for the row and mode they were built for.
#[derive(Debug)]
pub struct Shown {
    pub row: usize,
    pub reveal: Reveal,
    /// The runs of the row's case (none for a class title).
    pub case: Option<CaseDetail>,
    pub blocks: Vec<Block>,
}

#[derive(Debug)]
pub struct CompareState {
    /// Computed revealed: texts are masked under [`CompareState::reveal`] when drawn.
    pub comparison: Comparison,
    pub stores: [&'static Store; 2],
    /// A's and B's sources as the command line named them, made inert for a terminal.
    pub sources: [String; 2],
    pub rule: KeyRule,
    pub reveal: Reveal,
    pub config: Config,
    pub rows: Vec<ListRow>,
    /// The rows of the cases newly failing in B (the newly failing class, and the cases run
    /// in B only that fail there: what the default gate counts), in list order.
    pub newly_failing_rows: Vec<usize>,
    /// Each class's title row.
    pub class_rows: [usize; 6],
    pub selected: usize,
    /// The first list row drawn.
    pub list_offset: usize,
    /// Detail lines scrolled past.
    pub detail_scroll: usize,
    pub shown: Option<Shown>,
    pub overlay: Option<Overlay>,
    pub help_scroll: u16,
    /// The answer to the last key, for the status line.
    pub message: Option<String>,
    pub should_quit: bool,
    /// The terminal's size, as the last resize said.
    pub size: (u16, u16),
    pub golds: [Golds; 2],
    /// Where `x` writes its file.
    pub export_dir: PathBuf,
}

impl CompareState {
    /// The state for `comparison` (computed with [`Reveal::Revealed`]) of `stores`, showing
    /// texts as `reveal` says until `r`.
    pub fn new(
        comparison: Comparison,
        stores: [&'static Store; 2],
        sources: [String; 2],
        rule: KeyRule,
        reveal: Reveal,
        config: Config,
    ) -> Self {
        let mut rows = Vec::new();
        let mut class_rows = [0; 6];
        let mut newly_failing_rows = Vec::new();
        for (class, (_, entries)) in comparison.classes().into_iter().enumerate() {
            class_rows[class] = rows.len();
            rows.push(ListRow::Class(class));
            for (entry, case) in entries.iter().enumerate() {
                let newly_failing = match class {
                    0 => true,
                    5 => case.b.as_ref().is_some_and(|b| b.failing),
                    _ => false,
                };
                if newly_failing {
                    newly_failing_rows.push(rows.len());
                }
                rows.push(ListRow::Case { class, entry });
            }
        }
        let golds = [
            Golds {
                conversations: Conversations::of_store(stores[0]),
                ..Golds::default()
            },
            Golds {
                conversations: Conversations::of_store(stores[1]),
                ..Golds::default()
            },
        ];
        let mut state = CompareState {
            comparison,
            stores,
            sources,
            rule,
            reveal,
            config,
            rows,
            newly_failing_rows,
            class_rows,
            selected: 0,
            list_offset: 0,
            detail_scroll: 0,
            shown: None,
            overlay: None,
            help_scroll: 0,
            message: None,
            should_quit: false,
            size: (80, 24),
            golds,
            export_dir: PathBuf::from("."),
        };
        refresh_shown(&mut state);
        state
    }

    /// The case a row stands for.
    pub fn entry(&self, row: ListRow) -> Option<&Entry> {
        entry_of(&self.comparison, row)
    }

    /// Which keys apply: the open overlay's, else the list's.
    pub fn key_scope(&self) -> KeyScope {
        match self.overlay {
            None => KeyScope::List,
            Some(Overlay::Help) => KeyScope::Help,
            Some(Overlay::Gold(_)) => KeyScope::Gold,
        }
    }

    fn class_has_cases(&self, class: usize) -> bool {
        !self.comparison.classes()[class].1.is_empty()
    }
}

fn entry_of(comparison: &Comparison, row: ListRow) -> Option<&Entry> {
    match row {
        ListRow::Class(_) => None,
        ListRow::Case { class, entry } => comparison.classes()[class].1.get(entry),
    }
}

/// Applies one action.
pub fn update(state: &mut CompareState, action: Action) {
    if let Action::Resize { width, height } = action {
        state.size = (width, height);
        keep_selection_visible(state);
        clamp_detail_scroll(state);
        return;
    }
    state.message = None;
    match state.overlay.take() {
        Some(Overlay::Help) => update_help(state, action),
        Some(Overlay::Gold(view)) => update_gold(state, *view, action),
        None => update_list(state, action),
    }
}

fn update_help(state: &mut CompareState, action: Action) {
    match action {
        Action::Down => state.help_scroll = state.help_scroll.saturating_add(1),
        Action::Up => state.help_scroll = state.help_scroll.saturating_sub(1),
        Action::Top => state.help_scroll = 0,
        Action::Quit => state.should_quit = true,
        Action::ToggleHelp | Action::Cancel => {}
        _ => state.overlay = Some(Overlay::Help),
    }
}

fn update_gold(state: &mut CompareState, mut view: GoldView, action: Action) {
    let asked = match action {
        Action::Down => Some(DiffAction::Down),
        Action::Up => Some(DiffAction::Up),
        Action::Top => Some(DiffAction::Top),
        Action::Bottom => Some(DiffAction::Bottom),
        Action::NextNewlyFailing => Some(DiffAction::NextDifference),
        Action::PrevNewlyFailing => Some(DiffAction::PrevDifference),
        Action::CycleAlignment => Some(DiffAction::CycleAlignment),
        _ => None,
    };
    match (asked, action) {
        (Some(asked), _) => {
            if let Some(side) = view.sides.get_mut(view.focus) {
                diff::apply(&mut side.view, &mut side.report, asked);
            }
        }
        (None, Action::SwitchSide) => view.focus = (view.focus + 1) % view.sides.len().max(1),
        (None, Action::ToggleReveal) => toggle_reveal(state),
        (None, Action::Quit) => state.should_quit = true,
        (None, Action::ToggleGold | Action::Cancel) => return,
        _ => {}
    }
    state.overlay = Some(Overlay::Gold(Box::new(view)));
}

fn update_list(state: &mut CompareState, action: Action) {
    let last = state.rows.len().saturating_sub(1);
    match action {
        Action::Down => select(state, (state.selected + 1).min(last)),
        Action::Up => select(state, state.selected.saturating_sub(1)),
        Action::Top => select(state, 0),
        Action::Bottom => select(state, last),
        Action::NextNewlyFailing | Action::PrevNewlyFailing => {
            let rows = &state.newly_failing_rows;
            let at = rows.partition_point(|&row| row <= state.selected);
            let next = if action == Action::NextNewlyFailing {
                rows.get(at).or(rows.first())
            } else {
                let before = rows.partition_point(|&row| row < state.selected);
                before.checked_sub(1).map(|i| &rows[i]).or(rows.last())
            };
            match next.copied() {
                Some(row) => select(state, row),
                None => state.message = Some("no case newly fails in B".into()),
            }
        }
        Action::NextGroup | Action::PrevGroup => {
            let current = state.rows[state.selected].class();
            let forward = action == Action::NextGroup;
            let target = (1..=6)
                .map(|step| {
                    if forward {
                        (current + step) % 6
                    } else {
                        (current + 6 - step) % 6
                    }
                })
                .find(|&class| state.class_has_cases(class));
            match target {
                Some(class) => select(state, state.class_rows[class] + 1),
                None => state.message = Some("no cases in either run".into()),
            }
        }
        Action::DetailPageDown => {
            state.detail_scroll += page(state);
            clamp_detail_scroll(state);
        }
        Action::DetailPageUp => {
            state.detail_scroll = state.detail_scroll.saturating_sub(page(state));
        }
        Action::ToggleReveal => toggle_reveal(state),
        Action::ToggleGold => open_gold(state),
        Action::Export => export::export(state),
        Action::ToggleHelp => {
            state.help_scroll = 0;
            state.overlay = Some(Overlay::Help);
        }
        Action::Quit | Action::Cancel => state.should_quit = true,
        Action::SwitchSide | Action::CycleAlignment | Action::Resize { .. } => {}
    }
}

fn toggle_reveal(state: &mut CompareState) {
    state.reveal = state.reveal.toggled();
    refresh_shown(state);
    clamp_detail_scroll(state);
}

fn select(state: &mut CompareState, row: usize) {
    if row != state.selected {
        state.selected = row;
        state.detail_scroll = 0;
        refresh_shown(state);
    }
    keep_selection_visible(state);
}

/// Builds the selected row's detail when the row or the mode changed since it was built; a
/// new mode re-shows the runs already read.
fn refresh_shown(state: &mut CompareState) {
    let row = state.selected;
    let reveal = state.reveal;
    if state
        .shown
        .as_ref()
        .is_some_and(|shown| shown.row == row && shown.reveal == reveal)
    {
        return;
    }
    let kept = state.shown.take().filter(|shown| shown.row == row);
    let Some(&list_row) = state.rows.get(row) else {
        return;
    };
    let case = match (kept, entry_of(&state.comparison, list_row)) {
        (Some(shown), _) => shown.case,
        (None, Some(entry)) => {
            let case = CaseDetail::of(entry, state.stores, &mut state.golds);
            if let Some(problem) = case.problems.first() {
                state.message = Some(problem.clone());
            }
            Some(case)
        }
        (None, None) => None,
    };
    let theme = &state.config.theme;
    let blocks = match (state.entry(list_row), &case) {
        (Some(entry), Some(detail)) => {
            let class = state.comparison.classes()[list_row.class()].0;
            let repeats = state.comparison.repeats_of(entry);
            case_blocks(entry, class, detail, repeats, reveal, theme)
        }
        _ => class_blocks(&state.comparison, list_row.class(), reveal, theme),
    };
    state.shown = Some(Shown {
        row,
        reveal,
        case,
        blocks,
    });
}

/// Opens the gold diffs of the selected case's runs, or says why there are none.
fn open_gold(state: &mut CompareState) {
    let Some(case) = state.shown.as_ref().and_then(|shown| shown.case.as_ref()) else {
        state.message = Some("select a case to see its gold".into());
        return;
    };
    let sides: Vec<GoldSide> = ["A", "B"]
        .into_iter()
        .zip(&case.sides)
        .filter_map(|(name, side)| {
            let report = side.as_ref()?.gold.clone()?;
            Some(GoldSide {
                name,
                view: DiffViewState::new(&report),
                report,
            })
        })
        .collect();
    if sides.is_empty() {
        state.message = Some(
            "no gold for either run: put NAME.gold.json or gold.json beside the trace, or use a format that carries one"
                .into(),
        );
        return;
    }
    let case = state
        .entry(state.rows[state.selected])
        .map(|entry| format!("{} · {}", entry.case.id, entry.case.index))
        .unwrap_or_default();
    state.overlay = Some(Overlay::Gold(Box::new(GoldView {
        case,
        sides,
        focus: 0,
    })));
}

/// A page of the detail pane: its height less one line kept for context.
fn page(state: &CompareState) -> usize {
    let regions = render::regions(state.size);
    usize::from(render::inner_height(regions.detail))
        .saturating_sub(1)
        .max(1)
}

fn keep_selection_visible(state: &mut CompareState) {
    let regions = render::regions(state.size);
    let height = usize::from(render::inner_height(regions.list)).max(1);
    if state.selected < state.list_offset {
        state.list_offset = state.selected;
    } else if state.selected >= state.list_offset + height {
        state.list_offset = state.selected + 1 - height;
    }
}

/// Keeps the detail scrolled no further than its last page.
fn clamp_detail_scroll(state: &mut CompareState) {
    let regions = render::regions(state.size);
    let Some(shown) = &state.shown else {
        return;
    };
    let width = render::inner_width(regions.detail);
    let lines = render::detail_lines(&shown.blocks, width, Default::default()).len();
    let height = usize::from(render::inner_height(regions.detail));
    state.detail_scroll = state.detail_scroll.min(lines.saturating_sub(height));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::compare::{
        CaseOut, KeyAttributes, KeyKinds, KeyedBy, Keying, Side, Summaries, Summary,
    };

    fn side(failing: bool) -> Option<Side> {
        Some(Side {
            id: "run".into(),
            run: "run".into(),
            failing,
            flaky: false,
            index_is_repeat: false,
            facets: if failing { vec!["error"] } else { vec![] },
            eval: None,
            note: None,
        })
    }

    fn entry(id: &str, a: Option<Side>, b: Option<Side>) -> Entry {
        Entry {
            case: CaseOut {
                id: id.into(),
                index: 0,
                key: "case",
            },
            a,
            b,
            changed: Vec::new(),
            reason_changed: None,
            repeats: [None, None],
        }
    }

    /// One newly failing case, one still passing, and two cases run in B only, one failing.
    fn state() -> CompareState {
        let comparison = Comparison {
            keyed_by: KeyedBy {
                a: Keying::Case,
                b: Keying::Case,
                attributes: KeyAttributes::default(),
                kinds: [KeyKinds::default(); 2],
            },
            summary: Summaries {
                a: Summary::default(),
                b: Summary::default(),
            },
            newly_failing: vec![entry("broke", side(false), side(true))],
            fixed: vec![],
            still_failing: vec![],
            still_passing: vec![entry("fine", side(false), side(false))],
            only_in_a: vec![],
            only_in_b: vec![
                entry("new-ok", None, side(false)),
                entry("new-bad", None, side(true)),
            ],
            flaky: vec![],
            repeats: [vec![], vec![]],
        };
        let store: &'static Store = Box::leak(Box::new(Store::new()));
        CompareState::new(
            comparison,
            [store, store],
            ["a".into(), "b".into()],
            KeyRule::Case,
            Reveal::Redacted,
            Config::default(),
        )
    }

    fn selected_case(state: &CompareState) -> Option<&str> {
        let entry = state.entry(state.rows[state.selected])?;
        Some(&entry.case.id)
    }

    #[test]
    fn n_reaches_every_case_the_gate_counts_as_newly_failing() {
        let mut state = state();
        assert_eq!(
            state.newly_failing_rows.len(),
            state.comparison.newly_failing_in_b()
        );
        let mut reached = Vec::new();
        for _ in 0..3 {
            update(&mut state, Action::NextNewlyFailing);
            reached.push(selected_case(&state).unwrap().to_owned());
        }
        assert_eq!(reached, ["broke", "new-bad", "broke"]);
        update(&mut state, Action::PrevNewlyFailing);
        assert_eq!(selected_case(&state), Some("new-bad"));
    }

    #[test]
    fn a_class_title_shows_the_runs_as_wholes_and_a_case_its_runs() {
        let mut state = state();
        let shown = state.shown.as_ref().unwrap();
        assert_eq!((shown.row, shown.case.is_none()), (0, true));
        update(&mut state, Action::Down);
        let shown = state.shown.as_ref().unwrap();
        assert_eq!(shown.row, 1);
        let case = shown.case.as_ref().expect("the case's detail");
        // Neither run is in the (empty) stores: the case shows without them.
        assert!(case.sides.iter().all(Option::is_none));
        // The mode changing keeps the runs read and rebuilds the lines.
        update(&mut state, Action::ToggleReveal);
        let shown = state.shown.as_ref().unwrap();
        assert_eq!((shown.row, shown.reveal), (1, Reveal::Revealed));
        assert!(shown.case.is_some());
    }

    #[test]
    fn the_list_scrolls_to_keep_the_selection_on_screen() {
        let mut state = state();
        // Eight rows leave the list two inside its borders.
        update(
            &mut state,
            Action::Resize {
                width: 80,
                height: 8,
            },
        );
        update(&mut state, Action::Bottom);
        let last = state.rows.len() - 1;
        assert_eq!(state.selected, last);
        assert_eq!(state.list_offset, last + 1 - 2);
        update(&mut state, Action::Top);
        assert_eq!(state.list_offset, 0);
    }
}
