//! A run's search index: the text its spans can be searched by (names, tool names, models,
//! services, providers, error types and messages, attribute and event values — never
//! payloads), ASCII-lower-cased into one contiguous buffer with the span and field of each
//! piece. It grows with the run (new spans append their pieces; a rebuilt run re-indexes).
//!
//! It only narrows: the query evaluator asks it which spans *could* hold a needle, then checks
//! each candidate with its own rule on the span itself, so a match is decided in one place.
//! Scanning one buffer per run instead of chasing every span's strings across the heap is what
//! makes a million-span search fast. Values too long to copy, and texts views compose
//! (a hidden tool result's size line), make their span a candidate for every needle.

use crate::model::{AttrValue, Span};

/// Longest value copied into the index; a longer one makes its span always a candidate.
const MAX_VALUE_BYTES: usize = 512;

/// What a piece of indexed text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Name,
    Tool,
    Model,
    Provider,
    Service,
    ErrorType,
    ErrorMessage,
    /// An attribute or event value, or an event name.
    Value,
}

impl Field {
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// A set of [`Field`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields(u16);

impl Fields {
    pub const fn none() -> Fields {
        Fields(0)
    }
    pub fn with(self, field: Field) -> Fields {
        Fields(self.0 | field.bit())
    }
    /// Everything exact text looks at.
    pub fn all() -> Fields {
        Fields(u16::MAX)
    }
    fn has(self, field: Field) -> bool {
        self.0 & field.bit() != 0
    }
}

#[derive(Debug, Clone, Copy)]
struct Piece {
    start: u32,
    span: u32,
    field: Field,
}

#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    /// Every piece's text, ASCII-lower-cased, each followed by a 0 byte.
    text: Vec<u8>,
    pieces: Vec<Piece>,
    /// Spans with text the index does not hold; candidates for every needle.
    unindexed: Vec<u32>,
    /// Spans indexed so far (`0..indexed`).
    indexed: usize,
}

impl SearchIndex {
    pub fn of(spans: &[Span]) -> SearchIndex {
        let mut index = SearchIndex::default();
        index.extend(spans);
        index
    }

    /// Indexes the spans not indexed yet.
    pub fn extend(&mut self, spans: &[Span]) {
        for (i, span) in spans.iter().enumerate().skip(self.indexed) {
            self.add_span(i as u32, span);
        }
        self.indexed = spans.len().max(self.indexed);
    }

    /// Returns unused capacity when the index covers at most `small_run` spans.
    pub fn trim_slack(&mut self, small_run: usize) {
        if self.indexed <= small_run {
            self.text.shrink_to_fit();
            self.pieces.shrink_to_fit();
            self.unindexed.shrink_to_fit();
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.pieces.capacity() * std::mem::size_of::<Piece>()
            + self.unindexed.capacity() * 4
    }

    /// Adds one piece; false when the text is too long to copy.
    fn add(&mut self, span: u32, field: Field, text: &str) -> bool {
        if text.len() > MAX_VALUE_BYTES || self.text.len() + text.len() >= u32::MAX as usize {
            return false;
        }
        self.pieces.push(Piece {
            start: self.text.len() as u32,
            span,
            field,
        });
        self.text
            .extend(text.bytes().map(|b| b.to_ascii_lowercase()));
        self.text.push(0);
        true
    }

    /// Whether this span already has a piece with exactly `text` (ASCII case aside) in a field
    /// every query that reads values also reads (`gen_ai.request.model` repeats the model).
    fn span_has_piece(&self, span: u32, text: &str) -> bool {
        let name_like = [
            Field::Name,
            Field::Tool,
            Field::Model,
            Field::Service,
            Field::Value,
        ];
        let mut n = self.pieces.len();
        while n > 0 && self.pieces[n - 1].span == span {
            n -= 1;
            let p = self.pieces[n];
            let start = p.start as usize;
            if name_like.contains(&p.field)
                && self.text.get(start + text.len()) == Some(&0)
                && self.text[start..start + text.len()].eq_ignore_ascii_case(text.as_bytes())
            {
                return true;
            }
        }
        false
    }

    fn add_values<K>(&mut self, span: u32, attributes: &[(K, AttrValue)]) -> bool {
        let mut complete = true;
        for (_, value) in attributes {
            complete &= match value {
                AttrValue::Str(s) if self.span_has_piece(span, s) => true,
                AttrValue::Str(s) => self.add(span, Field::Value, s),
                AttrValue::Payload(_) | AttrValue::Bytes(_) | AttrValue::Null => true,
                other => self.add(span, Field::Value, &other.display_short()),
            };
        }
        complete
    }

    fn add_span(&mut self, at: u32, span: &Span) {
        let mut complete = self.add(at, Field::Name, &span.name);
        if let Some(tool) = span.tool_name() {
            complete &= self.add(at, Field::Tool, tool);
        }
        if let Some(llm) = span.llm.as_deref() {
            for model in [&llm.model, &llm.response_model].into_iter().flatten() {
                complete &= self.add(at, Field::Model, model);
            }
            if let Some(provider) = &llm.provider {
                complete &= self.add(at, Field::Provider, provider);
            }
        }
        if let Some(service) = &span.service {
            complete &= self.add(at, Field::Service, service);
        }
        if let Some(error) = span.error.as_deref() {
            if let Some(t) = &error.error_type {
                complete &= self.add(at, Field::ErrorType, t);
            }
            if let Some(m) = &error.message {
                complete &= self.add(at, Field::ErrorMessage, m);
            }
            // Redacted views say the hidden result's size instead: text the index lacks.
            complete &= !error.message_is_result;
        }
        complete &= self.add_values(at, &span.attributes);
        for event in &span.events {
            complete &= self.add(at, Field::Value, &event.name);
            complete &= self.add_values(at, &event.attributes);
        }
        if !complete {
            self.unindexed.push(at);
        }
    }

    /// Spans (ascending) that may hold `needle` — ASCII, lower-case — in one of `fields`:
    /// every span that does is among them. `None` when the index cannot answer (a non-ASCII
    /// needle: lower-casing beyond ASCII is the evaluator's).
    /// Spans from `0..span_count` not indexed yet (a run between two settles) are candidates.
    pub fn candidates(
        &self,
        needle: &str,
        fields: Fields,
        span_count: usize,
    ) -> Option<Vec<usize>> {
        if !needle.is_ascii() || needle.as_bytes().contains(&0) {
            return None;
        }
        let mut spans: Vec<usize> = self.unindexed.iter().map(|&s| s as usize).collect();
        spans.extend(self.indexed..span_count);
        with_finder(needle.as_bytes(), |finder| {
            self.collect_hits(finder, fields, &mut spans)
        });
        spans.sort_unstable();
        spans.dedup();
        Some(spans)
    }

    fn collect_hits(
        &self,
        finder: &memchr::memmem::Finder,
        fields: Fields,
        spans: &mut Vec<usize>,
    ) {
        let mut from = 0;
        while let Some(found) = finder.find(&self.text[from..]) {
            let at = from + found;
            // The piece holding the match; pieces end in 0, which no needle contains.
            let piece = self.pieces.partition_point(|p| p.start as usize <= at) - 1;
            let p = self.pieces[piece];
            if fields.has(p.field) {
                spans.push(p.span as usize);
            }
            let next = self
                .pieces
                .get(piece + 1)
                .map_or(self.text.len(), |n| n.start as usize);
            from = next.max(at + 1);
        }
    }

    /// Spans (ascending) with a piece of `fields` holding the characters of `pattern` (ASCII,
    /// lower-case) in order — what a fuzzy word needs — plus the spans the index cannot speak
    /// for. `None` for a non-ASCII pattern.
    pub fn in_order_candidates(
        &self,
        pattern: &str,
        fields: Fields,
        span_count: usize,
    ) -> Option<Vec<usize>> {
        let split = self.in_order_split(pattern, fields, Fields::none(), span_count)?;
        let mut spans = split.decided;
        spans.extend(split.undecided);
        spans.sort_unstable();
        spans.dedup();
        Some(spans)
    }

    /// [`SearchIndex::in_order_candidates`], split: spans found through an ASCII piece of a
    /// `decisive` field are `decided` (the piece is the field's whole text, lower-cased, so an
    /// in-order test on the span's own text says the same); the rest need the caller's test.
    pub fn in_order_split(
        &self,
        pattern: &str,
        fields: Fields,
        decisive: Fields,
        span_count: usize,
    ) -> Option<InOrderSplit> {
        if !pattern.is_ascii() {
            return None;
        }
        let mut undecided: Vec<usize> = self.unindexed.iter().map(|&s| s as usize).collect();
        undecided.extend(self.indexed..span_count);
        let mut decided: Vec<usize> = Vec::new();
        let wanted = pattern.to_ascii_lowercase();
        for (n, p) in self.pieces.iter().enumerate() {
            let span = p.span as usize;
            if !fields.has(p.field) || decided.last() == Some(&span) {
                continue;
            }
            let end = self
                .pieces
                .get(n + 1)
                .map_or(self.text.len(), |next| next.start as usize);
            let text = &self.text[p.start as usize..end];
            if holds_lowered_in_order(text, wanted.as_bytes()) {
                if decisive.has(p.field) && text.is_ascii() {
                    decided.push(span);
                } else if undecided.last() != Some(&span) {
                    undecided.push(span);
                }
            }
        }
        decided.sort_unstable();
        decided.dedup();
        undecided.sort_unstable();
        undecided.dedup();
        undecided.retain(|s| decided.binary_search(s).is_err());
        Some(InOrderSplit { decided, undecided })
    }
}

/// Spans a fuzzy word may match, as [`SearchIndex::in_order_split`] sorts them (ascending).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InOrderSplit {
    pub decided: Vec<usize>,
    pub undecided: Vec<usize>,
}

/// Whether `wanted`'s bytes occur in `haystack` in order (ASCII case aside): the condition for
/// a fuzzy match, shared with the query evaluator.
pub fn holds_in_order(haystack: &[u8], wanted: &[u8]) -> bool {
    let mut left = wanted.iter().peekable();
    for b in haystack {
        match left.peek() {
            Some(w) if w.eq_ignore_ascii_case(b) => {
                left.next();
            }
            Some(_) => {}
            None => break,
        }
    }
    left.peek().is_none()
}

/// [`holds_in_order`] for a haystack and a pattern both lower-case already (the index's own
/// text): each next wanted byte is found by a SIMD search, not compared byte by byte.
fn holds_lowered_in_order(haystack: &[u8], wanted: &[u8]) -> bool {
    let mut from = 0;
    for &b in wanted {
        match memchr::memchr(b, &haystack[from..]) {
            Some(at) => from += at + 1,
            None => return false,
        }
    }
    true
}

/// The searcher for `needle`, built once per needle and thread: a query asks every run's index
/// with the same needle, and building a SIMD searcher costs more than searching a small run.
fn with_finder<T>(needle: &[u8], search: impl FnOnce(&memchr::memmem::Finder<'static>) -> T) -> T {
    thread_local! {
        static LAST: std::cell::RefCell<Option<memchr::memmem::Finder<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.as_ref().is_none_or(|f| f.needle() != needle) {
            *last = Some(memchr::memmem::Finder::new(needle).into_owned());
        }
        match last.as_ref() {
            Some(finder) => search(finder),
            None => unreachable!("set just above"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ErrorInfo, LlmFacts, ToolFacts};

    #[test]
    fn the_searched_in_order_test_says_what_the_plain_one_says() {
        let hay = [
            "search_flights",
            "get_weather",
            "",
            "s",
            "fls",
            "flights_search",
            "sss",
        ];
        let wanted = ["srchflt", "s", "", "ss", "flt", "sf", "zz", "searchflights"];
        for h in hay {
            for w in wanted {
                assert_eq!(
                    holds_lowered_in_order(h.as_bytes(), w.as_bytes()),
                    holds_in_order(h.as_bytes(), w.as_bytes()),
                    "{w:?} in {h:?}"
                );
            }
        }
        assert!(holds_lowered_in_order(b"search_flights", b"srchflt"));
        assert!(!holds_lowered_in_order(b"flights_search", b"srchflt"));
    }

    fn spans() -> Vec<Span> {
        let mut a = Span {
            name: "Search Flights".into(),
            ..Span::default()
        };
        a.tool = Some(Box::new(ToolFacts {
            name: Some("search_flights".into()),
            ..ToolFacts::default()
        }));
        a.attributes
            .push(("order".into(), AttrValue::Str("ORD-4040".into())));
        let mut b = Span {
            name: "chat".into(),
            ..Span::default()
        };
        b.llm = Some(Box::new(LlmFacts {
            model: Some("GPT-4o".into()),
            ..LlmFacts::default()
        }));
        b.error = Some(Box::new(ErrorInfo {
            message: Some("upstream timed out (non-fatal)".into()),
            ..ErrorInfo::default()
        }));
        b.attributes.push((
            "big".into(),
            AttrValue::Str("x".repeat(MAX_VALUE_BYTES + 1).into()),
        ));
        vec![a, b]
    }

    #[test]
    fn finds_candidates_by_field_and_keeps_unindexed_spans() {
        let index = SearchIndex::of(&spans());
        assert_eq!(
            index.candidates("ord-4040", Fields::all(), 2),
            Some(vec![0, 1])
        );
        let tool = Fields::none().with(Field::Tool);
        // Span 1 holds a value too long to index: always a candidate.
        assert_eq!(index.candidates("flights", tool, 2), Some(vec![0, 1]));
        let mut short = spans();
        short[1].attributes.clear();
        let index = SearchIndex::of(&short);
        assert_eq!(index.candidates("flights", tool, 2), Some(vec![0]));
        assert_eq!(
            index.candidates("non-fatal", Fields::none().with(Field::ErrorMessage), 2),
            Some(vec![1])
        );
        assert_eq!(index.candidates("gpt-4o", tool, 2), Some(vec![]));
        assert_eq!(index.candidates("é", Fields::all(), 2), None);
        // Pieces are separate: a needle across two pieces is not found.
        assert_eq!(
            index.candidates("flightssearch", Fields::all(), 2),
            Some(vec![])
        );
        assert_eq!(
            index.in_order_candidates("srchflt", Fields::none().with(Field::Tool), 2),
            Some(vec![0])
        );
        assert_eq!(
            index.in_order_candidates("srchflt", Fields::none().with(Field::Model), 2),
            Some(vec![])
        );
    }

    #[test]
    fn grows_with_the_run() {
        let all = spans();
        let mut index = SearchIndex::of(&all[..1]);
        assert_eq!(index.candidates("chat", Fields::all(), 1), Some(vec![]));
        // A span the index has not seen yet is a candidate.
        assert_eq!(index.candidates("chat", Fields::all(), 2), Some(vec![1]));
        index.extend(&all);
        assert_eq!(index.candidates("chat", Fields::all(), 2), Some(vec![1]));
        assert_eq!(
            index.candidates("search", Fields::all(), 2),
            Some(vec![0, 1])
        );
    }
}
