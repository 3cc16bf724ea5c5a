//! Facts extracted per convention. Expected values were read from the files with jq/Python
//! (e.g. `jq '.resourceSpans[].scopeSpans[].spans[] | select(.name=="retrieval") | .attributes'`).

use std::path::Path;

use toolcap::model::{PayloadState, RequestedToolCall, Span, SpanKind, SpanStatus};
use toolcap::sources::files::load_file;

fn spans(rel: &str) -> Vec<Span> {
    let loaded = load_file(&Path::new("tests/fixtures/corpus").join(rel));
    assert!(loaded.detection.format.is_some());
    let mut spans = loaded.batch.spans;
    spans.sort_by_key(|s| s.start_unix_nano);
    spans
}

fn named<'s>(spans: &'s [Span], name: &str) -> &'s Span {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name}"))
}

fn calls(pairs: &[(&str, &str)]) -> Vec<RequestedToolCall> {
    pairs
        .iter()
        .map(|(id, name)| RequestedToolCall {
            id: Some((*id).into()),
            name: (*name).into(),
        })
        .collect()
}

#[test]
fn genai_semconv_current_names() {
    let spans = spans("otlp-python-sdk/otlp-json/0001-v1_traces.json");
    let retrieval = named(&spans, "retrieval");
    assert_eq!(retrieval.kind, SpanKind::Retrieval);
    let facts = retrieval.retrieval().unwrap();
    assert_eq!(
        facts.query.as_deref(),
        Some("What changed in the Q3 revenue report compared to Q2?")
    );
    assert_eq!(facts.document_count, Some(3));

    let chat = named(&spans, "chat gpt-4o");
    let llm = chat.llm().unwrap();
    assert_eq!(llm.provider, Some("openai"));
    assert_eq!(llm.model, Some("gpt-4o"));
    assert_eq!(llm.response_model, Some("gpt-4o-2024-08-06"));
    assert_eq!(
        (llm.input_tokens.get(), llm.output_tokens.get()),
        (Some(3071), Some(778))
    );
    assert_eq!(*llm.finish_reasons, ["tool_calls"]);
    assert_eq!(chat.identity().invocation_id.as_deref(), Some("conv_0000"));
    assert_eq!(
        chat.service().map(|s| s.as_str()),
        Some("toolcap-demo-agent")
    );
    assert_eq!(chat.input().state, PayloadState::Present);

    let failed = named(&spans, "execute_tool run_python");
    assert_eq!(failed.status, SpanStatus::Error);
    assert_eq!(failed.error_type(), Some("TimeoutError"));
    assert_eq!(
        failed.error_message(),
        Some("sandbox execution exceeded 30s limit")
    );
    assert_eq!(failed.tool_call_id(), Some("call_0_1"));
    assert_eq!(failed.input().state, PayloadState::Present);
    // No gen_ai.tool.call.result on the failed call: not captured, not empty.
    assert_eq!(failed.output().state, PayloadState::NotCaptured);
    assert_eq!(failed.events().len(), 1);
}

#[test]
fn genai_semconv_without_content() {
    let spans = spans("otel-genai/genai-legacy.spans.otlp.jsonl");
    let chat = spans.iter().find(|s| s.kind == SpanKind::Llm).unwrap();
    let llm = chat.llm().unwrap();
    assert_eq!(llm.provider, Some("openai"));
    assert_eq!(llm.model, Some("mock-gpt-4o"));
    assert_eq!(chat.input().state, PayloadState::NotCaptured);
    let failed = named(&spans, "execute_tool get_stock_price");
    assert_eq!(failed.error_type(), Some("TimeoutError"));
    assert_eq!(
        failed.error_message(),
        Some("quote service timed out for ACME")
    );
    assert_eq!(failed.input().state, PayloadState::NotCaptured);
}

#[test]
fn openarmature_attributes() {
    let spans = spans("openarmature/otlp-json/payload-on.batch.jsonl");
    let invocation = named(&spans, "openarmature.invocation");
    assert_eq!(invocation.kind, SpanKind::Other);
    assert_eq!(invocation.status, SpanStatus::Unset);
    assert_eq!(
        invocation.identity().invocation_id.as_deref(),
        Some("7f9e1d22-5c4b-4e3a-8b2c-1d0e9f8a7b01")
    );

    let agent = named(&spans, "agent");
    assert_eq!(agent.kind, SpanKind::Node);
    assert_eq!(agent.identity().node.node_name.as_deref(), Some("agent"));
    assert_eq!(agent.identity().node.namespace.as_deref(), Some("agent"));
    assert_eq!(agent.identity().node.attempt_index, Some(0));
    assert_eq!(
        agent.identity().correlation_id.as_deref(),
        Some("corr-agent_tools")
    );

    let rerank = named(&spans, "openarmature.rerank.complete");
    let facts = rerank.retrieval().unwrap();
    assert_eq!(
        facts.query.as_deref(),
        Some("What's the weather in Paris and the ACME stock price?")
    );
    assert_eq!(facts.document_count, Some(3));
    assert_eq!(rerank.llm().unwrap().provider, Some("cohere"));

    let llm_span = named(&spans, "openarmature.llm.complete");
    let llm = llm_span.llm().unwrap();
    assert_eq!(llm.cache_read_tokens, Some(128));
    assert_eq!(*llm.finish_reasons, ["tool_calls"]);
    assert_eq!(
        *llm.requested_tool_calls,
        calls(&[
            ("call_weather_01", "get_weather"),
            ("call_stock_02", "get_stock_price")
        ])
    );
    assert_eq!(llm_span.identity().node.attempt_index, Some(0));

    // The two failed LLM calls: error type from the exception event, message likewise.
    let failed: Vec<(Option<&str>, Option<&str>)> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Llm && s.status == SpanStatus::Error)
        .map(|s| (s.error_type(), s.error_message()))
        .collect();
    assert_eq!(
        failed,
        [
            (Some("ProviderUnavailable"), Some("upstream overloaded")),
            (
                Some("ProviderInvalidRequest"),
                Some("Invalid value for 'temperature': must be <= 2.")
            ),
        ]
    );
}

#[test]
fn openinference_attributes() {
    let spans = spans("otel-genai/openinference.spans.otlp.jsonl");
    let chat = named(&spans, "ChatCompletion");
    let llm = chat.llm().unwrap();
    assert_eq!(llm.provider, Some("openai"));
    assert_eq!(llm.model, Some("mock-gpt-4o-2025-01-01"));
    assert_eq!(
        (llm.input_tokens.get(), llm.output_tokens.get()),
        (Some(182), Some(47))
    );
    assert_eq!(llm.cache_read_tokens, Some(128));
    assert_eq!(*llm.finish_reasons, ["tool_calls"]);
    assert_eq!(
        *llm.requested_tool_calls,
        calls(&[
            ("call_weather_01", "get_weather"),
            ("call_stock_02", "get_stock_price")
        ])
    );
    let search = named(&spans, "kb_search");
    assert_eq!(search.retrieval().unwrap().document_count, Some(2));
    let failed = named(&spans, "get_stock_price");
    assert_eq!(failed.error_type(), Some("TimeoutError"));
    assert_eq!(
        failed.error_message(),
        Some("quote service timed out for ACME")
    );
}

#[test]
fn langfuse_attributes() {
    let spans = spans("otel-genai/langfuse-native.000.decoded.json");
    let chat = named(&spans, "chat mock-gpt-4o");
    let llm = chat.llm().unwrap();
    assert_eq!(llm.model, Some("mock-gpt-4o"));
    assert_eq!(
        (llm.input_tokens.get(), llm.output_tokens.get()),
        (Some(182), Some(47))
    );
    assert_eq!(*llm.finish_reasons, ["tool_calls"]);
    assert_eq!(llm.requested_tool_calls.len(), 2);
    let failed = named(&spans, "get_stock_price");
    assert_eq!(failed.status, SpanStatus::Error);
    assert_eq!(
        failed.error_message(),
        Some("TimeoutError: quote service timed out for ACME")
    );
}

/// An error's message taken from its exception event is that event's text, held once. (A
/// message longer than the shared table's texts, so the event holds it itself.)
#[test]
fn an_error_message_from_an_exception_event_shares_the_events_text() {
    let message =
        "sandbox execution exceeded its 30 s limit while reading /data/input.csv at row 41";
    assert!(message.len() > 64);
    let line = format!(
        r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"execute_tool run_python","startTimeUnixNano":"1","endTimeUnixNano":"2","status":{{"code":2}},"attributes":[{{"key":"gen_ai.operation.name","value":{{"stringValue":"execute_tool"}}}}],"events":[{{"name":"exception","timeUnixNano":"2","attributes":[{{"key":"exception.type","value":{{"stringValue":"TimeoutError"}}}},{{"key":"exception.message","value":{{"stringValue":"{message}"}}}}]}}]}}]}}]}}]}}"#
    );
    let loaded = toolcap::formats::load_bytes(
        toolcap::model::Origin::endpoint("test"),
        format!("{line}\n").as_bytes(),
    );
    let span = &loaded.batch.spans[0];
    let error = span.error().expect("an error");
    assert_eq!(error.error_type.as_deref(), Some("TimeoutError"));
    let held = span.events()[0].attributes.get("exception.message");
    let Some(toolcap::model::AttrValue::Str(text)) = held.as_ref().and_then(|v| v.held()) else {
        panic!("the event holds its message: {held:?}");
    };
    let shared = error.message.as_ref().expect("a message");
    assert_eq!(shared, message);
    assert!(toolcap::model::ArcStr::ptr_eq(text, shared));
}

/// A model call's requested call holds the id; the tool span that answers it reads its own from
/// the bytes of its attribute list (a short one-off text is written there, not held).
#[test]
fn a_requested_call_and_its_tool_span_agree_on_the_call_id() {
    let spans = spans("otlp-python-sdk/otlp-json/0001-v1_traces.json");
    let chat = spans
        .iter()
        .find(|s| s.llm().is_some_and(|l| !l.requested_tool_calls.is_empty()))
        .expect("a model call that requested a tool");
    let calls = &chat.llm().unwrap().requested_tool_calls;
    assert!(!calls.has_slack(), "a stored list has no room to spare");
    let requested = &calls[0];
    let requested_id = requested.id.as_ref().expect("an id");
    assert_eq!(requested_id, "call_0_0");
    let tool = named(&spans, "execute_tool web_search");
    let call_id = tool.tool_call_id().expect("a call id");
    assert_eq!(call_id, requested_id);
    // Read from the tool span's attribute (its facts hold no copy), which holds no text of its
    // own for it.
    let held_ids = tool.attributes.held_values().filter(
        |value| matches!(value, toolcap::model::AttrValue::Str(text) if text == "call_0_0"),
    );
    assert_eq!(held_ids.count(), 0);
}

/// The spans parsed from one input (one resource) share one allocation of their origin and service.
#[test]
fn the_spans_of_one_input_share_their_origin() {
    let bytes = std::fs::read(
        Path::new("tests/fixtures/corpus").join("openarmature/otlp-http-json/payload-on.000.json"),
    )
    .unwrap();
    let loaded = toolcap::formats::load_bytes(toolcap::model::Origin::endpoint("test"), &bytes);
    let spans = &loaded.batch.spans;
    assert!(spans.len() > 2);
    let first = spans[0].provenance.as_ref().expect("a provenance");
    assert!(first.origin.is_some());
    for span in spans {
        let provenance = span.provenance.as_ref().expect("a provenance");
        assert!(std::sync::Arc::ptr_eq(first, provenance), "{}", span.name);
    }
}

/// Loaded, every tool and model span of the SDK's GenAI traces reads its tool name, call id,
/// provider and models from its own attributes (their keys held in place of the texts): what
/// keeps a tool span's facts out of a block of their own, and a model call's in a smaller one.
#[test]
fn tool_and_model_facts_are_read_from_the_attributes_they_came_from() {
    use toolcap::model::KindFactsView;
    let spans = spans("otlp-python-sdk/otlp-json/0001-v1_traces.json");
    let (mut tools, mut models) = (0, 0);
    for span in &spans {
        match span.facts.view() {
            Some(KindFactsView::Tool(_)) => panic!("{}: tool facts held whole", span.name),
            Some(KindFactsView::Llm(_)) => panic!("{}: model names held whole", span.name),
            Some(KindFactsView::ToolByKeys(_)) => {
                tools += 1;
                let name = span.tool_name().expect("a tool name");
                assert!(span.attributes.iter().any(|(_, v)| v.text() == Some(name)));
            }
            Some(KindFactsView::LlmByKeys(_)) => {
                models += 1;
                let model = span.model().expect("a model");
                assert!(span.attributes.iter().any(|(_, v)| v.text() == Some(model)));
            }
            _ => {}
        }
    }
    assert!(tools > 0 && models > 0, "tools {tools}, models {models}");
}
