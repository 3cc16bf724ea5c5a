//! A run's tree: its rows in pre-order and each span's place (health, children, row, parent);
//! and building it from scratch: stand-ins covered by real tool spans, tool calls linked to the
//! LLM span that asked for them, orphans and cycles.

use super::*;

/// One row of a tree in pre-order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// Sixteen bytes: every span of every run has a row. A run holds fewer than 2^32 spans (the
/// store's budget stops it long before), so indexes and counts fit 32 bits.
pub struct TreeRow {
    /// Index into [`Invocation::spans`].
    pub(super) span: u32,
    pub(super) depth: u32,
    pub(super) child_count: u32,
    /// The span names a parent that is not (yet) here.
    pub orphan: bool,
    /// The span sits in a parent cycle (its parent chain loops back to it).
    pub cycle: bool,
}

impl TreeRow {
    pub fn new(span: usize, depth: usize, child_count: usize) -> TreeRow {
        TreeRow {
            span: span as u32,
            depth: depth as u32,
            child_count: child_count as u32,
            orphan: false,
            cycle: false,
        }
    }
    /// Index into [`Invocation::spans`].
    pub fn span(&self) -> usize {
        self.span as usize
    }
    pub fn depth(&self) -> usize {
        self.depth as usize
    }
    pub fn child_count(&self) -> usize {
        self.child_count as usize
    }
}

#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub rows: ThinVec<TreeRow>,
    /// Indexed by span index: where each span sits. One list rather than four (health, child
    /// lists, row, parent): most runs are a few spans, and each list would be an allocation.
    pub(super) places: ThinVec<Place>,
    /// Spans shown at depth 0, in row order.
    pub roots: ThinVec<usize>,
    /// Parent cycles: the spans of each, in chain order.
    pub cycles: ThinVec<ThinVec<usize>>,
}

/// Where one span sits in its run's tree. A new place hangs under nothing, healthy, childless.
#[derive(Debug, Clone)]
pub(super) struct Place {
    /// Child span indices in start order (allocated only for a span with children).
    pub(super) children: ThinVec<u32>,
    /// Its position in `rows`.
    pub(super) row: u32,
    /// The span it hangs under in this tree, or [`NO_PARENT`].
    pub(super) parent: u32,
    pub(super) health: Health,
}

impl Default for Place {
    fn default() -> Self {
        Place {
            children: ThinVec::new(),
            row: 0,
            parent: NO_PARENT,
            health: Health::Ok,
        }
    }
}

/// [`Place::parent`] of a span shown at depth 0. A run holds fewer than 2³² spans: the store's
/// budget evicts long before.
pub(super) const NO_PARENT: u32 = u32::MAX;

impl Tree {
    /// A span's health in this tree (`Ok` for an index it does not hold).
    pub fn health(&self, span: usize) -> Health {
        self.places.get(span).map_or(Health::Ok, |p| p.health)
    }

    /// A span's position in [`Tree::rows`].
    pub fn row_of(&self, span: usize) -> Option<usize> {
        self.places.get(span).map(|p| p.row as usize)
    }

    /// The span `span` hangs under, if any.
    pub fn parent_of(&self, span: usize) -> Option<usize> {
        let parent = self.places.get(span)?.parent;
        (parent != NO_PARENT).then_some(parent as usize)
    }

    /// A span's children in start order.
    pub fn children_of(&self, span: usize) -> impl DoubleEndedIterator<Item = usize> + '_ {
        let children = self.places.get(span).map_or(&[][..], |p| &p.children[..]);
        children.iter().map(|&c| c as usize)
    }

    /// Spans the tree has places for.
    pub fn span_count(&self) -> usize {
        self.places.len()
    }

    /// Heap bytes of the places and their child lists (`dump --stats`).
    pub(super) fn places_heap_bytes(&self) -> u64 {
        let list = crate::model::thin_vec_bytes;
        list(self.places.capacity(), std::mem::size_of::<Place>())
            + self
                .places
                .iter()
                .map(|p| list(p.children.capacity(), 4))
                .sum::<u64>()
    }
}

/// A span index as places hold it.
pub(super) fn place_index(i: usize) -> u32 {
    i as u32
}

/// Provisional tool spans (stand-ins from flattened records such as arksim's tool-call lists)
/// that a real tool span of the same invocation already covers: same tool name and either the
/// same call id or equal JSON arguments. Each real span covers at most one stand-in, so a call
/// is never counted twice and repeated identical calls stay distinct.
pub(super) fn covered_stand_ins(spans: &[Span]) -> HashSet<usize> {
    let mut covered = HashSet::default();
    let is_tool = |s: &Span| s.kind == SpanKind::Tool;
    if !spans.iter().any(|s| is_tool(s) && s.is_provisional()) {
        return covered;
    }
    let arguments = |s: &Span| {
        s.input()
            .inline_text()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
    };
    let mut used: HashSet<usize> = HashSet::default();
    for (i, stand_in) in spans.iter().enumerate() {
        if !is_tool(stand_in) || !stand_in.is_provisional() {
            continue;
        }
        let stand_in_args = arguments(stand_in);
        let cover = spans.iter().enumerate().find(|(r, real)| {
            is_tool(real)
                && !real.is_provisional()
                && !used.contains(r)
                && real.tool_name() == stand_in.tool_name()
                && match (real.tool_call_id(), stand_in.tool_call_id()) {
                    (Some(a), Some(b)) => a == b,
                    _ => stand_in_args.is_some() && arguments(real) == stand_in_args,
                }
        });
        if let Some((r, _)) = cover {
            used.insert(r);
            covered.insert(i);
        }
    }
    covered
}

/// Which LLM span asked for each tool call of a run: the first span of the run whose
/// requested calls carry the call id. Looked up when asked (the detail pane, the jump to the
/// requester, `dump --json`), not kept in every tool span: an id in each tool span's facts
/// made them a 48-byte block where 32 hold the rest, and growing runs kept two maps to fill it.
pub struct ToolCallRequesters<'a> {
    by_call_id: HashMap<&'a str, usize>,
}

impl<'a> ToolCallRequesters<'a> {
    pub(super) fn of_spans(spans: &'a [Span]) -> Self {
        let mut by_call_id = HashMap::default();
        for (i, span) in spans.iter().enumerate() {
            for call in span.requested_tool_calls() {
                if let Some(id) = call.id.as_deref() {
                    by_call_id.entry(id).or_insert(i);
                }
            }
        }
        ToolCallRequesters { by_call_id }
    }

    /// The span that asked for the call `span` makes, when it is a tool span with a call id.
    pub fn of(&self, span: &Span) -> Option<usize> {
        let call_id = span.tool_call_id()?;
        self.by_call_id.get(call_id).copied()
    }
}

pub(super) fn build_tree(spans: &[Span], index: &super::span_index::SpanIndex) -> Tree {
    let n = spans.len();
    let parent_index = |i: usize| named_parent(&spans[i]).and_then(|p| index.get(spans, p));
    let mut places: ThinVec<Place> = std::iter::repeat_with(Place::default).take(n).collect();
    let mut roots: ThinVec<usize> = ThinVec::new();
    for (i, span) in spans.iter().enumerate() {
        match named_parent(span) {
            None => roots.push(i),
            // A span naming itself as parent is a cycle of one: it never counts as a root.
            Some(_) => match parent_index(i) {
                Some(p) => places[p].children.push(place_index(i)),
                None => roots.push(i),
            },
        }
    }
    for place in &mut places {
        place
            .children
            .sort_by(|&a, &b| by_start(spans, a as usize, b as usize));
    }
    roots.sort_by(|&a, &b| root_order(spans, a, b));

    let mut rows = ThinVec::with_capacity(n);
    let mut visited = vec![false; n];
    let mut in_cycle = vec![false; n];
    let walk = |start: usize,
                orphan: bool,
                rows: &mut ThinVec<TreeRow>,
                visited: &mut [bool],
                in_cycle: &[bool],
                places: &[Place]| {
        // Iterative pre-order: deep chains must not overflow the stack.
        let mut stack = vec![(start, 0usize)];
        while let Some((i, depth)) = stack.pop() {
            if visited[i] {
                continue;
            }
            visited[i] = true;
            let children = &places[i].children;
            rows.push(TreeRow {
                orphan: orphan && i == start,
                cycle: in_cycle[i],
                ..TreeRow::new(i, depth, children.len())
            });
            for &c in children.iter().rev() {
                if !visited[c as usize] {
                    stack.push((c as usize, depth + 1));
                }
            }
        }
    };
    for &root in &roots {
        walk(
            root,
            grow::is_orphan_root(spans, root),
            &mut rows,
            &mut visited,
            &in_cycle,
            &places,
        );
    }
    // Whatever no root reaches hangs off a parent cycle: find each cycle by following parent
    // links (every such span has a parent here, so the chain must loop), then show each
    // cycle from its earliest span, marked, with what hangs off it below.
    let mut cycles: ThinVec<ThinVec<usize>> = ThinVec::new();
    let mut state = vec![0u8; n]; // 0 new, 1 on the current chain, 2 done
    let mut leftovers: Vec<usize> = (0..n).filter(|&i| !visited[i]).collect();
    leftovers.sort_by(|&a, &b| by_start(spans, a, b));
    for &i in &leftovers {
        let mut chain = Vec::new();
        let mut at = Some(i);
        while let Some(j) = at {
            if state[j] != 0 {
                if state[j] == 1 {
                    let from = chain.iter().position(|&x| x == j).unwrap_or(0);
                    cycles.push(ThinVec::from(&chain[from..]));
                }
                break;
            }
            state[j] = 1;
            chain.push(j);
            at = parent_index(j);
        }
        for j in chain {
            state[j] = 2;
        }
    }
    for cycle in &mut cycles {
        for &i in cycle.iter() {
            in_cycle[i] = true;
        }
        // Chain order starting from the earliest span.
        let first = (0..cycle.len())
            .min_by(|&a, &b| by_start(spans, cycle[a], cycle[b]))
            .unwrap_or(0);
        cycle.rotate_left(first);
    }
    cycles.sort_by(|a, b| by_start(spans, a[0], b[0]));
    for cycle in &cycles {
        roots.push(cycle[0]);
        walk(cycle[0], false, &mut rows, &mut visited, &in_cycle, &places);
    }

    for (r, row) in rows.iter().enumerate() {
        places[row.span()].row = place_index(r);
    }
    // The parent each span hangs under in the rows: a cycle's spans name parents that no
    // row puts them under.
    {
        let mut last_at_depth: Vec<usize> = Vec::new();
        for row in &rows {
            last_at_depth.truncate(row.depth());
            if row.depth > 0
                && let Some(&p) = last_at_depth.last()
            {
                places[row.span()].parent = place_index(p);
            }
            last_at_depth.push(row.span());
        }
    }
    // Health bottom-up: reverse pre-order visits children before parents. Only tree edges
    // (children of a row that were walked under it) count, so cycles cannot loop.
    for row in rows.iter().rev() {
        let i = row.span();
        if spans[i].status.is_error() {
            places[i].health = Health::Error;
        }
        // An evaluator's verdict span is not part of the agent's run (see EVALUATOR_ATTR).
        let parent = places[i].parent;
        if places[i].health != Health::Ok
            && !spans[i].is_evaluator()
            && parent != NO_PARENT
            && places[parent as usize].health == Health::Ok
        {
            places[parent as usize].health = Health::Degraded;
        }
    }
    Tree {
        rows,
        places,
        roots,
        cycles,
    }
}
