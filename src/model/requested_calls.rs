//! The tool calls a model call asked for: none or one on almost every call, held inline in the
//! call's facts so that they need no block of their own; a list only when a response asked
//! for several calls at once.

use std::ops::Deref;

use thin_vec::ThinVec;

use super::RequestedToolCall;

/// Reads as a slice of calls (`is_empty`, `len`, `iter`, indexing); equal when the calls are,
/// however they are held.
#[derive(Debug, Clone)]
pub enum RequestedCalls {
    One(RequestedToolCall),
    /// None (an empty list needs no allocation) or several.
    List(ThinVec<RequestedToolCall>),
}

impl Default for RequestedCalls {
    fn default() -> Self {
        RequestedCalls::List(ThinVec::new())
    }
}

impl RequestedCalls {
    pub fn push(&mut self, call: RequestedToolCall) {
        match self {
            RequestedCalls::List(list) if list.is_empty() => *self = RequestedCalls::One(call),
            RequestedCalls::List(list) => list.push(call),
            RequestedCalls::One(_) => {
                let RequestedCalls::One(first) = std::mem::take(self) else {
                    unreachable!("matched as one call above");
                };
                let mut list = ThinVec::with_capacity(2);
                list.push(first);
                list.push(call);
                *self = RequestedCalls::List(list);
            }
        }
    }

    /// A list grown while parsing has room for more calls than it holds.
    pub fn has_slack(&self) -> bool {
        matches!(self, RequestedCalls::List(list) if list.capacity() > list.len())
    }

    /// A list grown while parsing keeps exactly its calls once stored.
    pub fn shrink_to_fit(&mut self) {
        if let RequestedCalls::List(list) = self
            && list.capacity() > list.len()
        {
            list.shrink_to_fit();
        }
    }

    /// Heap bytes of a list of several (the texts themselves are shared, counted apart).
    pub fn own_heap_bytes(&self) -> u64 {
        match self {
            RequestedCalls::List(list) if list.capacity() > 0 => {
                super::thin_vec_bytes(list.capacity(), std::mem::size_of::<RequestedToolCall>())
            }
            RequestedCalls::List(_) | RequestedCalls::One(_) => 0,
        }
    }
}

impl Deref for RequestedCalls {
    type Target = [RequestedToolCall];
    fn deref(&self) -> &[RequestedToolCall] {
        match self {
            RequestedCalls::One(call) => std::slice::from_ref(call),
            RequestedCalls::List(list) => list,
        }
    }
}

impl<'a> IntoIterator for &'a RequestedCalls {
    type Item = &'a RequestedToolCall;
    type IntoIter = std::slice::Iter<'a, RequestedToolCall>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<RequestedToolCall> for RequestedCalls {
    fn from_iter<I: IntoIterator<Item = RequestedToolCall>>(iter: I) -> Self {
        let mut calls = RequestedCalls::default();
        for call in iter {
            calls.push(call);
        }
        calls.shrink_to_fit();
        calls
    }
}

impl From<Vec<RequestedToolCall>> for RequestedCalls {
    fn from(calls: Vec<RequestedToolCall>) -> Self {
        calls.into_iter().collect()
    }
}

impl From<ThinVec<RequestedToolCall>> for RequestedCalls {
    fn from(calls: ThinVec<RequestedToolCall>) -> Self {
        calls.into_iter().collect()
    }
}

impl PartialEq for RequestedCalls {
    fn eq(&self, other: &RequestedCalls) -> bool {
        **self == **other
    }
}

impl Eq for RequestedCalls {}

impl PartialEq<Vec<RequestedToolCall>> for RequestedCalls {
    fn eq(&self, other: &Vec<RequestedToolCall>) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<[RequestedToolCall; N]> for RequestedCalls {
    fn eq(&self, other: &[RequestedToolCall; N]) -> bool {
        **self == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> RequestedToolCall {
        RequestedToolCall {
            id: Some(id.into()),
            name: "lookup".into(),
        }
    }

    #[test]
    fn none_one_and_several_read_as_the_calls_pushed() {
        let mut calls = RequestedCalls::default();
        assert!(calls.is_empty());
        assert_eq!(calls.own_heap_bytes(), 0);
        calls.push(call("a"));
        assert!(matches!(calls, RequestedCalls::One(_)));
        assert_eq!(calls, [call("a")]);
        assert_eq!(calls.own_heap_bytes(), 0);
        calls.push(call("b"));
        calls.push(call("c"));
        assert_eq!(calls, vec![call("a"), call("b"), call("c")]);
        assert_eq!(calls[2].id.as_deref(), Some("c"));
        assert!(calls.own_heap_bytes() > 0);
        let collected: RequestedCalls = calls.iter().cloned().collect();
        assert_eq!(collected, calls);
        let one: RequestedCalls = vec![call("x")].into();
        assert!(matches!(one, RequestedCalls::One(_)));
        // Spans compare by their facts (a duplicate span is told from a conflicting one so):
        // a list of one equals the same call held inline.
        let listed = RequestedCalls::List(thin_vec::thin_vec![call("x")]);
        assert_eq!(listed, one);
        assert_ne!(listed, RequestedCalls::default());
    }

    /// Inline, one call costs no more than a list's pointer and its tag: the facts of a model
    /// call keep their block size class.
    #[test]
    fn one_call_is_held_in_two_words() {
        assert_eq!(std::mem::size_of::<RequestedCalls>(), 16);
    }
}
