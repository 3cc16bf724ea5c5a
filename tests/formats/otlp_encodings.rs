//! Encodings agree, tool calls link to the LLM span that asked for them, payloads keep their
//! four states and load back from their records, and the receiver API behaves.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use toolcap::formats::{self, otlp};
use toolcap::model::{AttrValue, Origin, PayloadBody, PayloadState, Span, SpanKind};
use toolcap::sources::load::load_store;
use toolcap::store::Store;

const CORPUS: &str = "tests/fixtures/corpus";

fn corpus(rel: &str) -> PathBuf {
    Path::new(CORPUS).join(rel)
}

fn spans_of(paths: &[PathBuf]) -> Vec<Span> {
    let mut spans = Vec::new();
    for loaded in toolcap::sources::files::load_sources(paths) {
        // A record of notes only is the walk listing files it skipped (SOURCES.md, …).
        let skipped_only =
            loaded.batch.spans.is_empty() && loaded.batch.problems.iter().all(|p| !p.is_counted());
        assert!(
            loaded.detection.format.is_some() || skipped_only,
            "{}",
            loaded.origin
        );
        spans.extend(loaded.batch.spans);
    }
    spans
}

/// Everything but where a span came from (payload bodies point at different files).
fn projection(span: &Span) -> String {
    let attrs: Vec<String> = span
        .attributes
        .iter()
        .map(|(k, v)| match &*v {
            AttrValue::Payload(p) => format!("{k}=<{:?} {}>", p.state, p.bytes),
            other => format!("{k}={other:?}"),
        })
        .collect();
    format!(
        "{} {} {:?} {} {:?} {:?} {:?} {}..{} {:?} {:?} {:?} {:?} in={:?}/{} out={:?}/{} {attrs:?} {}",
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.name,
        span.kind,
        span.status,
        span.error().cloned(),
        span.start_unix_nano,
        span.end_unix_nano,
        span.service().cloned(),
        span.identity(),
        span.tool(),
        span.llm(),
        span.input().state,
        span.input().bytes,
        span.output().state,
        span.output().bytes,
        span.events().len(),
    )
}

fn sorted_projection(spans: &[Span]) -> Vec<String> {
    let mut out: Vec<String> = spans.iter().map(projection).collect();
    out.sort();
    out
}

#[test]
fn protobuf_gzip_grpc_and_json_give_identical_spans() {
    let reference = sorted_projection(&spans_of(&[corpus("otlp-python-sdk/http-protobuf")]));
    // 35 spans in 5 requests (SOURCES.md; `jq '[.resourceSpans[].scopeSpans[].spans[]]|length'`).
    assert_eq!(reference.len(), 35);
    for other in [
        "otlp-python-sdk/http-protobuf-gzip",
        "otlp-python-sdk/grpc",
        "otlp-python-sdk/otlp-json/traces.jsonl",
        "otlp-python-sdk/negative-proto3-canonical-json",
    ] {
        assert_eq!(
            sorted_projection(&spans_of(&[corpus(other)])),
            reference,
            "{other}"
        );
    }
    let json_files: Vec<PathBuf> = (1..=5)
        .map(|i| corpus(&format!("otlp-python-sdk/otlp-json/000{i}-v1_traces.json")))
        .collect();
    assert_eq!(sorted_projection(&spans_of(&json_files)), reference);
}

/// Counts tool spans linked to an LLM span of their run that requested their call id, and
/// checks each link really points at such a request.
fn assert_tools_linked(store: &Store, expected_links: usize, label: &str) {
    let mut links = 0;
    for inv in store.invocations() {
        let requesters = inv.tool_call_requesters();
        for (i, span) in inv.spans.iter().enumerate() {
            if span.kind != SpanKind::Tool {
                continue;
            }
            let Some(requester) = inv.requester_of(i) else {
                continue;
            };
            assert_eq!(requesters.of(span), Some(requester), "{label}: one answer");
            let call_id = span
                .tool_call_id()
                .expect("only calls with an id are linked");
            let llm = &inv.spans[requester];
            assert_eq!(llm.kind, SpanKind::Llm, "{label}");
            let requested = &llm.llm().expect("llm facts").requested_tool_calls;
            assert!(
                requested.iter().any(|c| c.id.as_deref() == Some(call_id)
                    && Some(c.name.as_str()) == span.tool_name()),
                "{label}: {requested:?} lacks {call_id}"
            );
            links += 1;
        }
    }
    assert_eq!(links, expected_links, "{label}");
}

#[test]
fn requested_tool_calls_link_to_tool_spans_in_every_convention() {
    // Tool call ids that an LLM span of the same trace lists among its requested calls
    // (counted with Python over gen_ai.output.messages tool_call parts, the
    // openarmature...tool_calls.ids array, llm.output_messages.*.tool_call.id and Langfuse
    // output tool_calls). In the python-sdk data only the first tool of each trace was
    // requested by a chat span.
    for (rel, links) in [
        ("otlp-python-sdk/otlp-json/traces.jsonl", 5),
        ("openarmature/otlp-json/payload-off.batch.jsonl", 2),
        ("openarmature/otlp-json/payload-on.batch.jsonl", 2),
        ("otel-genai/genai-latest.spans.otlp.jsonl", 2),
        ("otel-genai/openinference.spans.otlp.jsonl", 2),
        ("otel-genai/langfuse-native.000.pb", 2),
    ] {
        let (store, _) = load_store(&[corpus(rel)]);
        assert_tools_linked(&store, links, rel);
    }
    // The legacy GenAI run recorded no message content, so nothing says what was requested.
    let (store, _) = load_store(&[corpus("otel-genai/genai-legacy.spans.otlp.jsonl")]);
    let inv = store.oldest_first()[0];
    assert!(
        (0..inv.spans.len())
            .filter(|&i| inv.spans[i].kind == SpanKind::Tool)
            .all(|i| inv.requester_of(i).is_none())
    );
}

fn tool_span<'s>(spans: &'s [Span], name: &str) -> &'s Span {
    spans
        .iter()
        .find(|s| s.tool_name() == Some(name))
        .unwrap_or_else(|| panic!("no tool span {name}"))
}

#[test]
fn payload_states_are_distinct_and_load_back_from_disk() {
    let off = spans_of(&[corpus("openarmature/otlp-json/payload-off.batch.jsonl")]);
    let weather = tool_span(&off, "get_weather");
    assert_eq!(weather.input().state, PayloadState::NotCaptured);
    assert_eq!(weather.output().state, PayloadState::NotCaptured);

    // Values as written in payload-on.batch.jsonl (`jq` on openarmature.tool.call.*).
    for rel in [
        "openarmature/otlp-json/payload-on.batch.jsonl",
        "openarmature/otlp-http-proto/payload-on.000.pb",
    ] {
        let on = spans_of(&[corpus(rel)]);
        let weather = tool_span(&on, "get_weather");
        assert_eq!(weather.input().state, PayloadState::Present, "{rel}");
        assert!(
            matches!(weather.input().body, PayloadBody::Range(_)),
            "{rel}"
        );
        assert_eq!(
            formats::load_payload(&weather.input()).unwrap().as_deref(),
            Some(r#"{"city":"Paris","unit":"celsius"}"#),
            "{rel}"
        );
        assert_eq!(
            formats::load_payload(&weather.output()).unwrap().as_deref(),
            Some(r#"{"city":"Paris","conditions":"cloudy","temperature":18,"unit":"celsius"}"#)
        );
        // The failed tool recorded its arguments but has no result.
        let stock = tool_span(&on, "get_stock_price");
        assert_eq!(stock.input().state, PayloadState::Present);
        assert_eq!(stock.output().state, PayloadState::NotCaptured);
    }

    // cap256: the answer call's input messages were cut to 256 bytes of 730.
    let cap = spans_of(&[corpus(
        "openarmature/otlp-json/payload-on-cap256.batch.jsonl",
    )]);
    let answer_llm = cap
        .iter()
        .filter(|s| s.kind == SpanKind::Llm)
        .max_by_key(|s| s.start_unix_nano)
        .unwrap();
    assert_eq!(
        answer_llm.input().state,
        PayloadState::Truncated { total_bytes: 730 }
    );
    assert_eq!(answer_llm.input().bytes, 256);
    let text = formats::load_payload(&answer_llm.input()).unwrap().unwrap();
    assert_eq!(text.len(), 256);
    assert!(text.ends_with("…[truncated, 730 bytes total]"));
}

#[test]
fn gzipped_jsonl_and_tailed_chunks_keep_payload_references() {
    let dir = tempfile::tempdir().unwrap();
    let source =
        std::fs::read(corpus("openarmature/otlp-json/payload-on.streaming.jsonl")).unwrap();
    let gz_path = dir.path().join("spans.jsonl.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&source).unwrap();
    std::fs::write(&gz_path, encoder.finish().unwrap()).unwrap();
    let spans = spans_of(&[gz_path]);
    assert_eq!(spans.len(), 21);
    let weather = tool_span(&spans, "get_weather");
    assert_eq!(
        formats::load_payload(&weather.input()).unwrap().as_deref(),
        Some(r#"{"city":"Paris","unit":"celsius"}"#)
    );
    // Every captured payload loads back, including those of parents (the agent and chain
    // spans of the OpenInference run carry input.value) whose children's lines, written
    // first in end order, mention the parent's id too.
    let streaming = std::fs::read(corpus("otel-genai/openinference.spans.otlp.jsonl")).unwrap();
    let gz_parents = dir.path().join("parents.jsonl.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&streaming).unwrap();
    std::fs::write(&gz_parents, encoder.finish().unwrap()).unwrap();
    let spans = spans_of(&[gz_parents]);
    let agent = spans.iter().find(|s| s.kind == SpanKind::Agent).unwrap();
    assert!(agent.input().is_captured());
    for span in spans.iter().filter(|s| s.input().is_captured()) {
        assert!(
            formats::load_payload(&span.input()).unwrap().is_some(),
            "{}",
            span.name
        );
    }

    // A tailer hands over only the lines after the first 10: positions stay file positions.
    let path = corpus("openarmature/otlp-json/payload-on.streaming.jsonl");
    let cut = source
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(9)
        .unwrap()
        .0
        + 1;
    let loaded = formats::load_chunk_as(
        &otlp::OtlpJson,
        Origin::File(std::sync::Arc::new(path.clone())),
        &source[cut..],
        cut as u64,
        10,
    );
    assert_eq!(loaded.batch.spans.len(), 11);
    assert!(
        loaded
            .batch
            .spans
            .iter()
            .all(|s| s.line.unwrap().get() > 10)
    );
    let tool = loaded
        .batch
        .spans
        .iter()
        .find(|s| s.tool_name() == Some("get_weather"));
    if let Some(tool) = tool {
        assert_eq!(
            formats::load_payload(&tool.input()).unwrap().as_deref(),
            Some(r#"{"city":"Paris","unit":"celsius"}"#)
        );
    }
    let with_payload = loaded
        .batch
        .spans
        .iter()
        .find(|s| s.input().is_captured())
        .expect("some span in the tail has a payload");
    assert!(
        formats::load_payload(&with_payload.input())
            .unwrap()
            .is_some()
    );
}

fn big_attribute_request(value: &str) -> String {
    serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
    "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
    "name": "execute_tool big", "kind": 1,
    "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": value}},
    ]}]}]}]})
    .to_string()
}

#[test]
fn large_attribute_values_become_payloads_by_reference_or_inline() {
    // Escapes and non-ASCII text must survive the round trip exactly.
    let value = format!(
        "{{\"q\":\"{}\"}}",
        "caf\u{e9} \\\"quoted\\\" ✓ ".repeat(200)
    );
    let request = big_attribute_request(&value);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    std::fs::write(&path, &request).unwrap();
    let spans = spans_of(std::slice::from_ref(&path));
    let arguments = spans[0].attr("gen_ai.tool.call.arguments").unwrap();
    let AttrValue::Payload(payload) = &*arguments else {
        panic!("a {} byte value stays a payload", value.len());
    };
    assert!(matches!(payload.body, PayloadBody::Range(_)));
    assert_eq!(payload.bytes, value.len() as u64);
    assert_eq!(
        formats::load_payload(&spans[0].input()).unwrap().as_deref(),
        Some(value.as_str())
    );

    // From the network the same value is kept inline.
    let (decoded, warnings) = otlp::decode_request_json(request.as_bytes()).unwrap();
    assert!(warnings.is_empty());
    let batch = otlp::batch_from_request(
        &decoded,
        &Origin::endpoint("127.0.0.1:4318"),
        "otlp-json",
        None,
    );
    assert_eq!(batch.spans[0].input().inline_text(), Some(value.as_str()));
}

#[test]
fn receiver_api_counts_and_rejects_invalid_spans() {
    let bytes = std::fs::read("tests/fixtures/otlp-negative/invalid-ids.json").unwrap();
    let (request, warnings) = otlp::decode_request_json(&bytes).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    // The fixture has 6 spans: no trace id, a 7-byte span id, an all-zero trace id, a 2-byte
    // parent id, and two good ones.
    let (valid, rejected, reason) = otlp::count_invalid_spans(&request);
    assert_eq!((valid, rejected), (2, 4));
    assert!(reason.unwrap().contains("trace id is missing"));
    let origin = Origin::endpoint("test");
    let batch = otlp::batch_from_request(&request, &origin, "otlp-json", None);
    assert_eq!(batch.spans.len(), 2);
    assert_eq!(batch.problems.len(), 4);
    let names: Vec<&str> = batch.spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["ok-root", "ok-child"]);

    let canonical = std::fs::read(corpus(
        "otlp-python-sdk/negative-proto3-canonical-json/0001-v1_traces.proto3-canonical.json",
    ))
    .unwrap();
    let (request, warnings) = otlp::decode_request_json(&canonical).unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(otlp::count_invalid_spans(&request), (7, 0, None));

    let protobuf = std::fs::read(corpus("otlp-python-sdk/grpc/0001-grpc_traces.pb")).unwrap();
    let request = otlp::decode_request_protobuf(&protobuf).unwrap();
    assert_eq!(otlp::count_invalid_spans(&request), (7, 0, None));
    assert!(otlp::decode_request_protobuf(&protobuf[..protobuf.len() / 2]).is_err());
    assert!(otlp::decode_request_json(b"{\"resourceSpans\": 5}").is_err());
}

#[test]
fn canonical_json_lines_warn_once_per_file_and_load_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = String::new();
    for i in 1..=5 {
        let text = std::fs::read_to_string(corpus(&format!(
            "otlp-python-sdk/negative-proto3-canonical-json/000{i}-v1_traces.proto3-canonical.json"
        )))
        .unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        lines.push_str(&value.to_string());
        lines.push('\n');
    }
    let path = dir.path().join("canonical.jsonl");
    std::fs::write(&path, lines).unwrap();
    let loaded = toolcap::sources::files::load_file(&path);
    assert_eq!(loaded.batch.spans.len(), 35);
    let lines: Vec<Option<u64>> = loaded.batch.problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, [Some(1), Some(1)]);
}

#[test]
fn big_jsonl_files_parsed_in_pieces_keep_file_lines_and_offsets() {
    // Over the 16 MiB parallel threshold: traces.jsonl (5 lines, 35 spans) repeated, with one
    // bad line in the middle.
    let one = std::fs::read(corpus("otlp-python-sdk/otlp-json/traces.jsonl")).unwrap();
    let copies = (17 << 20) / one.len() + 1;
    let bad_after = copies / 2;
    let mut bytes = Vec::new();
    let mut line_offsets = Vec::new();
    for copy in 0..copies {
        for line in one.split_inclusive(|b| *b == b'\n') {
            line_offsets.push(bytes.len() as u64);
            bytes.extend_from_slice(line);
        }
        if copy == bad_after {
            line_offsets.push(bytes.len() as u64);
            bytes.extend_from_slice(b"{\"resourceSpans\": [oops\n");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    std::fs::write(&path, &bytes).unwrap();
    let loaded = toolcap::sources::files::load_file(&path);
    assert_eq!(loaded.batch.spans.len(), 35 * copies);
    let bad_line = (bad_after as u64 + 1) * 5 + 1;
    let problem_lines: Vec<Option<u64>> = loaded.batch.problems.iter().map(|p| p.line).collect();
    assert_eq!(problem_lines, [Some(bad_line)]);
    let mut previous = 0;
    for span in &loaded.batch.spans {
        let line = span.line.unwrap().get();
        assert!(line >= previous, "spans keep file order");
        previous = line;
        if let PayloadBody::Range(range) = &span.output().body {
            let line_start = line_offsets[line as usize - 1];
            let line_end = line_offsets.get(line as usize).copied().unwrap_or(u64::MAX);
            assert!(
                range.offset > line_start && range.offset + u64::from(range.len) < line_end,
                "line {line}: payload at {} is inside its line",
                range.offset
            );
        }
    }
    let last = loaded.batch.spans.last().unwrap();
    assert_eq!(last.line.map(u64::from), Some(line_offsets.len() as u64));
    let with_payload = loaded
        .batch
        .spans
        .iter()
        .rev()
        .find(|s| s.output().is_captured())
        .unwrap();
    assert!(
        formats::load_payload(&with_payload.output())
            .unwrap()
            .is_some()
    );
}

#[test]
fn big_protobuf_files_parsed_in_pieces_keep_every_span_in_order() {
    use prost::Message as _;
    let mut resources = Vec::new();
    for i in 1..=5 {
        let bytes = std::fs::read(corpus(&format!(
            "otlp-python-sdk/grpc/000{i}-grpc_traces.pb"
        )))
        .unwrap();
        resources.extend(
            otlp::decode_request_protobuf(&bytes)
                .unwrap()
                .resource_spans,
        );
    }
    let one_round: usize = resources.iter().map(|r| r.encoded_len()).sum();
    let rounds = (17 << 20) / one_round + 1;
    let mut request =
        opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest::default();
    for _ in 0..rounds {
        request.resource_spans.extend(resources.iter().cloned());
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.pb");
    std::fs::write(&path, request.encode_to_vec()).unwrap();
    let loaded = toolcap::sources::files::load_file(&path);
    assert!(loaded.batch.problems.is_empty());
    // 35 spans per round (SOURCES.md), in request order.
    assert_eq!(loaded.batch.spans.len(), 35 * rounds);
    let expected: Vec<String> = request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .map(|s| hex::encode(&s.span_id))
        .collect();
    let actual: Vec<String> = loaded
        .batch
        .spans
        .iter()
        .map(|s| s.span_id.to_string())
        .collect();
    assert_eq!(actual, expected);
}

/// An attribute a span's input or output is taken from stays in the file from 129 bytes on (a
/// short message is what a live store held most of); shorter ones, and other values of any size
/// up to 1 KiB, stay in the skeleton.
#[test]
fn short_hidden_content_becomes_a_payload_by_reference_and_other_values_stay_inline() {
    let dir = tempfile::tempdir().unwrap();
    let arguments_of = |value: &str| {
        let path = dir.path().join(format!("{}.json", value.len()));
        std::fs::write(&path, big_attribute_request(value)).unwrap();
        let spans = spans_of(std::slice::from_ref(&path));
        (*spans[0].attr("gen_ai.tool.call.arguments").unwrap()).clone()
    };
    let long = "é".repeat(64) + "x";
    assert_eq!(long.len(), 129);
    let AttrValue::Payload(payload) = arguments_of(&long) else {
        panic!("129 bytes of arguments stay in the file");
    };
    assert!(matches!(payload.body, PayloadBody::Range(_)));
    assert_eq!(payload.bytes, 129);
    // 100 bytes once unescaped, 200 as written: the decoded length decides, as in every encoding.
    let quotes = "\"".repeat(100);
    assert_eq!(
        arguments_of(&quotes),
        AttrValue::Str(quotes.as_str().into())
    );

    // A value under a key that is not content stays inline up to 1 KiB.
    let path = dir.path().join("description.json");
    let request =
        big_attribute_request("x").replace("gen_ai.tool.call.arguments", "gen_ai.tool.description");
    let description = "d".repeat(900);
    std::fs::write(
        &path,
        request.replace("\"x\"", &format!("\"{description}\"")),
    )
    .unwrap();
    let spans = spans_of(std::slice::from_ref(&path));
    assert_eq!(
        spans[0].attr("gen_ai.tool.description").as_deref(),
        Some(&AttrValue::Str(description.as_str().into()))
    );
}

/// Facts read from attributes that are not payload sources keep their text whatever its length:
/// a Langfuse status message past 128 bytes is still the span's error message.
#[test]
fn an_error_message_attribute_past_128_bytes_is_still_the_error_message() {
    let message = format!("upstream refused the call: {}", "detail ".repeat(30));
    assert!(message.len() > 128);
    let request = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
    "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b175",
    "name": "generation", "kind": 1, "status": {"code": 2},
    "attributes": [
        {"key": "langfuse.observation.status_message", "value": {"stringValue": message}},
    ]}]}]}]})
    .to_string();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("status.json");
    std::fs::write(&path, request).unwrap();
    let spans = spans_of(std::slice::from_ref(&path));
    assert_eq!(spans[0].error_message(), Some(message.as_str()));
}
