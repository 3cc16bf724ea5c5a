//! With 100,000 spans loaded: handling one key and drawing one frame into a TestBackend.
//! Target: under 16 ms per key+frame. Two shapes: one huge run, and 1,000 runs of 100 spans.
//! The `live_*` benches add one ingest drain of 10,000 spans/s OTLP GenAI traffic per key+frame.

use divan::Bencher;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as OtlpSpan, Status};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolcap::formats::otlp::batch_from_request;
use toolcap::model::{Batch, LlmFacts, Origin, Payload, Span, SpanKind, SpanStatus, ToolFacts};
use toolcap::redact::Reveal;
use toolcap::sources::{IngestEvent, SourceStatus};
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;
use toolcap::tui::ui;

fn main() {
    divan::main();
}

const T0: u64 = 1_764_496_800_000_000_000;

/// One run: a root, `nodes` node spans, each with `per_node` children alternating llm/tool.
fn run(trace: &str, nodes: usize, per_node: usize, start: u64) -> Vec<Span> {
    let mut spans = Vec::with_capacity(1 + nodes * (per_node + 1));
    let base = |id: String, parent: Option<String>, kind, at: u64| Span {
        trace_id: trace.into(),
        span_id: id.into(),
        parent_span_id: parent.map(Into::into),
        name: format!("{kind:?} span").into(),
        kind,
        start_unix_nano: start + at * 1_000,
        end_unix_nano: start + at * 1_000 + 900,
        provenance: toolcap::model::Provenance::shared(None, None, "bench".into()),
        ..Default::default()
    };
    spans.push(base("root".into(), None, SpanKind::Agent, 0));
    let mut at = 1;
    for n in 0..nodes {
        let node_id = format!("n{n}");
        spans.push(base(
            node_id.clone(),
            Some("root".into()),
            SpanKind::Node,
            at,
        ));
        at += 1;
        for c in 0..per_node {
            let kind = if c % 2 == 0 {
                SpanKind::Llm
            } else {
                SpanKind::Tool
            };
            let mut span = base(format!("n{n}c{c}"), Some(node_id.clone()), kind, at);
            at += 1;
            if kind == SpanKind::Llm {
                span.set_llm(Some(Box::new(LlmFacts {
                    model: Some("gpt-4o".into()),
                    input_tokens: Some(100).into(),
                    output_tokens: Some(20).into(),
                    ..Default::default()
                })));
            } else {
                span.set_tool(Some(Box::new(ToolFacts {
                    name: Some("search".into()),
                    call_id: Some(format!("call{n}-{c}").into()),
                })));
                span.set_input(
                    Payload::inline("args", r#"{"query":"weather in Oslo","limit":5}"#).into(),
                );
                if c % 7 == 1 {
                    span.status = SpanStatus::Error;
                }
            }
            spans.push(span);
        }
    }
    spans
}

fn app_with(spans: Vec<Span>) -> App {
    let mut store = Store::new();
    store.ingest(Batch {
        spans,
        ..Default::default()
    });
    let mut app = App::new(store, config::from_toml("", false), Reveal::Redacted);
    app::update(
        &mut app,
        Action::Resize {
            width: 160,
            height: 48,
        },
    );
    app
}

fn key_and_frame(bencher: Bencher, mut app: App, keys: &[Action]) {
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).expect("test backend");
    let mut i = 0;
    bencher.bench_local(|| {
        app::update(&mut app, keys[i % keys.len()]);
        i += 1;
        terminal
            .draw(|frame| {
                ui::render(frame, &app);
            })
            .expect("draw");
    });
}

/// One run of 100,001 spans: moving the cursor in its tree.
#[divan::bench(sample_count = 50)]
fn one_run_100k_spans_tree_move(bencher: Bencher) {
    let mut app = app_with(run("big", 1_000, 99, T0));
    app::update(&mut app, Action::FocusNext);
    key_and_frame(bencher, app, &[Action::Down, Action::Down, Action::Up]);
}

/// One run of 100,001 spans: folding and unfolding the root (recomputes visible rows).
#[divan::bench(sample_count = 50)]
fn one_run_100k_spans_fold_root(bencher: Bencher) {
    let mut app = app_with(run("big", 1_000, 99, T0));
    app::update(&mut app, Action::FocusNext);
    key_and_frame(bencher, app, &[Action::ToggleFold]);
}

/// One run of 100,001 spans: jumping to the next failed span.
#[divan::bench(sample_count = 50)]
fn one_run_100k_spans_next_failure(bencher: Bencher) {
    let mut app = app_with(run("big", 1_000, 99, T0));
    app::update(&mut app, Action::FocusNext);
    key_and_frame(bencher, app, &[Action::NextFailure]);
}

/// 1,000 runs of 100 spans: moving through the invocation list (each move rebuilds the
/// tree and detail of the newly selected run).
#[divan::bench(sample_count = 50)]
fn thousand_runs_list_move(bencher: Bencher) {
    let mut spans = Vec::with_capacity(100_000);
    for r in 0..1_000u64 {
        spans.extend(run(&format!("run{r}"), 9, 10, T0 + r * 1_000_000_000));
    }
    let app = app_with(spans);
    key_and_frame(bencher, app, &[Action::Down, Action::Down, Action::Up]);
}

// ---------------------------------------------------------------------------------------------
// Live ingest: the event loop under 10,000 spans/s of OTLP GenAI traffic.
//
// Each iteration is one turn of `event_loop::run` under load: one drain of the ingest channel
// (`ingest_many`: every request's batch, each followed by the receiver's status event, then one
// refresh), one key, one frame. The spans are built as OTLP requests and normalized by
// `batch_from_request` outside the timed part, as the receiver task does on another thread.
// 40 spans are 4 ms of traffic at 10,000 spans/s, 160 spans 16 ms; requests carry 10 spans.
// sample_size = 1 so divan's "slowest" is the worst single iteration, and 100 iterations grow
// the 100,000-span store by at most 16 %.
// ---------------------------------------------------------------------------------------------

/// Spans per OTLP export request in the live traffic.
const SPANS_PER_REQUEST: usize = 10;
/// Agent runs in flight at once; each is a root plus alternating chat and tool spans.
const RUNS_IN_FLIGHT: usize = 8;
const SPANS_PER_LIVE_RUN: u64 = 24;

fn attr(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn text(key: &str, value: impl Into<String>) -> KeyValue {
    attr(key, any_value::Value::StringValue(value.into()))
}

fn int(key: &str, value: i64) -> KeyValue {
    attr(key, any_value::Value::IntValue(value))
}

fn trace_id(index: u64) -> Vec<u8> {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&0x7463_6170_6265_6e63u64.to_be_bytes());
    id[8..].copy_from_slice(&(index + 1).to_be_bytes());
    id.to_vec()
}

fn span_id(trace: u64, span: u64) -> Vec<u8> {
    ((trace + 1) << 24 | (span + 1)).to_be_bytes().to_vec()
}

/// An `invoke_agent` span (a run's root, or a sub-agent step of the huge run).
fn agent_span(trace: u64, id: u64, parent: Option<u64>, start: u64, end: u64) -> OtlpSpan {
    OtlpSpan {
        trace_id: trace_id(trace),
        span_id: span_id(trace, id),
        parent_span_id: parent.map(|p| span_id(trace, p)).unwrap_or_default(),
        name: "invoke_agent research-assistant".into(),
        kind: 1,
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: vec![
            text("gen_ai.operation.name", "invoke_agent"),
            text("gen_ai.agent.name", "research-assistant"),
            text("gen_ai.provider.name", "openai"),
            text("gen_ai.conversation.id", format!("conv-{trace}")),
        ],
        status: Some(Status::default()),
        ..Default::default()
    }
}

/// The `step`-th child of an agent span: even steps are chat calls that request a tool (with
/// a message history growing up to six turns), odd steps execute it; one tool in seven fails.
fn genai_span(trace: u64, id: u64, parent: u64, step: u64, start: u64) -> OtlpSpan {
    let call_id = format!("call_{trace}_{}", step / 2);
    let query = format!(
        "what changed in Q{} for région {trace}? \"naïve\" → ok",
        step % 4 + 1
    );
    let (name, attributes, status) = if step.is_multiple_of(2) {
        let history: Vec<String> = (0..=(step / 2).min(5))
            .map(|turn| {
                format!(
                    r#"{{"role":"user","parts":[{{"type":"text","content":"turn {turn}: {query}"}}]}}"#
                )
            })
            .collect();
        let output = format!(
            r#"[{{"role":"assistant","parts":[{{"type":"tool_call","id":"{call_id}","name":"web_search","arguments":{{"q":"{trace}"}}}}],"finish_reason":"tool_calls"}}]"#
        );
        let attributes = vec![
            text("gen_ai.operation.name", "chat"),
            text("gen_ai.provider.name", "openai"),
            text("gen_ai.request.model", "gpt-4o"),
            text("gen_ai.response.model", "gpt-4o-2024-08-06"),
            int("gen_ai.usage.input_tokens", 300 + 40 * step as i64),
            int("gen_ai.usage.output_tokens", 25 + (trace % 5) as i64),
            text("gen_ai.input.messages", format!("[{}]", history.join(","))),
            text("gen_ai.output.messages", output),
        ];
        ("chat gpt-4o".to_owned(), attributes, Status::default())
    } else {
        let failed = (trace + step).is_multiple_of(7);
        let mut attributes = vec![
            text("gen_ai.operation.name", "execute_tool"),
            text("gen_ai.tool.name", "web_search"),
            text("gen_ai.tool.call.id", call_id),
            text(
                "gen_ai.tool.call.arguments",
                format!(r#"{{"q":"{query}"}}"#),
            ),
        ];
        let status = if failed {
            attributes.push(text("error.type", "TimeoutError"));
            Status {
                code: 2,
                message: "tool web_search timed out after 30 s".into(),
            }
        } else {
            attributes.push(text(
                "gen_ai.tool.call.result",
                format!(r#"{{"results":["{query}","Q3 revenue up 4 %"]}}"#),
            ));
            Status::default()
        };
        ("execute_tool web_search".to_owned(), attributes, status)
    };
    OtlpSpan {
        trace_id: trace_id(trace),
        span_id: span_id(trace, id),
        parent_span_id: span_id(trace, parent),
        name,
        kind: if step.is_multiple_of(2) { 3 } else { 1 },
        start_time_unix_nano: start,
        end_time_unix_nano: start + 40_000_000,
        attributes,
        status: Some(status),
        ..Default::default()
    }
}

/// Normalizes spans as the embedded receiver does with one export request.
fn received(spans: Vec<OtlpSpan>) -> Batch {
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", "research-assistant")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    let origin = Origin::endpoint("otlp://127.0.0.1:4318");
    batch_from_request(&request, &origin, "otlp-protobuf", None)
}

/// `runs` finished runs of `spans_per_run` spans (root last, as SDKs export on end).
fn finished_runs(runs: u64, spans_per_run: u64) -> Vec<Batch> {
    (0..runs)
        .map(|trace| {
            let start = T0 + trace * 1_000_000_000;
            let mut spans: Vec<OtlpSpan> = (1..spans_per_run)
                .map(|step| genai_span(trace, step, 0, step - 1, start + step * 1_000_000))
                .collect();
            spans.push(agent_span(
                trace,
                0,
                None,
                start,
                start + spans_per_run * 1_000_000,
            ));
            received(spans)
        })
        .collect()
}

/// One run of 1 + `steps` × (1 + `per_step`) spans: sub-agent steps under the root.
fn huge_run(trace: u64, steps: u64, per_step: u64) -> Vec<Batch> {
    let start = T0;
    let mut batches = Vec::new();
    for step in 0..steps {
        let step_id = 1 + step * (per_step + 1);
        let step_start = start + step_id * 1_000_000;
        let mut spans: Vec<OtlpSpan> = (0..per_step)
            .map(|k| {
                genai_span(
                    trace,
                    step_id + 1 + k,
                    step_id,
                    k,
                    step_start + k * 1_000_000,
                )
            })
            .collect();
        let end = step_start + (per_step + 1) * 1_000_000;
        spans.push(agent_span(trace, step_id, Some(0), step_start, end));
        batches.push(received(spans));
    }
    let end = start + (1 + steps * (per_step + 1)) * 1_000_000;
    batches.push(received(vec![agent_span(trace, 0, None, start, end)]));
    batches
}

/// Live traffic: runs in flight grow by one span each in turn; a run that has all its
/// children sends its root and is replaced by a new run (a new invocation at the top).
struct Traffic {
    next_trace: u64,
    /// (trace, children sent so far)
    in_flight: Vec<(u64, u64)>,
    turn: usize,
    /// Status events carry the running request count, like the receiver's.
    requests: u64,
    /// When set, every span instead joins this run (trace, next span id) under its root.
    into_run: Option<(u64, u64)>,
}

impl Traffic {
    fn starting_at(first_trace: u64) -> Self {
        Traffic {
            next_trace: first_trace + RUNS_IN_FLIGHT as u64,
            in_flight: (0..RUNS_IN_FLIGHT as u64)
                .map(|i| (first_trace + i, 0))
                .collect(),
            turn: 0,
            requests: 0,
            into_run: None,
        }
    }

    /// Traffic that keeps growing one run that already holds `spans` spans.
    fn into_run(trace: u64, spans: u64) -> Self {
        Traffic {
            into_run: Some((trace, spans)),
            ..Traffic::starting_at(trace + 1)
        }
    }

    fn next_span(&mut self) -> OtlpSpan {
        if let Some((trace, id)) = self.into_run.as_mut() {
            *id += 1;
            return genai_span(*trace, *id, 0, *id, T0 + *id * 1_000_000);
        }
        let slot = self.turn % self.in_flight.len();
        self.turn += 1;
        let (trace, sent) = self.in_flight[slot];
        let start = T0 + trace * 1_000_000_000;
        if sent + 1 == SPANS_PER_LIVE_RUN {
            self.in_flight[slot] = (self.next_trace, 0);
            self.next_trace += 1;
            return agent_span(trace, 0, None, start, start + sent * 50_000_000);
        }
        self.in_flight[slot].1 += 1;
        genai_span(trace, sent + 1, 0, sent, start + sent * 50_000_000)
    }

    /// What one `recv_many` drain holds when `spans` spans arrived since the last one.
    fn drain(&mut self, spans: usize) -> Vec<IngestEvent> {
        let mut events = Vec::new();
        for _ in 0..spans.div_ceil(SPANS_PER_REQUEST) {
            let request = (0..SPANS_PER_REQUEST).map(|_| self.next_span()).collect();
            self.requests += 1;
            events.push(IngestEvent::Batch(received(request)));
            events.push(IngestEvent::Status(SourceStatus::Listening {
                http: "127.0.0.1:4318".into(),
                grpc: Some("127.0.0.1:4317".into()),
                requests: self.requests,
                rejected: 0,
            }));
        }
        events
    }
}

fn app_from(batches: Vec<Batch>, expected_spans: u64) -> App {
    let mut store = Store::new();
    for batch in batches {
        store.ingest(batch);
    }
    assert_eq!(store.stats().spans_kept, expected_spans, "preloaded store");
    let mut app = App::new(store, config::from_toml("", false), Reveal::Redacted);
    app::update(
        &mut app,
        Action::Resize {
            width: 160,
            height: 48,
        },
    );
    app
}

fn drain_key_and_frame(
    bencher: Bencher,
    mut app: App,
    mut traffic: Traffic,
    spans_per_drain: usize,
    keys: &[Action],
) {
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).expect("test backend");
    let mut i = 0;
    bencher
        .with_inputs(|| traffic.drain(spans_per_drain))
        .bench_local_values(|events| {
            app::ingest_many(&mut app, events);
            app::update(&mut app, keys[i % keys.len()]);
            i += 1;
            terminal
                .draw(|frame| {
                    ui::render(frame, &app);
                })
                .expect("draw");
        });
}

/// 1,000 finished runs of 100 spans; the user moves through the invocation list while new
/// runs stream in above (each drain re-sorts the list and rebuilds the selected run's views).
#[divan::bench(args = [40, 160], sample_count = 100, sample_size = 1)]
fn live_10k_per_s_thousand_runs_list_move(bencher: Bencher, spans_per_drain: usize) {
    let app = app_from(finished_runs(1_000, 100), 100_000);
    let traffic = Traffic::starting_at(1_000);
    drain_key_and_frame(
        bencher,
        app,
        traffic,
        spans_per_drain,
        &[Action::Down, Action::Down, Action::Up],
    );
}

/// One run of 100,001 spans open in the tree pane while other runs stream in (each drain
/// bumps the store generation, so the open run's visible rows are recomputed).
#[divan::bench(args = [40, 160], sample_count = 100, sample_size = 1)]
fn live_10k_per_s_one_run_100k_tree_move(bencher: Bencher, spans_per_drain: usize) {
    let mut app = app_from(huge_run(0, 1_000, 99), 100_001);
    app::update(&mut app, Action::FocusNext);
    let traffic = Traffic::starting_at(1);
    drain_key_and_frame(
        bencher,
        app,
        traffic,
        spans_per_drain,
        &[Action::Down, Action::Down, Action::Up],
    );
}

/// One run of 100,001 spans open in the tree pane and still growing: every request's spans
/// join it; the store extends its tree incrementally once per drain, the views rebuild.
#[divan::bench(args = [40, 160], sample_count = 20, sample_size = 1)]
fn live_10k_per_s_into_open_100k_run_tree_move(bencher: Bencher, spans_per_drain: usize) {
    let mut app = app_from(huge_run(0, 1_000, 99), 100_001);
    app::update(&mut app, Action::FocusNext);
    let traffic = Traffic::into_run(0, 100_001);
    drain_key_and_frame(
        bencher,
        app,
        traffic,
        spans_per_drain,
        &[Action::Down, Action::Down, Action::Up],
    );
}

/// The store alone (issue 11 item 6, target ≤ 5 ms): one drain of live spans joining an open
/// run of 100,001 spans — apply every request's batch, then one settle, which extends the
/// run's tree incrementally instead of rebuilding it.
#[divan::bench(args = [1, 40, 160], sample_count = 100, sample_size = 1)]
fn store_drain_into_open_100k_run(bencher: Bencher, spans_per_drain: usize) {
    let mut store = Store::new();
    for batch in huge_run(0, 1_000, 99) {
        store.ingest(batch);
    }
    assert_eq!(store.stats().spans_kept, 100_001, "preloaded store");
    let mut traffic = Traffic::into_run(0, 100_001);
    bencher
        .with_inputs(|| {
            let batches: Vec<Batch> = traffic
                .drain(spans_per_drain)
                .into_iter()
                .filter_map(|event| match event {
                    IngestEvent::Batch(batch) => Some(batch),
                    _ => None,
                })
                .collect();
            // A single span still arrives as a whole request; keep one span of it.
            if spans_per_drain == 1 {
                let mut batches = batches;
                batches.truncate(1);
                batches[0].spans.truncate(1);
                return batches;
            }
            batches
        })
        .bench_local_values(|batches| {
            for batch in batches {
                store.apply(batch);
            }
            store.settle();
        });
}
