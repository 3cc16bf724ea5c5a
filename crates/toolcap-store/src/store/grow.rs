//! Incremental trees: spans that arrive after a run's tree was built join it without a
//! rebuild. Each new span is put into its parent's child list (binary search), adopts the
//! orphans that waited for it, pushes its failure up the path to the root, and adds itself to
//! the run's roll-ups; then the rows are laid out again in one pass without sorting or
//! hashing. Anything that is not a pure addition (a span replaced, removed, a stand-in, a
//! cycle) falls back to the full rebuild in the parent module.

use std::cmp::Ordering;

use thin_vec::ThinVec;

use crate::model::{CompactId, Health, Span, SpanKind};

use super::{Indexing, Invocation, NO_PARENT, Place, ToolCallRef, TreeRow, links_mut, place_index};

/// Order of children and of roots within their group: start time, then span id.
pub(super) fn by_start(spans: &[Span], a: usize, b: usize) -> Ordering {
    spans[a]
        .start_unix_nano
        .cmp(&spans[b].start_unix_nano)
        .then_with(|| spans[a].span_id.cmp(&spans[b].span_id))
}

/// The parent id a span names, if any (empty counts as none).
pub(super) fn named_parent(span: &Span) -> Option<&CompactId> {
    span.parent_span_id.as_ref().filter(|p| !p.is_empty())
}

/// A root row is an orphan when it names a parent that is not here.
pub(super) fn is_orphan_root(spans: &[Span], root: usize) -> bool {
    named_parent(&spans[root]).is_some()
}

/// Roots sort true roots first, then orphans; each group by start.
pub(super) fn root_order(spans: &[Span], a: usize, b: usize) -> Ordering {
    is_orphan_root(spans, a)
        .cmp(&is_orphan_root(spans, b))
        .then_with(|| by_start(spans, a, b))
}

impl Invocation {
    /// Whether the spans added since the last build can join the tree incrementally.
    pub(super) fn can_grow(&self) -> bool {
        if self.needs_rebuild
            || self.built() == 0
            || self.tree.as_ref().is_none_or(|t| !t.cycles.is_empty())
        {
            return false;
        }
        // Stand-ins are matched against real tool spans across the whole run: a new stand-in,
        // or a new tool span while stand-ins are here, may cover or uncover one.
        let new = &self.spans[self.built()..];
        !new.iter()
            .any(|s| s.kind == SpanKind::Tool && (s.is_provisional() || self.has_stand_ins))
    }

    /// Adds spans `built..` to the tree and roll-ups. Returns false (changing nothing) when a
    /// new span would close a parent cycle: the caller rebuilds instead.
    pub(super) fn grow(&mut self) -> bool {
        let from = self.built();
        let n = self.spans.len();
        // A cycle can only close through spans that wait for a parent: check first, so a
        // failed attempt leaves the tree untouched.
        if self.would_close_cycle(from) {
            return false;
        }
        if self.links().is_none() {
            let links = Box::new(self.compute_links());
            super::extras_mut(&mut self.extras).links = Some(links);
        }
        self.tree
            .get_or_insert_default()
            .places
            .resize(n, Place::default());
        let calls_before = self.summary.tool_calls.len();
        let mut adopted = false;
        for i in from..n {
            self.work += 1;
            adopted |= self.attach(i);
            self.add_to_summary(i);
        }
        // A conversation is named by whichever span carries it, often the root, which ends
        // (and is sent) last.
        let later = super::summary::conversation_of(&self.spans[from..]);
        self.summary.adopt_later_conversation(later);
        self.set_built(n);
        // An index already built grows with the run; a missing one is built whole, now or by
        // the store's later steps.
        match self.search.get_mut() {
            Some(search) => search.extend(&self.spans),
            None if self.indexing == Indexing::Now => {
                self.build_search_index();
            }
            None => {}
        }
        self.lay_out_rows();
        // Calls go by start, ties by row. New spans keep the rows of the others in order,
        // so the calls already placed stay sorted and only the new ones are compared, unless
        // adopted orphans moved rows: then all are re-sorted (nearly sorted already, so a
        // linear merge pass, but one that reads every call's span).
        let places: &[Place] = self.tree.as_deref().map_or(&[], |t| &t.places);
        let spans = &self.spans;
        let order = |a: &ToolCallRef, b: &ToolCallRef| {
            (spans[a.span()].start_unix_nano)
                .cmp(&spans[b.span()].start_unix_nano)
                .then_with(|| places[a.span()].row.cmp(&places[b.span()].row))
        };
        let calls = &mut self.summary.tool_calls;
        let from_call = calls_before.saturating_sub(1);
        if adopted || !calls[from_call.min(calls.len())..].is_sorted_by(|a, b| order(a, b).is_le())
        {
            calls.sort_by(order);
        }
        self.refresh_root_facts();
        true
    }

    /// Whether attaching the new spans `from..` would make a parent chain loop.
    fn would_close_cycle(&self, from: usize) -> bool {
        // Parent links as they will be once every new span is in.
        let parent_of = |i: usize| -> Option<usize> {
            if i < from {
                return self.kept().parent_of(i).or_else(|| {
                    named_parent(&self.spans[i]).and_then(|p| self.span_index.get(&self.spans, p))
                });
            }
            named_parent(&self.spans[i]).and_then(|p| self.span_index.get(&self.spans, p))
        };
        for i in from..self.spans.len() {
            let mut at = i;
            let mut steps = 0;
            while let Some(p) = parent_of(at) {
                if p == i || steps > self.spans.len() {
                    return true;
                }
                at = p;
                steps += 1;
            }
        }
        false
    }

    /// Says whether it adopted orphans (which moves their rows).
    fn attach(&mut self, i: usize) -> bool {
        let spans = &self.spans;
        let tree = self.tree.get_or_insert_default();
        let places = &mut tree.places;
        if spans[i].status.is_error() {
            places[i].health = Health::Error;
        }
        match named_parent(&spans[i]).map(|p| (p, self.span_index.get(spans, p))) {
            Some((_, Some(p))) => {
                let list = &mut places[p].children;
                let at = list
                    .binary_search_by(|&c| by_start(spans, c as usize, i))
                    .unwrap_or_else(|e| e);
                list.insert(at, place_index(i));
                places[i].parent = place_index(p);
            }
            Some((missing, None)) => {
                links_mut(&mut self.extras)
                    .waiting
                    .entry(missing.id())
                    .or_default()
                    .push(i);
                insert_root(spans, &mut tree.roots, i);
            }
            None => insert_root(spans, &mut tree.roots, i),
        }
        // Orphans that waited for this span become its children.
        let links = self.extras.as_mut().and_then(|e| e.links.as_mut());
        let adopted = links.and_then(|l| l.waiting.remove(&spans[i].span_id.id()));
        let adopted_any = adopted.is_some();
        if let Some(adopted) = adopted {
            tree.roots.retain(|r| !adopted.contains(r));
            for c in adopted {
                let list = &mut places[i].children;
                let at = list
                    .binary_search_by(|&x| by_start(spans, x as usize, c))
                    .unwrap_or_else(|e| e);
                list.insert(at, place_index(c));
                places[c].parent = place_index(i);
                if places[c].health != Health::Ok
                    && !spans[c].is_evaluator()
                    && places[i].health == Health::Ok
                {
                    places[i].health = Health::Degraded;
                }
            }
        }
        // A failure shows on every ancestor that is otherwise fine, up to the first that
        // already shows one; an evaluator's verdict is not the run's failure.
        let mut at = i;
        while places[at].health != Health::Ok && !spans[at].is_evaluator() {
            match places[at].parent {
                p if p != NO_PARENT && places[p as usize].health == Health::Ok => {
                    places[p as usize].health = Health::Degraded;
                    at = p as usize;
                }
                _ => break,
            }
        }
        adopted_any
    }

    /// Counts, tokens, formats, times and tool calls.
    fn add_to_summary(&mut self, i: usize) {
        let span = &self.spans[i];
        let s = &mut self.summary;
        s.counts.spans += 1;
        s.counts.bump(span.kind);
        if span.status.is_error() && !span.is_evaluator() {
            s.counts.errors += 1;
        }
        if let Some((input, output)) = span.llm_tokens() {
            s.input_tokens = s
                .input_tokens
                .saturating_add(input.get().map_or(0, u64::from));
            s.output_tokens = s
                .output_tokens
                .saturating_add(output.get().map_or(0, u64::from));
        }
        s.formats.add(span.format());
        if span.start_unix_nano > 0 {
            s.start_unix_nano = if s.counts.spans == 1 || s.start_unix_nano == 0 {
                span.start_unix_nano
            } else {
                s.start_unix_nano.min(span.start_unix_nano)
            };
        }
        self.latest_end = self.latest_end.max(span.end_unix_nano);
        s.end_unix_nano = self.latest_end.max(s.start_unix_nano);
        if span.kind != SpanKind::Tool {
            return;
        }
        s.tool_calls.push(ToolCallRef::of(span, i));
        s.failed_tool_calls =
            (s.failed_tool_calls).saturating_add(u32::from(span.status.is_error()));
    }

    /// Pre-order rows from the roots: one linear pass, no sorting, no hashing.
    fn lay_out_rows(&mut self) {
        let tree = self.tree.get_or_insert_default();
        let n = self.spans.len();
        tree.rows.clear();
        tree.rows.reserve(n);
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for &root in &tree.roots {
            let orphan = is_orphan_root(&self.spans, root);
            stack.push((root, 0));
            while let Some((i, depth)) = stack.pop() {
                let children = &tree.places[i].children;
                tree.rows.push(TreeRow {
                    orphan: orphan && i == root,
                    ..TreeRow::new(i, depth, children.len())
                });
                stack.extend(children.iter().rev().map(|&c| (c as usize, depth + 1)));
            }
        }
        for (r, row) in tree.rows.iter().enumerate() {
            tree.places[row.span()].row = place_index(r);
        }
    }

    /// The run's health and name come from its root, which a new span may have become.
    fn refresh_root_facts(&mut self) {
        let spans = &self.spans;
        let true_roots: Vec<usize> = self
            .kept()
            .roots
            .iter()
            .copied()
            .filter(|&r| spans[r].parent_span_id.is_none())
            .collect();
        let first_row = self.kept().rows.first().map(|r| r.span());
        let errors = self.summary.counts.errors;
        let (health, name) = super::summary::root_facts(self, &true_roots, first_row, errors);
        self.summary.health = health;
        self.summary.name = name;
    }
}

impl Invocation {
    /// A root without a time of its own (an arksim turn synthesized from a record) spans its
    /// timed children: their earliest start and latest end, or time 0 while it has none.
    /// Stand-ins keep only their order, so they do not time it.
    pub(super) fn time_untimed_roots(&mut self) {
        let Some(tree) = self.tree.as_deref() else {
            return;
        };
        let spans = &self.spans;
        let mut retimed = Vec::new();
        for &r in &tree.roots {
            if !spans[r].is_untimed() {
                continue;
            }
            let children = (tree.places[r].children.iter()).map(|&c| &spans[c as usize]);
            let (start, end) = children
                .filter(|c| c.start_unix_nano > 0 && !c.is_provisional())
                .fold(None, |span: Option<(u64, u64)>, c| {
                    let (start, end) = span.unwrap_or((c.start_unix_nano, c.end_unix_nano));
                    Some((start.min(c.start_unix_nano), end.max(c.end_unix_nano)))
                })
                .unwrap_or((0, 0));
            if (spans[r].start_unix_nano, spans[r].end_unix_nano) != (start, end) {
                retimed.push((r, start, end.max(start)));
            }
        }
        if retimed.is_empty() {
            return;
        }
        for (r, start, end) in retimed {
            self.spans[r].start_unix_nano = start;
            self.spans[r].end_unix_nano = end;
        }
        // Roots are laid out by start: a retimed one may move among them.
        let spans = &self.spans;
        let tree = self.tree.get_or_insert_default();
        if !tree
            .roots
            .is_sorted_by(|&a, &b| root_order(spans, a, b).is_le())
        {
            tree.roots.sort_by(|&a, &b| root_order(spans, a, b));
            self.lay_out_rows();
        }
    }
}

fn insert_root(spans: &[Span], roots: &mut ThinVec<usize>, i: usize) {
    let at = roots
        .binary_search_by(|&r| root_order(spans, r, i))
        .unwrap_or_else(|e| e);
    roots.insert(at, i);
}
