//! `check` on a loaded store: actual calls come from tool spans (arguments from their input
//! payloads), and the most specific gold wins (id map > sidecar > embedded > shared list).

use std::path::Path;

use toolcap::gold::GoldSpec;
use toolcap::gold::align::RowKind;
use toolcap::gold::check::check_store;
use toolcap::gold::report::CheckOptions;
use toolcap::gold::source::{GoldFile, parse_gold_document};
use toolcap::model::{
    Batch, ErrorInfo, GoldCall, Origin, Payload, Span, SpanExtras, SpanKind, SpanStatus, ToolFacts,
};
use toolcap::store::Store;

fn tool_span(
    trace: &str,
    id: &str,
    name: &str,
    args: &str,
    start: u64,
    file: &Path,
    failed: bool,
) -> Span {
    Span {
        trace_id: trace.into(),
        span_id: id.into(),
        name: format!("execute_tool {name}").into(),
        kind: SpanKind::Tool,
        status: if failed {
            SpanStatus::Error
        } else {
            SpanStatus::Ok
        },
        extras: SpanExtras {
            error: failed.then(|| ErrorInfo {
                error_type: Some("Timeout".into()),
                message: Some("gateway timed out".into()),
                ..Default::default()
            }),
            input: Payload::inline("gen_ai.tool.call.arguments", args).into(),
            ..Default::default()
        }
        .into(),
        start_unix_nano: start,
        end_unix_nano: start + 250_000_000,
        facts: toolcap::model::KindFacts::from(Box::new(ToolFacts {
            name: Some(name.into()),
            ..ToolFacts::default()
        })),
        provenance: toolcap::model::Provenance::shared(
            Some(&std::sync::Arc::new(Origin::File(std::sync::Arc::new(
                file.to_path_buf(),
            )))),
            None,
            "test".into(),
        ),
        ..Span::default()
    }
}

fn store_with(dir: &Path) -> Store {
    let a = dir.join("a.jsonl");
    let b = dir.join("b.jsonl");
    let mut batch = Batch::default();
    batch.spans.push(tool_span(
        "t1",
        "s1",
        "lookup",
        r#"{"id": "A-17"}"#,
        1,
        &a,
        false,
    ));
    batch.spans.push(tool_span(
        "t1",
        "s2",
        "refund",
        r#"{"amount": 12.5}"#,
        2,
        &a,
        true,
    ));
    batch.spans.push(tool_span(
        "t2",
        "s3",
        "lookup",
        r#"{"id": "B-1"}"#,
        1,
        &b,
        false,
    ));
    batch.spans.push(tool_span(
        "t3",
        "s4",
        "notify",
        r#""{\"channel\": \"email\"}""#,
        1,
        &b,
        false,
    ));
    batch.golds.push((
        "t3".into(),
        GoldSpec {
            calls: vec![GoldCall {
                tool: "notify".into(),
                ..GoldCall::default()
            }],
            source: "embedded".into(),
            ..GoldSpec::default()
        },
    ));
    let mut store = Store::new();
    store.ingest(batch);
    store
}

#[test]
fn golds_are_chosen_by_specificity_and_calls_come_from_spans() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("a.gold.json"),
        r#"[{"tool": "lookup", "args": {"id": "A-17"}}, {"tool": "refund", "args": {"amount": 12.5}}]"#,
    )
    .expect("sidecar");
    let store = store_with(dir.path());
    assert_eq!(store.len(), 3);
    let shared: serde_json::Value = serde_json::json!([{"tool": "lookup", "args": {"id": "B-1"}}]);
    let (gold_file, _) = parse_gold_document(&shared, "shared.json").expect("gold");
    assert!(matches!(gold_file, GoldFile::Shared(_)));
    let mut problems = Vec::new();
    let reports = check_store(
        &store,
        Some(&gold_file),
        CheckOptions::default(),
        &mut problems,
    );
    assert!(problems.is_empty(), "{problems:?}");
    let by_id = |id: &str| reports.iter().find(|r| r.invocation == id).expect(id);

    // t1: the sidecar beside a.jsonl; refund has the right arguments but failed.
    let t1 = by_id("t1");
    assert!(t1.gold.source.ends_with("a.gold.json"));
    assert_eq!(
        t1.actual[1].args.as_ref().and_then(|a| a.get("amount")),
        Some(&serde_json::json!(12.5))
    );
    assert_eq!(t1.actual[1].error.as_deref(), Some("gateway timed out"));
    assert_eq!(t1.actual[1].duration_s, Some(0.25));
    let kinds: Vec<RowKind> = t1.rows.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, vec![RowKind::Match, RowKind::Failed]);
    assert!(!t1.passed());
    assert_eq!(t1.metrics.required_call_recall, Some(0.5));

    // t2: no sidecar for b.jsonl and no embedded gold, so the shared list applies.
    let t2 = by_id("t2");
    assert_eq!(t2.gold.source, "shared.json");
    assert!(t2.passed());

    // t3: the gold carried by the trace beats the shared list; a JSON-string argument decodes.
    let t3 = by_id("t3");
    assert_eq!(t3.gold.source, "embedded");
    assert_eq!(
        t3.actual[0].args.as_ref().and_then(|a| a.get("channel")),
        Some(&serde_json::json!("email"))
    );
    assert!(t3.passed());
}

#[test]
fn an_id_map_entry_beats_the_sidecar() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.gold.json"), r#"[{"tool": "lookup"}]"#).expect("sidecar");
    let store = store_with(dir.path());
    let map = serde_json::json!({"t1": [{"tool": "other"}]});
    let (gold_file, _) = parse_gold_document(&map, "map.json").expect("gold");
    let mut problems = Vec::new();
    let reports = check_store(
        &store,
        Some(&gold_file),
        CheckOptions::default(),
        &mut problems,
    );
    let t1 = reports.iter().find(|r| r.invocation == "t1").expect("t1");
    assert_eq!(t1.gold.calls[0].tool, "other");
    // t2 has no map entry, no sidecar, no embedded gold: it is not checked.
    assert!(reports.iter().all(|r| r.invocation != "t2"));
}
