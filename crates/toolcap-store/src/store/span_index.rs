//! A run's span ids → positions in its span list. Small runs keep no map: scanning a few ids
//! is as quick as hashing one, and most runs are a handful of spans, each of which would
//! otherwise pay a map entry, its own copy of the id and the map's allocation.

use foldhash::HashMap;

use crate::model::{AsId, Id, Span};

/// Runs up to this many spans find an id by scanning.
const SCANNED_UP_TO: usize = 32;

/// Absent while the run is small; holds every span id once it is not. Boxed on purpose: an
/// empty map is still 48 bytes in every run, a pointer is 8.
#[derive(Debug, Clone, Default)]
#[allow(clippy::box_collection)]
pub(super) struct SpanIndex(Option<Box<HashMap<Id, usize>>>);

impl SpanIndex {
    /// The position of the span with this id in `spans` (the run's list this index follows).
    pub(super) fn get(&self, spans: &[Span], span_id: &(impl AsId + ?Sized)) -> Option<usize> {
        let span_id = span_id.as_id();
        match &self.0 {
            None => spans.iter().position(|s| s.span_id == *span_id),
            Some(map) => map.get(&*span_id).copied(),
        }
    }

    /// Takes in the span just pushed as the last of `spans`.
    pub(super) fn pushed(&mut self, spans: &[Span]) {
        if spans.len() <= SCANNED_UP_TO {
            return;
        }
        match (&mut self.0, spans.last()) {
            (Some(map), Some(last)) => {
                map.insert(last.span_id.id(), spans.len() - 1);
            }
            _ => *self = SpanIndex::of(spans),
        }
    }

    /// An index for `spans` as they are now (after spans were removed or reordered).
    pub(super) fn of(spans: &[Span]) -> SpanIndex {
        if spans.len() <= SCANNED_UP_TO {
            return SpanIndex::default();
        }
        SpanIndex(Some(Box::new(
            spans
                .iter()
                .enumerate()
                .map(|(i, s)| (s.span_id.id(), i))
                .collect(),
        )))
    }

    /// Whether the run is big enough to keep a map, for memory accounting.
    pub(super) fn has_map(&self) -> bool {
        self.0.is_some()
    }

    /// The ids the map holds (none while the run is small), for memory accounting.
    pub(super) fn keys(&self) -> impl Iterator<Item = &Id> {
        self.0.iter().flat_map(|map| map.keys())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(n: usize) -> Vec<Span> {
        (0..n)
            .map(|i| Span {
                span_id: format!("s{i}").into(),
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
            assert_eq!(!index.has_map(), n <= SCANNED_UP_TO, "at {n} spans");
            let mapped = if n <= SCANNED_UP_TO { 0 } else { n };
            assert_eq!(index.keys().count(), mapped);
            for (i, span) in all[..n].iter().enumerate() {
                assert_eq!(index.get(&all[..n], &span.span_id), Some(i));
            }
            assert_eq!(index.get(&all[..n], &Id::new("missing")), None);
        }
        let fewer = &all[3..7];
        let rebuilt = SpanIndex::of(fewer);
        assert!(!rebuilt.has_map());
        assert_eq!(rebuilt.get(fewer, &Id::new("s5")), Some(2));
    }
}
