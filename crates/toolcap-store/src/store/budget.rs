//! The memory budget: running byte and span counts, and oldest-first eviction when a run
//! pushes the store past either limit.

use super::Store;

/// A memory budget with oldest-first eviction. `None` means unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    pub max_invocations: Option<usize>,
    pub max_bytes: Option<u64>,
}

impl Store {
    pub(super) fn recount(&mut self) {
        self.stats.spans_kept = self
            .invocations
            .values()
            .map(|i| i.spans.len() as u64)
            .sum();
        self.stats.approx_bytes = self.invocations.values().map(|i| i.approx_bytes).sum();
    }

    pub(super) fn enforce_budget(&mut self) {
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
        let mut by_age: Vec<(u64, crate::model::Id)> = self
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
                self.runs_removed += 1;
                self.stats.spans_evicted += inv.spans.len() as u64;
                self.stats.approx_bytes -= inv.approx_bytes.min(self.stats.approx_bytes);
                self.stats.spans_kept -= (inv.spans.len() as u64).min(self.stats.spans_kept);
                self.evicted_ids.insert(id);
            }
        }
    }
}
