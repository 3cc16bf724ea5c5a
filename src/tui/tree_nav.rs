//! Pure helpers over a span tree: which rows are visible under the fold state, ancestors of a
//! row, and where the next failure is. Fold state is a set of *span ids*, never row numbers.

use std::collections::HashSet;

use crate::store::{Invocation, TreeRow};

/// Indices into `tree.rows` that are visible with `collapsed` folded away (ascending).
pub fn visible_rows(inv: &Invocation, collapsed: &HashSet<String>) -> Vec<usize> {
    let rows = &inv.tree().rows;
    let mut out = Vec::with_capacity(rows.len());
    let mut hidden_below: Option<usize> = None;
    for (r, row) in rows.iter().enumerate() {
        if let Some(depth) = hidden_below {
            if row.depth() > depth {
                continue;
            }
            hidden_below = None;
        }
        out.push(r);
        let folded = row.child_count() > 0
            && inv
                .spans
                .get(row.span())
                .is_some_and(|s| collapsed.contains(&*s.span_id.text()));
        if folded {
            hidden_below = Some(row.depth());
        }
    }
    out
}

/// Row indices of the ancestors of row `r`, nearest first.
pub fn ancestors(inv: &Invocation, r: usize) -> Vec<usize> {
    ancestor_rows(&inv.tree().rows, r)
}

fn ancestor_rows(rows: &[TreeRow], r: usize) -> Vec<usize> {
    let Some(mut depth) = rows.get(r).map(|row| row.depth()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for i in (0..r).rev() {
        if depth == 0 {
            break;
        }
        if rows[i].depth() < depth {
            out.push(i);
            depth = rows[i].depth();
        }
    }
    out
}

/// The next (or previous) row after `from` whose span itself failed, wrapping around.
/// Returns the row and whether the search wrapped.
pub fn next_failure(inv: &Invocation, from: Option<usize>, forward: bool) -> Option<(usize, bool)> {
    let rows = &inv.tree().rows;
    let n = rows.len();
    if n == 0 {
        return None;
    }
    let failed = |r: usize| {
        rows.get(r)
            .and_then(|row| inv.spans.get(row.span()))
            .is_some_and(|s| s.status.is_error())
    };
    let start = from.unwrap_or(if forward { n - 1 } else { 0 });
    for step in 1..=n {
        let r = if forward {
            (start + step) % n
        } else {
            (start + n - (step % n)) % n
        };
        if failed(r) {
            let wrapped = if forward { r <= start } else { r >= start };
            return Some((r, wrapped && from.is_some()));
        }
    }
    None
}

/// The first row of every subtree that can fold (has children).
pub fn foldable_span_ids(inv: &Invocation) -> HashSet<String> {
    inv.tree()
        .rows
        .iter()
        .filter(|row| row.child_count() > 0)
        .filter_map(|row| inv.spans.get(row.span()).map(|s| s.span_id.to_string()))
        .collect()
}

/// Keeps `selected` (a position in `visible`) inside a window of `height` rows starting at
/// `offset`; returns the new offset.
pub fn scroll_to_show(offset: usize, selected: usize, height: usize) -> usize {
    let height = height.max(1);
    if selected < offset {
        selected
    } else if selected >= offset + height {
        selected + 1 - height
    } else {
        offset
    }
}

/// Rows of `spans` and of all their ancestors, ascending: the find's only-matches view.
pub fn rows_with_ancestors(inv: &Invocation, spans: &[usize]) -> Vec<usize> {
    let tree = inv.tree();
    let mut keep: HashSet<usize> = HashSet::new();
    for &span in spans {
        let Some(row) = tree.row_of(span) else {
            continue;
        };
        if keep.insert(row) {
            keep.extend(ancestor_rows(&tree.rows, row));
        }
    }
    let mut rows: Vec<usize> = keep.into_iter().collect();
    rows.sort_unstable();
    rows
}
