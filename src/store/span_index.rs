//! A run's span ids → positions in its span list. Small runs keep no map: scanning a few ids
//! is as quick as hashing one, and most runs are a handful of spans, each of which would
//! otherwise pay a map entry, its own copy of the id and the map's allocation.

use std::collections::HashMap;

use crate::model::Span;

/// Runs up to this many spans find an id by scanning.
const SCANNED_UP_TO: usize = 32;

/// Empty while the run is small; holds every span id once it is not.
#[derive(Debug, Clone, Default)]
pub(super) struct SpanIndex(HashMap<String, usize>);

impl SpanIndex {
    /// The position of the span with this id in `spans` (the run's list this index follows).
    pub(super) fn get(&self, spans: &[Span], span_id: &str) -> Option<usize> {
        if self.0.is_empty() {
            spans.iter().position(|s| s.span_id == span_id)
        } else {
            self.0.get(span_id).copied()
        }
    }

    /// Takes in the span just pushed as the last of `spans`.
    pub(super) fn pushed(&mut self, spans: &[Span]) {
        if spans.len() <= SCANNED_UP_TO {
            return;
        }
        if self.0.is_empty() {
            *self = SpanIndex::of(spans);
        } else if let Some(last) = spans.last() {
            self.0.insert(last.span_id.clone(), spans.len() - 1);
        }
    }

    /// An index for `spans` as they are now (after spans were removed or reordered).
    pub(super) fn of(spans: &[Span]) -> SpanIndex {
        if spans.len() <= SCANNED_UP_TO {
            return SpanIndex::default();
        }
        SpanIndex(
            spans
                .iter()
                .enumerate()
                .map(|(i, s)| (s.span_id.clone(), i))
                .collect(),
        )
    }

    /// The ids the map holds (none while the run is small), for memory accounting.
    pub(super) fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(n: usize) -> Vec<Span> {
        (0..n)
            .map(|i| Span {
                span_id: format!("s{i}"),
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn small_runs_scan_and_big_ones_switch_to_a_map_that_finds_the_same() {
        let all = spans(SCANNED_UP_TO + 5);
        let mut index = SpanIndex::default();
        for n in 1..=all.len() {
            index.pushed(&all[..n]);
            assert_eq!(
                index.keys().count() == 0,
                n <= SCANNED_UP_TO,
                "at {n} spans"
            );
            for (i, span) in all[..n].iter().enumerate() {
                assert_eq!(index.get(&all[..n], &span.span_id), Some(i));
            }
            assert_eq!(index.get(&all[..n], "missing"), None);
        }
        let fewer = &all[3..7];
        let rebuilt = SpanIndex::of(fewer);
        assert_eq!(rebuilt.keys().count(), 0);
        assert_eq!(rebuilt.get(fewer, "s5"), Some(2));
    }
}
