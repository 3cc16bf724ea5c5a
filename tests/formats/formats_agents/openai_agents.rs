//! openai-agents: trace exports, the event stream, and captures with sensitive data off.

use super::*;

// Counted with: for each trace id, the span records (the last record per span id), their
// span_data.type, error != null, and the function spans sorted by started_at.
#[test]
fn openai_agents_exports_load_every_trace_with_its_tool_calls() {
    let (store, reports) = load(&["corpus/openai-agents/exports.jsonl"]);
    assert_eq!(reports[0].format, Some("openai-agents"));
    assert_eq!(store.len(), 9);
    assert_eq!(store.stats().spans_kept, 74);
    let expect: &[(&str, usize, usize, Trajectory, Health)] = &[
        ("weather ok", 8, 0, vec![ok("get_weather")], Health::Ok),
        (
            "order lookup fails",
            8,
            1,
            vec![failed("lookup_order")],
            Health::Degraded,
        ),
        (
            "parallel then cancel",
            12,
            0,
            vec![ok("get_weather"), ok("lookup_order"), ok("cancel_order")],
            Health::Ok,
        ),
        ("kb search", 9, 0, vec![ok("search_kb")], Health::Ok),
        (
            "chat completions model",
            7,
            1,
            vec![failed("get_weather")],
            Health::Degraded,
        ),
        ("handoff", 11, 0, vec![ok("lookup_order")], Health::Ok),
        ("guardrail tripped", 4, 1, vec![], Health::Degraded),
        (
            "max turns exceeded",
            7,
            1,
            vec![ok("get_weather"), ok("lookup_order")],
            Health::Degraded,
        ),
        ("Agent workflow", 8, 0, vec![ok("get_weather")], Health::Ok),
    ];
    for (name, spans, errors, tools, health) in expect {
        let inv = named(&store, name);
        let s = inv.summary();
        assert_eq!(
            (s.counts.spans as usize, s.counts.errors as usize),
            (*spans, *errors),
            "{name}"
        );
        assert_eq!(&calls(inv), tools, "{name}");
        assert_eq!(s.health, *health, "{name}");
        assert!(
            inv.id.text().starts_with("trace_"),
            "invocation id is the agents trace id"
        );
    }
    // parallel then cancel: 3 response + 3 function + 4 custom + 1 guardrail + 1 agent.
    let c = named(&store, "parallel then cancel").summary().counts;
    assert_eq!((c.llm, c.tool, c.node, c.agent), (3, 3, 5, 1));
    // handoff: two agent spans and a handoff span (node).
    let h = named(&store, "handoff");
    assert_eq!(h.summary().counts.agent, 2);
    assert!(h.spans.iter().any(|s| s.name == "handoff triage → orders"));
    // The raising tool: error message and data are kept.
    let lookup = named(&store, "order lookup fails")
        .spans
        .iter()
        .find(|s| s.kind == SpanKind::Tool)
        .unwrap();
    assert_eq!(
        lookup.error_message(),
        Some("Error running tool (non-fatal)")
    );
    assert_eq!(
        formats::load_payload(&lookup.input()).unwrap().as_deref(),
        Some("{\"order_id\": \"ORD-9999\"}")
    );
    // Chat Completions: model, tokens and the requested call id.
    let chat = named(&store, "chat completions model");
    let generation = chat.spans.iter().find(|s| s.name == "generation").unwrap();
    let llm = generation.llm().unwrap();
    assert_eq!(llm.model, Some("fake-chat-model"));
    assert_eq!(
        (llm.input_tokens.get(), llm.output_tokens.get()),
        (Some(35), Some(20))
    );
    assert_eq!(
        llm.requested_tool_calls[0].id.as_deref(),
        Some("call_0000267399813f")
    );
    // The function span gets that id from the request with the same name and arguments,
    // and the run links it back to the generation span.
    let tool = chat
        .spans
        .iter()
        .position(|s| s.kind == SpanKind::Tool)
        .unwrap();
    assert_eq!(chat.spans[tool].tool_call_id(), Some("call_0000267399813f"));
    assert_eq!(
        chat.requester_of(tool).map(|r| &chat.spans[r].span_id),
        Some(&generation.span_id)
    );
}

#[test]
fn python_repr_output_is_kept_as_text() {
    // kb search: search_kb returned a Python list repr (single quotes), per exports.jsonl.
    let (store, _) = load(&["corpus/openai-agents/exports.jsonl"]);
    let tool = named(&store, "kb search")
        .spans
        .iter()
        .find(|s| s.kind == SpanKind::Tool)
        .unwrap();
    let out = formats::load_payload(&tool.output()).unwrap().unwrap();
    assert!(out.starts_with("[{'doc_id'"), "{out}");
}

// events.jsonl: 184 callbacks = 10 trace_start + 10 trace_end + 82 span_start + 82 span_end;
// 10 traces (the 9 above plus "redacted weather").
#[test]
fn openai_agents_event_stream_counts_each_span_once() {
    let (store, reports) = load(&["corpus/openai-agents/events.jsonl"]);
    assert_eq!(reports[0].format, Some("openai-agents"));
    assert_eq!(store.len(), 10);
    assert_eq!(store.stats().spans_kept, 82);
    assert_eq!(store.stats().duplicate_spans, 0);
    let provisional: usize = store
        .invocations()
        .map(|i| i.spans.iter().filter(|s| s.is_provisional()).count())
        .sum();
    assert_eq!(provisional, 0);
    let tools: usize = store
        .invocations()
        .map(|i| i.summary().tool_calls.len())
        .sum();
    // function spans: 6 get_weather + 4 lookup_order + 1 cancel_order + 1 search_kb.
    assert_eq!(tools, 12);
}

#[test]
fn a_span_started_in_one_chunk_and_ended_in_the_next_is_replaced() {
    let path = fixture("corpus/openai-agents/events.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    // Split after line 20 (inside the second trace): some spans start before, end after.
    let cut = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(19)
        .map(|(i, _)| i + 1)
        .unwrap();
    let format = formats::by_name("openai-agents").unwrap();
    let mut store = Store::new();
    let first = formats::load_chunk_as(
        format,
        Origin::File(std::sync::Arc::new(path.clone())),
        &bytes[..cut],
        0,
        0,
    );
    let provisional_first = first
        .batch
        .spans
        .iter()
        .filter(|s| s.is_provisional())
        .count();
    assert!(
        provisional_first > 0,
        "the first chunk ends with open spans"
    );
    store.ingest(first.batch);
    let second = formats::load_chunk_as(
        format,
        Origin::File(std::sync::Arc::new(path)),
        &bytes[cut..],
        cut as u64,
        20,
    );
    store.ingest(second.batch);
    assert_eq!(store.stats().spans_kept, 82);
    let provisional: usize = store
        .invocations()
        .map(|i| i.spans.iter().filter(|s| s.is_provisional()).count())
        .sum();
    assert_eq!(provisional, 0);
}

#[test]
fn sensitive_data_off_is_not_captured_never_empty() {
    let (store, reports) = load(&["corpus/openai-agents/redacted_exports.jsonl"]);
    assert_eq!(store.len(), 1);
    let inv = named(&store, "redacted weather");
    assert_eq!(calls(inv), vec![ok("get_weather")]);
    let tool = inv.spans.iter().find(|s| s.kind == SpanKind::Tool).unwrap();
    assert_eq!(tool.input().state, PayloadState::NotCaptured);
    assert_eq!(tool.output().state, PayloadState::NotCaptured);
    assert!(
        reports[0]
            .warnings
            .iter()
            .any(|w| w.contains("sensitive data off"))
    );
}
