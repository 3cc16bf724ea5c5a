//! Ingest throughput and memory on a generated, payload-heavy OTLP corpus.
//!
//! The corpus (written to a temp dir, never committed) is 7,200 agent runs × 10 spans: an
//! agent root, a retrieval with documents, an embedding, three chat calls with growing message
//! histories and tool-call parts, and three tool calls (one failing with a stack trace). It is
//! written once as OTLP/JSON lines (one request per run, like the Collector's file exporter)
//! and once as one protobuf request.
//!
//! Besides divan's timings (MB/s and spans/s), `main` prints resident memory after loading
//! each file into a Store (measured in a child process, from /proc/self/status VmRSS) and
//! jq's time for `jq -c '.resourceSpans[].scopeSpans[].spans[].name'` on the same JSONL.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use divan::counter::{BytesCount, ItemsCount};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, ArrayValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span};
use prost::Message as _;
use toolcap::sources::files::load_file;
use toolcap::store::Store;

const RUNS: usize = 7_200;
const SPANS_PER_RUN: usize = 10;
const RSS_CHILD_ENV: &str = "TOOLCAP_BENCH_RSS_OF";

struct Corpus {
    _dir: Option<tempfile::TempDir>,
    jsonl: PathBuf,
    protobuf: PathBuf,
    jsonl_bytes: u64,
    protobuf_bytes: u64,
}

fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(generate)
}

/// Deterministic filler text (with quotes and non-ASCII, so JSON needs escapes).
struct Words(u64);

impl Words {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn text(&mut self, bytes: usize) -> String {
        const WORDS: &[&str] = &[
            "the",
            "agent",
            "called",
            "\"search\"",
            "with",
            "résumé",
            "results",
            "for",
            "query",
            "tokens",
            "context",
            "window",
            "retrieved",
            "document",
            "answer",
            "naïve",
            "plan",
            "step",
            "tool",
            "→",
            "error",
            "retry",
            "latency",
            "cache",
        ];
        let mut out = String::with_capacity(bytes + 16);
        while out.len() < bytes {
            out.push_str(WORDS[(self.next() as usize) % WORDS.len()]);
            out.push(' ');
        }
        out
    }
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn s(key: &str, value: impl Into<String>) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.into()))
}

fn i(key: &str, value: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(value))
}

fn run_request(run: usize, words: &mut Words) -> ResourceSpans {
    let trace_id = {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&(run as u64 + 1).to_be_bytes());
        id[8..].copy_from_slice(&words.next().to_be_bytes());
        id.to_vec()
    };
    let span_id = |n: usize| {
        ((run * SPANS_PER_RUN + n + 1) as u64)
            .to_be_bytes()
            .to_vec()
    };
    let start = 1_768_471_200_000_000_000u64 + run as u64 * 10_000_000_000;
    let mut spans = Vec::with_capacity(SPANS_PER_RUN);
    let stacktrace = words.text(1_500);
    let mut add = |n: usize, name: String, attributes: Vec<KeyValue>, error: bool| {
        let events = if error {
            vec![span::Event {
                time_unix_nano: start + n as u64 * 1_000_000 + 500_000,
                name: "exception".into(),
                attributes: vec![
                    s("exception.type", "TimeoutError"),
                    s("exception.message", "tool timed out after 30s"),
                    s("exception.stacktrace", stacktrace.clone()),
                ],
                dropped_attributes_count: 0,
            }]
        } else {
            Vec::new()
        };
        spans.push(Span {
            trace_id: trace_id.clone(),
            span_id: span_id(n),
            parent_span_id: if n == 0 { Vec::new() } else { span_id(0) },
            name,
            kind: if n == 0 { 1 } else { 3 },
            start_time_unix_nano: start + n as u64 * 1_000_000,
            end_time_unix_nano: start + n as u64 * 1_000_000 + 900_000,
            attributes,
            events,
            status: Some(Status {
                code: if error { 2 } else { 1 },
                message: if error {
                    "tool timed out".into()
                } else {
                    String::new()
                },
            }),
            ..Default::default()
        });
    };
    add(
        0,
        "invoke_agent bench".into(),
        vec![
            s("gen_ai.operation.name", "invoke_agent"),
            s("gen_ai.agent.name", "bench"),
            s("gen_ai.conversation.id", format!("conv-{run}")),
        ],
        false,
    );
    add(
        1,
        "retrieval kb".into(),
        vec![
            s("gen_ai.operation.name", "retrieval"),
            s("gen_ai.retrieval.query.text", words.text(200)),
            s(
                "gen_ai.retrieval.documents",
                serde_json::to_string(
                    &(0..6)
                        .map(|d| serde_json::json!({"id": format!("doc-{d}"), "content": words.text(350)}))
                        .collect::<Vec<_>>(),
                )
                .unwrap(),
            ),
        ],
        false,
    );
    add(
        2,
        "embeddings small".into(),
        vec![
            s("gen_ai.operation.name", "embeddings"),
            s("gen_ai.request.model", "text-embedding-3-small"),
            i("gen_ai.usage.input_tokens", 20),
        ],
        false,
    );
    for call in 0..3 {
        let history: Vec<_> = (0..(2 + call * 2))
            .map(|m| {
                serde_json::json!({"role": if m % 2 == 0 { "user" } else { "assistant" },
                "parts": [{"type": "text", "content": words.text(1_100)}]})
            })
            .collect();
        let output = serde_json::json!([{"role": "assistant", "parts": [
            {"type": "text", "content": words.text(600)},
            {"type": "tool_call", "id": format!("call_{run}_{call}"), "name": "search",
             "arguments": {"q": words.text(60)}}]}]);
        add(
            3 + call,
            "chat gpt-4o".into(),
            vec![
                s("gen_ai.operation.name", "chat"),
                s("gen_ai.provider.name", "openai"),
                s("gen_ai.request.model", "gpt-4o"),
                i("gen_ai.usage.input_tokens", 1_000 + call as i64 * 900),
                i("gen_ai.usage.output_tokens", 150),
                kv(
                    "gen_ai.response.finish_reasons",
                    any_value::Value::ArrayValue(ArrayValue {
                        values: vec![AnyValue {
                            value: Some(any_value::Value::StringValue("tool_calls".into())),
                        }],
                    }),
                ),
                s(
                    "gen_ai.input.messages",
                    serde_json::to_string(&history).unwrap(),
                ),
                s("gen_ai.output.messages", output.to_string()),
            ],
            false,
        );
    }
    for call in 0..3 {
        add(
            6 + call,
            "execute_tool search".into(),
            vec![
                s("gen_ai.operation.name", "execute_tool"),
                s("gen_ai.tool.name", "search"),
                s("gen_ai.tool.call.id", format!("call_{run}_{call}")),
                s(
                    "gen_ai.tool.call.arguments",
                    serde_json::json!({"q": words.text(200)}).to_string(),
                ),
                s(
                    "gen_ai.tool.call.result",
                    serde_json::json!({"hits": words.text(1_500)}).to_string(),
                ),
            ],
            call == 2,
        );
    }
    add(
        9,
        "invoke_agent summarizer".into(),
        vec![
            s("gen_ai.operation.name", "invoke_agent"),
            s("gen_ai.agent.name", "summarizer"),
        ],
        false,
    );
    ResourceSpans {
        resource: Some(Resource {
            attributes: vec![s("service.name", "bench-agent")],
            ..Default::default()
        }),
        scope_spans: vec![ScopeSpans {
            spans,
            ..Default::default()
        }],
        schema_url: String::new(),
    }
}

fn generate() -> Corpus {
    // TOOLCAP_BENCH_DIR keeps the corpus (for profiling with the RSS child mode).
    let (dir, root) = match std::env::var_os("TOOLCAP_BENCH_DIR") {
        Some(root) => (None, PathBuf::from(root)),
        None => {
            let dir = tempfile::tempdir().expect("temp dir");
            let root = dir.path().to_path_buf();
            (Some(dir), root)
        }
    };
    let jsonl = root.join("corpus.otlp.jsonl");
    let protobuf = root.join("corpus.pb");
    let mut words = Words(42);
    let mut json_out = std::io::BufWriter::new(std::fs::File::create(&jsonl).unwrap());
    let mut all = ExportTraceServiceRequest::default();
    for run in 0..RUNS {
        let request = ExportTraceServiceRequest {
            resource_spans: vec![run_request(run, &mut words)],
        };
        serde_json::to_writer(&mut json_out, &request).unwrap();
        json_out.write_all(b"\n").unwrap();
        all.resource_spans.extend(request.resource_spans);
    }
    json_out.flush().unwrap();
    drop(json_out);
    std::fs::write(&protobuf, all.encode_to_vec()).unwrap();
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    Corpus {
        jsonl_bytes: size(&jsonl),
        protobuf_bytes: size(&protobuf),
        jsonl,
        protobuf,
        _dir: dir,
    }
}

fn ingest(path: &Path) -> Store {
    let loaded = load_file(path);
    assert_eq!(loaded.batch.spans.len(), RUNS * SPANS_PER_RUN);
    let mut store = Store::new();
    store.ingest(loaded.batch);
    store
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn otlp_json_lines(bencher: divan::Bencher) {
    let corpus = corpus();
    bencher
        .counter(BytesCount::new(corpus.jsonl_bytes))
        .counter(ItemsCount::new(RUNS * SPANS_PER_RUN))
        .bench(|| ingest(&corpus.jsonl));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn otlp_protobuf(bencher: divan::Bencher) {
    let corpus = corpus();
    bencher
        .counter(BytesCount::new(corpus.protobuf_bytes))
        .counter(ItemsCount::new(RUNS * SPANS_PER_RUN))
        .bench(|| ingest(&corpus.protobuf));
}

fn vm_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// In a fresh child process: load one file into a Store and print VmRSS before and after,
/// plus the milliseconds spent parsing and storing.
fn rss_child(path: &str) {
    let before = vm_rss_kib();
    let started = Instant::now();
    let loaded = load_file(Path::new(path));
    let parsed = started.elapsed();
    let mut store = Store::new();
    store.ingest(loaded.batch);
    let stored = started.elapsed() - parsed;
    let after = vm_rss_kib();
    println!(
        "{before} {after} {} {} {}",
        store.stats().spans_kept,
        parsed.as_millis(),
        stored.as_millis()
    );
}

fn report_memory_and_jq(corpus: &Corpus) {
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "corpus: {} spans; JSONL {:.1} MiB, protobuf {:.1} MiB",
        RUNS * SPANS_PER_RUN,
        mib(corpus.jsonl_bytes),
        mib(corpus.protobuf_bytes)
    );
    println!(
        "in-memory sizes: Span {} B, (String, AttrValue) {} B, Payload {} B",
        std::mem::size_of::<toolcap::model::Span>(),
        std::mem::size_of::<(String, toolcap::model::AttrValue)>(),
        std::mem::size_of::<toolcap::model::Payload>()
    );
    let exe = std::env::current_exe().unwrap();
    for (label, path, size) in [
        ("JSONL", &corpus.jsonl, corpus.jsonl_bytes),
        ("protobuf", &corpus.protobuf, corpus.protobuf_bytes),
    ] {
        let output = std::process::Command::new(&exe)
            .env(RSS_CHILD_ENV, path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        let numbers: Vec<u64> = text
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        if let [before, after, spans, parse_ms, store_ms] = numbers[..] {
            println!(
                "RSS after loading {label} into a Store: {:.1} MiB ({:.1} MiB before loading; {spans} spans) = {:.2}x the file size; one load: parse {parse_ms} ms + store {store_ms} ms",
                after as f64 / 1024.0,
                before as f64 / 1024.0,
                (after * 1024) as f64 / size as f64
            );
        } else {
            println!("RSS child for {label} failed: {text}");
        }
    }
    let started = Instant::now();
    let jq = std::process::Command::new("jq")
        .args(["-c", ".resourceSpans[].scopeSpans[].spans[].name"])
        .arg(&corpus.jsonl)
        .stdout(std::process::Stdio::null())
        .status();
    match jq {
        Ok(status) if status.success() => {
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "jq on the JSONL: {seconds:.2} s = {:.1} MB/s",
                corpus.jsonl_bytes as f64 / 1e6 / seconds
            );
        }
        other => println!("jq not measured: {other:?}"),
    }
}

fn main() {
    if let Ok(path) = std::env::var(RSS_CHILD_ENV) {
        rss_child(&path);
        return;
    }
    report_memory_and_jq(corpus());
    divan::main();
}
