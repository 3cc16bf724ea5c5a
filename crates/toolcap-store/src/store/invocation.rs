//! One invocation: adding spans (duplicates, stand-ins), its tree and summary kept current, its size.

use super::*;

impl Invocation {
    /// The evaluator's verdict on the run, when one was recorded.
    pub fn eval(&self) -> Option<&EvalVerdict> {
        self.extras.as_ref()?.eval.as_deref()
    }
    /// The gold trajectory the run is checked against, when it has one.
    pub fn gold(&self) -> Option<&GoldSpec> {
        self.extras.as_ref()?.gold.as_deref()
    }
    /// The name a format gave the run, where its root span's name is not a good one.
    pub fn display_name(&self) -> Option<&str> {
        self.extras.as_ref()?.display_name.as_deref()
    }
    pub fn set_eval(&mut self, eval: Option<EvalVerdict>) {
        self.set_eval_from(eval, None);
    }
    /// Sets the verdict and the file it came from with the run's spans (see
    /// `RunExtras::eval_origin`).
    pub fn set_eval_from(&mut self, eval: Option<EvalVerdict>, origin: Option<Arc<Origin>>) {
        self.change_extras(|extras| {
            extras.eval = eval.map(Box::new);
            extras.eval_origin = origin;
        });
    }
    /// The file the verdict came from with the run's spans, if it did.
    pub fn eval_origin(&self) -> Option<&Arc<Origin>> {
        self.extras.as_ref()?.eval_origin.as_ref()
    }
    pub fn set_gold(&mut self, gold: Option<GoldSpec>) {
        self.change_extras(|extras| extras.gold = gold.map(Box::new));
    }
    /// The evaluation case the run is, when its format names one.
    pub fn case(&self) -> Option<&crate::model::Case> {
        self.extras.as_ref()?.case.as_deref()
    }
    pub fn set_case(&mut self, case: Option<crate::model::Case>) {
        self.change_extras(|extras| extras.case = case.map(Box::new));
    }
    pub fn set_display_name(&mut self, name: Option<String>) {
        self.change_extras(|extras| extras.display_name = name.map(String::into_boxed_str));
    }

    /// Changes the extras, allocating them first when unset, and lets them go once empty.
    fn change_extras(&mut self, change: impl FnOnce(&mut super::RunExtras)) {
        change(super::extras_mut(&mut self.extras));
        if self.extras.as_ref().is_some_and(|extras| extras.is_empty()) {
            self.extras = None;
        }
    }

    /// Spans `0..built()` are in the tree.
    pub(super) fn built(&self) -> usize {
        self.built as usize
    }
    pub(super) fn set_built(&mut self, spans: usize) {
        // A run's spans are far fewer than `u32::MAX`: they are all in memory.
        self.built = u32::try_from(spans).unwrap_or(u32::MAX);
    }

    pub(super) fn links(&self) -> Option<&super::Links> {
        self.extras.as_ref()?.links.as_deref()
    }

    /// Lets growth's lookups go (and the extras with them when that empties them).
    fn drop_links(&mut self) {
        if self.links().is_some() {
            self.change_extras(|extras| extras.links = None);
        }
    }

    pub(super) fn new(id: Id, arrival: u64) -> Self {
        Invocation {
            id,
            arrival,
            ..Default::default()
        }
    }

    /// Its tree: the kept one, or, for a small run whose tree is not kept, one built now
    /// from its spans (the same tree: a few spans, microseconds).
    pub fn tree(&self) -> Cow<'_, Tree> {
        match &self.tree {
            Some(tree) => Cow::Borrowed(tree),
            None => Cow::Owned(build_tree(&self.spans, &self.span_index)),
        }
    }

    /// The kept tree, empty when there is none: what growth reads, which runs only on a kept
    /// tree.
    pub(super) fn kept(&self) -> &Tree {
        static EMPTY: std::sync::LazyLock<Tree> = std::sync::LazyLock::new(Tree::default);
        self.tree.as_deref().unwrap_or(&EMPTY)
    }
    pub fn summary(&self) -> &Summary {
        &self.summary
    }
    /// Its search index: an empty one (every span a candidate) while none is built.
    pub fn search_index(&self) -> &super::search_index::SearchIndex {
        static NONE_YET: std::sync::LazyLock<super::search_index::SearchIndex> =
            std::sync::LazyLock::new(Default::default);
        self.search.get().unwrap_or(&NONE_YET)
    }
    /// Builds its search index when it has none and its store indexes at all; the spans it
    /// indexed.
    pub(super) fn build_search_index(&self) -> usize {
        if self.indexing == Indexing::Never || self.search.get().is_some() {
            return 0;
        }
        self.search
            .get_or_init(|| super::search_index::SearchIndex::of(&self.spans));
        self.spans.len()
    }
    /// A copy whose search index is empty, so every query scans every span: what tests
    /// compare the indexed evaluation with.
    #[doc(hidden)]
    pub fn without_search_index(&self) -> Invocation {
        Invocation {
            search: OnceLock::new(),
            ..self.clone()
        }
    }
    /// The store generation in which this run last changed (spans, verdict, gold or name):
    /// a result computed at generation `g` is current for every run with `changed_at() <= g`,
    /// so a filter re-evaluates only the runs changed since.
    pub fn changed_at(&self) -> u64 {
        self.changed_at
    }
    pub fn span_by_id(&self, span_id: &(impl AsId + ?Sized)) -> Option<usize> {
        self.span_index.get(&self.spans, span_id)
    }
    /// The LLM span that asked for the call tool span `span` makes: the first of the run whose
    /// requested calls carry its call id, as [`ToolCallRequesters`] finds for every call at once
    /// (a walk, not a map: the detail pane asks on every move, of runs of any size).
    pub fn requester_of(&self, span: usize) -> Option<usize> {
        let call_id = self.spans.get(span)?.tool_call_id()?;
        self.spans.iter().position(|candidate| {
            candidate
                .requested_tool_calls()
                .iter()
                .any(|call| call.id.as_deref() == Some(call_id))
        })
    }
    /// Every tool call's requester in the run, found in one pass.
    pub fn tool_call_requesters(&self) -> ToolCallRequesters<'_> {
        ToolCallRequesters::of_spans(&self.spans)
    }
    /// One span's health. Builds the tree when it is not kept: to ask of many spans, take
    /// [`Invocation::tree`] once and ask it.
    pub fn health_of(&self, span: usize) -> Health {
        self.tree().health(span)
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
    pub(super) fn push(&mut self, span: Span) -> Pushed {
        if let Some(existing) = self.span_index.get(&self.spans, &span.span_id.id()) {
            let Some(slot) = self.spans.get_mut(existing) else {
                return Pushed::Duplicate;
            };
            // A provisional stand-in gives way to the real span with the same id.
            let stand_in_replaced = slot.is_provisional() && !span.is_provisional();
            // A stand-in arriving after its real span is the same call seen from another file:
            // the two join, and only facts they contradict are reported.
            let stand_in_late = span.is_provisional() && !slot.is_provisional();
            if stand_in_replaced || stand_in_late {
                let (real, stand_in) = if stand_in_replaced {
                    (&span, &*slot)
                } else {
                    (&*slot, &span)
                };
                let problem = contradiction(real, stand_in, &self.id);
                if stand_in_late {
                    return match problem {
                        Some(problem) => Pushed::Conflict {
                            problem,
                            replace: false,
                        },
                        None => Pushed::Duplicate,
                    };
                }
                self.approx_bytes = self.approx_bytes.saturating_sub(approx_span_bytes(slot))
                    + approx_span_bytes(&span);
                *slot = span;
                self.needs_rebuild = true;
                return match problem {
                    Some(problem) => Pushed::Conflict {
                        problem,
                        replace: true,
                    },
                    None => Pushed::Added,
                };
            }
            if same_content(slot, &span) {
                return Pushed::Duplicate;
            }
            let replace = span.status.is_error() && !slot.status.is_error();
            let problem = {
                let (kept, dropped) = if replace {
                    (&span, &*slot)
                } else {
                    (&*slot, &span)
                };
                Problem::warning(
                    origin_of(kept),
                    kept.line.map(crate::model::LineNumber::get),
                    format!(
                        "span {} of run {} appears twice with different content: kept the copy from {}{}, dropped the one from {}",
                        span.span_id,
                        self.id,
                        place_of(kept),
                        if replace {
                            " (it carries the failure)"
                        } else {
                            ""
                        },
                        place_of(dropped),
                    ),
                )
            };
            if replace {
                self.approx_bytes = self.approx_bytes.saturating_sub(approx_span_bytes(slot))
                    + approx_span_bytes(&span);
                *slot = span;
                self.needs_rebuild = true;
            }
            return Pushed::Conflict { problem, replace };
        }
        self.approx_bytes += approx_span_bytes(&span);
        self.has_stand_ins |= span.kind == SpanKind::Tool && span.is_provisional();
        self.spans.push(span);
        self.span_index.pushed(&self.spans);
        Pushed::Added
    }

    pub(super) fn retain_spans(&mut self, keep: impl Fn(&Span) -> bool) -> usize {
        let before = self.spans.len();
        self.spans.retain(keep);
        self.span_index = span_index::SpanIndex::of(&self.spans);
        self.approx_bytes = self.spans.iter().map(approx_span_bytes).sum();
        self.needs_rebuild = true;
        before - self.spans.len()
    }

    /// Brings tree and summary up to date: new spans join incrementally when they can,
    /// otherwise everything is rebuilt.
    /// Returns the parent cycles found that were not reported before, as problems: asked
    /// before a small run's tree is let go.
    pub(super) fn refresh(&mut self) -> Vec<Problem> {
        if !(self.can_grow() && self.grow()) {
            self.rebuild();
        }
        self.time_untimed_roots();
        let cycles = self.new_cycle_problems();
        self.trim_slack();
        cycles
    }

    /// Gives back the room vectors keep for growth, in small runs: most runs are a handful of
    /// spans, and a vector's spare room can be as big as its spans. Big runs keep theirs, so a
    /// run growing drain by drain is not copied every time. Small runs also drop growth's
    /// lookups and their tree: rebuilding them from a few spans is cheap, and the trees of many
    /// small runs add up to a large part of a store. The summary,
    /// made from the tree, stays.
    fn trim_slack(&mut self) {
        if self.spans.len() <= SMALL_RUN_SPANS {
            self.drop_links();
            self.spans.shrink_to_fit();
            if !self.keeps_tree {
                self.tree = None;
            }
        }
        if let Some(search) = self.search.get_mut() {
            search.trim_slack(SMALL_RUN_SPANS);
        }
    }

    /// Rebuilds tree, health, links and summary. O(n log n) in the invocation's span count.
    pub(super) fn rebuild(&mut self) {
        // Stand-ins are flagged as they arrive: a run without one is not searched for them.
        let covered = match self.has_stand_ins {
            true => covered_stand_ins(&self.spans),
            false => HashSet::default(),
        };
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
        self.tree = Some(Box::new(build_tree(&self.spans, &self.span_index)));
        self.summary = summarize(self);
        self.search = OnceLock::new();
        if self.indexing == Indexing::Now {
            self.build_search_index();
        }
        self.work += self.spans.len() as u64;
        self.set_built(self.spans.len());
        self.has_stand_ins = self.has_stand_ins
            && self
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
        // Growth recomputes what it looks up from the rebuilt tree when it next needs it.
        self.drop_links();
    }

    /// What growth looks up, from the spans already in the tree (`0..built`).
    pub(super) fn compute_links(&self) -> Links {
        let mut links = Links::default();
        for &r in &self.kept().roots {
            // A parent that arrived after the build is still missing from the tree.
            if let Some(missing) = named_parent(&self.spans[r])
                && (self.span_index.get(&self.spans, missing)).is_none_or(|p| p >= self.built())
            {
                links.waiting.entry(missing.id()).or_default().push(r);
            }
        }
        links
    }

    /// Parent cycles not reported before, as problems.
    fn new_cycle_problems(&mut self) -> Vec<Problem> {
        let mut out = Vec::new();
        let cycles: &[ThinVec<usize>] = self.tree.as_deref().map_or(&[], |t| &t.cycles);
        for cycle in cycles {
            let mut ids: Vec<String> = cycle
                .iter()
                .map(|&i| self.spans[i].span_id.to_string())
                .collect();
            let chain = ids.join(" → ");
            ids.sort_unstable();
            let extras = super::extras_mut(&mut self.extras);
            let reported = extras.reported_cycles.get_or_insert_with(Box::default);
            if !reported.insert(ids.join(",")) {
                continue;
            }
            let first = &self.spans[cycle[0]];
            out.push(Problem::warning(
                origin_of(first),
                first.line.map(crate::model::LineNumber::get),
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
pub(super) enum Pushed {
    Added,
    Duplicate,
    /// Same id, different content: `replace` says the new copy was kept.
    Conflict {
        problem: Problem,
        replace: bool,
    },
}

/// Where a span was read, for problems that name both copies of a duplicate.
pub(super) fn place_of(span: &Span) -> String {
    match (span.origin(), span.line) {
        (Some(origin), Some(line)) => format!("{origin}:{line}"),
        (Some(origin), None) => origin.to_string(),
        (None, _) => "an unknown source".to_owned(),
    }
}

/// The file or endpoint a span was read from, without its line: a problem carries the line
/// apart, and its text adds it once.
fn origin_of(span: &Span) -> String {
    match span.origin() {
        Some(origin) => origin.to_string(),
        None => "an unknown source".to_owned(),
    }
}

/// What a stand-in (a tool call known from a flattened record) says that its real span
/// contradicts: another tool, or other arguments. Where they were read, timing, status and
/// the fields only one of them records are not contradictions; arguments that are not both
/// readable JSON are not compared.
fn contradiction(real: &Span, stand_in: &Span, run: &Id) -> Option<Problem> {
    let arguments = |s: &Span| {
        s.input()
            .inline_text()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
    };
    let facts = if real.tool_name() != stand_in.tool_name() {
        "tool names"
    } else {
        match (arguments(real), arguments(stand_in)) {
            (Some(a), Some(b)) if a != b => "arguments",
            _ => return None,
        }
    };
    Some(Problem::warning(
        origin_of(real),
        real.line.map(crate::model::LineNumber::get),
        format!(
            "call {} of run {run} has different {facts} in {} and in {}: kept the trace's span",
            real.span_id,
            place_of(real),
            place_of(stand_in),
        ),
    ))
}

/// Two copies of a span say the same thing (where each was read from does not count;
/// payloads compare by state and size, since the same value sits at different places).
pub(super) fn same_content(a: &Span, b: &Span) -> bool {
    let payload = |x: &crate::model::Payload, y: &crate::model::Payload| {
        x.state == y.state && x.bytes == y.bytes && x.field == y.field
    };
    a.trace_id == b.trace_id
        && a.parent_span_id == b.parent_span_id
        && a.name == b.name
        && a.kind == b.kind
        && a.status == b.status
        && a.error() == b.error()
        // A span without a time of its own holds the time the store gave it.
        && ((a.start_unix_nano == b.start_unix_nano && a.end_unix_nano == b.end_unix_nano)
            || (a.is_untimed() && b.is_untimed()))
        && a.llm() == b.llm()
        && a.tool() == b.tool()
        && payload(&a.input(), &b.input())
        && payload(&a.output(), &b.output())
        && a.events().len() == b.events().len()
        && a.attributes.len() == b.attributes.len()
        && a.attributes
            .iter()
            .zip(&b.attributes)
            .all(|((ka, va), (kb, vb))| {
                ka == kb
                    && match (&*va, &*vb) {
                        (
                            crate::model::AttrValue::Payload(x),
                            crate::model::AttrValue::Payload(y),
                        ) => payload(x, y),
                        _ => va == vb,
                    }
            })
}

pub(super) fn approx_span_bytes(span: &Span) -> u64 {
    // Only a payload the span holds itself can be inline: one kept in its attribute list is a
    // range (and reading it back there, for every span stored, would slow every load).
    let inline = |slot: &crate::model::PayloadSlot| match slot.holder().map(|p| &p.body) {
        Some(PayloadBody::Inline(t)) => t.len() as u64,
        _ => 0,
    };
    let attrs = span.attributes.approx_bytes();
    std::mem::size_of::<Span>() as u64
        + span.name.len() as u64
        + inline(span.input_slot())
        + inline(span.output_slot())
        + attrs
        + span.events().len() as u64 * 64
}
