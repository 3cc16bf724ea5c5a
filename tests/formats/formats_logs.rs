//! Provider message logs, MCP sessions and toolscore's custom format, checked against the
//! toolscore cross-check corpus (`tests/fixtures/corpus/toolscore`) and small fixtures of our
//! own (`tests/fixtures/logs`). Expected values come from reading the trace files (and, for the
//! corpus, toolscore's own `toolscore-record.json`), never from this crate's output.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolcap::formats::{self, Loaded};
use toolcap::model::{AttrValue, Severity, SpanKind};
use toolcap::sources::files;
use toolcap::store::{Invocation, Store};

mod pitfalls;
mod variants;

const CORPUS: &str = "tests/fixtures/corpus/toolscore";
const LOGS: &str = "tests/fixtures/logs";

fn case(name: &str) -> PathBuf {
    Path::new(CORPUS).join(name).join("trace.json")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(LOGS).join(name)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("fixture readable");
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// One call of toolcap's trajectory, in toolscore's vocabulary.
#[derive(Debug, Clone, PartialEq)]
struct Actual {
    tool: String,
    call_id: Option<String>,
    /// Parsed JSON when the recorded text is JSON, else the text as a JSON string.
    args: Value,
    result: Value,
    /// The result exactly as recorded (a JSON string's text, or compact JSON).
    result_text: Option<String>,
    is_error: bool,
    error: Option<String>,
    error_type: Option<String>,
    duration_ms: f64,
    start: u64,
}

fn payload_value(payload: &toolcap::model::Payload) -> Value {
    match formats::load_payload(payload).expect("payload loads") {
        None => Value::Null,
        Some(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
    }
}

fn trajectory(inv: &Invocation) -> Vec<Actual> {
    inv.summary()
        .tool_calls
        .iter()
        .map(|call| {
            let span = &inv.spans[call.span()];
            Actual {
                tool: call.name(&inv.spans).to_string(),
                call_id: call.call_id(&inv.spans).map(str::to_owned),
                args: payload_value(&span.input()),
                result: payload_value(&span.output()),
                result_text: formats::load_payload(&span.output()).expect("payload loads"),
                is_error: call.failed,
                error: span.error_message().map(str::to_owned),
                error_type: span.error_type().map(str::to_owned),
                duration_ms: span.duration_ms(),
                start: span.start_unix_nano,
            }
        })
        .collect()
}

struct Loaded1 {
    loaded_format: Option<&'static str>,
    reason: String,
    warnings: Vec<String>,
    errors: Vec<String>,
    store: Store,
}

impl Loaded1 {
    fn only(&self) -> &Invocation {
        assert_eq!(self.store.len(), 1, "one invocation per log");
        self.store.invocations().next().expect("one invocation")
    }
    fn calls(&self) -> Vec<Actual> {
        trajectory(self.only())
    }
    fn has_warning(&self, needle: &str) -> bool {
        self.warnings.iter().any(|w| w.contains(needle))
    }
}

fn load(path: &Path) -> Loaded1 {
    let Loaded {
        detection, batch, ..
    } = files::load_file(path);
    let warnings = batch
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Warning)
        .map(|p| p.message.clone())
        .collect();
    let errors = batch
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| format!("{:?}: {}", p.line, p.message))
        .collect();
    let mut store = Store::new();
    store.ingest(batch);
    Loaded1 {
        loaded_format: detection.format,
        reason: detection.reason,
        warnings,
        errors,
        store,
    }
}

/// toolscore's normalized calls for a corpus case (`calls.actual` of its record).
fn toolscore_calls(case_dir: &str) -> Vec<Value> {
    let record = read_json(
        &Path::new(CORPUS)
            .join(case_dir)
            .join("toolscore-record.json"),
    );
    record["calls"]["actual"]
        .as_array()
        .expect("record has calls.actual")
        .clone()
}

/// Names, args and errors equal toolscore's where toolscore reads them right.
fn assert_same_calls_as_toolscore(ours: &[Actual], theirs: &[Value]) {
    let names: Vec<&str> = ours.iter().map(|c| c.tool.as_str()).collect();
    let their_names: Vec<&str> = theirs
        .iter()
        .map(|c| c["tool"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, their_names);
    for (mine, theirs) in ours.iter().zip(theirs) {
        assert_eq!(mine.args, theirs["args"], "args of {}", mine.tool);
        assert_eq!(
            mine.is_error,
            theirs["is_error"] == json!(true),
            "{}",
            mine.tool
        );
        assert_eq!(
            mine.error.as_deref(),
            theirs["error"].as_str(),
            "error of {}",
            mine.tool
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The toolscore corpus, case by case.

#[test]
fn v01_custom_matches_toolscore_with_results_timing_and_cost() {
    let loaded = load(&case("v01_custom_exact_with_timing"));
    assert_eq!(loaded.loaded_format, Some("toolscore-custom"));
    let ours = loaded.calls();
    let theirs = toolscore_calls("v01_custom_exact_with_timing");
    assert_same_calls_as_toolscore(&ours, &theirs);
    let trace = read_json(&case("v01_custom_exact_with_timing"));
    for ((mine, theirs), raw) in ours
        .iter()
        .zip(&theirs)
        .zip(trace["calls"].as_array().unwrap())
    {
        assert_eq!(mine.result, theirs["result"]);
        let duration_s = theirs["duration"].as_f64().unwrap();
        assert!((mine.duration_ms - duration_s * 1000.0).abs() < 1e-6);
        // Real timestamps (seconds) become the start.
        let ts = raw["timestamp"].as_f64().unwrap();
        assert_eq!(mine.start, (ts * 1e9).round() as u64);
        assert_eq!(mine.call_id.as_deref(), raw["id"].as_str());
    }
    let inv = loaded.only();
    let cost = inv.spans[inv.summary().tool_calls[1].span()].attr("cost_usd");
    assert_eq!(
        cost.as_deref(),
        Some(&AttrValue::Float(theirs[1]["cost"].as_f64().unwrap()))
    );
}

#[test]
fn v02_openai_matches_toolscore_and_keeps_tool_results() {
    let loaded = load(&case("v02_openai_reordered"));
    assert_eq!(loaded.loaded_format, Some("openai-chat"));
    let ours = loaded.calls();
    let theirs = toolscore_calls("v02_openai_reordered");
    assert_same_calls_as_toolscore(&ours, &theirs);
    // Pitfall: toolscore never attaches role=tool results (its result is null).
    assert!(theirs.iter().all(|c| c["result"].is_null()));
    let trace = read_json(&case("v02_openai_reordered"));
    let messages = trace["messages"].as_array().unwrap();
    for call in &ours {
        let id = call.call_id.as_deref().expect("tool_calls carry ids");
        let result = messages
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .map(|m| m["content"].clone())
            .expect("the log has a result per call");
        assert_eq!(call.result, result, "{id}");
        assert!(!call.is_error);
    }
}

#[test]
fn v03_anthropic_matches_toolscore_and_keeps_tool_results() {
    let loaded = load(&case("v03_anthropic_missing_call"));
    assert_eq!(loaded.loaded_format, Some("anthropic"));
    let ours = loaded.calls();
    let theirs = toolscore_calls("v03_anthropic_missing_call");
    assert_same_calls_as_toolscore(&ours, &theirs);
    assert!(theirs.iter().all(|c| c["result"].is_null()));
    let trace = read_json(&case("v03_anthropic_missing_call"));
    let results: Vec<Value> = trace
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].clone())
        .collect();
    let ours_results: Vec<Value> = ours.iter().map(|c| c.result.clone()).collect();
    assert_eq!(ours_results, results);
    // Every assistant message is an LLM turn: 3 in the file.
    let inv = loaded.only();
    let turns = trace
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    assert_eq!(inv.summary().counts.llm as usize, turns);
    // Each tool span hangs under the turn that requested it.
    for call in &inv.summary().tool_calls {
        let span = &inv.spans[call.span()];
        let parent = inv
            .span_by_id(span.parent_span_id.as_ref().unwrap())
            .unwrap();
        assert_eq!(inv.spans[parent].kind, SpanKind::Llm);
        let requested = &inv.spans[parent].llm().unwrap().requested_tool_calls;
        assert!(
            requested
                .iter()
                .any(|r| r.id.as_deref() == call.call_id(&inv.spans))
        );
    }
}

#[test]
fn v04_gemini_candidates_match_toolscore() {
    let loaded = load(&case("v04_gemini_wrong_args"));
    assert_eq!(loaded.loaded_format, Some("gemini"));
    let ours = loaded.calls();
    assert_same_calls_as_toolscore(&ours, &toolscore_calls("v04_gemini_wrong_args"));
    let inv = loaded.only();
    let turn = inv.spans.iter().find(|s| s.kind == SpanKind::Llm).unwrap();
    let trace = read_json(&case("v04_gemini_wrong_args"));
    let finish = trace["candidates"][0]["finishReason"].as_str().unwrap();
    assert_eq!(*turn.llm().unwrap().finish_reasons, vec![finish]);
}

#[test]
fn v05_langchain_is_auto_detected_and_reads_tool_input() {
    // Pitfall: toolscore never auto-detects LangChain (the case needed --format langchain).
    let case_json = read_json(&Path::new(CORPUS).join("v05_langchain_legacy_explicit/case.json"));
    assert_eq!(case_json["cli_format_flag"], "langchain");
    let loaded = load(&case("v05_langchain_legacy_explicit"));
    assert_eq!(loaded.loaded_format, Some("langchain"));
    let ours = loaded.calls();
    let theirs = toolscore_calls("v05_langchain_legacy_explicit");
    let trace = read_json(&case("v05_langchain_legacy_explicit"));
    let actions = trace.as_array().unwrap();
    assert_eq!(ours.len(), actions.len());
    for ((mine, theirs), action) in ours.iter().zip(&theirs).zip(actions) {
        assert_eq!(mine.tool, theirs["tool"]);
        let tool_input = action["tool_input"].as_str().unwrap();
        match serde_json::from_str::<Value>(tool_input) {
            // A JSON string is the same arguments toolscore decoded.
            Ok(parsed) => assert_eq!(mine.args, parsed),
            // A plain string is kept verbatim; toolscore wraps it as {"input": …}.
            Err(_) => {
                assert_eq!(mine.args, json!(tool_input));
                assert_eq!(theirs["args"], json!({ "input": tool_input }));
            }
        }
        assert_eq!(mine.call_id.as_deref(), action["tool_call_id"].as_str());
    }
    // The `log` is the model's reasoning: each action sits under its own LLM turn.
    assert_eq!(loaded.only().summary().counts.llm as usize, actions.len());
}

#[test]
fn v06_mcp_recording_matches_toolscore_and_keeps_codes_and_results() {
    let loaded = load(&case("v06_mcp_recorded_session"));
    assert_eq!(loaded.loaded_format, Some("mcp"));
    let ours = loaded.calls();
    let theirs = toolscore_calls("v06_mcp_recorded_session");
    assert_same_calls_as_toolscore(&ours, &theirs);
    let trace = read_json(&case("v06_mcp_recorded_session"));
    let messages = trace["messages"].as_array().unwrap();
    for (mine, theirs) in ours.iter().zip(&theirs) {
        let duration_s = theirs["duration"].as_f64().unwrap();
        assert!(
            (mine.duration_ms - duration_s * 1000.0).abs() < 1e-6,
            "{}",
            mine.tool
        );
        let response = messages
            .iter()
            .find(|m| {
                m.get("method").is_none() && m["id"].as_i64().map(|i| i.to_string()) == mine.call_id
            })
            .unwrap();
        if theirs["is_error"] == json!(false) {
            // toolscore renders the text content; we keep the whole result object.
            assert_eq!(mine.result, response["result"]);
            assert_eq!(
                toolcap::formats::mcp::render_content(&mine.result),
                theirs["result"].as_str().unwrap()
            );
        } else {
            // toolscore drops the failed call's result; we keep the isError content or the
            // JSON-RPC error object, and its code.
            assert!(theirs["result"].is_null());
            let kept = response.get("error").unwrap_or(&response["result"]);
            assert_eq!(&mine.result, kept);
        }
    }
    let code = messages[5]["error"]["code"].as_i64().unwrap();
    assert_eq!(
        ours[2].error_type.as_deref(),
        Some(format!("JSON-RPC error {code}").as_str())
    );
    let inv = loaded.only();
    let span = &inv.spans[inv.summary().tool_calls[2].span()];
    assert_eq!(
        span.attr("jsonrpc.error.code").as_deref(),
        Some(&AttrValue::Int(code))
    );
    let root = inv
        .spans
        .iter()
        .find(|s| s.parent_span_id.is_none())
        .unwrap();
    assert_eq!(
        root.attr("mcp.recorded_by")
            .and_then(|v| v.held()?.as_str()),
        trace["recorded_by"].as_str()
    );
}

#[test]
fn v07_otlp_export_matches_toolscore() {
    let loaded = load(&case("v07_otel_otlp_export"));
    assert_eq!(loaded.loaded_format, Some("otlp-json"));
    let ours = loaded.calls();
    assert_same_calls_as_toolscore(&ours, &toolscore_calls("v07_otel_otlp_export"));
}

#[test]
fn v08_v09_custom_args_are_kept_exactly() {
    for dir in [
        "v08_gold_args_none_and_empty",
        "v09_numeric_and_string_coercion",
    ] {
        let loaded = load(&case(dir));
        assert_eq!(loaded.loaded_format, Some("toolscore-custom"), "{dir}");
        assert_same_calls_as_toolscore(&loaded.calls(), &toolscore_calls(dir));
        // No results in these traces: the output is "not captured", never an empty value.
        let inv = loaded.only();
        for call in &inv.summary().tool_calls {
            assert!(!inv.spans[call.span()].output().is_captured(), "{dir}");
        }
    }
}

#[test]
fn v10_empty_trace_loads_with_zero_calls_and_says_so() {
    let loaded = load(&case("v10_empty_gold_empty_trace"));
    assert_eq!(loaded.loaded_format, Some("toolscore-custom"));
    assert!(toolscore_calls("v10_empty_gold_empty_trace").is_empty());
    assert!(loaded.calls().is_empty());
    assert!(loaded.has_warning("0 tool calls found"));
}
