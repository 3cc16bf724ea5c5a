//! The failure summary (`S`, the report's tables) over 100,000 runs: `Breakdown::of` on the
//! listed runs. Issue target: totals ≤ 100 ms over 100k runs (docs/PERFORMANCE.md).
//!
//! Each run: a root, 2 LLM calls with tokens, 3 tool calls of 5 tools (one fails with one of
//! three error types in every 7th run), an evaluator verdict (failed with one of four labels and
//! reasons in every 3rd run), and a case id of 500 scenarios.

use std::sync::OnceLock;

use divan::Bencher;
use toolcap::breakdown::Breakdown;
use toolcap::model::{
    Batch, Case, ErrorInfo, EvalVerdict, LlmFacts, Span, SpanKind, SpanStatus, ToolFacts,
};
use toolcap::query::NoGold;
use toolcap::store::{Invocation, Store};

fn main() {
    divan::main();
}

const RUNS: usize = 100_000;
const TOOLS: [&str; 5] = [
    "search_flights",
    "get_weather",
    "lookup_order",
    "refund",
    "send_email",
];
const LABELS: [&str; 4] = [
    "disobey user request",
    "false information",
    "repetitive response",
    "lack of specific information",
];
const ERRORS: [&str; 3] = ["Timeout", "ValueError", "HTTPError"];

/// Built once and leaked: the bench borrows its invocations for the whole process.
fn runs() -> &'static [&'static Invocation] {
    static LIST: OnceLock<Vec<&'static Invocation>> = OnceLock::new();
    LIST.get_or_init(|| {
        let store: &'static Store = Box::leak(Box::new(build_store()));
        store.newest_first()
    })
}

fn build_store() -> Store {
    let mut store = Store::new();
    for chunk in 0..(RUNS / 1_000) {
        let mut batch = Batch::default();
        for r in chunk * 1_000..(chunk + 1) * 1_000 {
            let trace = format!("{r:032x}");
            let start = 1_764_496_800_000_000_000 + r as u64 * 1_000_000;
            let base = |id: &str, parent: Option<&str>, name: String, kind, at: u64| Span {
                trace_id: trace.as_str().into(),
                span_id: format!("{r:08x}{id}").into(),
                parent_span_id: parent.map(|p| format!("{r:08x}{p}").into()),
                name: name.into(),
                kind,
                start_unix_nano: start + at * 1_000_000,
                end_unix_nano: start + at * 1_000_000 + 900_000 + (r as u64 % 3000) * 1_000_000,
                provenance: toolcap::model::Provenance::shared(None, None, "bench".into()),
                ..Default::default()
            };
            batch.spans.push(base(
                "root",
                None,
                format!("agent run {}", r % 97),
                SpanKind::Agent,
                0,
            ));
            for c in 0..2u64 {
                let mut llm = base(
                    &format!("l{c}"),
                    Some("root"),
                    "chat".into(),
                    SpanKind::Llm,
                    1 + c,
                );
                llm.set_llm(Some(Box::new(LlmFacts {
                    model: Some("gpt-4o".into()),
                    input_tokens: Some(100 + (r as u32 % 9_000)).into(),
                    output_tokens: Some(50).into(),
                    ..Default::default()
                })));
                batch.spans.push(llm);
            }
            for c in 0..3u64 {
                let tool_name = TOOLS[(r + c as usize) % TOOLS.len()];
                let mut tool = base(
                    &format!("t{c}"),
                    Some("root"),
                    format!("execute_tool {tool_name}"),
                    SpanKind::Tool,
                    3 + c,
                );
                tool.set_tool(Some(Box::new(ToolFacts {
                    name: Some(tool_name.into()),
                    call_id: Some(format!("call_{r}_{c}").into()),
                })));
                if c == 2 && r % 7 == 0 {
                    tool.status = SpanStatus::Error;
                    tool.set_error(Some(ErrorInfo {
                        error_type: Some(ERRORS[r % ERRORS.len()].into()),
                        message: Some("upstream failed (non-fatal)".into()),
                        ..Default::default()
                    }));
                }
                batch.spans.push(tool);
            }
            let failed = r % 3 == 0;
            let label = if failed {
                LABELS[r % LABELS.len()]
            } else {
                "no failure"
            };
            batch.evals.push((
                trace.clone(),
                EvalVerdict {
                    passed: !failed,
                    score: Some((r % 50) as f64 / 10.0),
                    threshold: None,
                    label: label.into(),
                    reason: format!("[judge] {label}\nthe agent went on for turn {}", r % 11),
                    reason_quotes_output: false,
                    scorers: Vec::new(),
                    target: None,
                    limit: None,
                },
            ));
            batch.cases.push((
                trace,
                Case {
                    id: format!("scenario-{}", r % 500),
                    index: (r % 4) as u64,
                    index_is_repeat: false,
                    task: None,
                },
            ));
        }
        store.ingest(batch);
    }
    store
}

#[divan::bench(sample_count = 20)]
fn breakdown_100k_runs(bencher: Bencher) {
    let runs = runs();
    bencher.bench(|| Breakdown::of(runs, &NoGold).failing);
}
