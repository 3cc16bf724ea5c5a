use super::*;
use crate::model::{Payload, PayloadBody, interner};

fn every_kind() -> Vec<(ArcStr, AttrValue)> {
    vec![
        (
            "gen_ai.request.model".into(),
            AttrValue::Str("gpt-4o".into()),
        ),
        (
            "gen_ai.response.id".into(),
            AttrValue::Str("chatcmpl-1".into()),
        ),
        ("long".into(), AttrValue::Str("z".repeat(200).into())),
        ("gen_ai.usage.input_tokens".into(), AttrValue::Int(1234)),
        ("negative".into(), AttrValue::Int(i64::MIN)),
        ("max".into(), AttrValue::Int(i64::MAX)),
        ("temperature".into(), AttrValue::Float(0.7)),
        ("yes".into(), AttrValue::Bool(true)),
        ("no".into(), AttrValue::Bool(false)),
        ("nothing".into(), AttrValue::Null),
        ("bytes".into(), AttrValue::Bytes(Box::new(vec![0, 1, 255]))),
        (
            "gen_ai.response.finish_reasons".into(),
            AttrValue::List([AttrValue::Str("stop".into())].into_iter().collect()),
        ),
        (
            "map".into(),
            AttrValue::Map([("k".to_string(), AttrValue::Int(1))].into_iter().collect()),
        ),
        (
            "gen_ai.input.messages".into(),
            AttrValue::Payload(std::sync::Arc::new(Payload {
                bytes: 12,
                body: PayloadBody::Inline("[{\"a\":1}]".into()),
                ..Payload::default()
            })),
        ),
        // The same key twice: both stay, in order.
        (
            "gen_ai.request.model".into(),
            AttrValue::Str("second".into()),
        ),
        ("".into(), AttrValue::Str("".into())),
    ]
}

fn pairs(attributes: &Attributes) -> Vec<(String, AttrValue)> {
    attributes
        .iter()
        .map(|(k, v)| (k.to_string(), (*v).clone()))
        .collect()
}

#[test]
fn packed_attributes_read_as_the_pairs_they_were_packed_from() {
    let list = every_kind();
    let open = Attributes::from(list.clone());
    let mut packed = open.clone();
    packed.pack();
    assert!(packed.is_packed() && !open.is_packed());
    let expected: Vec<(String, AttrValue)> = list
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    assert_eq!(pairs(&open), expected);
    assert_eq!(pairs(&packed), expected);
    assert_eq!(packed.len(), list.len());
    assert_eq!(packed, open);
    assert_eq!(packed.to_vec(), list);
    assert_eq!(
        packed.get("gen_ai.request.model").as_deref(),
        Some(&AttrValue::Str("gpt-4o".into()))
    );
    assert_eq!(packed.get("absent"), None);
    // Packing twice changes nothing.
    let again = {
        let mut a = packed.clone();
        a.pack();
        a
    };
    assert_eq!(pairs(&again), expected);
}

#[test]
fn only_what_cannot_be_packed_is_held_in_full() {
    let mut packed = Attributes::from(every_kind());
    packed.pack();
    let held: Vec<&AttrValue> = packed.held_values().collect();
    // The long text, bytes, map and payload; not the model names, numbers, flags, the empty
    // text, the list of finish reasons, or the short one-off id (written in place).
    assert_eq!(held.len(), 4, "{held:?}");
    assert!(!held.contains(&&AttrValue::Str("chatcmpl-1".into())));
    assert!(!held.contains(&&AttrValue::Str("gpt-4o".into())));
    assert!(
        held.iter()
            .all(|v| !matches!(v, AttrValue::Int(_) | AttrValue::Bool(_)))
    );
}

#[test]
fn a_list_is_packed_when_its_items_can_be_and_held_otherwise() {
    let list = |items: Vec<AttrValue>| AttrValue::List(items.into_iter().collect());
    let pairs_in = vec![
        (
            ArcStr::from("reasons"),
            list(vec![
                AttrValue::Str("stop".into()),
                AttrValue::Int(-3),
                AttrValue::Float(1.5),
                AttrValue::Bool(true),
                AttrValue::Null,
            ]),
        ),
        ("empty".into(), list(vec![])),
        ("nested".into(), list(vec![list(vec![AttrValue::Int(1)])])),
        (
            "with_a_map".into(),
            list(vec![AttrValue::Map(Default::default())]),
        ),
        (
            "tool.call.id".into(),
            list(vec![AttrValue::Str("one-off".into())]),
        ),
        ("after".into(), AttrValue::Int(9)),
    ];
    let mut packed = Attributes::from(pairs_in.clone());
    packed.pack();
    assert_eq!(packed.to_vec(), pairs_in);
    let held: Vec<&AttrValue> = packed.held_values().collect();
    // The nested list and the list holding a map (a one-off id is written in place).
    assert_eq!(held.len(), 2, "{held:?}");
    assert_eq!(packed.get("after").as_deref(), Some(&AttrValue::Int(9)));
    let reasons = packed.get("reasons").unwrap();
    assert!(reasons.held().is_none());
    assert_eq!(reasons.display_short(), "[stop, -3, 1.5, true, null]");
}

#[test]
fn a_changed_packed_list_is_unpacked_first() {
    let mut attributes = Attributes::from(every_kind());
    attributes.pack();
    attributes.push(("added".into(), AttrValue::Int(7)));
    assert!(!attributes.is_packed());
    assert_eq!(attributes.len(), every_kind().len() + 1);
    assert_eq!(attributes.iter().last().map(|(k, _)| k), Some("added"));
    attributes.clear();
    assert!(attributes.is_empty());
}

#[test]
fn an_empty_list_packs_without_an_allocation() {
    let mut attributes = Attributes::new();
    attributes.pack();
    assert!(attributes.is_empty());
    assert_eq!(attributes.own_heap_bytes(), 0);
    assert_eq!(attributes.iter().count(), 0);
}

#[test]
fn a_span_pays_one_word_for_its_attributes() {
    assert_eq!(size_of::<Attributes>(), size_of::<usize>());
    assert_eq!(size_of::<Option<Attributes>>(), size_of::<usize>());
}

#[test]
fn packed_attributes_take_a_fraction_of_the_list() {
    let list: Vec<(ArcStr, AttrValue)> = vec![
        (
            "gen_ai.operation.name".into(),
            AttrValue::Str("chat".into()),
        ),
        (
            "gen_ai.request.model".into(),
            AttrValue::Str("gpt-4o".into()),
        ),
        (
            "gen_ai.provider.name".into(),
            AttrValue::Str("openai".into()),
        ),
        ("gen_ai.usage.input_tokens".into(), AttrValue::Int(1234)),
        ("gen_ai.usage.output_tokens".into(), AttrValue::Int(56)),
        ("gen_ai.request.temperature".into(), AttrValue::Float(0.2)),
    ];
    let open = Attributes::from(list);
    let mut packed = open.clone();
    packed.pack();
    assert!(
        packed.own_heap_bytes() * 3 < open.own_heap_bytes(),
        "{} vs {}",
        packed.own_heap_bytes(),
        open.own_heap_bytes()
    );
}

#[test]
fn keys_naming_ids_keep_their_values_out_of_the_shared_table_unless_they_repeat() {
    let text = |s: &str| ArcStr::from(s);
    assert!(!shareable("gen_ai.response.id", &text("r1")));
    assert!(!shareable("openarmature.correlation_id", &text("c1")));
    assert!(!shareable("arksim.turnId", &text("t1")));
    assert!(shareable("gen_ai.request.model", &text("gpt-4o")));
    assert!(!shareable("id", &text("x")));
    assert!(shareable("i", &text("x")));
    let long = text(&"x".repeat(interner::MAX_TEXT_BYTES + 1));
    assert!(!shareable("k", &long));
    // An id held by this value, its span's facts, the interner's value table and the model call that
    // requested it is not shared; one more holder, another span, and it is.
    let call_id = text("call-7");
    let (_facts, _parser, _request) = (call_id.clone(), call_id.clone(), call_id.clone());
    assert!(!shareable("gen_ai.tool.call.id", &call_id));
    let _another_span = call_id.clone();
    assert!(shareable("gen_ai.tool.call.id", &call_id));
    assert!(shareable("k", &arcstr::literal!("static")));
}

#[test]
fn numbers_survive_their_encoding() {
    for n in [
        0,
        1,
        -1,
        63,
        -64,
        64,
        1 << 40,
        -(1 << 40),
        i64::MAX,
        i64::MIN,
    ] {
        assert_eq!(unzigzag(zigzag(n)), n);
        let mut out = Vec::new();
        write_varint(&mut out, zigzag(n));
        assert_eq!(unzigzag(Reader::new(&out).varint()), n);
    }
}

#[test]
fn cut_short_bytes_read_as_zeros_not_a_panic() {
    let mut reader = Reader::new(&[0xff, 0xff]);
    reader.varint();
    assert_eq!(reader.byte(), 0);
    assert_eq!(reader.take(5), &[] as &[u8]);
    let mut never_ends = Reader::new(&[0xff; 20]);
    never_ends.varint();
}

fn inline_payload() -> std::sync::Arc<Payload> {
    std::sync::Arc::new(Payload {
        bytes: 3,
        body: PayloadBody::Inline("abc".into()),
        ..Payload::default()
    })
}

/// A packed list owns the values it holds in full: packing moves them (the open list lets
/// go), a copy shares them, and dropping lets them go, nothing more and nothing less.
#[test]
fn a_packed_list_holds_its_values_once_and_lets_them_go() {
    let payload = inline_payload();
    let one_off = ArcStr::from("a one-off text, long enough to be held and not shared: ".repeat(4));
    let mut attributes = Attributes::from(vec![
        ("count".into(), AttrValue::Int(7)),
        (
            "gen_ai.output.messages".into(),
            AttrValue::Payload(payload.clone()),
        ),
        ("note".into(), AttrValue::Str(one_off.clone())),
    ]);
    attributes.pack();
    assert!(attributes.is_packed());
    assert_eq!(attributes.held_values().count(), 2);
    assert_eq!(std::sync::Arc::strong_count(&payload), 2);
    assert_eq!(ArcStr::strong_count(&one_off), Some(2));
    let copy = attributes.clone();
    assert_eq!(std::sync::Arc::strong_count(&payload), 3);
    assert_eq!(pairs(&copy), pairs(&attributes));
    let elsewhere = std::thread::spawn(move || pairs(&copy)).join().unwrap();
    assert_eq!(elsewhere, pairs(&attributes));
    // The copy went with its thread; what it read out holds a value of its own.
    drop(elsewhere);
    assert_eq!(std::sync::Arc::strong_count(&payload), 2);
    drop(attributes);
    assert_eq!(std::sync::Arc::strong_count(&payload), 1);
    assert_eq!(ArcStr::strong_count(&one_off), Some(1));
}

/// The one-word slot holds an open list as it holds a block: a copy is a list of its own,
/// changing one leaves the other as it was, and every value is let go once, packed or open,
/// on this thread or another.
#[test]
fn an_open_list_in_its_one_word_slot_holds_its_values_once_and_lets_them_go() {
    let payload = inline_payload();
    let mut open = Attributes::from(vec![(
        "gen_ai.input.messages".into(),
        AttrValue::Payload(payload.clone()),
    )]);
    assert!(!open.is_packed());
    let mut copy = open.clone();
    assert_eq!(std::sync::Arc::strong_count(&payload), 3);
    copy.push(("count".into(), AttrValue::Int(2)));
    assert_eq!((open.len(), copy.len()), (1, 2));
    assert_eq!(copy.get("count").as_deref(), Some(&AttrValue::Int(2)));
    // Packed, then opened again by a change: the block's hold passes to the list.
    open.pack();
    assert!(open.is_packed());
    open.push(("note".into(), AttrValue::Str("n".into())));
    assert!(!open.is_packed());
    assert_eq!(std::sync::Arc::strong_count(&payload), 3);
    assert_eq!(
        pairs(&open),
        [
            (
                "gen_ai.input.messages".to_string(),
                AttrValue::Payload(payload.clone())
            ),
            ("note".to_string(), AttrValue::Str("n".into())),
        ]
    );
    let elsewhere = std::thread::spawn(move || copy.len()).join().unwrap();
    assert_eq!(elsewhere, 2);
    assert_eq!(std::sync::Arc::strong_count(&payload), 2);
    open.clear();
    assert!(open.is_empty() && open.is_packed());
    assert_eq!(std::sync::Arc::strong_count(&payload), 1);
}

/// Keys are found by the texts their first entries hold, and read back by key: a later entry
/// of a key, a payload, a number or an unpacked list never answers for one.
#[test]
fn texts_are_found_by_the_first_entry_of_their_key_and_read_back_by_it() {
    let text = |t: &str| AttrValue::Str(t.into());
    let mut attributes = Attributes::from(vec![
        ("gen_ai.tool.name".into(), text("lookup")),
        ("gen_ai.tool.name".into(), text("search_flights")),
        ("gen_ai.tool.call.id".into(), text("call_1")),
        ("gen_ai.usage.input_tokens".into(), AttrValue::Int(7)),
    ]);
    let wanted = [Some("search_flights"), Some("call_1"), Some("7"), None];
    assert_eq!(attributes.keys_holding(wanted), [None; 4], "unpacked");
    attributes.pack();
    let [hidden, call_id, number, none] = attributes.keys_holding(wanted);
    assert_eq!((hidden, number, none), (None, None, None));
    let call_id = call_id.expect("the call id's key");
    let [name] = attributes.keys_holding([Some("lookup")]);
    let name = name.expect("the first entry's key");
    assert_eq!(
        attributes.texts_under_keys([Some(call_id), None, Some(name)]),
        [Some("call_1"), None, Some("lookup")]
    );
    assert_eq!(attributes.text_under_key(name), Some("lookup"));
    attributes.push(("extra".into(), text("x")));
    assert_eq!(
        attributes.texts_under_keys([Some(name), Some(call_id)]),
        [Some("lookup"), Some("call_1")],
        "read back the same unpacked"
    );
}

/// A short text no other span repeats is written into the packed bytes: it reads back the same,
/// borrowed, and costs its bytes instead of a held value and a block of its own.
#[test]
fn a_short_one_off_text_is_written_in_place_and_reads_back_borrowed() {
    let call_id = ArcStr::from(String::from("call_7f3a9c"));
    let long = ArcStr::from("x".repeat(encoding::TEXT_IN_PLACE_MAX + 1));
    let list = vec![
        (
            ArcStr::from("gen_ai.tool.call.id"),
            AttrValue::Str(call_id.clone()),
        ),
        (
            ArcStr::from("gen_ai.tool.call.note"),
            AttrValue::Str(long.clone()),
        ),
    ];
    let mut packed = Attributes::from(list.clone());
    packed.pack();
    let view = packed.get("gen_ai.tool.call.id").unwrap();
    assert!(view.held().is_none(), "not a held value");
    assert_eq!(view.text(), Some("call_7f3a9c"));
    assert_eq!(view.shared_text().as_deref(), Some("call_7f3a9c"));
    assert_eq!(*view, AttrValue::Str(call_id));
    let held: Vec<&AttrValue> = packed.held_values().collect();
    assert_eq!(held, [&AttrValue::Str(long)], "a longer text stays held");
    assert_eq!(packed.to_vec(), list);
    let mut again = packed.clone();
    again.open_mut();
    again.pack();
    assert_eq!(
        again, packed,
        "packing what was unpacked gives the same list"
    );
}

/// Lookups by key number skip lists whose bytes cannot hold the key; every key a list holds is
/// still found, with one-byte and two-byte key numbers alike, and absent keys are not.
#[test]
fn lookups_by_key_number_find_every_held_key_and_no_other() {
    // Enough texts that some keys' numbers take two varint bytes.
    for i in 0..200 {
        interner::number_of(&ArcStr::from(format!("may_hold.filler.{i}")));
    }
    let held: Vec<(ArcStr, AttrValue)> = (0..40)
        .map(|i| (ArcStr::from(format!("may_hold.k{i}")), AttrValue::Int(i)))
        .collect();
    let mut attributes: Attributes = held.iter().cloned().collect();
    attributes.pack();
    assert!(attributes.is_packed());
    let number = |key: &str| interner::number_of(&ArcStr::from(key)).unwrap();
    assert!(number("may_hold.k39") >= 127, "a two-byte key number");
    for (i, (key, _)) in held.iter().enumerate() {
        let found = attributes.value_under_key(number(key));
        assert_eq!(found.as_deref(), Some(&AttrValue::Int(i as i64)), "{key}");
        let absent = number(&format!("may_hold.absent{i}"));
        assert!(attributes.value_under_key(absent).is_none());
        let [a, b, c] = attributes.values_under_keys([Some(absent), Some(number(key)), None]);
        assert!(a.is_none() && c.is_none());
        assert_eq!(b.as_deref(), Some(&AttrValue::Int(i as i64)));
    }
}
