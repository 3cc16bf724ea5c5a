//! Derived views (list order, visible tree rows, detail lines; the failure queue is in
//! `triage`), each a [`Memo`](super::Memo) recomputed only when its key (what it depends on)
//! changed, and scroll offsets that keep every selection on screen.

use std::collections::HashSet;

use super::listing::ListKey;
use super::{App, DetailKey, DetailLines, DetailView, TreeKey, TreeView};
use crate::tui::inspect;
use crate::tui::tree_nav::{self, scroll_to_show};
use crate::tui::verdict::{GoldRow, verdict_lines};
use crate::tui::wrap::wrap_all;

/// Recomputes what depends on the store, the selection and the fold state, and keeps every
/// selection visible. Cheap when nothing it depends on changed.
pub fn refresh(app: &mut App) {
    refresh_list(app);
    super::gold_diff::refresh_scores(app);
    crate::tui::overlays::summary::refresh(app);
    super::triage::refresh_triage(app);
    super::find::refresh_find(app);
    refresh_tree(app);
    refresh_detail(app);
}

pub(super) fn refresh_list(app: &mut App) {
    super::filter::sync(app);
    let key = ListKey {
        generation: app.store.generation(),
        query: app.filter.shown_text().to_owned(),
        sort: app.sort,
        folds: app.folded_version,
        filter: app.filter.version,
    };
    if !app.list.arranged.is_current(&key) {
        let search_changed = app.list.arranged.key().is_none_or(|k| k.query != key.query);
        let released_at = app.list.released_at.take();
        // An evicted run leaves the cursor where it was; a new search starts at the best match.
        let previous_pos = if search_changed {
            None
        } else {
            released_at.or_else(|| app.selected_order_position())
        };
        // The filter's matches are taken from the whole app: the memo is taken out meanwhile.
        let mut arranged = std::mem::take(&mut app.list.arranged);
        arranged.get_or_compute(key, |_, replaced| {
            let listed = super::filter::listed(app);
            let arranged = super::listing::arrange(listed, app.sort, &app.folded_conversations);
            super::memory_release::drop_in_background(replaced);
            arranged
        });
        app.list.arranged = arranged;
        app.list.version += 1;
        if app
            .selected_conversation
            .as_ref()
            .is_some_and(|c| !app.list.has_conversation(c))
        {
            app.selected_conversation = None;
        }
        let still_there = app.selected_order_position().is_some();
        if app.follow_newest {
            app.selected_invocation = app.list.id(0).map(crate::model::Id::to_string);
        } else if !still_there {
            let pos = previous_pos
                .unwrap_or(0)
                .min(app.list.len().saturating_sub(1));
            app.selected_invocation = app.list.id(pos).map(crate::model::Id::to_string);
        }
    }
    let height = app.regions().list_body().height as usize;
    if let Some(pos) = app.selected_list_position() {
        app.list.offset = scroll_to_show(app.list.offset, pos, height);
    }
    app.list.offset = app.list.offset.min(app.list.rows().len().saturating_sub(1));
}

pub(super) fn refresh_tree(app: &mut App) {
    let Some(inv_id) = app.selected_invocation.clone() else {
        app.tree = TreeView::default();
        return;
    };
    let key = TreeKey {
        generation: app.store.generation(),
        invocation: inv_id.clone(),
        folds: app.fold_version,
    };
    let changed_invocation = app
        .tree
        .visible
        .key()
        .is_none_or(|k| k.invocation != inv_id);
    app.tree.visible.get_or_compute(key, |_, _| {
        let empty = HashSet::new();
        let collapsed = app.collapsed.get(&inv_id).unwrap_or(&empty);
        let only = (app.find.only_matches && (app.find.active || app.find.editing))
            .then_some(&app.find.matches);
        app.store
            .get(&inv_id)
            .map(|inv| match only {
                Some(matches) => tree_nav::rows_with_ancestors(inv, matches),
                None => tree_nav::visible_rows(inv, collapsed),
            })
            .unwrap_or_default()
    });
    if changed_invocation {
        app.tree.offset = 0;
    }
    // A picked span that vanished or is folded away: fall back to the first visible row.
    if app.selected_visible_position().is_none()
        && let Some(inv) = app.selected_invocation.as_ref()
    {
        app.selected_span.remove(inv);
    }
    let height = app.regions().tree_body().height as usize;
    if let Some(pos) = app.selected_visible_position() {
        app.tree.offset = scroll_to_show(app.tree.offset, pos, height);
    }
}

pub(super) fn refresh_detail(app: &mut App) {
    let width = app.regions().detail_body().width;
    let (inv_id, span_id) = match (app.invocation(), app.selected_span_index()) {
        (Some(inv), Some(i)) => (inv.id.to_string(), inv.spans[i].span_id.to_string()),
        _ => {
            app.detail = DetailView::default();
            return;
        }
    };
    let key = DetailKey {
        generation: app.store.generation(),
        gold_scores: app.gold.version(),
        invocation: inv_id.clone(),
        span: span_id.clone(),
        reveal: app.reveal,
        width,
        chat: chat_layout(app),
    };
    if app.detail.content.is_current(&key) {
        return;
    }
    let same_span = app
        .detail
        .content
        .key()
        .is_some_and(|k| k.invocation == inv_id && k.span == span_id);
    // Building the lines reads the whole app (a gold report, the payloads kept): the memo is
    // taken out meanwhile.
    let mut content = std::mem::take(&mut app.detail.content);
    content.get_or_compute(key, |_, _| detail_lines(app, inv_id, span_id, width));
    app.detail.content = content;
    if !same_span {
        app.detail.scroll = 0;
    }
    if app.payload_fullscreen && !same_span {
        app.detail.scroll = app.detail.content.payload_start;
    }
    app.detail.scroll = app
        .detail
        .scroll
        .min(app.detail.content.lines.len().saturating_sub(1));
}

/// How the detail shows chat messages: `None` when they are shown as raw JSON.
fn chat_layout(app: &App) -> Option<crate::tui::chat::ChatLayout> {
    (!app.raw_payloads).then_some(crate::tui::chat::ChatLayout {
        expand_system: app.expand_system,
    })
}

/// The lines of the selected span (`span_id` of run `inv_id`) at `width`.
fn detail_lines(app: &mut App, inv_id: String, span_id: String, width: u16) -> DetailLines {
    let verdict_facets = app
        .facets()
        .filter(|f| f.failing() && f.root().is_some() && f.root() == app.selected_span_index())
        .cloned();
    // The first differing gold row costs a comparison (payload reads): only for this root.
    let gold_row = match &verdict_facets {
        Some(f) if f.gold_mismatch() => super::gold_diff::report(app, &inv_id).and_then(|r| {
            let position = *r.differing_rows().first()?;
            let row = r.rows.get(position)?;
            Some(GoldRow {
                position,
                gold: r.gold_cell(row, app.reveal),
                actual: r.actual_cell(row, app.reveal),
                verdict: r.verdict_text(row, app.reveal),
            })
        }),
        _ => None,
    };
    // Payloads are read (from memory or disk) once per selected span, not per frame.
    let cached = app
        .detail
        .payloads
        .take()
        .filter(|(i, s, _)| *i == inv_id && *s == span_id)
        .map(|(_, _, p)| p);
    // The caller found the selection; a gold report does not change it.
    let (Some(inv), Some(index)) = (app.invocation(), app.selected_span_index()) else {
        return DetailLines::default();
    };
    let span = &inv.spans[index];
    let payloads = cached
        .filter(|p| p.is_current_for(span))
        .unwrap_or_else(|| inspect::LoadedPayloads::load(span));
    let view = inspect::PayloadView {
        mode: app.reveal,
        chat: chat_layout(app),
    };
    let built = inspect::span_lines(inv, index, &payloads, view, &app.config.theme, width);
    // A failing run's root opens on its verdict, above the span's own facts; an exception's
    // stack trace ends it with the frames nearest the error.
    let mut lines = verdict_facets
        .map(|f| {
            let mut verdict =
                verdict_lines(inv, &f, gold_row.as_ref(), app.reveal, &app.config.theme);
            if let Some(tail) =
                inspect::stack_trace_tail(span, &payloads, app.reveal, &app.config.theme)
            {
                let blank = verdict.pop();
                verdict.extend(tail);
                verdict.extend(blank);
            }
            wrap_all(verdict, width)
        })
        .unwrap_or_default();
    // The run's triage note opens every span's detail: it is about the run.
    if let Some(note) = app.store.notes().of_run(&inv_id) {
        let mut block = wrap_all(
            crate::tui::verdict::note_lines(note, app.reveal, &app.config.theme),
            width,
        );
        block.append(&mut lines);
        lines = block;
    }
    let payload_start = built.payload_start + lines.len();
    lines.extend(built.lines);
    app.detail.payloads = Some((inv_id, span_id, payloads));
    DetailLines {
        lines,
        payload_start,
    }
}
