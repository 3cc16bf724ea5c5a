use super::*;
use crate::model::{ArcStr, AttrValue, FinishReasons, LlmFactsRef};

#[test]
fn each_kind_of_facts_reads_back_alone_or_beside_the_others() {
    let llm = || {
        Some(Box::new(LlmFacts {
            input_tokens: Some(3).into(),
            ..LlmFacts::default()
        }))
    };
    let retrieval = || {
        Some(Box::new(RetrievalFacts {
            document_count: Some(2),
            ..RetrievalFacts::default()
        }))
    };
    let mut span = Span::default();
    assert!(span.llm().is_none() && span.tool().is_none() && span.retrieval().is_none());
    span.set_llm(llm());
    assert!(matches!(span.facts.view(), Some(KindFactsView::Llm(_))));
    // A rerank span: model and documents together.
    span.set_retrieval(retrieval());
    assert!(matches!(span.facts.view(), Some(KindFactsView::Several(_))));
    assert_eq!(span.llm().and_then(|l| l.input_tokens.get()), Some(3));
    assert_eq!(span.retrieval().and_then(|r| r.document_count), Some(2));
    span.retrieval_mut().unwrap().document_count = Some(5);
    assert_eq!(span.retrieval().and_then(|r| r.document_count), Some(5));
    span.set_llm(None);
    assert!(matches!(
        span.facts.view(),
        Some(KindFactsView::Retrieval(_))
    ));
    assert_eq!(span.retrieval().and_then(|r| r.document_count), Some(5));
    span.set_retrieval(None);
    assert_eq!(span.facts, KindFacts::NONE);
    assert!(span.facts.view().is_none());
    assert_eq!(size_of::<KindFacts>(), 8);
}

/// The one-word slot owns its box as a `Box` would: a copy is a box of its own, changing
/// one leaves the other, and each lets its facts go once, on this thread or another.
#[test]
fn facts_in_their_one_word_slot_are_owned_once_and_let_go() {
    let name = crate::model::ArcStr::from("search_flights");
    let mut span = Span {
        facts: KindFacts::from(Box::new(ToolFacts {
            name: Some(name.clone()),
            ..ToolFacts::default()
        })),
        ..Span::default()
    };
    let mut copy = span.clone();
    assert_eq!(crate::model::ArcStr::strong_count(&name), Some(3));
    copy.tool_mut().unwrap().call_id = Some("call-1".into());
    assert_eq!(span.tool_call_id(), None);
    assert_eq!(copy.tool_call_id(), Some("call-1"));
    copy.set_llm(Some(Box::new(LlmFacts::default())));
    assert!(matches!(copy.facts.view(), Some(KindFactsView::Several(_))));
    assert_eq!(copy.tool_name(), Some("search_flights"));
    let elsewhere = std::thread::spawn(move || copy.tool_name().map(str::to_owned));
    assert_eq!(elsewhere.join().unwrap().as_deref(), Some("search_flights"));
    assert_eq!(crate::model::ArcStr::strong_count(&name), Some(2));
    span.set_tool(None);
    assert_eq!(crate::model::ArcStr::strong_count(&name), Some(1));
}

fn tool_span(attributes: Vec<(&str, AttrValue)>, name: &str, call_id: Option<&str>) -> Span {
    let attributes: Vec<(ArcStr, AttrValue)> =
        attributes.into_iter().map(|(k, v)| (k.into(), v)).collect();
    let text = |wanted: &str| {
        attributes.iter().find_map(|(_, v)| match v {
            AttrValue::Str(t) if t.as_str() == wanted => Some(t.clone()),
            _ => None,
        })
    };
    Span {
        facts: KindFacts::from(Box::new(ToolFacts {
            name: Some(text(name).unwrap_or_else(|| name.into())),
            call_id: call_id.map(|id| text(id).unwrap_or_else(|| id.into())),
        })),
        attributes: attributes.into(),
        ..Span::default()
    }
}

/// Packed, a tool span whose name and call id are two of its attribute values holds no
/// facts block: it reads them from there, the same as before, on a copy too; changing
/// them (or the span's other facts) holds them in a block again.
#[test]
fn tool_facts_that_are_attribute_values_are_read_from_the_attributes_once_packed() {
    let text = |t: &str| AttrValue::Str(t.into());
    let mut span = tool_span(
        vec![
            ("gen_ai.operation.name", text("execute_tool")),
            ("gen_ai.tool.name", text("search_flights")),
            ("gen_ai.tool.call.id", text("call_8f2a0c1d9e7b4a6c")),
        ],
        "search_flights",
        Some("call_8f2a0c1d9e7b4a6c"),
    );
    let before = span
        .tool()
        .map(|t| (t.name.map(str::to_owned), t.call_id.map(str::to_owned)));
    span.pack();
    assert!(matches!(
        span.facts.view(),
        Some(KindFactsView::ToolByKeys(_))
    ));
    assert_eq!(span.facts.block_bytes(), 0);
    let after = span
        .tool()
        .map(|t| (t.name.map(str::to_owned), t.call_id.map(str::to_owned)));
    assert_eq!(after, before);
    assert_eq!(span.tool_name(), Some("search_flights"));
    assert_eq!(span.tool_call_id(), Some("call_8f2a0c1d9e7b4a6c"));
    let copy = span.clone();
    assert_eq!(copy, span);
    assert_eq!(copy.tool_call_id(), Some("call_8f2a0c1d9e7b4a6c"));

    // A parser changing the attributes afterwards unpacks them: the facts still read.
    let mut unpacked = span.clone();
    unpacked.attributes.push(("extra".into(), text("x")));
    assert_eq!(unpacked.tool_name(), Some("search_flights"));

    span.tool_mut().unwrap().call_id = Some("call-2".into());
    assert!(matches!(span.facts.view(), Some(KindFactsView::Tool(_))));
    assert_eq!(span.tool_name(), Some("search_flights"));
    assert_eq!(span.tool_call_id(), Some("call-2"));
    let mut with_llm = copy.clone();
    with_llm.set_llm(Some(Box::new(LlmFacts::default())));
    assert!(matches!(
        with_llm.facts.view(),
        Some(KindFactsView::Several(_))
    ));
    assert_eq!(with_llm.tool_call_id(), Some("call_8f2a0c1d9e7b4a6c"));
}

/// Facts that no attribute holds, or that an earlier entry of the same key would hide,
/// keep their block.
#[test]
fn tool_facts_keep_their_block_unless_the_attributes_read_them_back_exactly() {
    let text = |t: &str| AttrValue::Str(t.into());
    let mut named_elsewhere = tool_span(
        vec![("gen_ai.operation.name", text("execute_tool"))],
        "search_flights",
        None,
    );
    named_elsewhere.pack();
    assert!(matches!(
        named_elsewhere.facts.view(),
        Some(KindFactsView::Tool(_))
    ));
    assert_eq!(named_elsewhere.tool_name(), Some("search_flights"));

    let mut hidden = tool_span(
        vec![
            ("tool.name", text("lookup")),
            ("tool.name", text("search_flights")),
        ],
        "search_flights",
        None,
    );
    hidden.pack();
    assert!(matches!(hidden.facts.view(), Some(KindFactsView::Tool(_))));
    assert_eq!(hidden.tool_name(), Some("search_flights"));

    let mut nameless = tool_span(vec![("tool.name", text("lookup"))], "lookup", None);
    nameless.pack();
    assert!(matches!(
        nameless.facts.view(),
        Some(KindFactsView::ToolByKeys(_))
    ));
    assert_eq!(nameless.tool().map(|t| t.call_id), Some(None));
}

fn chat_span(attributes: Vec<(&str, AttrValue)>, provider: &str, model: &str) -> Span {
    let attributes: Vec<(ArcStr, AttrValue)> =
        attributes.into_iter().map(|(k, v)| (k.into(), v)).collect();
    Span {
        facts: KindFacts::from(Box::new(LlmFacts {
            provider: Some(provider.into()),
            model: Some(model.into()),
            input_tokens: Some(120).into(),
            finish_reasons: FinishReasons::One("tool_calls".into()),
            ..LlmFacts::default()
        })),
        attributes: attributes.into(),
        ..Span::default()
    }
}

/// Packed, a model call whose provider and model are attribute values keeps their keys in a
/// smaller block, and reads the same facts; changing them (or adding tool facts) holds the
/// names whole again.
#[test]
fn model_names_that_are_attribute_values_are_read_from_the_attributes_once_packed() {
    let text = |t: &str| AttrValue::Str(t.into());
    let mut span = chat_span(
        vec![
            ("gen_ai.provider.name", text("openai")),
            ("gen_ai.request.model", text("gpt-4o")),
            ("gen_ai.usage.input_tokens", AttrValue::Int(120)),
        ],
        "openai",
        "gpt-4o",
    );
    let owned = |l: LlmFactsRef<'_>| {
        (
            l.provider.map(str::to_owned),
            l.model.map(str::to_owned),
            l.response_model.map(str::to_owned),
            l.input_tokens,
            l.finish_reasons.clone(),
        )
    };
    let before = span.llm().map(owned);
    span.pack();
    assert!(matches!(
        span.facts.view(),
        Some(KindFactsView::LlmByKeys(_))
    ));
    assert_eq!(span.facts.block_bytes(), size_of::<KeyedLlmFacts>());
    assert_eq!(span.llm().map(owned), before);
    assert_eq!(span.model(), Some("gpt-4o"));
    let copy = span.clone();
    assert_eq!(copy, span);
    assert_eq!(copy.llm().map(owned), before);

    let mut with_tool = copy.clone();
    with_tool.set_tool(Some(Box::new(ToolFacts::default())));
    assert!(matches!(
        with_tool.facts.view(),
        Some(KindFactsView::Several(_))
    ));
    assert_eq!(with_tool.llm().map(owned), before);

    span.llm_mut().unwrap().response_model = Some("gpt-4o-2024-08-06".into());
    assert!(matches!(span.facts.view(), Some(KindFactsView::Llm(_))));
    assert_eq!(span.model(), Some("gpt-4o-2024-08-06"));
    assert_eq!(span.llm().and_then(|l| l.provider), Some("openai"));
}

#[test]
fn model_names_no_attribute_holds_keep_their_block() {
    let text = |t: &str| AttrValue::Str(t.into());
    let mut span = chat_span(
        vec![("gen_ai.provider.name", text("openai"))],
        "openai",
        "gpt-4o",
    );
    span.pack();
    assert!(matches!(span.facts.view(), Some(KindFactsView::Llm(_))));
    assert_eq!(span.llm().and_then(|l| l.model), Some("gpt-4o"));
}

/// Keyed, a model call's finish reasons are the number of a list held once: none, one or
/// several reasons read back as they were, equal calls share the list, and made whole again
/// the call holds its own copy.
#[test]
fn finish_reasons_read_back_from_the_list_they_are_numbered_by() {
    let lists = [
        FinishReasons::default(),
        FinishReasons::One("stop".into()),
        ["length", "content_filter"]
            .into_iter()
            .map(ArcStr::from)
            .collect(),
    ];
    for reasons in lists {
        let mut span = chat_span(
            vec![("gen_ai.provider.name", AttrValue::Str("openai".into()))],
            "openai",
            "gpt-4o",
        );
        let Some(Owned::Llm(mut llm)) = span.facts.take() else {
            panic!("a model call's facts");
        };
        llm.model = None;
        llm.finish_reasons = reasons.clone();
        span.facts = KindFacts::from(llm);
        span.pack();
        assert!(matches!(
            span.facts.view(),
            Some(KindFactsView::LlmByKeys(_))
        ));
        let read = span.llm().map(|l| l.finish_reasons.clone());
        assert_eq!(read, Some(reasons.clone()));
        let again = span.clone();
        let shared = |s: &Span| s.llm().map(|l| std::ptr::from_ref(l.finish_reasons));
        assert_eq!(shared(&again), shared(&span), "one list, held once");
        span.unkey_facts();
        assert!(matches!(span.facts.view(), Some(KindFactsView::Llm(_))));
        assert_eq!(span.llm().map(|l| l.finish_reasons.clone()), Some(reasons));
    }
}

/// A list of requested calls grown while parsing has spare room; a packed span keeps exactly
/// its calls, whether its model call's facts stay owned or are kept by their attributes' keys,
/// and packing again finds nothing to trim.
#[test]
fn packing_trims_the_requested_calls_a_parse_grew() {
    use crate::model::RequestedToolCall;
    let call = |name: &str| RequestedToolCall {
        id: Some(format!("call-{name}").into()),
        name: name.into(),
    };
    for keyed_by_attributes in [false, true] {
        let mut calls = RequestedCalls::default();
        for name in ["a", "b", "c"] {
            calls.push(call(name));
        }
        assert!(calls.has_slack(), "grown by doubling: room for four");
        let model = ArcStr::from("gpt-4o");
        let attributes = match keyed_by_attributes {
            true => vec![(
                ArcStr::from("gen_ai.request.model"),
                AttrValue::Str(model.clone()),
            )],
            false => Vec::new(),
        };
        let mut span = Span {
            attributes: attributes.into_iter().collect(),
            ..Span::default()
        };
        span.set_llm(Some(Box::new(LlmFacts {
            model: Some(model),
            requested_tool_calls: calls,
            ..LlmFacts::default()
        })));
        span.pack();
        let held = span.requested_calls().expect("a model call's list");
        assert!(!held.has_slack(), "keyed: {keyed_by_attributes}");
        assert_eq!(held.len(), 3);
        if keyed_by_attributes && KEYED {
            assert!(matches!(
                span.facts.view(),
                Some(KindFactsView::LlmByKeys(_))
            ));
        }
        let packed = span.clone();
        span.pack();
        assert_eq!(span, packed, "packing again changes nothing");
        assert_eq!(span.model(), Some("gpt-4o"));
    }
}
