//! A run's search index: the text its spans can be searched by (names, tool names, models,
//! services, providers, error types and messages, attribute and event values — never
//! payloads, secrets, or values the redacted view hides), as pieces naming their span, their
//! field and their text. The texts themselves, ASCII-lower-cased, are in a [`Vocabulary`]
//! shared with other runs: they repeat from run to run. It grows with the run (new spans append
//! their pieces; a rebuilt run re-indexes).
//!
//! It only narrows: the query evaluator asks it which spans *could* hold a needle, then checks
//! each candidate with its own rule on the span itself, so a match is decided in one place.
//! A needle is searched for once in the vocabulary's distinct texts (see [`probes`]); a run
//! then only looks its pieces' ids up, instead of anyone chasing every span's strings across
//! the heap: that is what makes a million-span search fast. Values too long to index, and
//! texts views compose (a hidden tool result's size line), make their span a candidate for
//! every needle.

mod probes;
mod vocabulary;

use std::sync::Arc;

use thin_vec::ThinVec;

use crate::model::{AttrValue, Attributes, Span};
use crate::redact;
use probes::{Found, Probe, with_found};
use vocabulary::Vocabulary;

/// Longest value indexed; a longer one makes its span always a candidate.
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

/// A piece is a text's id in the vocabulary and its field, written as one variable-length
/// number (seven bits a byte; the field in the low three bits): the first 2,048 texts' ids fit
/// in two bytes and the first 262,144 in three, where a `u32` each made the index a tenth of a
/// loaded store. A piece's span is found from where each span's pieces begin: a run has about
/// 13 pieces per span.
#[derive(Clone, Default)]
pub struct SearchIndex {
    /// Every span's pieces, one after the other.
    pieces: ThinVec<u8>,
    /// Per indexed span (`0..len`): the byte its pieces begin at (ascending; equal to the next
    /// span's for a span without pieces), and [`UNINDEXED`] when it has text the index does
    /// not hold (a candidate for every needle).
    spans: ThinVec<u32>,
    /// Where the pieces' texts are; taken when the first span is indexed.
    vocabulary: Option<Arc<Vocabulary>>,
}

/// Marks a span with text the index does not hold.
const UNINDEXED: u32 = 1 << 31;
const FIELD_BITS: u32 = 3;
/// A `u32` written seven bits a byte.
const MAX_PIECE_BYTES: usize = 5;
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
/// Fields every query that reads values also reads: a value equal to a piece of one of them
/// adds nothing (`gen_ai.request.model` repeats the model).
const NAME_LIKE: [Field; 5] = [
    Field::Name,
    Field::Tool,
    Field::Model,
    Field::Service,
    Field::Value,
];

/// A piece's number: its text's id above its field.
fn piece(id: u32, field: Field) -> u32 {
    id << FIELD_BITS | field as u32
}

fn id_of(piece: u32) -> u32 {
    piece >> FIELD_BITS
}

fn field_of(piece: u32) -> Field {
    FIELDS[(piece & ((1 << FIELD_BITS) - 1)) as usize]
}

/// Appends `piece` seven bits a byte, low bits first, the top bit set on all but the last.
fn write_piece(bytes: &mut ThinVec<u8>, mut piece: u32) {
    while piece >= 0x80 {
        bytes.push(piece as u8 | 0x80);
        piece >>= 7;
    }
    bytes.push(piece as u8);
}

/// The pieces written in `bytes` by [`write_piece`], in order.
fn read_pieces(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let mut piece = 0u32;
        let mut shift = 0;
        loop {
            let byte = *bytes.get(at)?;
            at += 1;
            piece |= u32::from(byte & 0x7f) << shift;
            // A `u32` ends by its fifth byte: anything longer was not written by `write_piece`.
            if byte & 0x80 == 0 || shift == 28 {
                return Some(piece);
            }
            shift += 7;
        }
    })
}

impl SearchIndex {
    pub fn of(spans: &[Span]) -> SearchIndex {
        let mut index = SearchIndex::default();
        index.extend(spans);
        index
    }

    /// Indexes the spans not indexed yet.
    pub fn extend(&mut self, spans: &[Span]) {
        if spans.len() <= self.spans.len() {
            return;
        }
        let vocabulary = Arc::clone(self.vocabulary.get_or_insert_with(Vocabulary::current));
        for span in &spans[self.spans.len()..] {
            self.add_span(&vocabulary, span);
        }
    }

    /// Returns unused capacity when the index covers at most `small_run` spans.
    pub fn trim_slack(&mut self, small_run: usize) {
        if self.spans.len() <= small_run {
            self.pieces.shrink_to_fit();
            self.spans.shrink_to_fit();
        }
    }

    /// Heap bytes held by this run alone (see [`SearchIndex::shared_heap`]).
    pub fn heap_bytes(&self) -> usize {
        let thin = |capacity, each| crate::model::thin_vec_bytes(capacity, each) as usize;
        thin(self.pieces.capacity(), 1) + thin(self.spans.capacity(), 4)
    }

    /// The vocabulary this index shares with other runs: its address (to count it once) and
    /// heap bytes.
    pub fn shared_heap(&self) -> Option<(usize, usize)> {
        let vocabulary = self.vocabulary.as_ref()?;
        Some((Arc::as_ptr(vocabulary) as usize, vocabulary.heap_bytes()))
    }

    /// Pieces of span `span`.
    fn pieces_of(&self, span: usize) -> impl Iterator<Item = u32> + '_ {
        let first = (self.spans[span] & !UNINDEXED) as usize;
        let end = self
            .spans
            .get(span + 1)
            .map_or(self.pieces.len(), |&s| (s & !UNINDEXED) as usize);
        read_pieces(&self.pieces[first..end])
    }

    /// Adds a piece to the span being indexed (the last one); false when the text is too long
    /// to index. A piece the span already has (same text, same field) is not added again.
    fn add(&mut self, vocabulary: &Vocabulary, field: Field, text: &str) -> bool {
        // A run whose pieces would outgrow their offsets (2 GiB) has its later texts searched
        // span by span instead.
        if text.len() > MAX_VALUE_BYTES || self.pieces.len() + MAX_PIECE_BYTES >= UNINDEXED as usize
        {
            return false;
        }
        let Some(id) = vocabulary.id(text) else {
            return false;
        };
        let first = self.spans.last().map_or(0, |&s| (s & !UNINDEXED) as usize);
        let known = read_pieces(&self.pieces[first..]).any(|p| {
            id_of(p) == id
                && (field_of(p) == field
                    || field == Field::Value && NAME_LIKE.contains(&field_of(p)))
        });
        if !known {
            write_piece(&mut self.pieces, piece(id, field));
        }
        true
    }

    /// Indexes the attribute values a redacted search may match. Secrets are never searched,
    /// and the values the redacted view hides (`redact::hides_value`) only by a revealed
    /// search, which reads every span itself (it searches payloads, which no index holds):
    /// leaving both out keeps the index from copying every short message a run records.
    fn add_values(&mut self, vocabulary: &Vocabulary, attributes: &Attributes) -> bool {
        let mut complete = true;
        for (key, value) in attributes {
            if value.is_payload() {
                continue;
            }
            // A text read as it is borrowed: one written in place would otherwise be made into
            // a value of its own first.
            if let Some(text) = value.text() {
                let rules = redact::key_rules(key);
                // A text can hold content: the redacted view hides it where the key's rules
                // say payload (`KeyRules::hides`).
                if !(rules.secret || rules.payload) {
                    complete &= self.add(vocabulary, Field::Value, text);
                }
                continue;
            }
            let value = &*value;
            if matches!(value, AttrValue::Bytes(_) | AttrValue::Null) {
                continue;
            }
            let rules = redact::key_rules(key);
            if rules.secret || rules.hides(value) {
                continue;
            }
            complete &= match value {
                AttrValue::Str(s) => self.add(vocabulary, Field::Value, s),
                other => self.add(vocabulary, Field::Value, &other.display_short()),
            };
        }
        complete
    }

    fn add_span(&mut self, vocabulary: &Vocabulary, span: &Span) {
        // Below `UNINDEXED`: `add` keeps the pieces under it.
        self.spans.push(self.pieces.len() as u32);
        let mut complete = self.add(vocabulary, Field::Name, &span.name);
        if let Some(tool) = span.tool_name() {
            complete &= self.add(vocabulary, Field::Tool, tool);
        }
        if let Some(llm) = span.llm() {
            for model in [&llm.model, &llm.response_model].into_iter().flatten() {
                complete &= self.add(vocabulary, Field::Model, model);
            }
            if let Some(provider) = &llm.provider {
                complete &= self.add(vocabulary, Field::Provider, provider);
            }
        }
        if let Some(service) = span.service() {
            complete &= self.add(vocabulary, Field::Service, service);
        }
        if let Some(error) = span.error() {
            if let Some(t) = &error.error_type {
                complete &= self.add(vocabulary, Field::ErrorType, t);
            }
            if let Some(m) = &error.message {
                complete &= self.add(vocabulary, Field::ErrorMessage, m);
            }
            // Redacted views say the hidden result's size instead: text the index lacks.
            complete &= !error.message_is_result;
        }
        complete &= self.add_values(vocabulary, &span.attributes);
        for event in span.events() {
            complete &= self.add(vocabulary, Field::Value, &event.name);
            complete &= self.add_values(vocabulary, &event.attributes);
        }
        if !complete && let Some(last) = self.spans.last_mut() {
            *last |= UNINDEXED;
        }
    }

    /// Spans with text the index does not hold, and those not indexed yet (`span_count` is
    /// the run's number of spans now), ascending.
    fn always_candidates(&self, span_count: usize) -> Vec<usize> {
        let mut spans: Vec<usize> = (0..self.spans.len())
            .filter(|&s| self.spans[s] & UNINDEXED != 0)
            .collect();
        spans.extend(self.spans.len()..span_count);
        spans
    }

    /// What `needle` is found in, when any text of the vocabulary holds it.
    fn with_found<T>(
        &self,
        probe: Probe,
        needle: &[u8],
        reading: impl FnOnce(&Found) -> T,
    ) -> Option<T> {
        let vocabulary = self.vocabulary.as_deref()?;
        with_found(vocabulary, probe, needle, |found| {
            found.any().then(|| reading(found))
        })
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
        self.with_found(Probe::Contains, needle.as_bytes(), |found| {
            for span in 0..self.spans.len() {
                let hit = |p: u32| fields.has(field_of(p)) && found.hit(id_of(p));
                if self.spans[span] & UNINDEXED == 0 && self.pieces_of(span).any(hit) {
                    spans.push(span);
                }
            }
            spans.sort_unstable();
        });
        Some(spans)
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
        self.with_found(Probe::InOrder, wanted.as_bytes(), |found| {
            for span in 0..self.spans.len() {
                if self.spans[span] & UNINDEXED != 0 {
                    continue;
                }
                let mut holds = false;
                for p in self.pieces_of(span) {
                    let (field, id) = (field_of(p), id_of(p));
                    if !fields.has(field) || !found.hit(id) {
                        continue;
                    }
                    holds = true;
                    if decisive.has(field) && found.ascii_hit(id) {
                        decided.push(span);
                        holds = false;
                        break;
                    }
                }
                if holds {
                    undecided.push(span);
                }
            }
            undecided.sort_unstable();
        });
        Some(InOrderSplit { decided, undecided })
    }
}

/// Each span's pieces as field and text: ids depend on which run was indexed first, so two
/// equal runs indexed on different threads print the same.
impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(vocabulary) = &self.vocabulary else {
            return f.write_str("SearchIndex(empty)");
        };
        vocabulary.read(|texts| {
            let span = |s: usize| {
                let pieces: Vec<(Field, String)> = self
                    .pieces_of(s)
                    .map(|p| {
                        let text = String::from_utf8_lossy(texts.text(id_of(p)));
                        (field_of(p), text.into_owned())
                    })
                    .collect();
                (self.spans[s] & UNINDEXED != 0, pieces)
            };
            f.debug_list()
                .entries((0..self.spans.len()).map(span))
                .finish()
        })
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

#[cfg(test)]
mod tests;
