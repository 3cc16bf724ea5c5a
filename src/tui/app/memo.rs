//! The one cache type of the derived views (list, tree, detail, triage): a value kept with
//! the key it was computed from.

use std::ops::Deref;

/// A value derived from other state, kept with the key it was computed from (store generation,
/// selection, mode, width): asked for again with an equal key, it is not recomputed. It reads
/// as its value.
#[derive(Debug, Clone)]
pub struct Memo<K, V> {
    key: Option<K>,
    value: V,
}

/// Nothing computed yet: the value is empty and any key computes it.
impl<K, V: Default> Default for Memo<K, V> {
    fn default() -> Self {
        Memo {
            key: None,
            value: V::default(),
        }
    }
}

impl<K: PartialEq, V: Default> Memo<K, V> {
    /// The value for `key`: the one held when it was computed from an equal key, else the one
    /// `compute` makes from the key and value held until now (to reuse or extend them; `None`
    /// before the first computation and after [`Memo::invalidate`]).
    pub fn get_or_compute(&mut self, key: K, compute: impl FnOnce(Option<K>, V) -> V) -> &V {
        if self.key.as_ref() != Some(&key) {
            let previous = std::mem::take(&mut self.value);
            self.value = compute(self.key.take(), previous);
            self.key = Some(key);
        }
        &self.value
    }

    /// Whether the value was computed from `key`.
    pub fn is_current(&self, key: &K) -> bool {
        self.key.as_ref() == Some(key)
    }

    /// The key the value was computed from.
    pub fn key(&self) -> Option<&K> {
        self.key.as_ref()
    }

    /// Makes the next [`Memo::get_or_compute`] compute, whatever its key; until then the
    /// value still reads as before.
    pub fn invalidate(&mut self) {
        self.key = None;
    }

    /// The value, to change in place without recomputing it (the list letting go of its runs).
    pub fn value_mut(&mut self) -> &mut V {
        &mut self.value
    }
}

impl<K, V> Deref for Memo<K, V> {
    type Target = V;

    fn deref(&self) -> &V {
        &self.value
    }
}

#[cfg(test)]
mod tests {
    use super::Memo;

    #[test]
    fn computes_once_per_key_and_hands_on_what_it_held() {
        let mut memo: Memo<u32, Vec<u32>> = Memo::default();
        let mut computed = Vec::new();
        let mut get = |memo: &mut Memo<u32, Vec<u32>>, key: u32| {
            memo.get_or_compute(key, |previous_key, mut previous| {
                computed.push((previous_key, previous.clone()));
                previous.push(key);
                previous
            })
            .clone()
        };
        assert_eq!(get(&mut memo, 1), [1]);
        assert_eq!(get(&mut memo, 1), [1], "an equal key is not recomputed");
        assert_eq!(get(&mut memo, 2), [1, 2], "the held value is handed on");
        memo.invalidate();
        assert_eq!(*memo, [1, 2], "an invalidated value still reads");
        assert!(!memo.is_current(&2));
        assert_eq!(
            get(&mut memo, 2),
            [1, 2, 2],
            "invalidated, an equal key computes"
        );
        assert!(memo.is_current(&2));
        assert_eq!(
            computed,
            [(None, vec![]), (Some(1), vec![1]), (None, vec![1, 2])]
        );
    }
}
