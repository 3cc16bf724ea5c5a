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

/// A piece is one `u32` (where its text starts, and its field in the top bits) and a piece's
/// span is found from where each span's pieces begin: a run has about 13 pieces per span, and
/// a 12-byte record per piece was 40% of the index.
#[derive(Debug, Clone, Default)]
pub struct SearchIndex {
    /// Every piece's text, ASCII-lower-cased, one after the other.
    text: Vec<u8>,
    /// Per piece: where its text starts in `text` (it ends where the next one starts) in the
    /// low [`START_BITS`] bits, its [`Field`] above them.
    pieces: Vec<u32>,
    /// Per indexed span (`0..len`): its first piece (ascending; equal to the next span's for a
    /// span without pieces), and [`UNINDEXED`] when it has text the index does not hold (a
    /// candidate for every needle).
    spans: Vec<u32>,
}

/// Bits of a piece's start: a run's index text stays under 256 MiB (past it, spans are
/// unindexed).
const START_BITS: u32 = 28;
const START_MASK: u32 = (1 << START_BITS) - 1;
/// Marks a span with text the index does not hold.
const UNINDEXED: u32 = 1 << 31;
const FIELDS: [Field; 8] = [
    Field::Name,
    Field::Tool,
    Field::Model,
    Field::Provider,
    Field::Service,
    Field::ErrorType,
    Field::ErrorMessage,
    Field::Value,
];

impl SearchIndex {
    pub fn of(spans: &[Span]) -> SearchIndex {
        let mut index = SearchIndex::default();
        index.extend(spans);
        index
    }

    /// Indexes the spans not indexed yet.
    pub fn extend(&mut self, spans: &[Span]) {
        for (i, span) in spans.iter().enumerate().skip(self.spans.len()) {
            self.add_span(i as u32, span);
        }
    }

    /// Returns unused capacity when the index covers at most `small_run` spans.
    pub fn trim_slack(&mut self, small_run: usize) {
        if self.spans.len() <= small_run {
            self.text.shrink_to_fit();
            self.pieces.shrink_to_fit();
            self.spans.shrink_to_fit();
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.pieces.capacity() * 4 + self.spans.capacity() * 4
    }

    /// Adds one piece; false when the text is too long to copy.
    fn add(&mut self, field: Field, text: &str) -> bool {
        if text.len() > MAX_VALUE_BYTES || self.text.len() + text.len() > START_MASK as usize {
            return false;
        }
        self.pieces
            .push(self.text.len() as u32 | (field as u32) << START_BITS);
        self.text
            .extend(text.bytes().map(|b| b.to_ascii_lowercase()));
        true
    }

    fn start(&self, n: usize) -> usize {
        (self.pieces[n] & START_MASK) as usize
    }

    fn field(&self, n: usize) -> Field {
        FIELDS[(self.pieces[n] >> START_BITS) as usize]
    }

    /// Where piece `n`'s text ends.
    fn end(&self, n: usize) -> usize {
        if n + 1 < self.pieces.len() {
            self.start(n + 1)
        } else {
            self.text.len()
        }
    }

    /// The text of piece `n`.
    fn piece_text(&self, n: usize) -> &[u8] {
        &self.text[self.start(n)..self.end(n)]
    }

    fn first_piece(&self, span: usize) -> usize {
        (self.spans[span] & !UNINDEXED) as usize
    }

    /// The span piece `n` belongs to.
    fn span_of_piece(&self, n: usize) -> usize {
        self.spans
            .partition_point(|&s| (s & !UNINDEXED) as usize <= n)
            .saturating_sub(1)
    }

    /// Spans with text the index does not hold, and those not indexed yet (`span_count` is
    /// the run's number of spans now).
    fn always_candidates(&self, span_count: usize) -> Vec<usize> {
        let mut spans: Vec<usize> = (0..self.spans.len())
            .filter(|&s| self.spans[s] & UNINDEXED != 0)
            .collect();
        spans.extend(self.spans.len()..span_count);
        spans
    }

    /// Whether this span already has a piece with exactly `text` (ASCII case aside) in a field
    /// every query that reads values also reads (`gen_ai.request.model` repeats the model).
    fn span_has_piece(&self, text: &str) -> bool {
        let name_like = [
            Field::Name,
            Field::Tool,
            Field::Model,
            Field::Service,
            Field::Value,
        ];
        // The span being indexed is the last one: its pieces are the last ones.
        let first = self
            .spans
            .len()
            .checked_sub(1)
            .map_or(0, |s| self.first_piece(s));
        (first..self.pieces.len()).any(|n| {
            name_like.contains(&self.field(n))
                && self.piece_text(n).eq_ignore_ascii_case(text.as_bytes())
        })
    }

    fn add_values<K>(&mut self, attributes: &[(K, AttrValue)]) -> bool {
        let mut complete = true;
        for (_, value) in attributes {
            complete &= match value {
                AttrValue::Str(s) if self.span_has_piece(s) => true,
                AttrValue::Str(s) => self.add(Field::Value, s),
                AttrValue::Payload(_) | AttrValue::Bytes(_) | AttrValue::Null => true,
                other => self.add(Field::Value, &other.display_short()),
            };
        }
        complete
    }

    fn add_span(&mut self, at: u32, span: &Span) {
        debug_assert_eq!(self.spans.len(), at as usize, "spans come in order");
        self.spans.push(self.pieces.len() as u32);
        let mut complete = self.add(Field::Name, &span.name);
        if let Some(tool) = span.tool_name() {
            complete &= self.add(Field::Tool, tool);
        }
        if let Some(llm) = span.llm.as_deref() {
            for model in [&llm.model, &llm.response_model].into_iter().flatten() {
                complete &= self.add(Field::Model, model);
            }
            if let Some(provider) = &llm.provider {
                complete &= self.add(Field::Provider, provider);
            }
        }
        if let Some(service) = &span.service {
            complete &= self.add(Field::Service, service);
        }
        if let Some(error) = span.error.as_deref() {
            if let Some(t) = &error.error_type {
                complete &= self.add(Field::ErrorType, t);
            }
            if let Some(m) = &error.message {
                complete &= self.add(Field::ErrorMessage, m);
            }
            // Redacted views say the hidden result's size instead: text the index lacks.
            complete &= !error.message_is_result;
        }
        complete &= self.add_values(&span.attributes);
        for event in &span.events {
            complete &= self.add(Field::Value, &event.name);
            complete &= self.add_values(&event.attributes);
        }
        if !complete && let Some(last) = self.spans.last_mut() {
            *last |= UNINDEXED;
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
        let mut spans = self.always_candidates(span_count);
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
        let needle_len = finder.needle().len();
        let mut from = 0;
        while let Some(found) = finder.find(&self.text[from..]) {
            let at = from + found;
            // The piece holding the match's start (the last of any empty ones starting there).
            let piece = self
                .pieces
                .partition_point(|&p| (p & START_MASK) as usize <= at)
                - 1;
            let end = self.end(piece);
            if at + needle_len > end {
                // Across two pieces: not a match; one may still start inside this one.
                from = at + 1;
                continue;
            }
            if fields.has(self.field(piece)) {
                spans.push(self.span_of_piece(piece));
            }
            from = end.max(at + 1);
        }
    }

    /// Spans (ascending) with a piece of `fields` holding the characters of `pattern` (ASCII)
    /// in order — what a fuzzy word needs — plus the spans the index cannot speak for; `None`
    /// for a non-ASCII pattern. Spans found through an ASCII piece of a `decisive` field are
    /// `decided` (the piece is the field's whole text, lower-cased, so an in-order test on the
    /// span's own text says the same); the rest need the caller's test.
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
        let mut undecided = self.always_candidates(span_count);
        let mut decided: Vec<usize> = Vec::new();
        let wanted = pattern.to_ascii_lowercase();
        let mut span = 0;
        for n in 0..self.pieces.len() {
            let field = self.field(n);
            while span + 1 < self.spans.len() && self.first_piece(span + 1) <= n {
                span += 1;
            }
            if !fields.has(field) || decided.last() == Some(&span) {
                continue;
            }
            let text = self.piece_text(n);
            if holds_lowered_in_order(text, wanted.as_bytes()) {
                if decisive.has(field) && text.is_ascii() {
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
    fn every_field_reads_back_from_its_packed_bits() {
        for field in FIELDS {
            assert_eq!(FIELDS[field as usize], field);
        }
        assert!(
            FIELDS.len() <= 1 << (31 - START_BITS),
            "fields fit above the start"
        );
    }

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
        let tool_decides = |field: Field| {
            let fields = Fields::none().with(field);
            index.in_order_split("srchflt", fields, tool, 2)
        };
        let split =
            |decided: Vec<usize>, undecided: Vec<usize>| Some(InOrderSplit { decided, undecided });
        assert_eq!(tool_decides(Field::Tool), split(vec![0], vec![]));
        assert_eq!(tool_decides(Field::Model), split(vec![], vec![]));
        assert_eq!(tool_decides(Field::Name), split(vec![], vec![0]));
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
