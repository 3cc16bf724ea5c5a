//! The store: spans grouped into invocations, each with a tree that is rebuilt when its spans
//! change. Children may arrive before parents; duplicate ids and parent cycles are tolerated.
//!
//! The store never renders and never parses: sources hand it [`Batch`]es, views read
//! [`Invocation`]s, their [`Tree`]s and [`Summary`]s.

// Ids come from untrusted input, so the maps keyed by them hash with a random per-process seed;
// foldhash is several times quicker than std's SipHash on short keys.
use foldhash::{HashMap, HashSet};
use std::borrow::Cow;
use std::cmp::Reverse;
use std::path::Path;
use std::sync::{Arc, OnceLock};

mod budget;
mod grow;
mod invocation;
mod memory;
mod refresh;
#[doc(hidden)]
pub mod sample_runs;
pub mod search_index;
mod span_index;
mod summary;
mod tree;

pub use budget::Budget;
use grow::{by_start, named_parent, root_order};
use invocation::*;
pub use memory::MemoryBreakdown;
use summary::*;
use tree::*;
pub use tree::{ToolCallRequesters, Tree, TreeRow};

use thin_vec::ThinVec;

use crate::model::{
    ArcStr, AsId, Batch, EvalVerdict, GoldSpec, Health, Id, Origin, PayloadBody, Problem,
    ScorerRule, Span, SpanKind,
};

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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KindCounts {
    pub spans: u32,
    pub llm: u32,
    pub tool: u32,
    pub embedding: u32,
    pub rerank: u32,
    pub retrieval: u32,
    pub agent: u32,
    pub node: u32,
    pub other: u32,
    pub errors: u32,
}

impl KindCounts {
    pub fn of(&self, kind: SpanKind) -> usize {
        (match kind {
            SpanKind::Llm => self.llm,
            SpanKind::Tool => self.tool,
            SpanKind::Embedding => self.embedding,
            SpanKind::Rerank => self.rerank,
            SpanKind::Retrieval => self.retrieval,
            SpanKind::Agent => self.agent,
            SpanKind::Node => self.node,
            SpanKind::Other => self.other,
        }) as usize
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
        *slot = slot.saturating_add(1);
    }
}

/// One call of the actual trajectory. Its name and call id are its span's
/// ([`ToolCallRef::name`], [`ToolCallRef::call_id`]): a run holds no copy of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRef {
    /// Index of the tool span in [`Invocation::spans`] ([`ToolCallRef::span`]). Four bytes, and
    /// the span's start read from the span when calls are ordered, so that a call is 8 bytes
    /// (a run of four calls holds a 64-byte list rather than a 96-byte one).
    span: u32,
    pub failed: bool,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Shared with the root span's name when it is that.
    pub name: ArcStr,
    pub health: Health,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    pub counts: KindCounts,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Tool spans in start-time order.
    pub tool_calls: ThinVec<ToolCallRef>,
    /// A `u32` beside the one-byte fields: a `usize` would make every run's summary 8 bytes
    /// bigger.
    pub failed_tool_calls: u32,
    /// Formats its spans came from, in first-seen order (see [`Summary::formats`]).
    formats: FormatList,
    /// The conversation or session this run is a turn of (see [`conversation_of`]).
    pub conversation: Option<ArcStr>,
    /// The turn's number within its conversation, when the format records one.
    pub turn: Option<u64>,
    /// Which keys named the conversation and the turn, so spans that arrive later can be
    /// weighed against them without reading the run again (see `summary::ConversationFacts`).
    conversation_rank: Option<summary::KeyRank>,
    turn_rank: Option<summary::KeyRank>,
}

impl Summary {
    /// Names of the formats its spans came from, in first-seen order.
    pub fn formats(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.formats.iter().map(|format| format.as_str())
    }
    /// Input plus output tokens (saturating: the counts come from the trace).
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    pub fn duration_ms(&self) -> f64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano) as f64 / 1e6
    }

    /// The attribute that named [`Summary::conversation`]: the most specific of
    /// `summary::CONVERSATION_KEYS` any span holds a non-blank value of (`None` for none, or
    /// for an openai-agents `group_id`).
    pub fn conversation_key(&self) -> Option<&'static str> {
        summary::CONVERSATION_KEYS
            .get(self.conversation_rank?.index())
            .copied()
    }
}

impl ToolCallRef {
    /// The call made by tool span `span`, at index `index` of its run.
    fn of(span: &Span, index: usize) -> ToolCallRef {
        ToolCallRef {
            // A run's spans are far fewer than `u32::MAX`: they are all in memory. Were one
            // past it, its call would name no span rather than a wrong one.
            span: u32::try_from(index).unwrap_or(u32::MAX),
            failed: span.status.is_error(),
        }
    }

    /// Index of the tool span in [`Invocation::spans`] (its id is that span's).
    pub fn span(&self) -> usize {
        self.span as usize
    }

    /// The tool it called: its span's tool name, else the span's name. `spans` are its
    /// run's ([`Invocation::spans`]); empty when the span is not there.
    pub fn name<'a>(&self, spans: &'a [Span]) -> &'a str {
        spans
            .get(self.span())
            .map_or("", |span| span.tool_name().unwrap_or(span.name.as_str()))
    }

    /// The call id its span carries, if any.
    pub fn call_id<'a>(&self, spans: &'a [Span]) -> Option<&'a str> {
        spans.get(self.span())?.tool_call_id()
    }
}

/// Lengths of the runs of consecutive spans with the same trace id, in order.
fn same_trace_groups(spans: &[Span]) -> Vec<usize> {
    let mut groups = Vec::new();
    let mut start = 0;
    for i in 1..=spans.len() {
        if i == spans.len() || spans[i].trace_id != spans[start].trace_id {
            groups.push(i - start);
            start = i;
        }
    }
    groups
}

/// One agent run: an OTLP trace, an openai-agents trace, an arksim turn, a message log.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    pub id: Id,
    pub spans: ThinVec<Span>,
    span_index: span_index::SpanIndex,
    /// Verdict, gold, display name, growth's lookups and reported cycles: absent from most
    /// runs, so out of line together and a run without them pays one pointer (read them with
    /// [`Invocation::eval`], [`Invocation::gold`] and [`Invocation::display_name`]).
    extras: Option<Box<RunExtras>>,
    /// Order of arrival across the store, for oldest-first eviction.
    pub arrival: u64,
    pub approx_bytes: u64,
    /// Big runs keep theirs, so spans arriving later join it incrementally; a small run lets
    /// it go once settled (see `Invocation::trim_slack`) and [`Invocation::tree`] builds it
    /// when asked. Boxed: most runs are small, and hold a pointer instead of four.
    tree: Option<Box<Tree>>,
    /// Keeps its tree however small it is (see [`Store::keeping_every_tree`]).
    keeps_tree: bool,
    summary: Summary,
    /// What queries search the spans by; grows with the tree. Unset while it waits to be built
    /// (a store that indexes later, see [`Indexing::Later`]): queries then test every span. A
    /// once-cell, so it is built through a shared reference while lists and queries hold the
    /// run.
    search: OnceLock<search_index::SearchIndex>,
    /// Spans `0..built` are in the tree; later ones join it at the next settle (a `u32`, as
    /// [`ToolCallRef`]'s span index: a run's spans are all in memory).
    built: u32,
    /// The next settle rebuilds from scratch: a span was replaced or removed.
    needs_rebuild: bool,
    /// Latest end time of any span (the summary's end is never before its start).
    latest_end: u64,
    /// Spans placed into the tree so far, for [`StoreStats::tree_work`].
    work: u64,
    /// Some span is a provisional tool stand-in (see [`covered_stand_ins`]).
    has_stand_ins: bool,
    /// When its search index is built (its store's [`Indexing`]).
    indexing: Indexing,
    /// The store generation its last change was settled in (see [`Invocation::changed_at`]).
    changed_at: u64,
}

/// What few runs have (see `Invocation::extras`).
#[derive(Debug, Clone, Default)]
struct RunExtras {
    eval: Option<Box<EvalVerdict>>,
    /// The file the verdict came from with the run's own spans (an Inspect sample), which
    /// takes it along when forgotten; `None` for a verdict of its own file (arksim's
    /// evaluation), which stays while the spans' file is read again.
    eval_origin: Option<Arc<Origin>>,
    gold: Option<Box<GoldSpec>>,
    display_name: Option<Box<str>>,
    /// The evaluation case the run is (see [`crate::model::Case`]).
    case: Option<Box<crate::model::Case>>,
    /// What incremental growth looks up. Small runs drop it after each settle and the next
    /// growth recomputes it from their few spans; big runs keep it (see `Invocation::trim`).
    links: Option<Box<Links>>,
    /// Cycles already reported as problems, by their sorted span ids. Boxed: an empty set is
    /// 48 bytes, and almost no run has a cycle.
    #[allow(clippy::box_collection)]
    reported_cycles: Option<Box<HashSet<String>>>,
}

impl RunExtras {
    fn is_empty(&self) -> bool {
        self.eval.is_none()
            && self.eval_origin.is_none()
            && self.gold.is_none()
            && self.display_name.is_none()
            && self.case.is_none()
            && self.links.is_none()
            && self.reported_cycles.is_none()
    }
}

/// The run's extras, allocated on first write.
fn extras_mut(extras: &mut Option<Box<RunExtras>>) -> &mut RunExtras {
    extras.get_or_insert_with(Box::default)
}

/// The lookups incremental growth needs between settles, out of line (see `RunExtras::links`).
#[derive(Debug, Clone, Default)]
struct Links {
    /// Orphan roots by the parent id they wait for.
    waiting: HashMap<Id, Vec<usize>>,
}

/// The run's links, allocated on first write.
fn links_mut(extras: &mut Option<Box<RunExtras>>) -> &mut Links {
    extras_mut(extras).links.get_or_insert_with(Box::default)
}

/// All invocations, problems and running totals.
#[derive(Debug, Default)]
pub struct Store {
    /// Behind a pointer: the map keeps up to half its slots empty, and an invocation is several
    /// hundred bytes, so empty slots hold a pointer's worth rather than an invocation's. Shared
    /// (`Arc`), so a query running on another thread can hold a snapshot of the runs while
    /// ingest goes on: a run changed while a snapshot holds it is copied once (`make_mut`).
    invocations: HashMap<Id, Arc<Invocation>>,
    aliases: HashMap<Id, Id>,
    problems: Vec<Problem>,
    stats: StoreStats,
    budget: Budget,
    arrivals: u64,
    /// Bumped on every change, so views can redraw only when something changed.
    generation: u64,
    evicted_ids: HashSet<Id>,
    /// Runs removed so far, by eviction or with their file: indexes kept beside the store
    /// update themselves run by run until this moves.
    runs_removed: u64,
    /// Invocations changed by [`Store::apply`] and not yet rebuilt by [`Store::settle`].
    unsettled: HashSet<Id>,
    /// Whether [`Store::apply`] took in a batch since the last [`Store::settle`] (a batch may
    /// change the store without changing a run: its problems, aliases that move nothing).
    applied_since_settle: bool,
    /// When runs build their search index.
    indexing: Indexing,
    /// Runs settled since their index was last built, for [`Store::build_search_indexes`]
    /// (a run may be named twice; one whose index is built is skipped).
    awaiting_index: Vec<Id>,
    /// Small runs keep their tree too (see [`Store::keeping_every_tree`]).
    keeps_every_tree: bool,
    /// Which scorers decide a verdict made of several (`--scorer`), applied as evaluations
    /// arrive.
    scorer_rule: ScorerRule,
    /// The triage notes of the runs, read from their sidecar; shared so a query on another
    /// thread reads the notes of its snapshot.
    notes: Arc<crate::notes::Notes>,
    /// Bumped by every [`Store::set_notes`]: results that depend on notes know they are stale.
    notes_version: u64,
}

/// When a run's search index is built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Indexing {
    /// At every settle that changes the run.
    #[default]
    Now,
    /// By [`Store::build_search_indexes`], after the settle; until then queries test every span.
    Later,
    /// Never: the store is read once (`dump`, `check`).
    Never,
}

/// Runs of at most this many spans are small: once settled they give back the room kept for
/// growth, their growth lookups and their tree, rebuilt when asked for or when the run grows
/// (at most this many spans placed again; bigger runs grow incrementally).
pub const SMALL_RUN_SPANS: usize = 256;

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    /// A store whose runs build no search index, for a command that reads the store once
    /// (`dump`, `check`): a query then tests every span, which costs one pass, while the
    /// index would cost a pass to build and then be read once — a large part of settling a
    /// load. Queries find the same spans either way (the index only narrows).
    pub fn unindexed() -> Self {
        Store {
            indexing: Indexing::Never,
            ..Default::default()
        }
    }

    /// A store whose settles leave search indexes to [`Store::build_search_indexes`], for the
    /// TUI: reading a big file then lists every run without first indexing it, and the
    /// indexes are built in steps once the app is idle. Queries find the same spans before
    /// (the index only narrows which spans they test).
    pub fn indexing_later(mut self) -> Self {
        self.indexing = Indexing::Later;
        self
    }

    /// A store whose evaluations made of several scorers are decided by `rule`'s (Inspect's
    /// `--scorer`); set before anything is applied.
    pub fn deciding_by(mut self, rule: ScorerRule) -> Self {
        self.scorer_rule = rule;
        self
    }

    /// The rule that decides evaluations made of several scorers (see [`Store::deciding_by`]).
    pub fn scorer_rule(&self) -> &ScorerRule {
        &self.scorer_rule
    }

    /// Whether some settled run still waits for its search index.
    pub fn has_search_indexes_to_build(&self) -> bool {
        !self.awaiting_index.is_empty()
    }

    /// Builds the search indexes of runs waiting for one, until about `span_budget` spans are
    /// indexed; true when some are left. Runs held by lists or queries are not copied: the
    /// index is set through the shared run.
    pub fn build_search_indexes(&mut self, span_budget: usize) -> bool {
        let mut indexed = 0;
        while indexed < span_budget {
            let Some(id) = self.awaiting_index.pop() else {
                break;
            };
            if let Some(run) = self.invocations.get(&id) {
                indexed += run.build_search_index();
            }
        }
        self.has_search_indexes_to_build()
    }

    /// A store whose small runs keep their tree between settles, as big runs do, so spans
    /// arriving later join it incrementally: what tests of incremental growth use. A store
    /// from [`Store::new`] drops a small run's tree once its summary is made and builds it
    /// again when asked ([`Invocation::tree`]) or when the run grows.
    #[doc(hidden)]
    pub fn keeping_every_tree() -> Self {
        Store {
            keeps_every_tree: true,
            ..Default::default()
        }
    }

    pub fn with_budget(budget: Budget) -> Self {
        Store {
            budget,
            ..Default::default()
        }
    }

    /// How many runs have left the store (evicted, or emptied with their file) so far.
    pub fn runs_removed(&self) -> u64 {
        self.runs_removed
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
    pub fn get(&self, id: &(impl AsId + ?Sized)) -> Option<&Invocation> {
        self.invocations.get(&*id.as_id()).map(Arc::as_ref)
    }
    pub fn invocations(&self) -> impl Iterator<Item = &Invocation> {
        self.invocations.values().map(Arc::as_ref)
    }
    /// The runs as shared handles: a snapshot another thread can read while the store changes.
    pub fn shared_invocations(&self) -> impl Iterator<Item = &Arc<Invocation>> {
        self.invocations.values()
    }

    /// Invocations newest first (by start time, then id, so the order is stable).
    pub fn newest_first(&self) -> Vec<&Invocation> {
        // Sorted by keys held beside each run: comparing runs themselves reached two runs'
        // memory at every comparison. Run ids are distinct, so the order is total.
        let key = |run: &Invocation| (Reverse(run.summary.start_unix_nano), run.id.order_key());
        let mut keyed: Vec<_> = self.invocations.values().map(|r| (key(r), &**r)).collect();
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
        keyed.into_iter().map(|(_, run)| run).collect()
    }

    /// Invocations oldest first: the order `dump` prints.
    pub fn oldest_first(&self) -> Vec<&Invocation> {
        let mut list = self.newest_first();
        list.reverse();
        list
    }

    /// The runs' triage notes (none until [`Store::set_notes`]).
    pub fn notes(&self) -> &crate::notes::Notes {
        &self.notes
    }

    /// The notes as a shared handle, for a query running on another thread.
    pub fn shared_notes(&self) -> Arc<crate::notes::Notes> {
        Arc::clone(&self.notes)
    }

    /// Puts `notes` in force (the sidecar read again); views that show notes redraw. The
    /// problems met reading them join the store's, in place of those of the notes before.
    pub fn set_notes(&mut self, notes: crate::notes::Notes) {
        let before = &self.notes.problems;
        if !before.is_empty() {
            self.problems.retain(|p| !before.contains(p));
        }
        self.problems.extend(notes.problems.iter().cloned());
        self.notes = Arc::new(notes);
        self.notes_version += 1;
        self.generation += 1;
    }

    /// How many times notes were put in force.
    pub fn notes_version(&self) -> u64 {
        self.notes_version
    }

    pub fn add_problem(&mut self, problem: Problem) {
        self.problems.push(problem);
        self.generation += 1;
    }

    fn resolve(&self, trace_id: &Id) -> Id {
        let mut id = trace_id;
        // Follow alias chains a few steps; a cycle of aliases just stops.
        for _ in 0..4 {
            match self.aliases.get(id) {
                Some(next) if next != id => id = next,
                _ => break,
            }
        }
        id.clone()
    }

    /// Takes in one parser's output. Returns the ids of invocations that changed.
    pub fn ingest(&mut self, batch: Batch) -> Vec<Id> {
        self.apply(batch);
        self.settle()
    }

    /// Takes in a batch without rebuilding trees: a live source's drain of many small batches
    /// into one big run then costs one rebuild ([`Store::settle`]) instead of one per batch.
    /// Trees and summaries of changed invocations are stale until `settle`.
    pub fn apply(&mut self, mut batch: Batch) {
        self.applied_since_settle = true;
        if let Some(path) = batch.replaces.take() {
            self.remove_origin(&path);
        }
        if let Some(path) = batch.renews_notes.take() {
            self.problems.retain(|p| !p.is_note_of(&path));
        }
        let mut dirty = std::mem::take(&mut self.unsettled);
        for (from, to) in batch.aliases {
            if from == to {
                continue;
            }
            let (from, to) = (Id::from(from), Id::from(to));
            // Spans already stored under the aliased id move to their real invocation.
            if let Some(moved) = self.invocations.remove(&from) {
                self.runs_removed += 1;
                let target = self.resolve(&to);
                let moved = Arc::unwrap_or_clone(moved);
                let count = moved.spans.len();
                self.insert_spans(&target, moved.spans.into_iter(), count, &mut dirty);
                if let Some(moved) = moved.extras
                    && (moved.eval.is_some() || moved.gold.is_some())
                {
                    let inv = self.entry(&target);
                    if inv.eval().is_none() {
                        inv.set_eval(moved.eval.map(|eval| *eval));
                    }
                    if inv.gold().is_none() {
                        inv.set_gold(moved.gold.map(|gold| *gold));
                    }
                }
            }
            self.aliases.insert(from, to);
        }
        // A batch holds each trace's spans side by side: a new run gets room for exactly its
        // group, so most runs are allocated once. Pushing one by one would grow a one-span run
        // to four spans' room, and trimming it would leave a hole the allocator keeps but
        // cannot use.
        let groups = same_trace_groups(&batch.spans);
        let mut spans = batch.spans.into_iter();
        // Where the runs given a verdict in this batch have their spans from.
        let mut origin_of: HashMap<Id, Arc<Origin>> = HashMap::default();
        for group in groups {
            let Some(first) = spans.as_slice().first() else {
                break;
            };
            let target = self.resolve(&first.trace_id.id());
            self.stats.spans_seen += group as u64;
            let wants_origin = !batch.evals.is_empty() && !origin_of.contains_key(&target);
            let mut origin = None;
            let group_spans = spans.by_ref().take(group).inspect(|span| {
                if wants_origin && origin.is_none() {
                    origin = span.provenance.as_ref().and_then(|p| p.origin.clone());
                }
            });
            self.insert_spans(&target, group_spans, group, &mut dirty);
            if let Some(origin) = origin {
                origin_of.insert(target, origin);
            }
        }
        for (id, mut eval) in batch.evals {
            self.scorer_rule.decide(&mut eval);
            let target = self.resolve(&Id::from(id));
            let entry = self.entry(&target);
            let origin = origin_of.get(&target).cloned();
            let disagreement = entry
                .eval()
                .filter(|held| **held != eval)
                .map(|held| (held.passed, describe_verdict(held)));
            match disagreement {
                None => entry.set_eval_from(Some(eval), origin),
                Some((held_passed, held)) => {
                    let new = describe_verdict(&eval);
                    // Two evaluations of one run that disagree: the failing verdict is shown, so
                    // the run never looks greener than one of its judges said.
                    if held_passed || !eval.passed {
                        entry.set_eval_from(Some(eval), origin);
                    }
                    self.problems.push(Problem::warning(
                        format!("run {target}"),
                        None,
                        format!(
                            "two evaluations judged this run differently ({held}; {new}): \
                             the failing one is shown, both evaluation spans are in its tree"
                        ),
                    ));
                }
            }
            dirty.insert(target);
        }
        for (id, gold) in batch.golds {
            let target = self.resolve(&Id::from(id));
            self.entry(&target).set_gold(Some(gold));
            dirty.insert(target);
        }
        for (id, case) in batch.cases {
            let target = self.resolve(&Id::from(id));
            self.entry(&target).set_case(Some(case));
            dirty.insert(target);
        }
        for (id, name) in batch.invocation_names {
            let target = self.resolve(&Id::from(id));
            self.entry(&target).set_display_name(Some(name));
            dirty.insert(target);
        }
        self.problems.extend(batch.problems);
        self.unsettled = dirty;
    }

    /// Rebuilds what [`Store::apply`] changed, enforces the budget, and returns the ids of the
    /// invocations that changed. With no batch applied since the last settle it changes
    /// nothing, not even the generation: views keyed on it are not rebuilt.
    pub fn settle(&mut self) -> Vec<Id> {
        self.settle_with(refresh::PARALLEL_MIN_RUNS)
    }

    /// [`Store::settle`], refreshing changed runs on every core when at least
    /// `parallel_min_runs` changed (tests compare both ways).
    fn settle_with(&mut self, parallel_min_runs: usize) -> Vec<Id> {
        if !std::mem::take(&mut self.applied_since_settle) {
            return Vec::new();
        }
        let unsettled: Vec<Id> = std::mem::take(&mut self.unsettled).into_iter().collect();
        let changed = crate::model::sort_by_id(unsettled, |id| id);
        for (work, cycles) in self.refresh_changed(&changed, self.generation + 1, parallel_min_runs)
        {
            self.stats.tree_work += work;
            self.problems.extend(cycles);
        }
        self.recount();
        self.enforce_budget();
        self.generation += 1;
        if self.indexing == Indexing::Later {
            self.awaiting_index.extend(changed.iter().cloned());
            // A run changed at every settle is named once per settle until the steps run:
            // names past twice the runs are duplicates.
            if self.awaiting_index.len() > 2 * self.invocations.len() {
                self.awaiting_index.sort_unstable();
                self.awaiting_index.dedup();
            }
        }
        changed
    }

    fn entry(&mut self, id: &Id) -> &mut Invocation {
        if !self.invocations.contains_key(id) {
            self.arrivals += 1;
            self.stats.invocations_seen += 1;
            let mut run = Invocation::new(id.clone(), self.arrivals);
            run.indexing = self.indexing;
            run.keeps_tree = self.keeps_every_tree;
            self.invocations.insert(id.clone(), Arc::new(run));
        }
        Arc::make_mut(self.invocations.get_mut(id).expect("inserted above"))
    }

    /// Puts `count` spans of one trace into its run `target`, found once for them all. A new
    /// run gets room for exactly them, one that grows amortized room (a run fed a span per
    /// batch must not be copied at every batch).
    fn insert_spans(
        &mut self,
        target: &Id,
        spans: impl Iterator<Item = Span>,
        count: usize,
        dirty: &mut HashSet<Id>,
    ) {
        if self.evicted_ids.contains(target) {
            // Late spans of an evicted run would resurrect a fragment of it; count them instead.
            self.stats.spans_evicted += spans.count() as u64;
            return;
        }
        let run = self.entry(target);
        if run.spans.is_empty() {
            run.spans.reserve_exact(count);
        } else {
            run.spans.reserve(count);
        }
        let (mut changed, mut duplicates, mut problems) = (false, 0, Vec::new());
        for mut span in spans {
            span.pack();
            match run.push(span) {
                Pushed::Added => changed = true,
                Pushed::Duplicate => duplicates += 1,
                Pushed::Conflict { problem, replace } => {
                    duplicates += 1;
                    problems.push(problem);
                    changed |= replace;
                }
            }
        }
        self.stats.duplicate_spans += duplicates;
        self.problems.extend(problems);
        if changed {
            dirty.insert(target.clone());
        }
    }

    /// Forgets every span read from `path` (a file truncated or rewritten is re-read whole).
    pub fn remove_origin(&mut self, path: &Path) {
        let origin = Origin::File(Arc::new(path.to_path_buf()));
        let mut emptied = Vec::new();
        for (id, inv) in self.invocations.iter_mut() {
            let from_origin = |s: &Span| s.origin() == Some(&origin);
            let verdict_from_origin = inv.eval_origin().is_some_and(|o| **o == origin);
            if !verdict_from_origin && !inv.spans.iter().any(from_origin) {
                continue;
            }
            let inv = Arc::make_mut(inv);
            inv.changed_at = self.generation + 1;
            if verdict_from_origin {
                inv.set_eval_from(None, None);
            }
            let removed = inv.retain_spans(|s| !from_origin(s));
            if removed > 0 || verdict_from_origin {
                if inv.spans.is_empty() && inv.eval().is_none() && inv.gold().is_none() {
                    emptied.push(id.clone());
                } else {
                    // Rebuilds: removing spans marked the run for it.
                    let cycles = inv.refresh();
                    self.problems.extend(cycles);
                    if self.indexing == Indexing::Later {
                        self.awaiting_index.push(id.clone());
                    }
                }
            }
        }
        for id in emptied {
            if self.invocations.remove(&id).is_some() {
                self.runs_removed += 1;
            }
        }
        self.problems
            .retain(|p| p.source != path.display().to_string());
        self.recount();
        self.generation += 1;
    }
}

#[cfg(test)]
mod size_tests;
#[cfg(test)]
mod tests;

/// A verdict in a few words, for a problem that names two of them.
fn describe_verdict(verdict: &EvalVerdict) -> String {
    let mut text = if verdict.passed { "passed" } else { "failed" }.to_owned();
    if !verdict.label.is_empty() {
        text.push_str(&format!(" `{}`", verdict.label));
    }
    if let Some(score) = verdict.score {
        text.push_str(&format!(" score {score}"));
    }
    text
}
