//! Queries off the caller's thread: a [`QueryWorker`] evaluates a [`Query`] over a snapshot of
//! runs (shared handles, in list order) on background threads and streams the matches back in
//! blocks, so a UI keeps handling keys and drawing while a query runs.
//!
//! The snapshot is cut into blocks of [`BLOCK`] runs that the threads take in order from a
//! shared counter: block 0 is done first, so the first screen of matches arrives after one or
//! two blocks, and the threads share the rest however uneven the cost of the runs is. Each
//! block comes back as one [`Chunk`] (possibly out of order between threads); the receiver puts
//! them back in list order with [`Assembly`]. A newer request supersedes the one running: the
//! threads check the latest ticket between blocks and drop the old work.
//!
//! Evaluation is [`Query::matches`], the one evaluator: results equal a synchronous run.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::mpsc::UnboundedSender;

use super::{Context, GoldOutcomes, Match, Query};
use crate::redact::Reveal;
use crate::store::Invocation;
use crate::triage::GoldOutcome;

/// Runs per block: small enough that the first block (the first screen, for any query that
/// matches more than rarely) takes a few milliseconds, large enough that sending blocks back
/// costs nothing next to evaluating them.
pub const BLOCK: usize = 1024;

/// Gold outcomes known when a request was made, by run id (only for queries that need them:
/// see [`Query::needs_gold`]).
#[derive(Debug, Clone, Default)]
pub struct GoldSnapshot(pub HashMap<String, GoldOutcome>);

impl GoldOutcomes for GoldSnapshot {
    fn gold(&self, inv: &Invocation) -> GoldOutcome {
        self.0.get(&*inv.id.text()).copied().unwrap_or_default()
    }
}

/// One query over one snapshot.
#[derive(Debug, Clone)]
pub struct Request {
    /// Tells this request's chunks from a superseded one's: a new number for every request,
    /// never 0 (0 means "none", see [`QueryWorker::cancel`]).
    pub ticket: u64,
    pub query: Query,
    pub reveal: Reveal,
    pub gold: Arc<GoldSnapshot>,
    /// The triage notes when the request was made.
    pub notes: Arc<crate::notes::Notes>,
    /// The runs to evaluate, in the order results are wanted.
    pub runs: Arc<[Arc<Invocation>]>,
    /// Runs per block ([`BLOCK`] unless a test wants many blocks from a small store).
    pub block: usize,
}

impl Request {
    pub fn blocks(&self) -> usize {
        self.runs.len().div_ceil(self.block.max(1))
    }

    /// The runs of block `block`.
    pub fn block_range(&self, block: usize) -> std::ops::Range<usize> {
        let size = self.block.max(1);
        block * size..((block + 1) * size).min(self.runs.len())
    }
}

/// The matches of one block: positions into the request's `runs`, ascending, with what matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub ticket: u64,
    pub block: usize,
    pub matches: Vec<(usize, Match)>,
}

/// Evaluates `query` over `runs[range]`: the same work a worker thread does for one block,
/// for callers that evaluate a small set on their own thread.
pub fn evaluate(
    query: &Query,
    runs: &[Arc<Invocation>],
    range: std::ops::Range<usize>,
    ctx: &Context,
) -> Vec<(usize, Match)> {
    let end = range.end.min(runs.len());
    (range.start..end)
        .filter_map(|i| query.matches(&runs[i], ctx).map(|m| (i, m)))
        .collect()
}

/// The job the threads share: a request, the next block nobody has taken, and how many blocks
/// are not evaluated yet.
struct Job {
    request: Request,
    next_block: AtomicUsize,
    unfinished: AtomicUsize,
}

struct Shared {
    job: Mutex<Option<Arc<Job>>>,
    wake: Condvar,
    /// The newest request's ticket: work for any other is abandoned between blocks.
    latest: AtomicU64,
    stop: AtomicBool,
}

/// Background threads that evaluate [`Request`]s and send [`Chunk`]s to `results`.
pub struct QueryWorker {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for QueryWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryWorker")
            .field("latest", &self.shared.latest.load(Ordering::Relaxed))
            .finish()
    }
}

impl QueryWorker {
    /// Starts `threads` threads (at least one).
    pub fn new(threads: usize, results: UnboundedSender<Chunk>) -> QueryWorker {
        let shared = Arc::new(Shared {
            job: Mutex::new(None),
            wake: Condvar::new(),
            latest: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        for n in 0..threads.max(1) {
            let shared = Arc::clone(&shared);
            let results = results.clone();
            std::thread::Builder::new()
                .name(format!("query-{n}"))
                .spawn(move || work(&shared, &results))
                .expect("spawning a query thread");
        }
        QueryWorker { shared }
    }

    /// Starts `request`, abandoning whatever ran before (its remaining chunks never come).
    pub fn submit(&self, request: Request) {
        self.shared.latest.store(request.ticket, Ordering::SeqCst);
        let job = Arc::new(Job {
            unfinished: AtomicUsize::new(request.blocks()),
            request,
            next_block: AtomicUsize::new(0),
        });
        *self.shared.job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
        self.shared.wake.notify_all();
    }

    /// Abandons the running request without starting another.
    pub fn cancel(&self) {
        self.shared.latest.store(0, Ordering::SeqCst);
        *self.shared.job.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl Drop for QueryWorker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.cancel();
        self.shared.wake.notify_all();
    }
}

fn work(shared: &Shared, results: &UnboundedSender<Chunk>) {
    let mut finished: Option<u64> = None;
    loop {
        let job = {
            let mut slot = shared.job.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                match slot.as_ref() {
                    Some(job) if Some(job.request.ticket) != finished => break Arc::clone(job),
                    _ => {
                        slot = shared.wake.wait(slot).unwrap_or_else(|e| e.into_inner());
                    }
                }
            }
        };
        let request = &job.request;
        let ctx = Context {
            reveal: request.reveal,
            gold: request.gold.as_ref(),
            notes: request.notes.as_ref(),
        };
        let blocks = request.blocks();
        loop {
            if shared.latest.load(Ordering::SeqCst) != request.ticket {
                break;
            }
            let block = job.next_block.fetch_add(1, Ordering::SeqCst);
            if block >= blocks {
                break;
            }
            let matches = evaluate(
                &request.query,
                &request.runs,
                request.block_range(block),
                &ctx,
            );
            if job.unfinished.fetch_sub(1, Ordering::SeqCst) == 1 {
                // The last block: let go of the snapshot, so the store can change its runs in
                // place again instead of copying the ones it still shares with this request.
                let mut slot = shared.job.lock().unwrap_or_else(|e| e.into_inner());
                if slot
                    .as_ref()
                    .is_some_and(|j| j.request.ticket == request.ticket)
                {
                    *slot = None;
                }
            }
            let chunk = Chunk {
                ticket: request.ticket,
                block,
                matches,
            };
            if results.send(chunk).is_err() {
                // Nobody listens any more: the app is gone.
                return;
            }
        }
        finished = Some(request.ticket);
    }
}

/// Puts one request's chunks back in list order as they arrive.
#[derive(Debug, Clone)]
pub struct Assembly {
    pub ticket: u64,
    blocks: usize,
    /// Runs per block and in all, as the request had them.
    block: usize,
    runs: usize,
    /// Chunks that arrived ahead of an earlier block.
    waiting: BTreeMap<usize, Vec<(usize, Match)>>,
    /// Blocks `0..contiguous` are in `matches`.
    contiguous: usize,
    /// Matches of blocks `0..contiguous`, in list order.
    pub matches: Vec<(usize, Match)>,
    /// Matches received so far, in order or not.
    pub counted: usize,
}

impl Assembly {
    pub fn new(request: &Request) -> Assembly {
        Assembly {
            ticket: request.ticket,
            blocks: request.blocks(),
            block: request.block.max(1),
            runs: request.runs.len(),
            waiting: BTreeMap::new(),
            contiguous: 0,
            matches: Vec::new(),
            counted: 0,
        }
    }

    /// Takes a chunk in; false (and nothing changes) when it belongs to another request.
    pub fn add(&mut self, chunk: Chunk) -> bool {
        if chunk.ticket != self.ticket
            || chunk.block < self.contiguous
            || chunk.block >= self.blocks
            || self.waiting.contains_key(&chunk.block)
        {
            return false;
        }
        self.counted += chunk.matches.len();
        self.waiting.insert(chunk.block, chunk.matches);
        while let Some(next) = self.waiting.remove(&self.contiguous) {
            self.matches.extend(next);
            self.contiguous += 1;
        }
        true
    }

    /// Every block has arrived.
    pub fn is_complete(&self) -> bool {
        self.contiguous >= self.blocks
    }

    /// Positions (ascending) that may match as far as is known: the matches of the blocks
    /// that arrived and every run of those that did not. A query that narrows this one needs
    /// to look at no others.
    pub fn undecided_or_matched(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self.matches.iter().map(|(i, _)| *i).collect();
        for block in self.contiguous..self.blocks {
            match self.waiting.get(&block) {
                Some(matches) => out.extend(matches.iter().map(|(i, _)| *i)),
                None => out.extend(block * self.block..((block + 1) * self.block).min(self.runs)),
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "worker_tests.rs"]
mod tests;
