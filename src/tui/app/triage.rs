//! The failure queue: every listed invocation's facets, and the stops `n`/`N` walk in reading
//! order (list order, then tree order within a run). `]`/`[` walk failing runs instead.
//!
//! Runs are named by their position in the list's reading order (`ListView::runs`): the view is
//! rebuilt whenever the list is, and a list of 100,000 runs is walked without hashing or
//! copying an id. A failing run's facets are kept with its id and the generation it last
//! changed in, so a rebuild after a drain recomputes only the failing runs that changed (a
//! small run's facets build its tree).

use std::sync::Arc;

use foldhash::HashMap;

use super::{App, ListView, nav};
use crate::model::Id;
use crate::store::Invocation;
use crate::triage::{Facets, GoldOutcome};

/// Facets of the failing listed invocations and the queue built from them; rebuilt when the
/// store, the list or a gold score changed ([`TriageKey`]). Every failing run is kept here, so
/// each is held small: list positions and span indices as `u32`, and its gold outcome only in
/// its facets.
#[derive(Debug, Default, Clone)]
pub struct TriageView {
    /// List positions of the failing runs, ascending: a run not here passes.
    failing_positions: Vec<u32>,
    /// The facets of each of `failing_positions`.
    failing_facets: Vec<Facets>,
    /// What each of `failing_facets` was computed from: the run and the generation it last
    /// changed in (its gold outcome is in the facets).
    computed_from: Vec<(Id, u64)>,
    /// Failing invocations among the listed ones.
    pub failing: usize,
    /// Where `n` stops: (list position, span index), in reading order.
    pub stops: Vec<(u32, u32)>,
    /// The runs looked at, in list order (addresses, only compared): a list that starts with
    /// them, over the same store and gold scores, is looked at from where this one ended. A
    /// search streaming in grows its list that way, so each run is looked at once.
    looked_at: Vec<usize>,
}

impl TriageView {
    /// The facets of the run at list position `pos` when it fails (`None`: it passes).
    pub fn facets_at(&self, pos: usize) -> Option<&Facets> {
        let pos = u32::try_from(pos).ok()?;
        let k = self.failing_positions.binary_search(&pos).ok()?;
        self.failing_facets.get(k)
    }

    /// Stop `k` of the queue: (list position, span index).
    pub fn stop(&self, k: usize) -> Option<(usize, usize)> {
        let &(pos, span) = self.stops.get(k)?;
        Some((pos as usize, span as usize))
    }
}

/// What the failure queue is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriageKey {
    generation: u64,
    gold_scores: u64,
    list: u64,
}

pub(super) fn refresh_triage(app: &mut App) {
    let key = TriageKey {
        generation: app.store.generation(),
        gold_scores: app.gold.version(),
        list: app.list.version,
    };
    let (list, gold) = (&app.list, &app.gold);
    app.triage.get_or_compute(key, |previous_key, previous| {
        build(list, gold, key, previous_key, previous)
    });
}

/// The view for `key`, from the one computed for `previous_key`: extended when the list only
/// grew over the same store and gold scores, else rebuilt reusing the facets of runs that
/// did not change.
fn build(
    list: &ListView,
    gold: &super::GoldContext,
    key: TriageKey,
    previous_key: Option<TriageKey>,
    previous: TriageView,
) -> TriageView {
    let address = |inv: &Arc<Invocation>| Arc::as_ptr(inv) as usize;
    let runs = list.runs();
    let extends = previous_key
        .is_some_and(|k| (k.generation, k.gold_scores) == (key.generation, key.gold_scores))
        && previous.looked_at.len() <= runs.len()
        && previous
            .looked_at
            .iter()
            .zip(runs)
            .all(|(&seen, inv)| seen == address(inv));
    let (mut view, mut earlier) = if extends {
        (previous, TriageView::default())
    } else {
        (TriageView::default(), previous)
    };
    // Of the view rebuilt, only the facets and what they were computed from are reused: its
    // plain lists go now (a free each), before the new ones are allocated beside them.
    earlier.failing_positions = Vec::new();
    earlier.stops = Vec::new();
    earlier.looked_at = Vec::new();
    // Facets computed for the previous view, by run: reused when the run has not changed.
    let reusable: HashMap<&Id, usize> = earlier
        .computed_from
        .iter()
        .enumerate()
        .map(|(k, (id, _))| (id, k))
        .collect();
    let scored = gold.has_scores();
    let gold_of = |inv: &Invocation| {
        if scored {
            GoldOutcome::from_score(gold.score(&inv.id))
        } else {
            GoldOutcome::Unknown
        }
    };
    let new_runs = &runs[view.looked_at.len().min(runs.len())..];
    // Counted first, so a rebuild allocates the lists once at their size: they hold every
    // failing run, and growing them by doubling (then trimming) held up to three times that.
    // A search streaming in extends them step by step instead, by doubling, so that no step
    // copies all of them. Most runs pass: decided from their roll-up, without their facets.
    let new_failing = new_runs
        .iter()
        .filter(|inv| Facets::would_fail(inv, gold_of(inv)))
        .count();
    make_room(&mut view.failing_positions, new_failing, extends);
    make_room(&mut view.failing_facets, new_failing, extends);
    make_room(&mut view.computed_from, new_failing, extends);
    make_room(&mut view.looked_at, new_runs.len(), extends);
    let first_new_facets = view.failing_facets.len();
    for (pos, inv) in runs.iter().enumerate().skip(view.looked_at.len()) {
        view.looked_at.push(address(inv));
        let gold = gold_of(inv);
        if !Facets::would_fail(inv, gold) {
            continue;
        }
        // Moved, not copied: a run is listed once, so each earlier entry is taken at most once,
        // and the rebuild does not hold the queue's facets twice.
        let facets = match reusable
            .get(&inv.id)
            .map(|&k| (earlier.computed_from[k].1, &mut earlier.failing_facets[k]))
        {
            Some((changed_at, facets)) if changed_at == inv.changed_at() && facets.gold == gold => {
                std::mem::take(facets)
            }
            _ => Facets::of(inv, gold),
        };
        // Lossless: a list of more than 2^32 runs does not fit in memory.
        view.failing_positions.push(pos as u32);
        view.failing_facets.push(facets);
        view.computed_from.push((inv.id.clone(), inv.changed_at()));
    }
    drop(reusable);
    let new_stops: usize = view.failing_facets[first_new_facets..]
        .iter()
        .map(|f| f.stops().count())
        .sum();
    make_room(&mut view.stops, new_stops, extends);
    for (&pos, facets) in view.failing_positions[first_new_facets..]
        .iter()
        .zip(&view.failing_facets[first_new_facets..])
    {
        view.stops
            .extend(facets.stops().map(|span| (pos, span as u32)));
    }
    view.failing = view.failing_facets.len();
    super::memory_release::drop_in_background(earlier);
    view
}

/// Room for `more` items: exactly on a rebuild, and by doubling while a search extends the
/// view step by step (exact room at each step would copy the whole list each time).
fn make_room<T>(list: &mut Vec<T>, more: usize, extends: bool) {
    if extends {
        list.reserve(more);
    } else {
        list.reserve_exact(more);
    }
}

/// The selection as a position in reading order: (list position, tree row). A cursor on a
/// conversation row sits before its first turn's root (row `None`).
fn cursor_position(app: &App) -> Option<(usize, Option<usize>)> {
    let pos = app.selected_order_position()?;
    if app.selected_conversation.is_some() {
        return Some((pos, None));
    }
    Some((pos, Some(nav::current_row(app).unwrap_or(0))))
}

/// The stops' positions in reading order, `(usize::MAX, None)` for one no longer listed. Only
/// the stops in the selected run (`cursor_pos`) are compared with the selection by tree row;
/// the others are placed by list position alone (row 0), so a keypress builds at most the
/// selected run's tree, however many runs fail.
fn placed_stops(app: &App, cursor_pos: Option<usize>) -> Vec<(usize, Option<usize>)> {
    let cursor_tree = cursor_pos
        .and_then(|pos| app.list.runs().get(pos))
        .map(|inv| inv.tree());
    let listed = app.list.runs().len();
    app.triage
        .stops
        .iter()
        .map(|&(pos, span)| {
            let (pos, span) = (pos as usize, span as usize);
            let row = match (Some(pos) == cursor_pos, &cursor_tree) {
                (true, Some(tree)) => tree.row_of(span),
                (true, None) => None,
                (false, _) => (pos < listed).then_some(0),
            };
            match row {
                Some(row) => (pos, Some(row)),
                None => (usize::MAX, None),
            }
        })
        .collect()
}

/// Index into `triage.stops` of the current selection, when it is a stop.
pub fn current_stop(app: &App) -> Option<usize> {
    let pos = app.selected_order_position()?;
    let span = app.selected_span_index()?;
    app.triage
        .stops
        .iter()
        .position(|&(p, s)| (p as usize, s as usize) == (pos, span))
}

/// `n` / `N`: the next failure after the selection (a failed span of this run, else the first
/// failure of the next failing run), wrapping around.
pub(super) fn step_failure(app: &mut App, forward: bool) {
    let cursor = cursor_position(app);
    let placed = placed_stops(app, cursor.map(|(pos, _)| pos));
    let found = pick(&placed, cursor, forward);
    move_cursor_to_stop(app, found, "no failures in the listed invocations");
}

/// `]` / `[`: the first failure of the next failing run.
pub(super) fn step_failing_invocation(app: &mut App, forward: bool) {
    let cursor_pos = app.selected_order_position();
    // One entry per failing run: its first stop.
    let mut firsts: Vec<(usize, usize)> = Vec::new();
    for (k, &(pos, _)) in app.triage.stops.iter().enumerate() {
        let pos = pos as usize;
        if firsts.last().is_none_or(|&(last, _)| last != pos) {
            firsts.push((pos, k));
        }
    }
    let found = match cursor_pos {
        None => firsts.first().map(|&(_, k)| (k, false)),
        Some(cursor) => {
            let next = if forward {
                firsts.iter().find(|(pos, _)| *pos > cursor)
            } else {
                firsts.iter().rev().find(|(pos, _)| *pos < cursor)
            };
            match next {
                Some(&(_, k)) => Some((k, false)),
                None => {
                    let wrapped = if forward {
                        firsts.first()
                    } else {
                        firsts.last()
                    };
                    wrapped.map(|&(_, k)| (k, true))
                }
            }
        }
    };
    move_cursor_to_stop(app, found, "no failing invocations listed");
}

/// The index of the stop after (or before) `cursor` in `placed` order, and whether it wrapped.
fn pick<T: Copy + Ord>(placed: &[T], cursor: Option<T>, forward: bool) -> Option<(usize, bool)> {
    if placed.is_empty() {
        return None;
    }
    let Some(cursor) = cursor else {
        return Some((0, false));
    };
    let next = if forward {
        placed.iter().position(|&p| p > cursor)
    } else {
        placed.iter().rposition(|&p| p < cursor)
    };
    match next {
        Some(k) => Some((k, false)),
        None if forward => Some((0, true)),
        None => Some((placed.len() - 1, true)),
    }
}

/// Selects the stop `found` names (an index into `triage.stops`, and whether the search
/// wrapped), revealing its row; with no stop, says `none` in the status line.
fn move_cursor_to_stop(app: &mut App, found: Option<(usize, bool)>, none: &str) {
    let Some((k, wrapped)) = found else {
        app.message = Some(none.into());
        return;
    };
    let Some((pos, span)) = app.triage.stop(k) else {
        return;
    };
    let Some(inv) = app.list.runs().get(pos).cloned() else {
        return;
    };
    app.selected_invocation = Some(inv.id.to_string());
    app.follow_newest = false;
    nav::expand_conversation_of(app, &inv.id.text());
    let row = inv.tree().row_of(span);
    if let Some(row) = row {
        nav::reveal_row(app, row);
        nav::select_row(app, row);
    }
    // The selected span's detail opens at its top: the verdict block or the error facts.
    app.detail.scroll = 0;
    app.detail.force_rebuild();
    if wrapped {
        app.message = Some("failure queue wrapped".into());
    }
}

#[cfg(test)]
mod tests {
    use super::pick;

    #[test]
    fn pick_moves_strictly_past_the_selection_and_wraps() {
        let placed = [(0, 3), (1, 0), (1, 4)];
        assert_eq!(pick(&placed, Some((0, 0)), true), Some((0, false)));
        assert_eq!(pick(&placed, Some((0, 3)), true), Some((1, false)));
        assert_eq!(pick(&placed, Some((1, 4)), true), Some((0, true)));
        assert_eq!(pick(&placed, Some((1, 0)), false), Some((0, false)));
        assert_eq!(pick(&placed, Some((0, 3)), false), Some((2, true)));
        assert_eq!(pick(&placed, None, true), Some((0, false)));
        assert_eq!(pick::<(usize, usize)>(&[], None, true), None);
    }
}
