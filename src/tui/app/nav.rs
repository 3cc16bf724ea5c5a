//! Movement, folding, jumps and mouse handling: the pieces of `update` that change the
//! selection. Selection and folds are stored by id (see the parent module).

use super::{App, ListRow, Pane};
use crate::tui::tree_nav;

pub(super) fn page(app: &App) -> isize {
    let regions = app.regions();
    let height = match (app.payload_fullscreen, app.focus) {
        (true, _) | (false, Pane::Detail) => regions.detail_body().height,
        (false, Pane::List) => regions.list_body().height,
        (false, Pane::Tree) => regions.tree_body().height,
    };
    (height.max(2) - 1) as isize
}

pub(super) fn step(pos: Option<usize>, delta: isize, len: usize) -> Option<usize> {
    if len == 0 {
        return None;
    }
    let pos = pos.unwrap_or(0) as isize;
    Some(pos.saturating_add(delta).clamp(0, len as isize - 1) as usize)
}

pub(super) fn move_by(app: &mut App, delta: isize) {
    if app.payload_fullscreen || app.focus == Pane::Detail {
        let max = app.detail.content.lines.len().saturating_sub(1);
        app.detail.scroll = (app.detail.scroll as isize)
            .saturating_add(delta)
            .clamp(0, max as isize) as usize;
        return;
    }
    match app.focus {
        Pane::List => {
            if let Some(pos) = step(app.selected_list_position(), delta, app.list.rows().len()) {
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

/// Puts the list cursor on row `pos` of `list.rows()`. On a conversation row the tree shows the
/// conversation's first turn.
pub(super) fn select_invocation(app: &mut App, pos: usize) {
    match app.list.rows().get(pos) {
        Some(ListRow::Invocation(k)) => {
            app.selected_invocation = app.list.id(*k).map(crate::model::Id::to_string);
            app.selected_conversation = None;
        }
        Some(&row @ ListRow::Conversation { first, .. }) => {
            let first = app.list.id(first as usize).map(crate::model::Id::to_string);
            app.selected_conversation = app.list.conversation_id(&row).map(str::to_owned);
            if first.is_some() {
                app.selected_invocation = first;
            }
        }
        None => return,
    }
    app.follow_newest = false;
}

/// The conversation row under the cursor, or the one the selected run sits under.
fn cursor_conversation(app: &App) -> Option<String> {
    app.selected_conversation.clone().or_else(|| {
        let id = app.selected_invocation.as_ref()?;
        app.list.conversation_of(id).map(str::to_owned)
    })
}

pub(super) fn set_conversation_fold(app: &mut App, fold: bool) {
    let Some(conversation) = cursor_conversation(app) else {
        return;
    };
    let changed = if fold {
        // The cursor moves up to the conversation row, which stays visible.
        app.selected_conversation = Some(conversation.clone());
        app.folded_conversations.insert(conversation)
    } else {
        app.folded_conversations.remove(&conversation)
    };
    if changed {
        app.folded_version += 1;
    }
}

pub(super) fn toggle_conversation(app: &mut App) {
    let Some(conversation) = cursor_conversation(app) else {
        return;
    };
    let folded = app.folded_conversations.contains(&conversation);
    set_conversation_fold(app, !folded);
}

/// Unfolds the conversation a run sits under, so the run's row is visible.
pub(super) fn expand_conversation_of(app: &mut App, id: &str) {
    app.selected_conversation = None;
    if let Some(conversation) = app.list.conversation_of(id)
        && app.folded_conversations.remove(conversation)
    {
        app.folded_version += 1;
    }
}

pub(super) fn select_visible(app: &mut App, pos: usize) {
    let Some(&row) = app.tree.visible.get(pos) else {
        return;
    };
    select_row(app, row);
}

pub(super) fn select_row(app: &mut App, row: usize) {
    let Some(inv) = app.invocation() else {
        return;
    };
    let Some(span) = inv
        .tree()
        .rows
        .get(row)
        .and_then(|r| inv.spans.get(r.span()))
    else {
        return;
    };
    let (inv_id, span_id) = (inv.id.to_string(), span.span_id.to_string());
    app.selected_span.insert(inv_id, span_id);
}

pub(super) fn current_row(app: &App) -> Option<usize> {
    let inv = app.invocation()?;
    inv.tree().row_of(app.selected_span_index()?)
}

/// The selected span's id and whether it can fold.
pub(super) fn selected_foldable(app: &App) -> Option<(String, String, bool)> {
    let inv = app.invocation()?;
    let tree = inv.tree();
    let row = tree.rows.get(current_row(app)?)?;
    let span = inv.spans.get(row.span())?;
    Some((
        inv.id.to_string(),
        span.span_id.to_string(),
        row.child_count() > 0,
    ))
}

pub(super) fn set_fold(app: &mut App, fold: bool) {
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

pub(super) fn toggle_fold(app: &mut App) {
    let Some((inv, span, _)) = selected_foldable(app) else {
        return;
    };
    let folded = app.is_collapsed(&inv, &span);
    set_fold(app, !folded);
}

/// `h`: folds an open node; on a leaf or a folded node, moves to the parent.
pub(super) fn collapse_or_parent(app: &mut App) {
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

pub(super) fn collapse_all(app: &mut App) {
    let Some(inv) = app.invocation() else {
        return;
    };
    let all = tree_nav::foldable_span_ids(inv);
    // The selection moves to its top-level ancestor, which stays visible.
    let top = current_row(app).and_then(|row| tree_nav::ancestors(inv, row).last().copied());
    let id = inv.id.to_string();
    app.collapsed.insert(id, all);
    app.fold_version += 1;
    if let Some(top) = top {
        select_row(app, top);
    }
}

/// Unfolds every ancestor of `row` so it is visible.
pub(super) fn reveal_row(app: &mut App, row: usize) {
    let Some(inv) = app.invocation() else {
        return;
    };
    let tree = inv.tree();
    let ids: Vec<String> = tree_nav::ancestors(inv, row)
        .into_iter()
        .filter_map(|r| tree.rows.get(r).and_then(|x| inv.spans.get(x.span())))
        .map(|s| s.span_id.to_string())
        .collect();
    let inv_id = inv.id.to_string();
    if let Some(set) = app.collapsed.get_mut(&inv_id) {
        for id in ids {
            set.remove(&id);
        }
        app.fold_version += 1;
    }
}

impl App {
    /// Selects span `span` (an index into the run's spans) of run `invocation` in the tree,
    /// unfolding what hides it, and focuses the tree: the gold diff's "go to the call".
    pub(crate) fn show_span_in_tree(&mut self, invocation: &str, span: usize) {
        let Some(row) = self
            .store
            .get(invocation)
            .and_then(|inv| inv.tree().row_of(span))
        else {
            return;
        };
        reveal_row(self, row);
        select_row(self, row);
        self.focus = Pane::Tree;
    }
}

pub(super) fn jump_to_requester(app: &mut App) {
    let target = app
        .invocation()
        .zip(app.selected_span_index())
        .and_then(|(inv, i)| {
            let requester = inv.requester_of(i)?;
            inv.tree().row_of(requester)
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

pub(super) fn click(app: &mut App, column: u16, row: u16) {
    let Some(regions) = app.drawn else {
        return;
    };
    let at = ratatui::layout::Position::new(column, row);
    if app.payload_fullscreen {
        return;
    }
    if regions.list.contains(at) {
        app.focus = Pane::List;
        let body = regions.list_body();
        if row >= body.y && row < body.bottom() {
            let pos = app.list.offset + (row - body.y) as usize;
            if pos < app.list.rows().len() {
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

pub(super) fn scroll_at(app: &mut App, column: u16, row: u16, delta: isize) {
    let Some(regions) = app.drawn else {
        return;
    };
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
