//! Refreshing the runs a settle changed, on every core when there are many: a 100 MB file
//! changes tens of thousands of runs at once, and each run's tree, health and summary depend
//! on that run alone.

use foldhash::HashSet;
use std::sync::Arc;

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
        let takes = crate::machine::map_all(runs.chunks_mut(RUNS_PER_TAKE), |take| {
            let refreshed = take.iter_mut().map(|(_, inv)| refresh_one(inv, generation));
            refreshed.collect::<Vec<_>>()
        });
        takes.into_iter().flatten().collect()
    }
}
