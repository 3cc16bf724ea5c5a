//! The store: spans grouped into invocations, each with a tree that is rebuilt when its spans
//! change. Children may arrive before parents; duplicate ids and parent cycles are tolerated.
//!
//! The store never renders and never parses: sources hand it [`Batch`]es, views read
//! [`Invocation`]s, their [`Tree`]s and [`Summary`]s.

use std::collections::{HashMap, HashSet};
use std::path::Path;

mod grow;

use grow::{by_start, named_parent, root_order};

use crate::model::{
    Batch, EvalVerdict, GoldSpec, Health, Origin, PayloadBody, Problem, Span, SpanKind,
};

/// A memory budget with oldest-first eviction. `None` means unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    pub max_invocations: Option<usize>,
    pub max_bytes: Option<u64>,
}

/// Running totals shown in the status bar: never a silent cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    pub spans_seen: u64,
    pub spans_kept: u64,
    pub duplicate_spans: u64,
    pub invocations_seen: u64,
    pub invocations_evicted: u64,
    pub spans_evicted: u64,
    pub approx_bytes: u64,
    /// Spans placed into trees so far (a full rebuild places all of a run's spans, an
    /// incremental settle only the new ones): what assembling trees has cost.
    pub tree_work: u64,
}

/// One row of a tree in pre-order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeRow {
    /// Index into [`Invocation::spans`].
    pub span: usize,
    pub depth: usize,
    /// The span names a parent that is not (yet) here.
    pub orphan: bool,
    /// The span sits in a parent cycle (its parent chain loops back to it).
    pub cycle: bool,
    pub child_count: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub rows: Vec<TreeRow>,
    /// Indexed by span index.
    pub health: Vec<Health>,
    /// Indexed by span index: child span indices in start order.
    pub children: Vec<Vec<usize>>,
    /// Indexed by span index: position of that span in `rows`.
    pub row_of_span: Vec<usize>,
    /// Indexed by span index: the span it hangs under in this tree.
    pub parent: Vec<Option<usize>>,
    /// Spans shown at depth 0, in row order.
    pub roots: Vec<usize>,
    /// Parent cycles: the spans of each, in chain order.
    pub cycles: Vec<Vec<usize>>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindCounts {
    pub spans: usize,
    pub llm: usize,
    pub tool: usize,
    pub embedding: usize,
    pub rerank: usize,
    pub retrieval: usize,
    pub agent: usize,
    pub node: usize,
    pub other: usize,
    pub errors: usize,
}

impl KindCounts {
    pub fn of(&self, kind: SpanKind) -> usize {
        match kind {
            SpanKind::Llm => self.llm,
            SpanKind::Tool => self.tool,
            SpanKind::Embedding => self.embedding,
            SpanKind::Rerank => self.rerank,
            SpanKind::Retrieval => self.retrieval,
            SpanKind::Agent => self.agent,
            SpanKind::Node => self.node,
            SpanKind::Other => self.other,
        }
    }
    fn bump(&mut self, kind: SpanKind) {
        let slot = match kind {
            SpanKind::Llm => &mut self.llm,
            SpanKind::Tool => &mut self.tool,
            SpanKind::Embedding => &mut self.embedding,
            SpanKind::Rerank => &mut self.rerank,
            SpanKind::Retrieval => &mut self.retrieval,
            SpanKind::Agent => &mut self.agent,
            SpanKind::Node => &mut self.node,
            SpanKind::Other => &mut self.other,
        };
        *slot += 1;
    }
}

/// One call of the actual trajectory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRef {
    pub name: String,
    pub call_id: Option<String>,
    pub failed: bool,
    pub span_id: String,
    pub span: usize,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub name: String,
    pub health: Health,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    pub counts: KindCounts,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Tool spans in start-time order.
    pub tool_calls: Vec<ToolCallRef>,
    pub failed_tool_calls: usize,
    /// Formats its spans came from, in first-seen order.
    pub formats: Vec<&'static str>,
    /// The conversation or session this run is a turn of (see [`conversation_of`]).
    pub conversation: Option<String>,
    /// The turn's number within its conversation, when the format records one.
    pub turn: Option<u64>,
}

impl Summary {
    pub fn duration_ms(&self) -> f64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano) as f64 / 1e6
    }
}

/// One agent run: an OTLP trace, an openai-agents trace, an arksim turn, a message log.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    pub id: String,
    pub spans: Vec<Span>,
    span_index: HashMap<String, usize>,
    pub eval: Option<EvalVerdict>,
    pub gold: Option<GoldSpec>,
    pub display_name: Option<String>,
    /// Order of arrival across the store, for oldest-first eviction.
    pub arrival: u64,
    pub approx_bytes: u64,
    tree: Tree,
    summary: Summary,
    /// Spans `0..built` are in the tree; later ones join it at the next settle.
    built: usize,
    /// The next settle rebuilds from scratch: a span was replaced or removed.
    needs_rebuild: bool,
    /// Orphan roots by the parent id they wait for.
    waiting: HashMap<String, Vec<usize>>,
    /// Tool call id → span id of the LLM span that requested it.
    requester: HashMap<String, String>,
    /// Tool call id → tool spans carrying it.
    tools_by_call: HashMap<String, Vec<usize>>,
    /// Latest end time of any span (the summary's end is never before its start).
    latest_end: u64,
    /// Spans placed into the tree so far, for [`StoreStats::tree_work`].
    work: u64,
    /// Cycles already reported as problems, by their sorted span ids.
    reported_cycles: HashSet<String>,
    /// Some span is a provisional tool stand-in (see [`covered_stand_ins`]).
    has_stand_ins: bool,
}

impl Invocation {
    fn new(id: String, arrival: u64) -> Self {
        Invocation {
            id,
            arrival,
            ..Default::default()
        }
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
    }
    pub fn summary(&self) -> &Summary {
        &self.summary
    }
    pub fn span_by_id(&self, span_id: &str) -> Option<usize> {
        self.span_index.get(span_id).copied()
    }
    pub fn health_of(&self, span: usize) -> Health {
        self.tree.health.get(span).copied().unwrap_or_default()
    }
    /// The conversation or session this run belongs to: arksim `conversation_id`,
    /// `gen_ai.conversation.id`, OpenInference `session.id`, Langfuse session, openai-agents
    /// `group_id`.
    pub fn conversation_id(&self) -> Option<&str> {
        self.summary.conversation.as_deref()
    }

    /// Adds a span. A second span with an id already here is a duplicate; when its content
    /// differs, the copy that carries a failure is kept (a failure is never hidden) and the
    /// conflict is reported.
    fn push(&mut self, span: Span) -> Pushed {
        if let Some(&existing) = self.span_index.get(&span.span_id) {
            let Some(slot) = self.spans.get_mut(existing) else {
                return Pushed::Duplicate;
            };
            // A provisional stand-in gives way to the real span with the same id.
            let stand_in_replaced = slot.is_provisional() && !span.is_provisional();
            if !stand_in_replaced && same_content(slot, &span) {
                return Pushed::Duplicate;
            }
            let replace = stand_in_replaced || (span.status.is_error() && !slot.status.is_error());
            let conflict = (!stand_in_replaced).then(|| {
                let (kept, dropped) = if replace {
                    (&span, &*slot)
                } else {
                    (&*slot, &span)
                };
                Problem::warning(
                    place_of(kept),
                    kept.line,
                    format!(
                        "span {} of run {} appears twice with different content: kept the copy from {}{}, dropped the one from {}",
                        span.span_id,
                        self.id,
                        place_of(kept),
                        if replace { " (it carries the failure)" } else { "" },
                        place_of(dropped),
                    ),
                )
            });
            if replace {
                self.approx_bytes = self.approx_bytes.saturating_sub(approx_span_bytes(slot))
                    + approx_span_bytes(&span);
                *slot = span;
                self.needs_rebuild = true;
            }
            return match conflict {
                Some(problem) => Pushed::Conflict { problem, replace },
                None => Pushed::Added,
            };
        }
        self.approx_bytes += approx_span_bytes(&span);
        self.has_stand_ins |= span.kind == SpanKind::Tool && span.is_provisional();
        self.span_index
            .insert(span.span_id.clone(), self.spans.len());
        self.spans.push(span);
        Pushed::Added
    }

    fn retain_spans(&mut self, keep: impl Fn(&Span) -> bool) -> usize {
        let before = self.spans.len();
        self.spans.retain(keep);
        self.span_index = self
            .spans
            .iter()
            .enumerate()
            .map(|(i, s)| (s.span_id.clone(), i))
            .collect();
        self.approx_bytes = self.spans.iter().map(approx_span_bytes).sum();
        self.needs_rebuild = true;
        before - self.spans.len()
    }

    /// Brings tree and summary up to date: new spans join incrementally when they can,
    /// otherwise everything is rebuilt.
    fn refresh(&mut self) {
        if !(self.can_grow() && self.grow()) {
            self.rebuild();
        }
    }

    /// Rebuilds tree, health, links and summary. O(n log n) in the invocation's span count.
    fn rebuild(&mut self) {
        let covered = covered_stand_ins(&self.spans);
        if !covered.is_empty() {
            self.spans = std::mem::take(&mut self.spans)
                .into_iter()
                .enumerate()
                .filter(|(i, _)| !covered.contains(i))
                .map(|(_, span)| span)
                .collect();
            // Re-indexes and re-sizes what is left.
            self.retain_spans(|_| true);
        }
        link_tool_calls(&mut self.spans);
        self.tree = build_tree(&self.spans, &self.span_index);
        self.summary = summarize(self);
        self.work += self.spans.len() as u64;
        self.built = self.spans.len();
        self.has_stand_ins = self
            .spans
            .iter()
            .any(|s| s.kind == SpanKind::Tool && s.is_provisional());
        self.needs_rebuild = false;
        self.latest_end = self
            .spans
            .iter()
            .map(|s| s.end_unix_nano)
            .max()
            .unwrap_or(0);
        // What the incremental path needs to pick up from here.
        self.waiting.clear();
        for &r in &self.tree.roots {
            if let Some(missing) = named_parent(&self.spans[r])
                && !self.span_index.contains_key(missing)
            {
                self.waiting.entry(missing.to_owned()).or_default().push(r);
            }
        }
        self.requester.clear();
        self.tools_by_call.clear();
        for (i, span) in self.spans.iter().enumerate() {
            if let Some(llm) = &span.llm {
                for call in &llm.requested_tool_calls {
                    if let Some(id) = &call.id {
                        self.requester
                            .entry(id.clone())
                            .or_insert_with(|| span.span_id.clone());
                    }
                }
            }
            if let Some(id) = span.tool_call_id() {
                self.tools_by_call.entry(id.to_owned()).or_default().push(i);
            }
        }
    }

    /// Parent cycles not reported before, as problems.
    fn new_cycle_problems(&mut self) -> Vec<Problem> {
        let mut out = Vec::new();
        for cycle in &self.tree.cycles {
            let mut ids: Vec<&str> = cycle
                .iter()
                .map(|&i| self.spans[i].span_id.as_str())
                .collect();
            let chain = ids.join(" → ");
            ids.sort_unstable();
            if !self.reported_cycles.insert(ids.join(",")) {
                continue;
            }
            let first = &self.spans[cycle[0]];
            out.push(Problem::warning(
                place_of(first),
                first.line,
                format!(
                    "parent cycle in run {}: {chain} → {} (each → names the parent; shown under a cycle marker)",
                    self.id, first.span_id
                ),
            ));
        }
        out
    }
}

/// What [`Invocation::push`] did with a span.
enum Pushed {
    Added,
    Duplicate,
    /// Same id, different content: `replace` says the new copy was kept.
    Conflict {
        problem: Problem,
        replace: bool,
    },
}

/// Where a span was read, for problems that name both copies of a duplicate.
fn place_of(span: &Span) -> String {
    match (&span.origin, span.line) {
        (Some(origin), Some(line)) => format!("{origin}:{line}"),
        (Some(origin), None) => origin.to_string(),
        (None, _) => "an unknown source".to_owned(),
    }
}

/// Two copies of a span say the same thing (where each was read from does not count;
/// payloads compare by state and size, since the same value sits at different places).
fn same_content(a: &Span, b: &Span) -> bool {
    let payload = |x: &crate::model::Payload, y: &crate::model::Payload| {
        x.state == y.state && x.bytes == y.bytes && x.field == y.field
    };
    a.trace_id == b.trace_id
        && a.parent_span_id == b.parent_span_id
        && a.name == b.name
        && a.kind == b.kind
        && a.status == b.status
        && a.error == b.error
        && a.start_unix_nano == b.start_unix_nano
        && a.end_unix_nano == b.end_unix_nano
        && a.llm == b.llm
        && a.tool.as_ref().map(|t| (&t.name, &t.call_id))
            == b.tool.as_ref().map(|t| (&t.name, &t.call_id))
        && payload(&a.input, &b.input)
        && payload(&a.output, &b.output)
        && a.events.len() == b.events.len()
        && a.attributes.len() == b.attributes.len()
        && a.attributes
            .iter()
            .zip(&b.attributes)
            .all(|((ka, va), (kb, vb))| {
                ka == kb
                    && match (va, vb) {
                        (
                            crate::model::AttrValue::Payload(x),
                            crate::model::AttrValue::Payload(y),
                        ) => payload(x, y),
                        _ => va == vb,
                    }
            })
}

fn approx_span_bytes(span: &Span) -> u64 {
    let inline = |body: &PayloadBody| match body {
        PayloadBody::Inline(t) => t.len() as u64,
        _ => 0,
    };
    let attrs: u64 = span
        .attributes
        .iter()
        .map(|(k, v)| {
            k.len() as u64
                + match v {
                    crate::model::AttrValue::Str(s) => s.len() as u64,
                    crate::model::AttrValue::Payload(p) => inline(&p.body),
                    _ => 16,
                }
        })
        .sum();
    std::mem::size_of::<Span>() as u64
        + span.name.len() as u64
        + inline(&span.input.body)
        + inline(&span.output.body)
        + attrs
        + span.events.len() as u64 * 64
}

/// Provisional tool spans (stand-ins from flattened records such as arksim's tool-call lists)
/// that a real tool span of the same invocation already covers: same tool name and either the
/// same call id or equal JSON arguments. Each real span covers at most one stand-in, so a call
/// is never counted twice and repeated identical calls stay distinct.
fn covered_stand_ins(spans: &[Span]) -> HashSet<usize> {
    let mut covered = HashSet::new();
    let is_tool = |s: &Span| s.kind == SpanKind::Tool;
    if !spans.iter().any(|s| is_tool(s) && s.is_provisional()) {
        return covered;
    }
    let arguments = |s: &Span| {
        s.input
            .inline_text()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
    };
    let mut used: HashSet<usize> = HashSet::new();
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

/// Fills `tool.requested_by` with the LLM span whose requested calls carry the tool's call id.
fn link_tool_calls(spans: &mut [Span]) {
    let mut requester: HashMap<String, String> = HashMap::new();
    for span in spans.iter() {
        if let Some(llm) = &span.llm {
            for call in &llm.requested_tool_calls {
                if let Some(id) = &call.id {
                    requester
                        .entry(id.clone())
                        .or_insert_with(|| span.span_id.clone());
                }
            }
        }
    }
    if requester.is_empty() {
        return;
    }
    for span in spans.iter_mut() {
        if let Some(tool) = &mut span.tool
            && let Some(id) = &tool.call_id
        {
            tool.requested_by = requester.get(id).cloned();
        }
    }
}

fn build_tree(spans: &[Span], index: &HashMap<String, usize>) -> Tree {
    let n = spans.len();
    let parent_index = |i: usize| named_parent(&spans[i]).and_then(|p| index.get(p).copied());
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut roots: Vec<usize> = Vec::new();
    for (i, span) in spans.iter().enumerate() {
        match named_parent(span) {
            None => roots.push(i),
            // A span naming itself as parent is a cycle of one: it never counts as a root.
            Some(_) => match parent_index(i) {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            },
        }
    }
    for list in &mut children {
        list.sort_by(|&a, &b| by_start(spans, a, b));
    }
    roots.sort_by(|&a, &b| root_order(spans, a, b));

    let mut rows = Vec::with_capacity(n);
    let mut visited = vec![false; n];
    let mut in_cycle = vec![false; n];
    let walk = |start: usize,
                orphan: bool,
                rows: &mut Vec<TreeRow>,
                visited: &mut [bool],
                in_cycle: &[bool]| {
        // Iterative pre-order: deep chains must not overflow the stack.
        let mut stack = vec![(start, 0usize)];
        while let Some((i, depth)) = stack.pop() {
            if visited[i] {
                continue;
            }
            visited[i] = true;
            rows.push(TreeRow {
                span: i,
                depth,
                orphan: orphan && i == start,
                cycle: in_cycle[i],
                child_count: children[i].len(),
            });
            for &c in children[i].iter().rev() {
                if !visited[c] {
                    stack.push((c, depth + 1));
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
        );
    }
    // Whatever no root reaches hangs off a parent cycle: find each cycle by following parent
    // links (every such span has a parent here, so the chain must loop), then show each
    // cycle from its earliest span, marked, with what hangs off it below.
    let mut cycles: Vec<Vec<usize>> = Vec::new();
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
                    cycles.push(chain[from..].to_vec());
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
        walk(cycle[0], false, &mut rows, &mut visited, &in_cycle);
    }

    let mut row_of_span = vec![0; n];
    for (r, row) in rows.iter().enumerate() {
        row_of_span[row.span] = r;
    }
    // Health bottom-up: reverse pre-order visits children before parents. Only tree edges
    // (children of a row that were walked under it) count, so cycles cannot loop.
    let mut health = vec![Health::Ok; n];
    let mut tree_parent: Vec<Option<usize>> = vec![None; n];
    {
        let mut last_at_depth: Vec<usize> = Vec::new();
        for row in &rows {
            last_at_depth.truncate(row.depth);
            if row.depth > 0 {
                tree_parent[row.span] = last_at_depth.last().copied();
            }
            last_at_depth.push(row.span);
        }
    }
    for row in rows.iter().rev() {
        let i = row.span;
        if spans[i].status.is_error() {
            health[i] = Health::Error;
        }
        // An evaluator's verdict span is not part of the agent's run (see EVALUATOR_ATTR).
        if health[i] != Health::Ok
            && !spans[i].is_evaluator()
            && let Some(p) = tree_parent[i]
            && health[p] == Health::Ok
        {
            health[p] = Health::Degraded;
        }
    }
    Tree {
        rows,
        health,
        children,
        row_of_span,
        parent: tree_parent,
        roots,
        cycles,
    }
}

fn summarize(inv: &Invocation) -> Summary {
    let spans = &inv.spans;
    let tree = &inv.tree;
    let mut counts = KindCounts::default();
    let mut input_tokens = 0;
    let mut output_tokens = 0;
    let mut formats: Vec<&'static str> = Vec::new();
    let mut start = u64::MAX;
    let mut end = 0;
    for span in spans {
        counts.spans += 1;
        counts.bump(span.kind);
        if span.status.is_error() && !span.is_evaluator() {
            counts.errors += 1;
        }
        if let Some(llm) = &span.llm {
            input_tokens += llm.input_tokens.unwrap_or(0);
            output_tokens += llm.output_tokens.unwrap_or(0);
        }
        if !formats.contains(&span.format) {
            formats.push(span.format);
        }
        if span.start_unix_nano > 0 {
            start = start.min(span.start_unix_nano);
        }
        end = end.max(span.end_unix_nano);
    }
    if start == u64::MAX {
        start = 0;
    }
    let mut tool_spans: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].kind == SpanKind::Tool)
        .collect();
    tool_spans.sort_by(|&a, &b| {
        spans[a]
            .start_unix_nano
            .cmp(&spans[b].start_unix_nano)
            .then_with(|| tree.row_of_span[a].cmp(&tree.row_of_span[b]))
    });
    let tool_calls: Vec<ToolCallRef> = tool_spans
        .into_iter()
        .map(|i| ToolCallRef {
            name: spans[i]
                .tool_name()
                .map(str::to_owned)
                .unwrap_or_else(|| spans[i].name.clone()),
            call_id: spans[i].tool_call_id().map(str::to_owned),
            failed: spans[i].status.is_error(),
            span_id: spans[i].span_id.clone(),
            span: i,
        })
        .collect();
    let failed_tool_calls = tool_calls.iter().filter(|c| c.failed).count();

    // The run's root: the earliest span without a parent, else the first row of the tree.
    let true_roots: Vec<usize> = tree
        .rows
        .iter()
        .filter(|r| r.depth == 0 && spans[r.span].parent_span_id.is_none())
        .map(|r| r.span)
        .collect();
    let root = true_roots
        .first()
        .copied()
        .or_else(|| tree.rows.first().map(|r| r.span));
    let health = if true_roots
        .iter()
        .any(|&r| spans[r].status.is_error() && !spans[r].is_evaluator())
        || (true_roots.is_empty() && root.is_some_and(|r| spans[r].status.is_error()))
    {
        Health::Error
    } else if counts.errors > 0 {
        Health::Degraded
    } else {
        Health::Ok
    };
    let name = inv
        .display_name
        .clone()
        .or_else(|| root.map(|r| spans[r].name.clone()))
        .unwrap_or_else(|| inv.id.clone());
    let (conversation, turn) = conversation_of(spans);
    Summary {
        name,
        health,
        start_unix_nano: start,
        end_unix_nano: end.max(start),
        counts,
        input_tokens,
        output_tokens,
        tool_calls,
        failed_tool_calls,
        formats,
        conversation,
        turn,
    }
}

/// Attributes naming the conversation (or session) a run is a turn of, most specific first.
const CONVERSATION_KEYS: &[&str] = &[
    "arksim.conversation_id",
    "gen_ai.conversation.id",
    "session.id",
    "langfuse.session.id",
];

/// The conversation a run belongs to and its turn number: the first span attribute of
/// [`CONVERSATION_KEYS`] found, else an openai-agents trace's `group_id`.
fn conversation_of(spans: &[Span]) -> (Option<String>, Option<u64>) {
    let attr = |key: &str| {
        spans.iter().find_map(|s| {
            s.attr(key)
                .and_then(|v| match v {
                    crate::model::AttrValue::Int(i) => Some(i.to_string()),
                    other => other.as_str().map(str::to_owned),
                })
                .filter(|v| !v.trim().is_empty())
        })
    };
    let conversation = CONVERSATION_KEYS.iter().find_map(|k| attr(k)).or_else(|| {
        spans
            .iter()
            .filter(|s| s.format == "openai-agents")
            .find_map(|s| s.identity.correlation_id.clone())
            .filter(|v| !v.trim().is_empty())
    });
    let turn = ["arksim.turn_id", "gen_ai.conversation.turn", "turn_index"]
        .iter()
        .find_map(|k| attr(k))
        .and_then(|t| t.trim().parse().ok());
    (conversation, turn)
}

/// All invocations, problems and running totals.
#[derive(Debug, Default)]
pub struct Store {
    /// Boxed: the map keeps up to half its slots empty, and an invocation is several hundred
    /// bytes, so empty slots hold a pointer's worth rather than an invocation's.
    invocations: HashMap<String, Box<Invocation>>,
    aliases: HashMap<String, String>,
    problems: Vec<Problem>,
    stats: StoreStats,
    budget: Budget,
    arrivals: u64,
    /// Bumped on every change, so views can redraw only when something changed.
    generation: u64,
    evicted_ids: HashSet<String>,
    /// Invocations changed by [`Store::apply`] and not yet rebuilt by [`Store::settle`].
    unsettled: HashSet<String>,
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_budget(budget: Budget) -> Self {
        Store {
            budget,
            ..Default::default()
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }
    pub fn stats(&self) -> StoreStats {
        self.stats
    }
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }
    pub fn len(&self) -> usize {
        self.invocations.len()
    }
    pub fn is_empty(&self) -> bool {
        self.invocations.is_empty()
    }
    pub fn get(&self, id: &str) -> Option<&Invocation> {
        self.invocations.get(id).map(Box::as_ref)
    }
    pub fn invocations(&self) -> impl Iterator<Item = &Invocation> {
        self.invocations.values().map(Box::as_ref)
    }

    /// Invocations newest first (by start time, then id, so the order is stable).
    pub fn newest_first(&self) -> Vec<&Invocation> {
        let mut list: Vec<&Invocation> = self.invocations.values().map(Box::as_ref).collect();
        list.sort_by(|a, b| {
            b.summary
                .start_unix_nano
                .cmp(&a.summary.start_unix_nano)
                .then_with(|| a.id.cmp(&b.id))
        });
        list
    }

    /// Invocations oldest first: the order `dump` prints.
    pub fn oldest_first(&self) -> Vec<&Invocation> {
        let mut list = self.newest_first();
        list.reverse();
        list
    }

    pub fn add_problem(&mut self, problem: Problem) {
        self.problems.push(problem);
        self.generation += 1;
    }

    fn resolve(&self, trace_id: &str) -> String {
        let mut id = trace_id;
        // Follow alias chains a few steps; a cycle of aliases just stops.
        for _ in 0..4 {
            match self.aliases.get(id) {
                Some(next) if next != id => id = next,
                _ => break,
            }
        }
        id.to_owned()
    }

    /// Takes in one parser's output. Returns the ids of invocations that changed.
    pub fn ingest(&mut self, batch: Batch) -> Vec<String> {
        self.apply(batch);
        self.settle()
    }

    /// Takes in a batch without rebuilding trees: a live source's drain of many small batches
    /// into one big run then costs one rebuild ([`Store::settle`]) instead of one per batch.
    /// Trees and summaries of changed invocations are stale until `settle`.
    pub fn apply(&mut self, batch: Batch) {
        let mut dirty = std::mem::take(&mut self.unsettled);
        for (from, to) in batch.aliases {
            if from == to {
                continue;
            }
            // Spans already stored under the aliased id move to their real invocation.
            if let Some(moved) = self.invocations.remove(&from) {
                let target = self.resolve(&to);
                for span in moved.spans {
                    self.insert_span(&target, span, &mut dirty);
                }
                if moved.eval.is_some() || moved.gold.is_some() {
                    let inv = self.entry(&target);
                    if inv.eval.is_none() {
                        inv.eval = moved.eval;
                    }
                    if inv.gold.is_none() {
                        inv.gold = moved.gold;
                    }
                }
            }
            self.aliases.insert(from, to);
        }
        for span in batch.spans {
            self.stats.spans_seen += 1;
            let target = self.resolve(&span.trace_id);
            self.insert_span(&target, span, &mut dirty);
        }
        for (id, eval) in batch.evals {
            let target = self.resolve(&id);
            self.entry(&target).eval = Some(eval);
            dirty.insert(target);
        }
        for (id, gold) in batch.golds {
            let target = self.resolve(&id);
            self.entry(&target).gold = Some(gold);
            dirty.insert(target);
        }
        for (id, name) in batch.invocation_names {
            let target = self.resolve(&id);
            self.entry(&target).display_name = Some(name);
            dirty.insert(target);
        }
        self.problems.extend(batch.problems);
        self.unsettled = dirty;
    }

    /// Rebuilds what [`Store::apply`] changed, enforces the budget, and returns the ids of the
    /// invocations that changed.
    pub fn settle(&mut self) -> Vec<String> {
        let mut changed: Vec<String> = std::mem::take(&mut self.unsettled).into_iter().collect();
        changed.sort();
        for id in &changed {
            if let Some(inv) = self.invocations.get_mut(id) {
                let before = inv.work;
                inv.refresh();
                self.stats.tree_work += inv.work - before;
                let cycles = inv.new_cycle_problems();
                self.problems.extend(cycles);
            }
        }
        self.recount();
        self.enforce_budget();
        self.generation += 1;
        changed
    }

    fn entry(&mut self, id: &str) -> &mut Invocation {
        if !self.invocations.contains_key(id) {
            self.arrivals += 1;
            self.stats.invocations_seen += 1;
            self.invocations.insert(
                id.to_owned(),
                Box::new(Invocation::new(id.to_owned(), self.arrivals)),
            );
        }
        self.invocations.get_mut(id).expect("inserted above")
    }

    fn insert_span(&mut self, target: &str, span: Span, dirty: &mut HashSet<String>) {
        if self.evicted_ids.contains(target) {
            // A late span of an evicted run would resurrect a fragment of it; count it instead.
            self.stats.spans_evicted += 1;
            return;
        }
        match self.entry(target).push(span) {
            Pushed::Added => {
                dirty.insert(target.to_owned());
            }
            Pushed::Duplicate => self.stats.duplicate_spans += 1,
            Pushed::Conflict { problem, replace } => {
                self.stats.duplicate_spans += 1;
                self.problems.push(problem);
                if replace {
                    dirty.insert(target.to_owned());
                }
            }
        }
    }

    /// Forgets every span read from `path` (a file truncated or rewritten is re-read whole).
    pub fn remove_origin(&mut self, path: &Path) {
        let origin = Origin::File(std::sync::Arc::new(path.to_path_buf()));
        let mut emptied = Vec::new();
        for (id, inv) in self.invocations.iter_mut() {
            let removed = inv.retain_spans(|s| s.origin.as_ref() != Some(&origin));
            if removed > 0 {
                if inv.spans.is_empty() && inv.eval.is_none() && inv.gold.is_none() {
                    emptied.push(id.clone());
                } else {
                    inv.rebuild();
                    let cycles = inv.new_cycle_problems();
                    self.problems.extend(cycles);
                }
            }
        }
        for id in emptied {
            self.invocations.remove(&id);
        }
        self.problems
            .retain(|p| p.source != path.display().to_string());
        self.recount();
        self.generation += 1;
    }

    fn recount(&mut self) {
        self.stats.spans_kept = self
            .invocations
            .values()
            .map(|i| i.spans.len() as u64)
            .sum();
        self.stats.approx_bytes = self.invocations.values().map(|i| i.approx_bytes).sum();
    }

    fn enforce_budget(&mut self) {
        let over = |store: &Store| {
            store
                .budget
                .max_invocations
                .is_some_and(|max| store.invocations.len() > max)
                || store
                    .budget
                    .max_bytes
                    .is_some_and(|max| store.stats.approx_bytes > max)
        };
        if !over(self) {
            return;
        }
        let mut by_age: Vec<(u64, String)> = self
            .invocations
            .values()
            .map(|i| (i.arrival, i.id.clone()))
            .collect();
        by_age.sort();
        for (_, id) in by_age {
            // Always keep the newest invocation, even if it alone exceeds the byte budget.
            if !over(self) || self.invocations.len() <= 1 {
                break;
            }
            if let Some(inv) = self.invocations.remove(&id) {
                self.stats.invocations_evicted += 1;
                self.stats.spans_evicted += inv.spans.len() as u64;
                self.stats.approx_bytes -= inv.approx_bytes.min(self.stats.approx_bytes);
                self.stats.spans_kept -= (inv.spans.len() as u64).min(self.stats.spans_kept);
                self.evicted_ids.insert(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Origin;
    use crate::model::{SpanStatus, ToolFacts};

    fn span(trace: &str, id: &str, parent: Option<&str>, start: u64) -> Span {
        Span {
            trace_id: trace.into(),
            span_id: id.into(),
            parent_span_id: parent.map(Into::into),
            name: format!("span {id}"),
            start_unix_nano: start,
            end_unix_nano: start + 10,
            format: "test",
            ..Default::default()
        }
    }

    fn ingest(store: &mut Store, spans: Vec<Span>) {
        store.ingest(Batch {
            spans,
            ..Default::default()
        });
    }

    #[test]
    fn orphans_reattach_when_their_parent_arrives() {
        let mut store = Store::new();
        ingest(&mut store, vec![span("t", "child", Some("root"), 5)]);
        let inv = store.get("t").unwrap();
        assert!(inv.tree().rows[0].orphan);
        ingest(&mut store, vec![span("t", "root", None, 1)]);
        let inv = store.get("t").unwrap();
        let rows = &inv.tree().rows;
        assert_eq!(rows.len(), 2);
        assert_eq!(inv.spans[rows[0].span].span_id, "root");
        assert_eq!((rows[1].depth, rows[1].orphan), (1, false));
    }

    #[test]
    fn cycles_and_self_parents_terminate_and_count_once() {
        let mut store = Store::new();
        ingest(
            &mut store,
            vec![
                span("t", "a", Some("b"), 1),
                span("t", "b", Some("a"), 2),
                span("t", "self", Some("self"), 3),
            ],
        );
        let inv = store.get("t").unwrap();
        assert_eq!(inv.tree().rows.len(), 3);
        assert_eq!(inv.summary().counts.spans, 3);
        // Cycles are cycles, not missing parents.
        assert!(inv.tree().rows.iter().all(|r| r.cycle && !r.orphan));
        assert_eq!(inv.tree().cycles.len(), 2);
        let problems: Vec<&str> = store
            .problems()
            .iter()
            .map(|p| p.message.as_str())
            .collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("a → b → a")),
            "{problems:?}"
        );
        assert!(
            problems.iter().any(|p| p.contains("self → self")),
            "{problems:?}"
        );
        // Settling again does not report them again.
        ingest(&mut store, vec![span("t", "late", Some("a"), 9)]);
        assert_eq!(store.problems().len(), 2);
        let inv = store.get("t").unwrap();
        let late = inv.span_by_id("late").unwrap();
        let row = inv.tree().rows[inv.tree().row_of_span[late]];
        assert!(
            !row.cycle && row.depth > 0,
            "hangs under the cycle: {row:?}"
        );
    }

    #[test]
    fn a_cycle_closed_by_a_late_span_is_found() {
        let mut store = Store::new();
        ingest(
            &mut store,
            vec![span("t", "b", Some("a"), 2), span("t", "c", Some("b"), 3)],
        );
        ingest(&mut store, vec![span("t", "a", Some("c"), 1)]);
        let inv = store.get("t").unwrap();
        assert!(inv.tree().rows.iter().all(|r| r.cycle));
        assert_eq!(inv.spans[inv.tree().rows[0].span].span_id, "a");
        assert_eq!(store.problems().len(), 1);
        assert!(
            store.problems()[0].message.contains("a → c → b → a"),
            "{:?}",
            store.problems()
        );
    }

    #[test]
    fn a_conflicting_duplicate_keeps_the_failure_and_names_both_sources() {
        let origin = |name: &str| Some(Origin::File(std::sync::Arc::new(name.into())));
        for failing_first in [false, true] {
            let mut store = Store::new();
            let mut ok = span("t", "a", None, 1);
            ok.origin = origin("first.jsonl");
            ok.line = Some(3);
            let mut failed = ok.clone();
            failed.status = SpanStatus::Error;
            failed.origin = origin("second.jsonl");
            failed.line = Some(7);
            let (one, two) = if failing_first {
                (failed, ok)
            } else {
                (ok, failed)
            };
            ingest(&mut store, vec![one]);
            ingest(&mut store, vec![two]);
            let inv = store.get("t").unwrap();
            assert_eq!(inv.spans.len(), 1);
            assert!(inv.spans[0].status.is_error(), "the failure is kept");
            assert_eq!(inv.summary().health, Health::Error);
            let problems = store.problems();
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert_eq!(problems[0].severity, crate::model::Severity::Warning);
            let message = &problems[0].message;
            assert!(
                message.contains("first.jsonl:3") && message.contains("second.jsonl:7"),
                "{message}"
            );
            assert!(
                message.contains("kept the copy from second.jsonl:7"),
                "{message}"
            );
        }
        // An identical copy is just a duplicate: counted, not reported.
        let mut store = Store::new();
        ingest(&mut store, vec![span("t", "a", None, 1)]);
        ingest(&mut store, vec![span("t", "a", None, 1)]);
        assert!(store.problems().is_empty());
        assert_eq!(store.stats().duplicate_spans, 1);
    }

    /// Spans of one run delivered one per batch, settled after each (a live source or a
    /// trace split over many files): each settle places only the new span.
    #[test]
    fn tree_work_is_linear_however_a_run_is_split() {
        let spans: Vec<Span> = (0..2_000)
            .map(|i| {
                let parent = (i > 0).then(|| format!("s{}", (i - 1) / 3));
                span("t", &format!("s{i}"), parent.as_deref(), 10 + i as u64)
            })
            .collect();
        let mut one_by_one = Store::new();
        for s in spans.iter().cloned() {
            ingest(&mut one_by_one, vec![s]);
        }
        let mut at_once = Store::new();
        ingest(&mut at_once, spans.clone());
        assert_eq!(at_once.stats().tree_work, 2_000);
        assert_eq!(one_by_one.stats().tree_work, 2_000);
        let (a, b) = (one_by_one.get("t").unwrap(), at_once.get("t").unwrap());
        assert_eq!(a.tree().rows, b.tree().rows);
        // Children before parents cost the same.
        let mut reversed = Store::new();
        for s in spans.iter().rev().cloned() {
            ingest(&mut reversed, vec![s]);
        }
        assert_eq!(reversed.stats().tree_work, 2_000);
        let c = reversed.get("t").unwrap();
        let ids = |inv: &Invocation| -> Vec<String> {
            inv.tree()
                .rows
                .iter()
                .map(|r| inv.spans[r.span].span_id.clone())
                .collect()
        };
        assert_eq!(ids(c), ids(b));
    }

    #[test]
    fn duplicate_span_ids_are_counted_not_stored() {
        let mut store = Store::new();
        ingest(
            &mut store,
            vec![span("t", "a", None, 1), span("t", "a", None, 1)],
        );
        assert_eq!(store.get("t").unwrap().spans.len(), 1);
        assert_eq!(store.stats().duplicate_spans, 1);
    }

    #[test]
    fn failed_child_degrades_parent_and_invocation() {
        let mut store = Store::new();
        let mut tool = span("t", "tool", Some("node"), 3);
        tool.kind = SpanKind::Tool;
        tool.status = SpanStatus::Error;
        tool.tool = Some(Box::new(ToolFacts {
            name: Some("search".into()),
            ..Default::default()
        }));
        ingest(
            &mut store,
            vec![
                span("t", "root", None, 1),
                span("t", "node", Some("root"), 2),
                tool,
            ],
        );
        let inv = store.get("t").unwrap();
        let health = |id: &str| inv.health_of(inv.span_by_id(id).unwrap());
        assert_eq!(health("tool"), Health::Error);
        assert_eq!(health("node"), Health::Degraded);
        assert_eq!(health("root"), Health::Degraded);
        assert_eq!(inv.summary().health, Health::Degraded);
        assert_eq!(inv.summary().failed_tool_calls, 1);
        assert_eq!(inv.summary().tool_calls[0].name, "search");
    }

    #[test]
    fn failed_root_makes_the_invocation_an_error() {
        let mut store = Store::new();
        let mut root = span("t", "root", None, 1);
        root.status = SpanStatus::Error;
        ingest(&mut store, vec![root]);
        assert_eq!(store.get("t").unwrap().summary().health, Health::Error);
    }

    #[test]
    fn deep_chains_do_not_overflow() {
        let mut store = Store::new();
        let mut spans = vec![span("t", "0", None, 0)];
        for i in 1..50_000u64 {
            spans.push(span("t", &i.to_string(), Some(&(i - 1).to_string()), i));
        }
        ingest(&mut store, spans);
        let inv = store.get("t").unwrap();
        assert_eq!(inv.tree().rows.last().unwrap().depth, 49_999);
    }

    #[test]
    fn applied_batches_settle_into_the_same_tree_as_ingested_ones() {
        let parts = || {
            vec![
                vec![span("t", "child", Some("root"), 5)],
                vec![span("t", "root", None, 1), span("u", "other", None, 2)],
            ]
        };
        let mut ingested = Store::new();
        for spans in parts() {
            ingest(&mut ingested, spans);
        }
        let mut applied = Store::new();
        for spans in parts() {
            applied.apply(Batch {
                spans,
                ..Default::default()
            });
        }
        let mut changed = applied.settle();
        changed.sort();
        assert_eq!(changed, ["t", "u"]);
        let rows = |store: &Store| {
            let inv = store.get("t").unwrap();
            inv.tree()
                .rows
                .iter()
                .map(|r| (inv.spans[r.span].span_id.clone(), r.depth, r.orphan))
                .collect::<Vec<_>>()
        };
        assert_eq!(rows(&applied), rows(&ingested));
        assert_eq!(rows(&applied)[1], ("child".to_string(), 1, false));
        assert!(applied.settle().is_empty(), "nothing left to settle");
    }

    #[test]
    fn budget_evicts_oldest_first_and_says_so() {
        let mut store = Store::with_budget(Budget {
            max_invocations: Some(2),
            max_bytes: None,
        });
        for t in ["a", "b", "c"] {
            ingest(&mut store, vec![span(t, "root", None, 1)]);
        }
        assert!(store.get("a").is_none());
        assert!(store.get("c").is_some());
        assert_eq!(store.stats().invocations_evicted, 1);
        assert_eq!(store.stats().invocations_seen, 3);
    }

    #[test]
    fn aliases_join_spans_into_another_invocation() {
        let mut store = Store::new();
        ingest(&mut store, vec![span("agents-trace", "x", None, 1)]);
        store.ingest(Batch {
            aliases: vec![("agents-trace".into(), "turn-1".into())],
            ..Default::default()
        });
        assert!(store.get("agents-trace").is_none());
        assert_eq!(store.get("turn-1").unwrap().spans.len(), 1);
        ingest(&mut store, vec![span("agents-trace", "y", Some("x"), 2)]);
        assert_eq!(store.get("turn-1").unwrap().spans.len(), 2);
    }
}
