//! A short list that is almost always empty or one item long (a model call's finish reason,
//! the tool call it asked for): the one item is held inline, so it needs no allocation of its
//! own; a list only when there are several.

use std::ops::Deref;

use thin_vec::ThinVec;

/// Reads as a slice (`is_empty`, `len`, `iter`, `join`, indexing); equal when the items are,
/// however they are held.
#[derive(Debug, Clone)]
pub enum InlineList<T> {
    One(T),
    /// None (an empty list needs no allocation) or several.
    List(ThinVec<T>),
}

/// An LLM call's finish reasons (shared texts: `stop`, `tool_calls` repeat call after call).
pub type FinishReasons = InlineList<super::ArcStr>;

/// The tool calls a model call asked for.
pub type RequestedCalls = InlineList<super::RequestedToolCall>;

impl<T> Default for InlineList<T> {
    fn default() -> Self {
        InlineList::List(ThinVec::new())
    }
}

impl<T> InlineList<T> {
    pub fn push(&mut self, item: T) {
        match self {
            InlineList::List(list) if list.is_empty() => *self = InlineList::One(item),
            InlineList::List(list) => list.push(item),
            InlineList::One(_) => {
                let InlineList::One(first) = std::mem::take(self) else {
                    unreachable!("matched as one item above");
                };
                let mut list = ThinVec::with_capacity(2);
                list.push(first);
                list.push(item);
                *self = InlineList::List(list);
            }
        }
    }

    /// A list grown while parsing has room for more items than it holds.
    pub fn has_slack(&self) -> bool {
        matches!(self, InlineList::List(list) if list.capacity() > list.len())
    }

    /// A list grown while parsing keeps exactly its items once stored.
    pub fn shrink_to_fit(&mut self) {
        if let InlineList::List(list) = self
            && list.capacity() > list.len()
        {
            list.shrink_to_fit();
        }
    }

    /// Heap bytes of a list of several (what the items point to is counted apart).
    pub fn own_heap_bytes(&self) -> u64 {
        match self {
            InlineList::List(list) if list.capacity() > 0 => {
                super::thin_vec_bytes(list.capacity(), std::mem::size_of::<T>())
            }
            InlineList::List(_) | InlineList::One(_) => 0,
        }
    }
}

impl<T> Deref for InlineList<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            InlineList::One(item) => std::slice::from_ref(item),
            InlineList::List(list) => list,
        }
    }
}

impl<'a, T> IntoIterator for &'a InlineList<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T> FromIterator<T> for InlineList<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut items = InlineList::default();
        for item in iter {
            items.push(item);
        }
        items.shrink_to_fit();
        items
    }
}

impl<T> From<Vec<T>> for InlineList<T> {
    fn from(items: Vec<T>) -> Self {
        items.into_iter().collect()
    }
}

impl<T: PartialEq> PartialEq for InlineList<T> {
    fn eq(&self, other: &InlineList<T>) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for InlineList<T> {}

impl<T: PartialEq<U>, U> PartialEq<Vec<U>> for InlineList<T> {
    fn eq(&self, other: &Vec<U>) -> bool {
        **self == **other
    }
}

impl<T: PartialEq<U>, U, const N: usize> PartialEq<[U; N]> for InlineList<T> {
    fn eq(&self, other: &[U; N]) -> bool {
        **self == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ArcStr, RequestedToolCall};

    fn call(id: &str) -> RequestedToolCall {
        RequestedToolCall {
            id: Some(id.into()),
            name: "lookup".into(),
        }
    }

    #[test]
    fn none_one_and_several_read_as_the_items_pushed() {
        let mut calls = RequestedCalls::default();
        assert!(calls.is_empty());
        assert_eq!(calls.own_heap_bytes(), 0);
        calls.push(call("a"));
        assert!(matches!(calls, InlineList::One(_)));
        assert_eq!(calls, [call("a")]);
        assert_eq!(calls.own_heap_bytes(), 0);
        calls.push(call("b"));
        calls.push(call("c"));
        assert_eq!(calls, vec![call("a"), call("b"), call("c")]);
        assert_eq!(calls[2].id.as_deref(), Some("c"));
        assert!(calls.own_heap_bytes() > 0);
        let collected: RequestedCalls = calls.iter().cloned().collect();
        assert_eq!(collected, calls);
        assert!(!collected.has_slack());
        let one: RequestedCalls = vec![call("x")].into();
        assert!(matches!(one, InlineList::One(_)));
        // Spans compare by their facts (a duplicate span is told from a conflicting one so):
        // a list of one equals the same item held inline.
        let listed = InlineList::List(thin_vec::thin_vec![call("x")]);
        assert_eq!(listed, one);
        assert_ne!(listed, RequestedCalls::default());
    }

    #[test]
    fn finish_reasons_compare_with_texts_and_join() {
        let none: FinishReasons = std::iter::empty().collect();
        assert!(none.is_empty());
        let one: FinishReasons = [ArcStr::from("stop")].into_iter().collect();
        assert!(matches!(one, InlineList::One(_)));
        assert_eq!(one, ["stop"]);
        let several: FinishReasons = ["stop", "length", "tool_calls"]
            .into_iter()
            .map(ArcStr::from)
            .collect();
        assert_eq!(several, ["stop", "length", "tool_calls"]);
        assert_eq!(several.join(", "), "stop, length, tool_calls");
    }

    /// Inline, one item costs no more than a list's pointer and its tag: a model call's facts
    /// keep their block size class.
    #[test]
    fn one_item_is_held_in_two_words() {
        assert_eq!(std::mem::size_of::<RequestedCalls>(), 16);
        assert_eq!(std::mem::size_of::<FinishReasons>(), 16);
    }
}
