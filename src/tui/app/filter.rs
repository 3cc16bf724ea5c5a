//! The list filter, off the UI thread: which runs the search matches, evaluated by the query
//! worker ([`crate::query::worker`]) when there are many runs to look at, and kept current as
//! the store changes by re-evaluating only the runs changed since.
//!
//! - A new query over more than [`ListFilter::inline_runs`] runs goes to the worker; the list
//!   keeps showing the previous result (never an empty screen) until a screenful of the new
//!   one has arrived in list order, then grows as more arrives (each time it has doubled, up
//!   to [`SCREENS_WHILE_SEARCHING`] screens: more is more than anyone scrolls through before
//!   the search ends, and each rebuild of a long list takes the UI thread from the worker),
//!   and is whole when the last block is in.
//! - A query that extends the previous one ([`Query::narrows`]) looks only at the previous
//!   matches (and the runs changed since); one typed before the previous search finished looks
//!   only at what that search had not ruled out yet, and the rows it showed stay on screen
//!   until the new one has a screenful.
//! - A store change re-evaluates only the runs whose [`Invocation::changed_at`] is newer than
//!   the result: an ingest drain never re-runs the query over every run.
//! - Small sets (a few hundred runs: well under a frame) are evaluated inline, so a small store
//!   answers within the key press, as before.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use super::{App, SortKey};
use crate::query::worker::{self, Assembly, Chunk, GoldSnapshot, QueryWorker, Request};
use crate::query::{Context, Query};
use crate::redact::Reveal;
use crate::store::Invocation;

/// Screens of rows a search's list grows to before its last block is in.
pub const SCREENS_WHILE_SEARCHING: usize = 16;

/// Runs evaluated on the UI thread at most (a few milliseconds); more go to the worker.
pub const INLINE_RUNS: usize = 1_000;

/// What a result is the result of: the query text, the reveal mode (payload text is searched
/// only while revealed) and the notes in force (`label:`, `is:noted`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Want {
    text: String,
    reveal: Reveal,
    notes: u64,
}

/// A complete result: which runs matched `query` as of store generation `as_of`.
struct Applied {
    want: Want,
    query: Query,
    as_of: u64,
    /// `None`: every run (the empty query).
    matched: Option<Matched>,
}

/// The runs a result matched: as the evaluation handed them over (list order, no id copied:
/// copying and hashing 100,000 ids cost more than evaluating them), or as a set of ids, which
/// an update after a store change edits run by run.
enum Matched {
    /// Every match, as of the result's store generation, in list order.
    InOrder(Vec<Arc<Invocation>>),
    Ids(HashSet<String>),
}

impl Matched {
    /// The matches as a set of ids (made once from the runs when first asked for).
    fn ids(&mut self) -> &mut HashSet<String> {
        if let Matched::InOrder(runs) = self {
            *self = Matched::Ids(runs.iter().map(|inv| inv.id.to_string()).collect());
        }
        match self {
            Matched::Ids(ids) => ids,
            Matched::InOrder(_) => unreachable!("made a set just above"),
        }
    }

    /// Whether `inv` is a match. Linear in the matches until [`Matched::ids`] was asked for.
    fn contains(&self, inv: &Invocation) -> bool {
        match self {
            Matched::InOrder(runs) => runs.iter().any(|r| std::ptr::eq(r.as_ref(), inv)),
            Matched::Ids(ids) => ids.contains(&*inv.id.text()),
        }
    }
}

/// An evaluation on the worker.
struct Running {
    want: Want,
    query: Query,
    /// A new query's result (else: the changed runs of the applied result, re-evaluated).
    replaces: bool,
    as_of: u64,
    runs: Arc<[Arc<Invocation>]>,
    assembly: Assembly,
    /// How many of the new query's matches the list shows (0: still the previous result).
    shown: usize,
    /// Matches that fill the list pane: the first moment worth showing.
    screenful: usize,
}

/// The filter's state: the result in force, the evaluation running, and the worker.
pub struct ListFilter {
    applied: Option<Applied>,
    running: Option<Running>,
    /// What a superseded search had shown, kept on screen until its successor shows (typing
    /// faster than the worker answers never flips the list back to an older result).
    interim: Option<(String, Vec<Arc<Invocation>>)>,
    /// Every run in list order, as of (store generation, sort).
    order: Arc<[Arc<Invocation>]>,
    order_key: Option<(u64, SortKey)>,
    worker: Option<QueryWorker>,
    sender: UnboundedSender<Chunk>,
    receiver: Option<UnboundedReceiver<Chunk>>,
    last_ticket: u64,
    /// Bumped whenever what the list should show changed.
    pub version: u64,
    /// Runs evaluated inline at most; more go to the worker (tests set 0 to use the worker).
    pub inline_runs: usize,
    /// Runs per block sent back by the worker.
    pub block: usize,
    /// Threads the worker starts with (when it first starts): up to four cores; a test sets 1
    /// to get blocks back in list order.
    pub threads: usize,
    /// How many runs the last evaluation started looked at (narrowing and ingest updates
    /// look at fewer than all).
    pub last_evaluated: usize,
}

impl Default for ListFilter {
    fn default() -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        ListFilter {
            applied: None,
            running: None,
            interim: None,
            order: Arc::from(Vec::new()),
            order_key: None,
            worker: None,
            sender,
            receiver: Some(receiver),
            last_ticket: 0,
            version: 0,
            inline_runs: INLINE_RUNS,
            block: worker::BLOCK,
            threads: crate::machine::cores().min(4),
            last_evaluated: 0,
        }
    }
}

impl std::fmt::Debug for ListFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListFilter")
            .field("applied", &self.applied.as_ref().map(|a| &a.want))
            .field("running", &self.running.as_ref().map(|r| &r.want))
            .field("version", &self.version)
            .finish()
    }
}

impl ListFilter {
    /// A query is being evaluated on the worker.
    pub fn is_searching(&self) -> bool {
        self.running.is_some()
    }

    /// While a new query runs: how many matches it has found so far.
    pub fn found_so_far(&self) -> Option<usize> {
        self.running
            .as_ref()
            .filter(|r| r.replaces)
            .map(|r| r.assembly.counted)
    }

    /// The query text of the result the list shows.
    pub fn shown_text(&self) -> &str {
        match (&self.running, &self.interim) {
            (Some(r), _) if r.replaces && r.shown > 0 => &r.want.text,
            (_, Some((text, _))) => text,
            _ => self.applied.as_ref().map_or("", |a| a.want.text.as_str()),
        }
    }

    /// The channel the worker's results arrive on, for the event loop to listen to.
    pub fn take_receiver(&mut self) -> Option<UnboundedReceiver<Chunk>> {
        self.receiver.take()
    }

    /// Lets go of the runs held for list order: called before the store changes, so changing
    /// a run does not copy it (`Arc::make_mut` copies only what someone else still holds). The
    /// order is stale after the change anyway.
    pub(super) fn release_order(&mut self) {
        self.order = Arc::from(Vec::new());
        self.order_key = None;
        if let Some(matched) = self.applied.as_mut().and_then(|a| a.matched.as_mut()) {
            matched.ids();
        }
    }

    fn ticket(&mut self) -> u64 {
        self.last_ticket += 1;
        self.last_ticket
    }
}

/// Brings the filter in line with the search, the reveal mode and the store: starts (or
/// finishes inline) whatever evaluation that needs. Cheap when nothing changed.
pub(super) fn sync(app: &mut App) {
    let want = Want {
        text: app.search.clone(),
        reveal: app.reveal,
        notes: app.store.notes_version(),
    };
    let generation = app.store.generation();
    let applied_want = app.filter.applied.as_ref().map(|a| &a.want);
    let mut superseded = None;
    if let Some(r) = &app.filter.running {
        let still_wanted = if r.replaces {
            r.want == want
        } else {
            applied_want == Some(&want)
        };
        if still_wanted {
            // Its completion brings the rest (runs changed meanwhile) up to date.
            return;
        }
        if let Some(worker) = &app.filter.worker {
            worker.cancel();
        }
        superseded = app.filter.running.take();
        if let Some(r) = superseded.as_ref().filter(|r| r.replaces && r.shown > 0) {
            app.filter.interim = Some((r.want.text.clone(), shown_runs(r)));
        }
    }
    match &app.filter.applied {
        Some(a) if a.want == want && a.as_of == generation => {}
        Some(a) if a.want == want => start(app, want, false, None),
        _ => start(app, want, true, superseded),
    }
    if !app.filter.running.as_ref().is_some_and(|r| r.replaces) && app.filter.interim.is_some() {
        // Back to the result in force: nothing new is on its way to replace the interim.
        app.filter.interim = None;
        app.filter.version += 1;
    }
}

/// The matches a running search has in list order so far.
fn shown_runs(r: &Running) -> Vec<Arc<Invocation>> {
    r.assembly
        .matches
        .iter()
        .map(|(i, _)| Arc::clone(&r.runs[*i]))
        .collect()
}

/// The runs in list order, re-sorted only when the store or the sort changed.
fn order(app: &mut App) -> Arc<[Arc<Invocation>]> {
    let key = (app.store.generation(), app.sort);
    if app.filter.order_key != Some(key) {
        let mut runs: Vec<Arc<Invocation>> = app.store.shared_invocations().cloned().collect();
        runs.sort_by(|a, b| app.sort.compare(a, b));
        app.filter.order = Arc::from(runs);
        app.filter.order_key = Some(key);
    }
    Arc::clone(&app.filter.order)
}

/// Evaluates `want`: a new query (`replaces`) or the runs changed since the result in force.
/// A new query that narrows the result in force, or the search it `supersedes` (typed faster
/// than the worker answered), looks only at what that one may still match.
fn start(app: &mut App, want: Want, replaces: bool, supersedes: Option<Running>) {
    let generation = app.store.generation();
    let query = app.list_search.query.clone().unwrap_or_else(Query::all);
    if query.is_empty() {
        app.filter.applied = Some(Applied {
            want,
            query,
            as_of: generation,
            matched: None,
        });
        app.filter.interim = None;
        app.filter.version += 1;
        return;
    }
    let order = order(app);
    if let Some(a) = app.filter.applied.as_mut()
        && a.as_of != generation
        && let Some(matched) = a.matched.as_mut()
    {
        // What follows asks run by run whether it matched: by id, not by a pass per run.
        matched.ids();
    }
    // Notes changed since a result: the runs it ruled out may match now, whatever the query.
    let narrows = |earlier: &Want, previous: &Query| {
        earlier.reveal == want.reveal
            && earlier.notes == want.notes
            && !query.needs_gold()
            && query.narrows(previous)
    };
    let previous = app.filter.applied.as_ref();
    // The runs whose answer may differ from what the applied result says (a run unchanged
    // since it did not match a query this one narrows cannot match this one).
    let mut as_of = generation;
    let mut runs: Arc<[Arc<Invocation>]> = match previous {
        // Everything matched and nothing changed since: every run, without a pass over them
        // (each pass touches 100,000 scattered runs: milliseconds).
        Some(a) if replaces && a.matched.is_none() && a.as_of == generation => order,
        // Nothing changed since the result this one narrows: its matches, as they are.
        Some(Applied {
            matched: Some(Matched::InOrder(matches)),
            as_of,
            want,
            query: previous,
            ..
        }) if replaces && *as_of == generation && narrows(want, previous) => {
            Arc::from(matches.as_slice())
        }
        Some(a) if !replaces || narrows(&a.want, &a.query) => order
            .iter()
            .filter(|inv| {
                inv.changed_at() > a.as_of
                    || (replaces && a.matched.as_ref().is_none_or(|m| m.contains(inv)))
            })
            .cloned()
            .collect(),
        _ => order,
    };
    // The superseded search's snapshot, less what it has ruled out already: its result then
    // stands as of its snapshot, and the runs changed since are evaluated after.
    if let Some(r) = supersedes.filter(|r| r.replaces && narrows(&r.want, &r.query)) {
        let undecided = r.assembly.undecided_or_matched();
        if undecided.len() < runs.len() {
            runs = undecided.iter().map(|&i| Arc::clone(&r.runs[i])).collect();
            as_of = r.as_of;
        }
    }
    app.filter.last_evaluated = runs.len();
    let gold = Arc::new(if query.needs_gold() {
        GoldSnapshot(app.gold.outcomes())
    } else {
        GoldSnapshot::default()
    });
    if runs.len() <= app.filter.inline_runs {
        let ctx = Context {
            reveal: want.reveal,
            gold: gold.as_ref(),
            notes: app.store.notes(),
        };
        let matches = worker::evaluate(&query, &runs, 0..runs.len(), &ctx);
        let matched = matches.iter().map(|(i, _)| &runs[*i]);
        apply(app, want, query, replaces, as_of, &runs, matched);
        return;
    }
    let request = Request {
        ticket: app.filter.ticket(),
        query: query.clone(),
        reveal: want.reveal,
        gold,
        notes: app.store.shared_notes(),
        runs: Arc::clone(&runs),
        block: app.filter.block,
    };
    let threads = app.filter.threads;
    let sender = app.filter.sender.clone();
    let worker = app
        .filter
        .worker
        .get_or_insert_with(|| QueryWorker::new(threads, sender));
    let assembly = Assembly::new(&request);
    worker.submit(request);
    app.filter.running = Some(Running {
        want,
        query,
        replaces,
        as_of,
        runs,
        assembly,
        shown: 0,
        screenful: app.regions().list_body().height.max(1) as usize,
    });
}

/// Puts a complete evaluation in force: a new query's matches, or the re-evaluated runs of the
/// query in force.
fn apply<'a>(
    app: &mut App,
    want: Want,
    query: Query,
    replaces: bool,
    as_of: u64,
    evaluated: &[Arc<Invocation>],
    matched: impl Iterator<Item = &'a Arc<Invocation>>,
) {
    let store = &app.store;
    match app.filter.applied.as_mut().filter(|_| !replaces) {
        Some(applied) => {
            let set = applied
                .matched
                .get_or_insert_with(|| Matched::Ids(HashSet::new()))
                .ids();
            for inv in evaluated {
                set.remove(&*inv.id.text());
            }
            set.extend(matched.map(|inv| inv.id.to_string()));
            // Runs gone from the store (evicted, their file forgotten) leave the set.
            set.retain(|id| store.get(id).is_some());
            applied.as_of = as_of;
        }
        None => {
            app.filter.applied = Some(Applied {
                want,
                query,
                as_of,
                matched: Some(Matched::InOrder(matched.cloned().collect())),
            });
            app.filter.interim = None;
        }
    }
    app.filter.version += 1;
}

/// Takes in chunks from the worker. Returns whether any belonged to the running search (so
/// at least the count in the title moved; the list itself is rebuilt only when a screenful
/// arrived, when what arrived doubled, and at the end).
pub(super) fn receive(app: &mut App, chunks: impl IntoIterator<Item = Chunk>) -> bool {
    let mut accepted = false;
    for chunk in chunks {
        let Some(running) = app.filter.running.as_mut() else {
            continue;
        };
        if !running.assembly.add(chunk) {
            continue;
        }
        accepted = true;
        if running.assembly.is_complete() {
            let r = app.filter.running.take().expect("checked above");
            let matched = r.assembly.matches.iter().map(|(i, _)| &r.runs[*i]);
            apply(app, r.want, r.query, r.replaces, r.as_of, &r.runs, matched);
            continue;
        }
        let found = running.assembly.matches.len();
        if running.replaces && worth_showing(running.shown, found, running.screenful) {
            running.shown = found;
            app.filter.interim = None;
            app.filter.version += 1;
        }
    }
    accepted
}

/// Whether a running search that shows `shown` matches (0: none yet) should show the `found`
/// it has now: a first screenful, then each time it has doubled, until it shows
/// [`SCREENS_WHILE_SEARCHING`] screens.
fn worth_showing(shown: usize, found: usize, screenful: usize) -> bool {
    if shown == 0 {
        found >= screenful
    } else {
        found >= shown * 2 && shown < screenful * SCREENS_WHILE_SEARCHING
    }
}

/// The runs the list shows, in list order: the new query's matches once a screenful has
/// arrived, else the result in force (the previous query's until the new one shows).
pub(super) fn listed(app: &mut App) -> Vec<Arc<Invocation>> {
    if let Some(r) = &app.filter.running
        && r.replaces
        && r.shown > 0
    {
        return shown_runs(r);
    }
    if let Some((_, runs)) = &app.filter.interim {
        return runs.clone();
    }
    let generation = app.store.generation();
    if let Some(Applied {
        matched: Some(Matched::InOrder(runs)),
        as_of,
        ..
    }) = &app.filter.applied
        && *as_of == generation
    {
        return runs.clone();
    }
    let order = order(app);
    match app.filter.applied.as_mut().and_then(|a| a.matched.as_mut()) {
        None => order.to_vec(),
        Some(matched) => {
            let ids = matched.ids();
            order
                .iter()
                .filter(|inv| ids.contains(&*inv.id.text()))
                .cloned()
                .collect()
        }
    }
}

/// Waits for the next chunk of results and takes it in; false when no search is running.
/// Blocking: for tests and benchmarks, which have no event loop (the event loop listens to
/// the channel instead).
pub fn receive_search_result(app: &mut App) -> bool {
    if app.filter.running.is_none() {
        return false;
    }
    let chunk = app
        .filter
        .receiver
        .as_mut()
        .expect("the event loop owns the results channel: it receives results itself")
        .blocking_recv()
        .expect("the worker sends until its request is done");
    super::query_results(app, std::iter::once(chunk));
    true
}

/// Waits until the running search (if any) has finished: see [`receive_search_result`].
pub fn finish_search(app: &mut App) {
    while receive_search_result(app) {}
}

#[cfg(test)]
mod tests {
    use super::{SCREENS_WHILE_SEARCHING, worth_showing};

    #[test]
    fn a_streaming_list_shows_a_screenful_then_doublings_up_to_a_bound() {
        let screen = 40;
        let mut shown = 0;
        let mut sizes = Vec::new();
        for found in (1..=100_000).step_by(7) {
            if worth_showing(shown, found, screen) {
                shown = found;
                sizes.push(found);
            }
        }
        assert!(sizes[0] >= screen && sizes[0] < screen + 7, "{sizes:?}");
        assert!(sizes.windows(2).all(|w| w[1] >= 2 * w[0]), "{sizes:?}");
        let last = *sizes.last().unwrap();
        assert!(last >= screen * SCREENS_WHILE_SEARCHING, "{sizes:?}");
        assert!(last < 2 * screen * SCREENS_WHILE_SEARCHING + 7, "{sizes:?}");
    }
}
