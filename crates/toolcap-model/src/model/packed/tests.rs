//! Property tests over every path of the packed forms: random values built into each form,
//! copied, read back, changed, taken apart and dropped in random orders. Read-back values
//! equal what went in, and every shared text and allocation the forms held is given back once
//! they are gone (its count is the test's own again).

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::model::{ArcStr, TokenCount};

/// Shared texts, bytes and ids the forms take references to; each is held once by the test.
struct Pool {
    texts: Vec<ArcStr>,
    sixteen: Vec<Arc<[u8; 16]>>,
    eight: Vec<Arc<[u8; 8]>>,
}

const POOL: usize = 4;

impl Pool {
    fn new() -> Pool {
        Pool {
            // Built at run time: a literal `ArcStr` is static and has no count.
            texts: (0..POOL)
                .map(|n| ArcStr::from(format!("text-{n}")))
                .collect(),
            sixteen: (0..POOL).map(|n| Arc::new([n as u8; 16])).collect(),
            eight: (0..POOL).map(|n| Arc::new([n as u8 + 100; 8])).collect(),
        }
    }

    fn text(&self, n: usize) -> ArcStr {
        self.texts[n % POOL].clone()
    }

    /// Every reference a form took is given back.
    fn assert_only_the_pool_holds(&self) {
        for text in &self.texts {
            assert_eq!(ArcStr::strong_count(text), Some(1), "{text}");
        }
        for bytes in &self.sixteen {
            assert_eq!(Arc::strong_count(bytes), 1);
        }
        for bytes in &self.eight {
            assert_eq!(Arc::strong_count(bytes), 1);
        }
    }
}

/// An attribute value, naming a pool text by its number.
#[derive(Debug, Clone)]
enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Text(usize),
    List(Vec<usize>),
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (0..POOL).prop_map(Value::Text),
        prop::collection::vec(0..POOL, 0..3).prop_map(Value::List),
    ]
}

fn attr_value(value: &Value, pool: &Pool) -> AttrValue {
    match value {
        Value::Null => AttrValue::Null,
        Value::Bool(flag) => AttrValue::Bool(*flag),
        Value::Int(number) => AttrValue::Int(*number),
        Value::Text(n) => AttrValue::Str(pool.text(*n)),
        Value::List(texts) => AttrValue::List(
            texts
                .iter()
                .map(|n| AttrValue::Str(pool.text(*n)))
                .collect(),
        ),
    }
}

fn values(values: &[Value], pool: &Pool) -> Vec<AttrValue> {
    values.iter().map(|value| attr_value(value, pool)).collect()
}

/// What an operation on a list of forms does; numbers pick a form (modulo how many there are).
#[derive(Debug, Clone)]
enum Op<Made> {
    Make(Made),
    Clone(usize),
    Drop(usize),
    Change(usize, usize),
    TakeApart(usize),
}

fn ops<M: std::fmt::Debug + Clone>(
    made: impl Strategy<Value = M> + 'static,
) -> impl Strategy<Value = Vec<Op<M>>> {
    prop::collection::vec(
        prop_oneof![
            3 => made.prop_map(Op::Make),
            2 => any::<usize>().prop_map(Op::Clone),
            2 => any::<usize>().prop_map(Op::Drop),
            2 => (any::<usize>(), 0..POOL).prop_map(|(at, n)| Op::Change(at, n)),
            1 => any::<usize>().prop_map(Op::TakeApart),
        ],
        0..40,
    )
}

/// Runs `ops` over forms and what each should read back as: `make` builds a form from a value,
/// `check` compares a form with its value, `change` changes both alike, `take_apart` gives a
/// form's owned value back for comparing. Every form left is checked, then all are dropped.
fn run<M, W, E>(
    ops: Vec<Op<M>>,
    make: impl Fn(&M) -> (W, E),
    check: impl Fn(&W, &E),
    change: impl Fn(&mut W, &mut E, usize),
    take_apart: impl Fn(W, &E),
) where
    W: Clone,
    E: Clone,
{
    let mut forms: Vec<(W, E)> = Vec::new();
    for op in ops {
        match op {
            Op::Make(made) => forms.push(make(&made)),
            Op::Clone(at) if !forms.is_empty() => {
                let (form, expect) = &forms[at % forms.len()];
                let copy = (form.clone(), expect.clone());
                check(&copy.0, &copy.1);
                forms.push(copy);
            }
            Op::Drop(at) if !forms.is_empty() => drop(forms.swap_remove(at % forms.len())),
            Op::Change(at, n) if !forms.is_empty() => {
                let len = forms.len();
                let (form, expect) = &mut forms[at % len];
                change(form, expect, n);
                check(form, expect);
            }
            Op::TakeApart(at) if !forms.is_empty() => {
                let (form, expect) = forms.swap_remove(at % forms.len());
                take_apart(form, &expect);
            }
            _ => {}
        }
        for (form, expect) in &forms {
            check(form, expect);
        }
    }
}

/// A list, packed or open.
#[derive(Debug, Clone)]
enum List {
    Packed(Vec<Value>, Vec<u8>),
    Open(Vec<(usize, Value)>),
}

fn list() -> impl Strategy<Value = List> {
    prop_oneof![
        (
            prop::collection::vec(value(), 0..5),
            prop::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(held, bytes)| List::Packed(held, bytes)),
        prop::collection::vec((0..POOL, value()), 0..5).prop_map(List::Open),
    ]
}

#[derive(Clone, Debug, PartialEq)]
enum ListRead {
    Packed(Vec<AttrValue>, Vec<u8>),
    Open(OpenList),
}

fn read_slot(slot: &Slot) -> ListRead {
    match slot.view() {
        SlotView::Packed(block) => ListRead::Packed(block.held().to_vec(), block.bytes().to_vec()),
        SlotView::Open(list) => ListRead::Open(list.clone()),
    }
}

fn check_block(block: BlockRef<'_>, held: &[AttrValue], bytes: &[u8]) {
    assert_eq!(block.held(), held);
    assert_eq!(block.bytes(), bytes);
    let expected = match held.is_empty() && bytes.is_empty() {
        true => 0,
        false => size_of::<Header>() + size_of_val(held) + bytes.len(),
    };
    assert_eq!(block.heap_bytes(), expected as u64);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Blocks of random held values and bytes read back what they were built from, as do
    /// their copies, and give back every text they held.
    #[test]
    fn blocks_read_back_their_values_and_bytes(
        lists in prop::collection::vec(
            (prop::collection::vec(value(), 0..6), prop::collection::vec(any::<u8>(), 0..64)),
            0..8,
        ),
        copies in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let pool = Pool::new();
        let mut blocks: Vec<(Block, Vec<AttrValue>, Vec<u8>)> = lists
            .iter()
            .map(|(held, bytes)| {
                let held = values(held, &pool);
                let block = Block::new(held.clone(), bytes).expect("lengths within 32 bits");
                (block, held, bytes.clone())
            })
            .collect();
        for at in copies {
            if blocks.is_empty() {
                break;
            }
            let (block, held, bytes) = &blocks[at % blocks.len()];
            let copy = (block.clone(), held.clone(), bytes.clone());
            blocks.push(copy);
        }
        for (block, held, bytes) in &blocks {
            check_block(block.as_ref(), held, bytes);
            assert_eq!(block.held(), &held[..]);
            assert_eq!(block.bytes(), &bytes[..]);
        }
        drop(blocks);
        pool.assert_only_the_pool_holds();
    }

    /// Attribute slots, packed and open, made, copied, changed (an open list grows, a packed
    /// one is replaced by an open one), taken apart and dropped in random orders.
    #[test]
    fn slots_hold_what_they_were_given(ops in ops(list())) {
        let pool = Pool::new();
        let make = |list: &List| {
            let (repr, read) = match list {
                List::Packed(held, bytes) => {
                    let held = values(held, &pool);
                    let block = Block::new(held.clone(), bytes).expect("lengths within 32 bits");
                    (SlotRepr::Packed(block), ListRead::Packed(held, bytes.clone()))
                }
                List::Open(pairs) => {
                    let list: OpenList = pairs
                        .iter()
                        .map(|(key, value)| (pool.text(*key), attr_value(value, &pool)))
                        .collect();
                    (SlotRepr::Open(Box::new(list.clone())), ListRead::Open(list))
                }
            };
            (Slot::new(repr), read)
        };
        let check = |slot: &Slot, read: &ListRead| {
            assert_eq!(&read_slot(slot), read);
            if let (SlotView::Packed(block), ListRead::Packed(held, bytes)) = (slot.view(), read) {
                check_block(block, held, bytes);
            }
        };
        let change = |slot: &mut Slot, read: &mut ListRead, n: usize| {
            let pair = (pool.text(n), AttrValue::Int(n as i64));
            match (slot.view_mut(), &mut *read) {
                (SlotViewMut::Open(list), ListRead::Open(expected)) => {
                    list.push(pair.clone());
                    expected.push(pair);
                }
                (SlotViewMut::Packed(_), ListRead::Packed(..)) => {
                    let replaced = std::mem::replace(slot, Slot::new(SlotRepr::Open(Box::new(vec![pair.clone()]))));
                    drop(replaced.into_owned());
                    *read = ListRead::Open(vec![pair]);
                }
                _ => panic!("the slot reads as another form than it was given"),
            }
        };
        let take_apart = |slot: Slot, read: &ListRead| match (slot.into_owned(), read) {
            (SlotRepr::Packed(block), ListRead::Packed(held, bytes)) => {
                check_block(block.as_ref(), held, bytes);
            }
            (SlotRepr::Open(list), ListRead::Open(expected)) => assert_eq!(&*list, expected),
            _ => panic!("the slot gives back another form than it was given"),
        };
        run(ops, make, check, change, take_apart);
        pool.assert_only_the_pool_holds();
    }
}

/// Facts of a span's kind of work, naming pool texts by their numbers.
#[derive(Debug, Clone)]
enum Facts {
    Llm(usize, u32),
    Tool(Option<usize>, Option<usize>),
    Retrieval(Option<u64>),
    Several(usize, usize),
    Keys(usize),
}

fn facts() -> impl Strategy<Value = Facts> {
    let key_bits = (usize::BITS - 3) as usize;
    prop_oneof![
        (0..POOL, any::<u32>()).prop_map(|(model, tokens)| Facts::Llm(model, tokens)),
        (proptest::option::of(0..POOL), proptest::option::of(0..POOL))
            .prop_map(|(name, call)| Facts::Tool(name, call)),
        proptest::option::of(any::<u64>()).prop_map(Facts::Retrieval),
        (0..POOL, 0..POOL).prop_map(|(model, name)| Facts::Several(model, name)),
        (0..key_bits).prop_flat_map(|bits| (0..=(1usize << bits) - 1).prop_map(Facts::Keys)),
    ]
}

/// What a facts word should read back as.
#[derive(Debug, Clone, PartialEq)]
enum FactsRead {
    Llm(LlmFacts),
    Tool(ToolFacts),
    Retrieval(RetrievalFacts),
    Several(SeveralFacts),
    Keys(usize),
}

fn read_facts(word: &FactsWord) -> FactsRead {
    match word.view() {
        FactsView::Llm(facts) => FactsRead::Llm(facts.clone()),
        FactsView::Tool(facts) => FactsRead::Tool(facts.clone()),
        FactsView::Retrieval(facts) => FactsRead::Retrieval(facts.clone()),
        FactsView::Several(facts) => FactsRead::Several(facts.clone()),
        FactsView::ToolKeys(bits) => FactsRead::Keys(bits),
        FactsView::LlmKeyed(_) => panic!("no keyed facts are made here"),
    }
}

fn owned_facts(read: FactsRead) -> FactsOwned {
    match read {
        FactsRead::Llm(facts) => FactsOwned::Llm(Box::new(facts)),
        FactsRead::Tool(facts) => FactsOwned::Tool(Box::new(facts)),
        FactsRead::Retrieval(facts) => FactsOwned::Retrieval(Box::new(facts)),
        FactsRead::Several(facts) => FactsOwned::Several(Box::new(facts)),
        FactsRead::Keys(bits) => FactsOwned::ToolKeys(bits),
    }
}

/// An id, naming pool allocations by their numbers.
#[derive(Debug, Clone)]
enum IdMade {
    Span([u8; 8]),
    Eight(usize),
    Sixteen(usize),
    Text(usize),
}

fn id_made() -> impl Strategy<Value = IdMade> {
    prop_oneof![
        any::<[u8; 8]>().prop_map(IdMade::Span),
        (0..POOL).prop_map(IdMade::Eight),
        (0..POOL).prop_map(IdMade::Sixteen),
        (0..POOL).prop_map(IdMade::Text),
    ]
}

/// What an id word should read back as.
#[derive(Debug, Clone, PartialEq)]
enum IdRead {
    Bytes(Vec<u8>),
    Text(String),
}

fn trace_read(word: &TraceWord) -> IdRead {
    match word.view() {
        TraceView::SixteenBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
        TraceView::EightBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
        TraceView::Text(text) => IdRead::Text(text.to_owned()),
    }
}

fn compact_read(word: &CompactWord) -> IdRead {
    match word.view() {
        CompactView::SpanBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
        CompactView::TraceBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
        CompactView::Text(text) => IdRead::Text(text.to_owned()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Facts words of every kind, and of bits, made, copied, changed through their mutable
    /// view, taken apart and dropped in random orders.
    #[test]
    fn facts_words_hold_what_they_were_given(ops in ops(facts())) {
        let pool = Pool::new();
        let make = |facts: &Facts| {
            let read = match facts {
                Facts::Llm(model, tokens) => FactsRead::Llm(LlmFacts {
                    model: Some(pool.text(*model)),
                    input_tokens: TokenCount::from(*tokens),
                    ..LlmFacts::default()
                }),
                Facts::Tool(name, call_id) => FactsRead::Tool(ToolFacts {
                    name: name.map(|n| pool.text(n)),
                    call_id: call_id.map(|n| pool.text(n)),
                }),
                Facts::Retrieval(count) => FactsRead::Retrieval(RetrievalFacts {
                    query: count.map(|count| count.to_string().into()),
                    document_count: *count,
                }),
                Facts::Several(model, name) => FactsRead::Several(SeveralFacts {
                    llm: Some(LlmFacts {
                        provider: Some(pool.text(*model)),
                        ..LlmFacts::default()
                    }),
                    tool: Some(ToolFacts {
                        name: Some(pool.text(*name)),
                        call_id: None,
                    }),
                    retrieval: None,
                }),
                Facts::Keys(bits) => FactsRead::Keys(*bits),
            };
            (FactsWord::new(owned_facts(read.clone())), read)
        };
        let check = |word: &FactsWord, read: &FactsRead| assert_eq!(&read_facts(word), read);
        let change = |word: &mut FactsWord, read: &mut FactsRead, n: usize| {
            let text = Some(pool.text(n));
            match (word.view_mut(), &mut *read) {
                (FactsViewMut::Llm(facts), FactsRead::Llm(expected)) => {
                    facts.response_model = text.clone();
                    expected.response_model = text;
                }
                (FactsViewMut::Tool(facts), FactsRead::Tool(expected)) => {
                    facts.call_id = text.clone();
                    expected.call_id = text;
                }
                (FactsViewMut::Retrieval(facts), FactsRead::Retrieval(expected)) => {
                    facts.document_count = Some(n as u64);
                    expected.document_count = Some(n as u64);
                }
                (FactsViewMut::Several(facts), FactsRead::Several(expected)) => {
                    facts.tool = None;
                    expected.tool = None;
                }
                (FactsViewMut::ToolKeys(bits), FactsRead::Keys(expected)) => {
                    assert_eq!(bits, *expected);
                }
                _ => panic!("the word reads as another kind than it was given"),
            }
        };
        let take_apart = |word: FactsWord, read: &FactsRead| {
            let again = FactsWord::new(word.into_owned());
            assert_eq!(&read_facts(&again), read);
        };
        run(ops, make, check, change, take_apart);
        pool.assert_only_the_pool_holds();
    }

    /// Trace id words of every form made, copied, taken apart and dropped in random orders;
    /// each copy shares the allocation it was copied from.
    #[test]
    fn trace_words_hold_what_they_were_given(ops in ops(id_made())) {
        let pool = Pool::new();
        let make = |made: &IdMade| {
            let owned = match made {
                IdMade::Span(bytes) => TraceOwned::EightBytes(Arc::new(*bytes)),
                IdMade::Eight(n) => TraceOwned::EightBytes(pool.eight[*n].clone()),
                IdMade::Sixteen(n) => TraceOwned::SixteenBytes(pool.sixteen[*n].clone()),
                IdMade::Text(n) => TraceOwned::Text(pool.text(*n)),
            };
            let word = TraceWord::new(owned);
            let read = trace_read(&word);
            (word, read)
        };
        let check = |word: &TraceWord, read: &IdRead| {
            assert_eq!(&trace_read(word), read);
            let copy = TraceWord::new(word.owned());
            assert!(copy.same_bits(word), "a copy shares the allocation");
        };
        let take_apart = |word: TraceWord, read: &IdRead| {
            let read_back = match word.into_owned() {
                TraceOwned::SixteenBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
                TraceOwned::EightBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
                TraceOwned::Text(text) => IdRead::Text(text.to_string()),
            };
            assert_eq!(&read_back, read);
        };
        run(ops, make, check, |_, _, _| {}, take_apart);
        pool.assert_only_the_pool_holds();
    }

    /// Compact id words of every form made, copied and dropped in random orders: they read
    /// back their ids, and are the same bits exactly when they are copies (or the same bytes).
    #[test]
    fn compact_words_hold_what_they_were_given(ops in ops(id_made())) {
        let pool = Pool::new();
        let make = |made: &IdMade| {
            let owned = match made {
                IdMade::Span(bytes) => CompactOwned::SpanBytes(*bytes),
                IdMade::Eight(n) => CompactOwned::SpanBytes(*pool.eight[*n]),
                IdMade::Sixteen(n) => CompactOwned::TraceBytes(pool.sixteen[*n].clone()),
                IdMade::Text(n) => CompactOwned::Text(pool.text(*n)),
            };
            let read = match &owned {
                CompactOwned::SpanBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
                CompactOwned::TraceBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
                CompactOwned::Text(text) => IdRead::Text(text.to_string()),
            };
            (CompactWord::new(owned), read)
        };
        let check = |word: &CompactWord, read: &IdRead| {
            assert_eq!(&compact_read(word), read);
            assert!(word.clone().same_bits(word), "a copy is the same bits");
        };
        let take_apart = |word: CompactWord, read: &IdRead| {
            let read_back = match word.owned() {
                CompactOwned::SpanBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
                CompactOwned::TraceBytes(bytes) => IdRead::Bytes(bytes.to_vec()),
                CompactOwned::Text(text) => IdRead::Text(text.to_string()),
            };
            assert_eq!(&read_back, read);
        };
        run(ops, make, check, |_, _, _| {}, take_apart);
        pool.assert_only_the_pool_holds();
    }
}

#[test]
fn the_packed_forms_keep_their_sizes() {
    assert_eq!(size_of::<Slot>(), size_of::<usize>());
    assert_eq!(size_of::<Option<Slot>>(), size_of::<usize>());
    assert_eq!(size_of::<Option<FactsWord>>(), size_of::<usize>());
    assert_eq!(size_of::<TraceWord>(), size_of::<usize>());
    assert_eq!(size_of::<Option<CompactWord>>(), 9);
    assert_eq!(align_of::<CompactWord>(), 1);
}

/// Words built from separate allocations of equal contents read the same but are not the
/// same bits; a span id's bytes are the same bits wherever they came from.
#[test]
fn same_bits_means_the_same_allocation() {
    let a = CompactWord::new(CompactOwned::TraceBytes(Arc::new([7; 16])));
    let b = CompactWord::new(CompactOwned::TraceBytes(Arc::new([7; 16])));
    assert!(a.view() == b.view());
    assert!(!a.same_bits(&b));
    let c = CompactWord::new(CompactOwned::SpanBytes([1, 2, 3, 4, 5, 6, 7, 8]));
    let d = CompactWord::new(CompactOwned::SpanBytes([1, 2, 3, 4, 5, 6, 7, 8]));
    assert!(c.same_bits(&d));
    assert!(!c.same_bits(&a));
    let e = TraceWord::new(TraceOwned::Text(ArcStr::from(String::from("t"))));
    let f = TraceWord::new(TraceOwned::Text(ArcStr::from(String::from("t"))));
    assert!(!e.same_bits(&f));
    assert!(e.clone().same_bits(&e));
}

/// A tag that would not fit below an address's alignment, or bits that would not fit above
/// the tag, are refused rather than mistaken for another form.
#[test]
#[should_panic(expected = "bits that fit above the tag")]
fn bits_past_the_word_are_refused() {
    drop(FactsWord::new(FactsOwned::ToolKeys(usize::MAX)));
}
