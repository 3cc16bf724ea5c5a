//! OpenArmature typed events: the same trees as the OTLP spans of the same run, and runs that
//! never finished.

use super::*;

/// Per-trace facts of an OTLP/JSON file, read with serde_json only: keyed by the
/// `openarmature.invocation_id` of the trace's invocation span.
#[derive(Debug, PartialEq)]
struct TraceFacts {
    spans: usize,
    errors: usize,
    by_kind: BTreeMap<&'static str, usize>,
    tools: Vec<(String, bool)>,
    root_error: bool,
}

fn otlp_facts(rel: &str) -> BTreeMap<String, TraceFacts> {
    let text = std::fs::read_to_string(fixture(rel)).unwrap();
    let mut spans: Vec<Value> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let doc: Value = serde_json::from_str(line).unwrap();
        for rs in doc["resourceSpans"].as_array().unwrap() {
            for ss in rs["scopeSpans"].as_array().unwrap() {
                spans.extend(ss["spans"].as_array().unwrap().iter().cloned());
            }
        }
    }
    let attr = |span: &Value, key: &str| -> Option<String> {
        span["attributes"]
            .as_array()?
            .iter()
            .find(|a| a["key"] == key)
            .and_then(|a| a["value"].as_object()?.values().next().cloned())
            .map(|v| v.as_str().map(str::to_owned).unwrap_or(v.to_string()))
    };
    let mut by_trace: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for s in &spans {
        by_trace
            .entry(s["traceId"].as_str().unwrap().to_owned())
            .or_default()
            .push(s);
    }
    let mut out = BTreeMap::new();
    for (_, mut list) in by_trace {
        list.sort_by_key(|s| {
            s["startTimeUnixNano"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        });
        let root = list
            .iter()
            .find(|s| s["name"] == "openarmature.invocation")
            .unwrap();
        let is_error = |s: &Value| s["status"]["code"].as_i64() == Some(2);
        let mut by_kind = BTreeMap::new();
        for s in &list {
            let kind = match s["name"].as_str().unwrap() {
                "openarmature.llm.complete" => "llm",
                "openarmature.tool.call" => "tool",
                "openarmature.embedding.complete" => "embedding",
                "openarmature.rerank.complete" => "rerank",
                _ if attr(s, "openarmature.node.name").is_some() => "node",
                _ => "other",
            };
            *by_kind.entry(kind).or_insert(0) += 1;
        }
        let facts = TraceFacts {
            spans: list.len(),
            errors: list.iter().filter(|s| is_error(s)).count(),
            by_kind,
            tools: list
                .iter()
                .filter(|s| s["name"] == "openarmature.tool.call")
                .map(|s| (attr(s, "openarmature.tool.name").unwrap(), is_error(s)))
                .collect(),
            root_error: is_error(root),
        };
        out.insert(attr(root, "openarmature.invocation_id").unwrap(), facts);
    }
    out
}

fn event_facts(store: &Store) -> BTreeMap<String, TraceFacts> {
    store
        .invocations()
        .map(|inv| {
            let c = inv.summary().counts;
            let mut by_kind = BTreeMap::new();
            for kind in SpanKind::ALL {
                if c.of(kind) > 0 {
                    by_kind.insert(kind.as_str(), c.of(kind));
                }
            }
            let root = inv
                .spans
                .iter()
                .find(|s| s.name == "openarmature.invocation")
                .unwrap();
            let facts = TraceFacts {
                spans: c.spans as usize,
                errors: c.errors as usize,
                by_kind,
                tools: inv
                    .summary()
                    .tool_calls
                    .iter()
                    .map(|t| (t.name(&inv.spans).to_string(), t.failed))
                    .collect(),
                root_error: root.status == SpanStatus::Error,
            };
            (inv.id.to_string(), facts)
        })
        .collect()
}

#[test]
fn openarmature_events_give_the_same_trees_as_their_otlp_spans() {
    for variant in ["payload-on", "payload-off", "payload-on-cap256"] {
        let (store, reports) = load(&[&format!(
            "corpus/openarmature/events/{variant}.events.jsonl"
        )]);
        assert_eq!(reports[0].format, Some("openarmature-events"), "{variant}");
        let expected = otlp_facts(&format!(
            "corpus/openarmature/otlp-json/{variant}.batch.jsonl"
        ));
        assert_eq!(event_facts(&store), expected, "{variant}");
    }
    // The same facts, spelled out for payload-on (3 traces in the OTLP file): agent_tools has
    // 11 spans and tools get_weather ok, get_stock_price failed; llm_retry_and_failure has 3 LLM
    // attempts (2 failed); tool_failure_propagates fails at the root.
    let (store, _) = load(&["corpus/openarmature/events/payload-on.events.jsonl"]);
    assert_eq!(store.len(), 3);
    let tools = store.get("7f9e1d22-5c4b-4e3a-8b2c-1d0e9f8a7b01").unwrap();
    assert_eq!(
        calls(tools),
        vec![ok("get_weather"), failed("get_stock_price")]
    );
    assert_eq!(tools.summary().counts.spans, 11);
    assert_eq!(tools.summary().health, Health::Degraded);
    let retry = store.get("7f9e1d22-5c4b-4e3a-8b2c-1d0e9f8a7b02").unwrap();
    let attempts: Vec<(Option<u32>, bool)> = retry
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Llm)
        .map(|s| (s.identity().node.attempt_index, s.status.is_error()))
        .collect();
    assert_eq!(attempts.len(), 3);
    assert_eq!(attempts.iter().filter(|(_, e)| *e).count(), 2);
    let failing = store.get("7f9e1d22-5c4b-4e3a-8b2c-1d0e9f8a7b03").unwrap();
    assert_eq!(failing.summary().health, Health::Error);
    let tool = failing
        .spans
        .iter()
        .find(|s| s.kind == SpanKind::Tool)
        .unwrap();
    assert_eq!(tool.error_type(), Some("QuoteTimeout"));
    assert_eq!(
        tool.error_message(),
        Some("quote service timed out for ACME")
    );
    assert_eq!(
        tool.tool_call_id(),
        None,
        "a standalone tool call has no call id"
    );
}

#[test]
fn openarmature_events_without_attempts_or_completion_still_make_a_tree() {
    // Hand-written: invocation inv-1 and node n1 never complete; node n1/inner completes; an
    // LlmFailedEvent with no LlmRetryAttemptEvent; a tool call with 12 KB of arguments; a
    // FailureIsolatedEvent.
    let (store, reports) = load(&["agents/openarmature-unfinished.events.jsonl"]);
    let inv = store.get("inv-1").unwrap();
    assert_eq!(inv.summary().counts.spans, 6);
    assert!(
        reports[0]
            .warnings
            .iter()
            .any(|w| w.contains("2 node or invocation span(s) never completed"))
    );
    let llm = inv.spans.iter().find(|s| s.kind == SpanKind::Llm).unwrap();
    assert_eq!(llm.error_type(), Some("ProviderUnavailable"));
    let inner = inv.spans.iter().find(|s| s.name == "inner").unwrap();
    assert_eq!(llm.parent_span_id.as_ref(), Some(&inner.span_id));
    let n1 = inv.spans.iter().find(|s| s.name == "n1").unwrap();
    assert_eq!(inner.parent_span_id.as_ref(), Some(&n1.span_id));
    let tool = inv.spans.iter().find(|s| s.kind == SpanKind::Tool).unwrap();
    // Left on disk as the byte range of its value, not as a record to parse again.
    assert!(matches!(
        tool.input().body,
        toolcap::model::PayloadBody::Range(_)
    ));
    let args = formats::load_payload(&tool.input()).unwrap().unwrap();
    assert!(
        args.len() > 12_000 && args.starts_with("{\"query\":\"xxx"),
        "{}",
        &args[..20]
    );
    assert_eq!(calls(inv), vec![ok("search")]);
}
