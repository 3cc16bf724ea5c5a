//! The index on its own: candidates by field, growth, pieces and vocabularies.

use super::*;
use crate::model::{ErrorInfo, LlmFacts, ToolFacts};
use vocabulary::ID_BITS;

#[test]
fn every_piece_reads_back_as_written() {
    assert_eq!(
        FIELDS.len(),
        1 << FIELD_BITS,
        "every field fits below the id"
    );
    for field in FIELDS {
        assert_eq!(FIELDS[field as usize], field);
    }
    // Ids at every width the bytes take, up to the vocabulary's largest.
    let ids = [
        0,
        15,
        16,
        2047,
        2048,
        262_143,
        262_144,
        // The last id a Value piece writes in four bytes (a piece is written plus two).
        (1 << 25) - 2,
        1 << 25,
        (1 << ID_BITS) - 1,
    ];
    let pieces: Vec<u32> = ids
        .iter()
        .zip(FIELDS.iter().cycle())
        .map(|(&id, &field)| piece(id, field))
        .collect();
    let mut bytes = ThinVec::new();
    for &p in &pieces {
        write_piece(&mut bytes, p);
    }
    let read: Vec<(u32, Field)> = read_pieces(&bytes)
        .map(|p| (id_of(p), field_of(p)))
        .collect();
    let written: Vec<(u32, Field)> = ids
        .iter()
        .copied()
        .zip(FIELDS.iter().copied().cycle())
        .collect();
    assert_eq!(read, written);
    // Ids under 16 with their field take one byte, under 2,048 two, and so on to five.
    assert_eq!(bytes.len(), 1 + 1 + 2 + 2 + 3 + 3 + 4 + 4 + 5 + 5);
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
    a.set_tool(Some(Box::new(ToolFacts {
        name: Some("search_flights".into()),
        ..ToolFacts::default()
    })));
    a.attributes
        .push(("order".into(), AttrValue::Str("ORD-4040".into())));
    let mut b = Span {
        name: "chat".into(),
        ..Span::default()
    };
    b.set_llm(Some(Box::new(LlmFacts {
        model: Some("GPT-4o".into()),
        ..LlmFacts::default()
    })));
    b.set_error(Some(ErrorInfo {
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

#[test]
fn values_the_redacted_view_hides_and_secrets_are_not_indexed() {
    let span = Span {
        name: "chat".into(),
        attributes: vec![
            (
                "gen_ai.input.messages".into(),
                AttrValue::Str("zebra crossing".into()),
            ),
            ("api_key".into(), AttrValue::Str("zebra-key".into())),
            ("note".into(), AttrValue::Str("okapi".into())),
            ("gen_ai.usage.input_tokens".into(), AttrValue::Int(71)),
        ]
        .into(),
        ..Span::default()
    };
    let index = SearchIndex::of(std::slice::from_ref(&span));
    assert_eq!(index.candidates("zebra", Fields::all(), 1), Some(vec![]));
    assert_eq!(index.candidates("okapi", Fields::all(), 1), Some(vec![0]));
    assert_eq!(index.candidates("71", Fields::all(), 1), Some(vec![0]));
}

/// Spans' pieces are told apart by the mark ending each: a span without pieces, an unindexed
/// one and a piece whose number ends in the marks' byte values all read back where they were.
#[test]
fn each_span_reads_back_its_own_pieces_between_end_marks() {
    let mut index = SearchIndex::default();
    let spans: [(&[u32], bool); 4] = [
        (
            &[piece(0, Field::Name), piece(1 << 20, Field::Value)],
            false,
        ),
        (&[], false),
        // 126 + 2 = 128: its last byte is 0x01, the unindexed mark's value.
        (&[piece(15, Field::ErrorMessage)], true),
        (&[piece(16, Field::Tool)], false),
    ];
    for (pieces, unindexed) in spans {
        for &p in pieces {
            write_piece(&mut index.pieces, p);
        }
        write_number(
            &mut index.pieces,
            if unindexed { END_UNINDEXED } else { END },
        );
        index.spans += 1;
        if unindexed {
            index.spans |= SOME_UNINDEXED;
        }
    }
    let read: Vec<(bool, Vec<u32>)> = index
        .each_span()
        .map(|(unindexed, bytes)| (unindexed, read_pieces(bytes).collect()))
        .collect();
    let written: Vec<(bool, Vec<u32>)> = spans.iter().map(|(p, u)| (*u, p.to_vec())).collect();
    assert_eq!(read, written);
    assert_eq!(index.len(), 4);
    assert_eq!(index.always_candidates(6), [2, 4, 5]);
}
