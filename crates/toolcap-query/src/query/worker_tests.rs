//! The worker streams what a synchronous evaluation finds, in list order, and a superseded
//! request's chunks never count. Synchronised by channels only: `blocking_recv` waits for the
//! next chunk, nothing sleeps.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::*;
use crate::model::Id;
use crate::store::Store;

/// `runs` runs of two spans (see [`crate::store::sample_runs::tool_runs`]).
fn store(runs: usize) -> Store {
    let mut store = Store::new();
    store.ingest(crate::store::sample_runs::tool_runs(0, runs));
    store
}

fn list(store: &Store) -> Arc<[Arc<Invocation>]> {
    let order: Vec<Id> = store.newest_first().iter().map(|i| i.id.clone()).collect();
    let by_id: HashMap<&Id, &Arc<Invocation>> = store
        .shared_invocations()
        .map(|inv| (&inv.id, inv))
        .collect();
    order.iter().map(|id| Arc::clone(by_id[id])).collect()
}

fn request(ticket: u64, query: &str, runs: &Arc<[Arc<Invocation>]>, block: usize) -> Request {
    Request {
        ticket,
        query: Query::parse(query).unwrap(),
        reveal: Reveal::Redacted,
        gold: Arc::default(),
        notes: Arc::default(),
        runs: Arc::clone(runs),
        block,
    }
}

/// Receives chunks until `request`'s have all arrived; returns the assembly and how many chunks
/// of other tickets came (and were turned away).
fn collect(rx: &mut mpsc::UnboundedReceiver<Chunk>, request: &Request) -> (Assembly, usize) {
    let mut assembly = Assembly::new(request);
    let mut turned_away = 0;
    while !assembly.is_complete() {
        let chunk = rx.blocking_recv().expect("the worker is running");
        let ticket = chunk.ticket;
        if !assembly.add(chunk) {
            assert_ne!(ticket, request.ticket, "a current chunk was refused");
            turned_away += 1;
        }
    }
    (assembly, turned_away)
}

fn synchronous(query: &str, runs: &[Arc<Invocation>]) -> Vec<(String, Match)> {
    let q = Query::parse(query).unwrap();
    runs.iter()
        .filter_map(|inv| {
            q.matches(inv, &Context::default())
                .map(|m| (inv.id.to_string(), m))
        })
        .collect()
}

fn named(assembly: &Assembly, runs: &[Arc<Invocation>]) -> Vec<(String, Match)> {
    assembly
        .matches
        .iter()
        .map(|(i, m)| (runs[*i].id.to_string(), m.clone()))
        .collect()
}

const QUERIES: &[&str] = &[
    "",
    "tool:refund",
    "\"non-fatal\"",
    "is:error",
    "agent -tool:refund",
    "srchflt OR tool:weather",
    "kind:tool dur>1s",
    "nothing-matches-this",
];

#[test]
fn streamed_results_equal_a_synchronous_evaluation_in_list_order() {
    let store = store(300);
    let runs = list(&store);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = QueryWorker::new(2, tx);
    for (n, query) in QUERIES.iter().enumerate() {
        // Small blocks: dozens of chunks, arriving out of order between the two threads.
        let req = request(n as u64 + 1, query, &runs, 7);
        worker.submit(req.clone());
        let (assembly, turned_away) = collect(&mut rx, &req);
        assert_eq!(turned_away, 0, "{query}: the previous request had finished");
        let expected = synchronous(query, &runs);
        assert_eq!(named(&assembly, &runs), expected, "{query}");
        assert_eq!(assembly.counted, expected.len(), "{query}");
    }
    // The table is not vacuous: some queries match some runs, some all, one none.
    assert_eq!(synchronous("", &runs).len(), 300);
    assert_eq!(synchronous("\"non-fatal\"", &runs).len(), 60);
    assert!(synchronous("nothing-matches-this", &runs).is_empty());
}

#[test]
fn a_superseded_requests_chunks_are_turned_away() {
    let store = store(2_000);
    let runs = list(&store);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = QueryWorker::new(2, tx);
    let old = request(1, "agent", &runs, 1);
    let new = request(2, "tool:refund", &runs, 50);
    worker.submit(old.clone());
    // The old request has started (its first chunk is here) and has ~2,000 blocks to go.
    let first = rx.blocking_recv().expect("a chunk");
    assert_eq!(first.ticket, 1);
    worker.submit(new.clone());
    let (assembly, _turned_away) = collect(&mut rx, &new);
    assert_eq!(
        named(&assembly, &runs),
        synchronous("tool:refund", &runs),
        "only the new request's matches, in order"
    );
    // A thread checks the ticket between blocks, so at most one block per thread of the old
    // request can still arrive after the new one finished (the new stream may end before the
    // other thread's last old block is sent): never more, and never inside an assembly.
    let after = request(3, "is:error", &runs, 500);
    worker.submit(after.clone());
    let (assembly, turned_away) = collect(&mut rx, &after);
    assert!(
        turned_away <= 2,
        "{turned_away} stale chunks from 2 threads"
    );
    assert_eq!(named(&assembly, &runs), synchronous("is:error", &runs));
}

#[test]
fn assembly_puts_blocks_back_in_order_and_refuses_other_tickets() {
    let store = store(10);
    let runs = list(&store);
    let req = request(5, "", &runs, 4);
    assert_eq!(req.blocks(), 3);
    assert_eq!(req.block_range(2), 8..10);
    let chunk = |ticket, block: usize| Chunk {
        ticket,
        block,
        matches: req
            .block_range(block)
            .map(|i| (i, Match::default()))
            .collect(),
    };
    let mut assembly = Assembly::new(&req);
    assert_eq!(assembly.undecided_or_matched(), (0..10).collect::<Vec<_>>());
    let only_9 = Chunk {
        ticket: 5,
        block: 2,
        matches: vec![(9, Match::default())],
    };
    let mut early = assembly.clone();
    assert!(early.add(only_9.clone()));
    assert!(!early.add(only_9), "a block twice");
    assert_eq!(early.undecided_or_matched(), [0, 1, 2, 3, 4, 5, 6, 7, 9]);
    assert!(assembly.add(chunk(5, 2)));
    assert!(assembly.matches.is_empty(), "block 2 waits for 0 and 1");
    assert_eq!(assembly.counted, 2);
    assert!(!assembly.add(chunk(4, 0)), "another ticket");
    assert!(assembly.add(chunk(5, 0)));
    assert_eq!(assembly.matches.len(), 4);
    assert!(!assembly.is_complete());
    assert!(assembly.add(chunk(5, 1)));
    assert!(assembly.is_complete());
    let positions: Vec<usize> = assembly.matches.iter().map(|(i, _)| *i).collect();
    assert_eq!(positions, (0..10).collect::<Vec<_>>());
    assert!(!assembly.add(chunk(5, 1)), "a block twice");
}

#[test]
fn a_dropped_worker_stops_its_threads_and_closes_the_channel() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = QueryWorker::new(2, tx);
    drop(worker);
    // Both threads held a sender; the channel closes only when both have returned.
    assert!(rx.blocking_recv().is_none());
}
