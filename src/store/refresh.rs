//! Refreshing the runs a settle changed, on every core when there are many: a 100 MB file
//! changes tens of thousands of runs at once, and each run's tree, health and summary depend
//! on that run alone.

use foldhash::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Invocation, Store};
use crate::model::{Id, Problem};

/// Fewer changed runs than this are refreshed on the calling thread (a live drain touches a
/// few runs; threads would cost more than they save).
pub(super) const PARALLEL_MIN_RUNS: usize = 512;
/// Runs a thread takes at a time: small enough that one giant run does not leave the other
/// cores idle for long.
const RUNS_PER_TAKE: usize = 64;

/// What refreshing one run produced: its tree work and the cycles it newly found.
type Refreshed = (u64, Vec<Problem>);
/// A run to refresh, with its id (the order results come back in).
type Changed<'s> = (&'s Id, &'s mut Arc<Invocation>);

fn refresh_one(inv: &mut Arc<Invocation>, generation: u64) -> Refreshed {
    let inv = Arc::make_mut(inv);
    inv.changed_at = generation;
    let before = inv.work;
    let cycles = inv.refresh();
    (inv.work - before, cycles)
}

impl Store {
    /// Refreshes the runs named in `changed` (sorted), marking them changed at `generation`;
    /// returns what each produced, in `changed`'s order. Threads are used from
    /// `parallel_min_runs` changed runs on.
    pub(super) fn refresh_changed(
        &mut self,
        changed: &[Id],
        generation: u64,
        parallel_min_runs: usize,
    ) -> Vec<Refreshed> {
        let cores = crate::machine::cores();
        if cores < 2 || changed.len() < parallel_min_runs {
            return changed
                .iter()
                .filter_map(|id| {
                    let inv = self.invocations.get_mut(id)?;
                    Some(refresh_one(inv, generation))
                })
                .collect();
        }
        let wanted: HashSet<&Id> = changed.iter().collect();
        let runs: Vec<Changed> = self
            .invocations
            .iter_mut()
            .filter(|(id, _)| wanted.contains(id))
            .collect();
        let mut runs = crate::model::sort_by_id(runs, |run| run.0);
        let takes: Vec<std::sync::Mutex<&mut [Changed]>> = runs
            .chunks_mut(RUNS_PER_TAKE)
            .map(std::sync::Mutex::new)
            .collect();
        let next = AtomicUsize::new(0);
        let mut results: Vec<(usize, Vec<Refreshed>)> = std::thread::scope(|scope| {
            let work = || {
                let mut done = Vec::new();
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(take) = takes.get(k) else { break };
                    let mut take = take.lock().unwrap_or_else(|e| e.into_inner());
                    let out = take.iter_mut().map(|(_, inv)| refresh_one(inv, generation));
                    done.push((k, out.collect()));
                }
                done
            };
            let helpers: Vec<_> = (1..cores).map(|_| scope.spawn(work)).collect();
            let mut all = work();
            for helper in helpers {
                match helper.join() {
                    Ok(done) => all.extend(done),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            all
        });
        results.sort_unstable_by_key(|(k, _)| *k);
        results.into_iter().flat_map(|(_, done)| done).collect()
    }
}
