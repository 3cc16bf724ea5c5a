//! The triage report (`x`, `report`) of 10,000 listed invocations, a fifth of them failing:
//! building the Markdown and writing it and the `dump --json` document beside it (to a temporary
//! directory). Target: under 1 s.

use divan::Bencher;
use toolcap::model::{Batch, ErrorInfo, Payload, Span, SpanKind, SpanStatus, ToolFacts};
use toolcap::redact::Reveal;
use toolcap::store::{Budget, Store};
use toolcap::views::dump::Selection;
use toolcap::views::report;

const INVOCATIONS: usize = 10_000;

fn main() {
    divan::main();
}

/// Each run: an agent root, an LLM call, and a tool call that fails in every fifth run.
fn store() -> Store {
    let mut batch = Batch::default();
    for inv in 0..INVOCATIONS {
        let trace = format!("trace-{inv:05}");
        let start = 1_000_000 * inv as u64;
        let span = |id: &str, parent: Option<&str>, name: &str, kind: SpanKind| Span {
            trace_id: trace.as_str().into(),
            span_id: format!("{id}-{inv}").into(),
            parent_span_id: parent.map(|p| format!("{p}-{inv}").into()),
            name: name.into(),
            kind,
            start_unix_nano: start,
            end_unix_nano: start + 900_000,
            provenance: toolcap::model::Provenance::shared(None, None, "bench".into()),
            ..Span::default()
        };
        let failing = inv % 5 == 0;
        let mut tool = span("tool", Some("root"), "lookup_order", SpanKind::Tool);
        tool.set_tool(Some(Box::new(ToolFacts {
            name: Some("lookup_order".into()),
            ..ToolFacts::default()
        })));
        tool.set_input(
            Payload::inline(
                "gen_ai.tool.call.arguments",
                format!(r#"{{"order_id": "ORD-{inv}", "customer": "c{inv}@example.com"}}"#),
            )
            .into(),
        );
        if failing {
            tool.status = SpanStatus::Error;
            tool.set_error(Some(ErrorInfo {
                error_type: Some("NotFound".into()),
                message: Some(format!("order ORD-{inv} not found").into()),
                message_is_result: false,
            }));
        }
        batch
            .spans
            .push(span("root", None, "support_agent", SpanKind::Agent));
        batch
            .spans
            .push(span("llm", Some("root"), "chat gpt-4o", SpanKind::Llm));
        batch.spans.push(tool);
    }
    let mut store = Store::with_budget(Budget::default());
    store.ingest(batch);
    store
}

#[divan::bench(sample_count = 10)]
fn report_of_10k_listed_invocations(bencher: Bencher) {
    let store = store();
    assert_eq!(store.len(), INVOCATIONS);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let markdown = dir.path().join("report.md");
    bencher.bench(|| {
        let selection = Selection::all(&store);
        let built = report::build(&store, &selection, Reveal::Redacted);
        assert_eq!(built.failing, INVOCATIONS / 5);
        report::write(&built, &markdown, &store, &selection, Reveal::Redacted).expect("written")
    });
}
