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
/// in two bytes and the first 262,144 in three, where a `u32` each would take four. Each
/// span's pieces end with a number that is no piece ([`END`] or [`END_UNINDEXED`]): queries read
/// the spans in order, so a run holds one list where a list of where each span began would
/// take a second allocation and four bytes a span.
#[derive(Clone, Default)]
pub struct SearchIndex {
    /// Every span's pieces, one after the other, each span's ended by its end mark.
    pieces: ThinVec<u8>,
    /// Spans indexed, with [`SOME_UNINDEXED`] once one of them has text the index does not
    /// hold (so a query that finds no such span reads no pieces to learn it).
    spans: u32,
    /// Where the last span's pieces begin (a span's pieces are not repeated).
    last_span_start: u32,
    /// Where the pieces' texts are; taken when the first span is indexed.
    vocabulary: Option<Arc<Vocabulary>>,
}

/// Ends a span's pieces (a piece is written as its number plus two).
const END: u64 = 0;
/// Ends the pieces of a span with text the index does not hold (a candidate for every needle).
const END_UNINDEXED: u64 = 1;
/// In [`SearchIndex::spans`]: some span is unindexed.
const SOME_UNINDEXED: u32 = 1 << 31;
/// Pieces stop growing past this many bytes: a run's later texts are searched span by span.
const MAX_PIECES_BYTES: usize = 1 << 31;
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

/// Appends `number` seven bits a byte, low bits first, the top bit set on all but the last.
fn write_number(bytes: &mut ThinVec<u8>, mut number: u64) {
    while number >= 0x80 {
        bytes.push(number as u8 | 0x80);
        number >>= 7;
    }
    bytes.push(number as u8);
}

/// Appends `piece` (as its number plus two: 0 and 1 are end marks).
fn write_piece(bytes: &mut ThinVec<u8>, piece: u32) {
    write_number(bytes, u64::from(piece) + 2);
}

/// The number [`write_number`] wrote at the start of `bytes`, and the bytes it took.
fn read_number(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut number = 0u64;
    for (at, &byte) in bytes.iter().enumerate() {
        number |= u64::from(byte & 0x7f) << (7 * at);
        // A piece ends by its fifth byte: anything longer was not written by `write_number`.
        if byte & 0x80 == 0 || at == MAX_PIECE_BYTES - 1 {
            return Some((number, at + 1));
        }
    }
    None
}

/// The pieces written in `bytes` (one span's, without its end mark) by [`write_piece`].
fn read_pieces(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let (number, len) = read_number(&bytes[at..])?;
        at += len;
        // Only pieces are passed here; a stray mark reads as the first piece.
        Some(number.saturating_sub(2) as u32)
    })
}

impl SearchIndex {
    pub fn of(spans: &[Span]) -> SearchIndex {
        let mut index = SearchIndex::default();
        index.extend(spans);
        index
    }

    /// Spans indexed.
    fn len(&self) -> usize {
        (self.spans & !SOME_UNINDEXED) as usize
    }

    /// Indexes the spans not indexed yet.
    pub fn extend(&mut self, spans: &[Span]) {
        if spans.len() <= self.len() {
            return;
        }
        let vocabulary = Arc::clone(self.vocabulary.get_or_insert_with(Vocabulary::current));
        for span in &spans[self.len()..] {
            self.add_span(&vocabulary, span);
        }
    }

    /// Returns unused capacity when the index covers at most `small_run` spans.
    pub fn trim_slack(&mut self, small_run: usize) {
        if self.len() <= small_run {
            self.pieces.shrink_to_fit();
        }
    }

    /// Heap bytes held by this run alone (see [`SearchIndex::shared_heap`]).
    pub fn heap_bytes(&self) -> usize {
        crate::model::thin_vec_bytes(self.pieces.capacity(), 1) as usize
    }

    /// The vocabulary this index shares with other runs: its address (to count it once) and
    /// heap bytes.
    pub fn shared_heap(&self) -> Option<(usize, usize)> {
        let vocabulary = self.vocabulary.as_ref()?;
        Some((Arc::as_ptr(vocabulary) as usize, vocabulary.heap_bytes()))
    }

    /// Each indexed span in order: whether it has text the index does not hold, and its
    /// pieces' bytes (read them with [`read_pieces`]).
    fn each_span(&self) -> impl Iterator<Item = (bool, &[u8])> + '_ {
        let bytes = &self.pieces[..];
        let mut at = 0;
        std::iter::from_fn(move || {
            let start = at;
            loop {
                let (number, len) = read_number(&bytes[at..])?;
                at += len;
                match number {
                    END => return Some((false, &bytes[start..at - len])),
                    END_UNINDEXED => return Some((true, &bytes[start..at - len])),
                    _ => {}
                }
            }
        })
    }

    /// Adds a piece to the span being indexed (the last one); false when the text is too long
    /// to index. A piece the span already has (same text, same field) is not added again.
    fn add(&mut self, vocabulary: &Vocabulary, field: Field, text: &str) -> bool {
        // A run whose pieces would outgrow their offsets (2 GiB) has its later texts searched
        // span by span instead.
        if text.len() > MAX_VALUE_BYTES || self.pieces.len() + MAX_PIECE_BYTES >= MAX_PIECES_BYTES {
            return false;
        }
        let Some(id) = vocabulary.id(text) else {
            return false;
        };
        let first = self.last_span_start as usize;
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
            let rules = redact::key_rules(key);
            if value.is_payload() || rules.secret {
                continue;
            }
            // A text is read as it is borrowed (one written in place would otherwise be made
            // into a value of its own first); like a list or a map it can hold content, which
            // the redacted view hides under a payload key (`KeyRules::hides`).
            if let Some(text) = value.text() {
                if !rules.payload {
                    complete &= self.add(vocabulary, Field::Value, text);
                }
                continue;
            }
            if matches!(*value, AttrValue::Bytes(_) | AttrValue::Null) || rules.hides(&value) {
                continue;
            }
            complete &= self.add(vocabulary, Field::Value, &value.display_short());
        }
        complete
    }

    fn add_span(&mut self, vocabulary: &Vocabulary, span: &Span) {
        // Below `MAX_PIECES_BYTES` plus a mark a span: `add` keeps the pieces under it.
        self.last_span_start = u32::try_from(self.pieces.len()).unwrap_or(u32::MAX);
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
        write_number(&mut self.pieces, if complete { END } else { END_UNINDEXED });
        self.spans += 1;
        if !complete {
            self.spans |= SOME_UNINDEXED;
        }
    }

    /// Spans with text the index does not hold, and those not indexed yet (`span_count` is
    /// the run's number of spans now), ascending.
    fn always_candidates(&self, span_count: usize) -> Vec<usize> {
        let mut spans: Vec<usize> = Vec::new();
        if self.spans & SOME_UNINDEXED != 0 {
            let unindexed = self.each_span().enumerate().filter(|(_, (u, _))| *u);
            spans.extend(unindexed.map(|(span, _)| span));
        }
        spans.extend(self.len()..span_count);
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
            let hit = |p: u32| fields.has(field_of(p)) && found.hit(id_of(p));
            for (span, (unindexed, pieces)) in self.each_span().enumerate() {
                if !unindexed && read_pieces(pieces).any(hit) {
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
            for (span, (unindexed, pieces)) in self.each_span().enumerate() {
                if unindexed {
                    continue;
                }
                let mut holds = false;
                for p in read_pieces(pieces) {
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
            let span = |(unindexed, pieces): (bool, &[u8])| {
                let pieces: Vec<(Field, String)> = read_pieces(pieces)
                    .map(|p| {
                        let text = String::from_utf8_lossy(texts.text(id_of(p)));
                        (field_of(p), text.into_owned())
                    })
                    .collect();
                (unindexed, pieces)
            };
            f.debug_list().entries(self.each_span().map(span)).finish()
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
