//! The list search and find-in-trace, driven by the query language: prompt editing, the
//! filter in force, the matched spans of the selected run, and n/N over them.

use super::nav::{reveal_row, select_row};
use super::{App, Pane};
use crate::query::Context;
use crate::store::Invocation;
use crate::triage::GoldOutcome;
use crate::tui::action::Action;
use crate::tui::keymap::Scope;
use crate::tui::search::{EditKey, Find};

/// The query context the TUI evaluates with: the current reveal mode and the list's gold scores.
pub(super) fn with_context<R>(app: &App, run: impl FnOnce(&Context) -> R) -> R {
    let gold = |inv: &Invocation| GoldOutcome::from_score(app.gold.score(&inv.id));
    let ctx = Context {
        reveal: app.reveal,
        gold: &gold,
        notes: app.store.notes(),
    };
    run(&ctx)
}

/// `/`: in the detail pane it finds text there, in the tree (with a run selected) it finds in
/// the trace, elsewhere it searches the list.
pub(super) fn start(app: &mut App) {
    if app.focus == Pane::Detail || app.payload_fullscreen {
        app.detail_find.editing = true;
        return;
    }
    if app.focus == Pane::Tree && app.selected_invocation.is_some() {
        app.find.editing = true;
        app.find.history_reset();
        return;
    }
    app.searching = true;
    app.focus = Pane::List;
    app.list_search.before = app.search.clone();
    app.list_search.editor.set(&app.search);
    app.list_search.history.reset();
}

fn list_changed(app: &mut App) {
    app.list_search.recompile();
    app.search = app
        .list_search
        .query
        .as_ref()
        .map(|q| q.text().to_owned())
        .unwrap_or_default();
}

fn find_changed(app: &mut App) {
    app.find.recompile();
    refresh_find(app);
    first_match(app);
}

pub(super) fn input(app: &mut App, c: char) {
    if app.detail_find.editing {
        app.detail_find.editor.insert(c);
        detail_find_changed(app);
    } else if app.find.editing {
        app.find.editor.insert(c);
        find_changed(app);
    } else if app.searching {
        app.list_search.editor.insert(c);
        list_changed(app);
    }
}

pub(super) fn backspace(app: &mut App) {
    if app.detail_find.editing {
        app.detail_find.editor.backspace();
        detail_find_changed(app);
    } else if app.find.editing {
        app.find.editor.backspace();
        find_changed(app);
    } else if app.searching {
        app.list_search.editor.backspace();
        list_changed(app);
    }
}

pub(super) fn edit(app: &mut App, key: EditKey) {
    let history_older = match key {
        EditKey::HistoryPrev => Some(true),
        EditKey::HistoryNext => Some(false),
        _ => None,
    };
    if app.detail_find.editing {
        if history_older.is_none() {
            app.detail_find.editor.edit(key);
            detail_find_changed(app);
        }
        return;
    }
    if app.find.editing {
        match history_older {
            Some(older) => {
                let Find {
                    editor, history, ..
                } = &mut app.find;
                history.browse(editor, older);
            }
            None => app.find.editor.edit(key),
        }
        find_changed(app);
    } else if app.searching {
        match history_older {
            Some(older) => app
                .list_search
                .history
                .browse(&mut app.list_search.editor, older),
            None => app.list_search.editor.edit(key),
        }
        list_changed(app);
    }
}

/// Enter: keep the filter (list) or the find (tree).
pub(super) fn accept(app: &mut App) {
    if app.detail_find.editing {
        app.detail_find.editing = false;
        app.detail_find.active = !app.detail_find.editor.text().is_empty();
        return;
    }
    if app.find.editing {
        app.find.editing = false;
        app.find.active = app.find.query.is_some();
        let text = app.find.editor.text().to_owned();
        app.find.history.push(&text);
        return;
    }
    app.searching = false;
    let text = app.list_search.editor.text().to_owned();
    app.list_search.history.push(&text);
    app.list_search.error = None;
}

/// Esc: ends a find; restores the list filter from before the prompt opened; clears a kept
/// filter. Returns false when there was nothing to cancel here.
pub(super) fn cancel(app: &mut App) -> bool {
    if app.find.editing || app.find.active {
        end_find(app);
        return true;
    }
    if app.searching {
        app.searching = false;
        let before = app.list_search.before.clone();
        app.list_search.editor.set(&before);
        list_changed(app);
        app.list_search.error = None;
        return true;
    }
    if !app.search.is_empty() {
        clear_filter(app);
        return true;
    }
    false
}

/// Esc while text is found in the detail: ends that find. False when none is in force.
pub(super) fn end_detail_find(app: &mut App) -> bool {
    let finding = app.detail_find.editing || app.detail_find.active;
    app.detail_find.editing = false;
    app.detail_find.active = false;
    finding
}

/// The detail's lines holding the text looked for, in order.
fn detail_matches(app: &App) -> Vec<usize> {
    let Some(needle) = app.detail_find.needle() else {
        return Vec::new();
    };
    app.detail
        .content
        .lines
        .iter()
        .enumerate()
        .filter(|(_, line)| {
            !crate::tui::ui::highlight::text_marks(
                &crate::tui::ui::highlight::line_text(line),
                needle,
            )
            .is_empty()
        })
        .map(|(n, _)| n)
        .collect()
}

/// Typing moves the detail to the first match at or after what it shows.
fn detail_find_changed(app: &mut App) {
    let from = app.detail.scroll;
    if let Some(&line) = detail_matches(app).iter().find(|&&n| n >= from) {
        app.detail.scroll = line;
    }
}

/// `}`/`{` in the detail: the next (or previous) message, tool call or tool result of the
/// conversation it shows, by the lines `chat` lays out (a role in the gutter, `→`, `←`, `✗`).
pub(super) fn step_message(app: &mut App, forward: bool) {
    let starts: Vec<usize> = app
        .detail
        .content
        .lines
        .iter()
        .enumerate()
        .filter(|(_, line)| crate::tui::chat::starts_a_step(line))
        .map(|(n, _)| n)
        .collect();
    let at = app.detail.scroll;
    let next = match forward {
        true => starts.iter().find(|&&n| n > at),
        false => starts.iter().rev().find(|&&n| n < at),
    };
    match next {
        Some(&line) => app.detail.scroll = line,
        None if starts.is_empty() => app.message = Some("no messages in the detail".into()),
        None => {}
    }
}

/// n/N while text is found in the detail: the next (or previous) line holding it, wrapping.
pub(super) fn step_in_detail(app: &mut App, forward: bool) {
    let matches = detail_matches(app);
    let at = app.detail.scroll;
    let next = match forward {
        true => matches.iter().find(|&&n| n > at).or(matches.first()),
        false => matches.iter().rev().find(|&&n| n < at).or(matches.last()),
    };
    match next {
        Some(&line) => app.detail.scroll = line,
        None => app.message = Some("not found in the detail".into()),
    }
}

pub(super) fn clear_filter(app: &mut App) {
    app.list_search.editor.set("");
    list_changed(app);
}

pub(super) fn end_find(app: &mut App) {
    let history = std::mem::take(&mut app.find.history);
    app.find = Find {
        history,
        ..Find::default()
    };
    app.fold_version += 1;
}

/// A preset from the config file on a number key (list).
/// Makes `text` the list's filter, as if typed and kept (the summary's rows apply theirs so).
pub(crate) fn set_list_filter(app: &mut App, text: &str) {
    app.list_search.editor.set(text);
    list_changed(app);
}

pub(super) fn preset(app: &mut App, n: u8) {
    let Some(text) = app
        .config
        .presets
        .get(usize::from(n).wrapping_sub(1))
        .map(|p| p.1.clone())
    else {
        app.message = Some(format!("no preset {n} (add [presets] to the config file)"));
        return;
    };
    app.list_search.editor.set(&text);
    list_changed(app);
    if let Some(e) = &app.list_search.error {
        app.message = Some(format!("preset {n}: {e}"));
    }
}

/// Recomputes the find's matches when the run, the store or the reveal mode changed.
pub(super) fn refresh_find(app: &mut App) {
    let Some(inv_id) = app.selected_invocation.clone() else {
        return;
    };
    if !(app.find.editing || app.find.active) {
        return;
    }
    let key = (app.store.generation(), inv_id.clone(), app.reveal);
    if app.find.computed_at.as_ref() == Some(&key) && app.find.invocation == inv_id {
        return;
    }
    let matches = match (&app.find.query, app.store.get(&inv_id)) {
        (Some(q), Some(inv)) => {
            let mut spans = with_context(app, |ctx| q.matches(inv, ctx))
                .map(|m| m.spans)
                .unwrap_or_default();
            let tree = inv.tree();
            spans.sort_by_key(|&i| tree.row_of(i).unwrap_or(usize::MAX));
            spans
        }
        _ => Vec::new(),
    };
    if app.find.invocation != inv_id {
        app.find.current = None;
    }
    app.find.current = app
        .find
        .current
        .filter(|&c| c < matches.len())
        .or((!matches.is_empty()).then_some(0));
    app.find.matches = matches;
    app.find.invocation = inv_id;
    app.find.computed_at = Some(key);
    // The only-matches view depends on the matches.
    app.fold_version += 1;
}

fn first_match(app: &mut App) {
    if let Some(&span) = app.find.matches.first() {
        app.find.current = Some(0);
        go_to_span(app, span);
    }
}

fn go_to_span(app: &mut App, span: usize) {
    let Some(row) = app.invocation().and_then(|inv| inv.tree().row_of(span)) else {
        return;
    };
    reveal_row(app, row);
    select_row(app, row);
}

/// n/N while a find is active: the next or previous match, wrapping.
pub(super) fn cycle(app: &mut App, forward: bool) {
    refresh_find(app);
    let n = app.find.matches.len();
    if n == 0 {
        let ends = app
            .config
            .keymap
            .first_key(&app.key_scopes(), Action::Cancel)
            .map(|key| format!(" ({key} ends it)"))
            .unwrap_or_default();
        app.message = Some(format!("no span matches the find{ends}"));
        return;
    }
    let next = match app.find.current {
        None => 0,
        Some(i) if forward => (i + 1) % n,
        Some(i) => (i + n - 1) % n,
    };
    app.find.current = Some(next);
    let span = app.find.matches[next];
    go_to_span(app, span);
}

pub(super) fn toggle_only_matches(app: &mut App) {
    if !app.find.active && !app.find.editing {
        let how = app
            .config
            .keymap
            .first_key(&[Scope::Tree, Scope::Global], Action::StartSearch)
            .map(|key| format!(" ({key} in the spans pane)"))
            .unwrap_or_default();
        app.message = Some(format!("find in the trace first{how}"));
        return;
    }
    app.find.only_matches = !app.find.only_matches;
    app.fold_version += 1;
}
