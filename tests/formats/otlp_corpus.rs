//! Every OTLP file of the shared corpus loads with exact counts.
//!
//! The expected numbers were derived from the files, not from this crate: a Python script
//! (json module only) read each file's requests, grouped spans by `traceId`, classified each
//! span with ARCHITECTURE.md's table (OpenArmature span names, then `gen_ai.operation.name`,
//! `openinference.span.kind`, `langfuse.observation.type`), counted errors as `status.code == 2`
//! or `langfuse.observation.level == "ERROR"`, listed tool spans by `startTimeUnixNano` with the
//! first of `openarmature.tool.name` / `gen_ai.tool.name` / `tool.name` / Langfuse metadata (else
//! the span name minus `execute_tool `), and summed input/output tokens of llm, embedding and
//! rerank spans (`gen_ai.usage.*`, `llm.token_count.*`, Langfuse `usage_details`). Invocations
//! are ordered by their earliest span start. Cross-checks by hand, e.g.
//! `jq -c '.resourceSpans[].scopeSpans[].spans[] | select(.status.code==2) | .name' FILE`.

use std::path::{Path, PathBuf};

use toolcap::model::Health;
use toolcap::sources::load::load_store;
use toolcap::store::Store;

const CORPUS: &str = "tests/fixtures/corpus";

/// Expected facts of one invocation. `kinds` is llm, tool, embedding, rerank, retrieval,
/// agent, node, other.
struct Expect {
    kinds: [usize; 8],
    errors: usize,
    tools: &'static [&'static str],
    ids: &'static [Option<&'static str>],
    failed: &'static [&'static str],
    tokens: (u64, u64),
    health: Option<Health>,
}

const fn oa_tools_run(health: Option<Health>, node: usize, other: usize) -> Expect {
    Expect {
        kinds: [2, 2, 1, 1, 0, 0, node, other],
        errors: 1,
        tools: &["get_weather", "get_stock_price"],
        ids: &[Some("call_weather_01"), Some("call_stock_02")],
        failed: &["get_stock_price"],
        tokens: (448, 85),
        health,
    }
}

/// The three OpenArmature scenarios as OTLP (invocation span present).
const OA_OTLP: [Expect; 3] = [
    oa_tools_run(Some(Health::Degraded), 4, 1),
    Expect {
        kinds: [3, 0, 0, 0, 0, 0, 2, 1],
        errors: 2,
        tools: &[],
        ids: &[],
        failed: &[],
        tokens: (256, 38),
        health: Some(Health::Degraded),
    },
    Expect {
        kinds: [0, 1, 0, 0, 0, 0, 2, 1],
        errors: 3,
        tools: &["get_stock_price"],
        ids: &[None],
        failed: &["get_stock_price"],
        tokens: (0, 0),
        health: Some(Health::Error),
    },
];

/// The same scenarios through the Langfuse SDK: no invocation span, roots are node spans
/// whose parents were never exported, so invocation health is not asserted.
const OA_LANGFUSE: [Expect; 3] = [
    oa_tools_run(None, 5, 0),
    Expect {
        kinds: [2, 0, 0, 0, 0, 0, 3, 0],
        errors: 1,
        tools: &[],
        ids: &[],
        failed: &[],
        tokens: (256, 38),
        health: None,
    },
    Expect {
        kinds: [0, 1, 0, 0, 0, 0, 3, 0],
        errors: 2,
        tools: &["get_stock_price"],
        ids: &[None],
        failed: &["get_stock_price"],
        tokens: (0, 0),
        health: None,
    },
];

const fn sdk(
    agents: usize,
    embeddings: usize,
    llms: usize,
    tools: &'static [&'static str],
    ids: &'static [Option<&'static str>],
    failed: &'static [&'static str],
    tokens: (u64, u64),
) -> Expect {
    Expect {
        kinds: [llms, 2, embeddings, 0, 1, agents, 0, 0],
        errors: 1,
        tools,
        ids,
        failed,
        tokens,
        health: Some(Health::Degraded),
    }
}

const PYTHON_SDK: [Expect; 5] = [
    sdk(
        1,
        1,
        2,
        &["web_search", "run_python"],
        &[Some("call_0_0"), Some("call_0_1")],
        &["run_python"],
        (3774, 1021),
    ),
    sdk(
        1,
        0,
        2,
        &["read_file", "http_get"],
        &[Some("call_1_0"), Some("call_1_1")],
        &["http_get"],
        (3456, 424),
    ),
    sdk(
        2,
        1,
        3,
        &["sql_query", "run_tests"],
        &[Some("call_2_0"), Some("call_2_1")],
        &["run_tests"],
        (7192, 339),
    ),
    sdk(
        1,
        1,
        2,
        &["web_search", "run_python"],
        &[Some("call_3_0"), Some("call_3_1")],
        &["run_python"],
        (5310, 1091),
    ),
    sdk(
        1,
        0,
        2,
        &["read_file", "http_get"],
        &[Some("call_4_0"), Some("call_4_1")],
        &["http_get"],
        (5515, 1108),
    ),
];

const fn travel(kinds: [usize; 8], tokens: (u64, u64)) -> Expect {
    Expect {
        kinds,
        errors: 1,
        tools: &["get_weather", "get_stock_price"],
        ids: &[Some("call_weather_01"), Some("call_stock_02")],
        failed: &["get_stock_price"],
        tokens,
        health: Some(Health::Degraded),
    }
}

fn corpus(rel: &str) -> PathBuf {
    Path::new(CORPUS).join(rel)
}

fn load(paths: &[PathBuf]) -> Store {
    let (store, reports) = load_store(paths);
    // A record of notes only is the walk listing files it skipped (SOURCES.md, …).
    for report in reports.iter().filter(|r| r.reason != "skipped entries") {
        assert!(report.format.is_some(), "{} not recognised", report.source);
    }
    store
}

fn check(store: &Store, expected: &[Expect], label: &str) {
    let invocations = store.oldest_first();
    assert_eq!(invocations.len(), expected.len(), "{label}: invocations");
    for (n, (inv, want)) in invocations.iter().zip(expected).enumerate() {
        let s = inv.summary();
        let c = &s.counts;
        let here = format!("{label} invocation {n} ({})", inv.id);
        assert_eq!(
            [
                c.llm,
                c.tool,
                c.embedding,
                c.rerank,
                c.retrieval,
                c.agent,
                c.node,
                c.other
            ]
            .map(|count| count as usize),
            want.kinds,
            "{here}: kinds"
        );
        assert_eq!(
            c.spans as usize,
            want.kinds.iter().sum::<usize>(),
            "{here}: spans"
        );
        assert_eq!(c.errors as usize, want.errors, "{here}: errors");
        let names: Vec<&str> = s.tool_calls.iter().map(|t| t.name(&inv.spans)).collect();
        assert_eq!(names, want.tools, "{here}: tools");
        let ids: Vec<Option<&str>> = s.tool_calls.iter().map(|t| t.call_id(&inv.spans)).collect();
        assert_eq!(ids, want.ids, "{here}: tool_call ids");
        let failed: Vec<&str> = s
            .tool_calls
            .iter()
            .filter(|t| t.failed)
            .map(|t| t.name(&inv.spans))
            .collect();
        assert_eq!(failed, want.failed, "{here}: failed tools");
        assert_eq!(
            (s.input_tokens, s.output_tokens),
            want.tokens,
            "{here}: tokens"
        );
        if let Some(health) = want.health {
            assert_eq!(s.health, health, "{here}: health");
        }
    }
}

#[test]
fn otlp_python_sdk_every_encoding_loads_with_exact_counts() {
    for dir in ["http-protobuf", "http-protobuf-gzip", "grpc", "otlp-json"] {
        let path = corpus(&format!("otlp-python-sdk/{dir}"));
        // otlp-json holds the same 5 requests twice (.json files and traces.jsonl): load
        // each form on its own.
        if dir == "otlp-json" {
            let jsonl = load(&[path.join("traces.jsonl")]);
            check(&jsonl, &PYTHON_SDK, "otlp-json/traces.jsonl");
            let files: Vec<PathBuf> = (1..=5)
                .map(|i| path.join(format!("000{i}-v1_traces.json")))
                .collect();
            check(&load(&files), &PYTHON_SDK, "otlp-json/*.json");
        } else {
            check(&load(&[path]), &PYTHON_SDK, dir);
        }
    }
}

#[test]
fn canonical_proto3_json_loads_with_warnings() {
    let path = corpus("otlp-python-sdk/negative-proto3-canonical-json");
    let store = load(&[path]);
    check(&store, &PYTHON_SDK, "proto3-canonical");
    let warnings: Vec<_> = store
        .problems()
        .iter()
        .filter(|p| p.severity == toolcap::model::Severity::Warning)
        .collect();
    // Every one of the 5 files uses both base64 ids and enum names.
    assert_eq!(warnings.len(), 10, "{warnings:?}");
    assert!(warnings.iter().any(|w| w.message.contains("base64")));
    assert!(
        warnings
            .iter()
            .any(|w| w.message.contains("SPAN_KIND_CLIENT"))
    );
}

#[test]
fn openarmature_otlp_files_load_with_exact_counts() {
    for variant in ["payload-off", "payload-on"] {
        for rel in [
            format!("otlp-json/{variant}.batch.jsonl"),
            format!("otlp-json/{variant}.streaming.jsonl"),
            format!("otlp-http-json/{variant}.000.json"),
            format!("otlp-http-proto/{variant}.000.pb"),
            format!("otlp-http-proto/{variant}.000.decoded.json"),
        ] {
            let store = load(&[corpus(&format!("openarmature/{rel}"))]);
            check(&store, &OA_OTLP, &rel);
        }
        for rel in [
            format!("langfuse/{variant}.langfuse-sdk.000.pb"),
            format!("langfuse/{variant}.langfuse-sdk.000.decoded.json"),
        ] {
            let store = load(&[corpus(&format!("openarmature/{rel}"))]);
            check(&store, &OA_LANGFUSE, &rel);
        }
    }
    for rel in [
        "otlp-json/payload-on-cap256.batch.jsonl",
        "otlp-json/payload-on-cap256.streaming.jsonl",
        "otlp-http-json/payload-on-cap256.000.json",
        "otlp-http-proto/payload-on-cap256.000.pb",
        "otlp-http-proto/payload-on-cap256.000.decoded.json",
    ] {
        let store = load(&[corpus(&format!("openarmature/{rel}"))]);
        check(&store, &OA_OTLP[..1], rel);
    }
    for rel in [
        "langfuse/payload-on-cap256.langfuse-sdk.000.pb",
        "langfuse/payload-on-cap256.langfuse-sdk.000.decoded.json",
    ] {
        let store = load(&[corpus(&format!("openarmature/{rel}"))]);
        check(&store, &OA_LANGFUSE[..1], rel);
    }
}

#[test]
fn otel_genai_files_load_with_exact_counts() {
    let genai = travel([2, 2, 1, 0, 1, 1, 0, 0], (448, 85));
    check(
        &load(&[corpus("otel-genai/genai-latest.spans.otlp.jsonl")]),
        std::slice::from_ref(&genai),
        "genai-latest",
    );
    check(
        &load(&[corpus("otel-genai/genai-legacy.spans.otlp.jsonl")]),
        std::slice::from_ref(&genai),
        "genai-legacy",
    );
    check(
        &load(&[corpus("otel-genai/openinference.spans.otlp.jsonl")]),
        &[travel([2, 2, 1, 1, 1, 1, 1, 2], (448, 85))],
        "openinference",
    );
    let langfuse = [travel([1, 2, 1, 0, 1, 1, 1, 3], (192, 47))];
    check(
        &load(&[corpus("otel-genai/langfuse-native.000.pb")]),
        &langfuse,
        "langfuse-native.pb",
    );
    check(
        &load(&[corpus("otel-genai/langfuse-native.000.decoded.json")]),
        &langfuse,
        "langfuse-native.decoded.json",
    );
}
