//! One set of id rules: the same requests with odd ids (an all-zero parent, a short span id,
//! upper-case hex, base64 as canonical protobuf JSON writes it, an all-zero trace id, a
//! three-byte parent, a parent that is neither hex nor base64) sent to a real `serve` and written to a trace file give the same spans,
//! and each request the receiver refuses a span of is refused in the file for the same reason;
//! `--listen`, which builds spans from the request its receiver decoded, keeps the same spans
//! over OTLP/HTTP and gRPC.

use std::collections::BTreeSet;

use base64::Engine as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as ProtoSpan};
use serde_json::{Value, json};
use toolcap::model::Batch;
use toolcap::sources::IngestEvent;

use crate::support::{Serve, raw_http};

fn request(name: &str, trace: &str, span: &str, parent: Option<&str>) -> Value {
    let mut s = json!({
        "traceId": trace, "spanId": span, "name": name, "kind": 1,
        "startTimeUnixNano": "1764496800000000000", "endTimeUnixNano": "1764496800500000000",
        "status": {}
    });
    if let Some(parent) = parent {
        s["parentSpanId"] = parent.into();
    }
    json!({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [s]}]}]})
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Each request and the reason it is refused for, if it is.
fn cases() -> Vec<(Value, Option<&'static str>)> {
    let trace = "5b8efff798038103d269b633813fc60c";
    vec![
        (request("root", trace, "eee19b7ec3c1b174", None), None),
        (
            request("child", trace, "eee19b7ec3c1b175", Some("eee19b7ec3c1b174")),
            None,
        ),
        (
            request(
                "zero parent",
                trace,
                "eee19b7ec3c1b176",
                Some("0000000000000000"),
            ),
            None,
        ),
        (
            request(
                "upper",
                "ABCDEF0123456789ABCDEF0123456789",
                "ABCDEF0123456789",
                None,
            ),
            None,
        ),
        (
            request("base64", &b64(&[7; 16]), &b64(&[9; 8]), Some(&b64(&[0; 8]))),
            None,
        ),
        (
            request("short span", trace, "abcd", None),
            Some("span id is 2 bytes long"),
        ),
        (
            request(
                "zero trace",
                "00000000000000000000000000000000",
                "eee19b7ec3c1b177",
                None,
            ),
            Some("trace id is all zero"),
        ),
        (
            request("short parent", trace, "eee19b7ec3c1b178", Some("abcdef")),
            Some("parent span id is 3 bytes long"),
        ),
        (
            request(
                "garbled parent",
                trace,
                "eee19b7ec3c1b179",
                Some("eee19b7ec3c1`17a"),
            ),
            Some("parent span id is 1 bytes long"),
        ),
    ]
}

fn dump_json(path: &std::path::Path) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json"])
        .arg(path)
        .output()
        .expect("run dump");
    serde_json::from_slice(&out.stdout).expect("dump --json is JSON")
}

/// (trace id, span id, parent id, name) of every span of a dump.
fn spans(doc: &Value) -> BTreeSet<(String, String, String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    doc["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|inv| {
            inv["spans"].as_array().unwrap().iter().map(move |s| {
                (
                    text(&inv["id"]),
                    text(&s["span_id"]),
                    text(&s["parent_span_id"]),
                    text(&s["name"]),
                )
            })
        })
        .collect()
}

#[test]
fn the_receiver_and_a_trace_file_keep_and_refuse_the_same_spans() {
    let tmp = tempfile::tempdir().unwrap();
    let spool = tmp.path().join("spool");
    let serve = Serve::start(&spool, &[]);
    let mut refused_by_receiver = Vec::new();
    let mut lines = String::new();
    for (body, refused) in cases() {
        lines.push_str(&body.to_string());
        lines.push('\n');
        let response = raw_http(
            &serve.http,
            "POST",
            "/v1/traces",
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
        .expect("POST");
        assert_eq!(response.status, 200, "{body}");
        let answer = response.json();
        let rejected = &answer["partialSuccess"]["rejectedSpans"];
        let rejected = rejected
            .as_u64()
            .or_else(|| rejected.as_str().and_then(|s| s.parse().ok()))
            .unwrap_or(0);
        let message = answer["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        assert_eq!(rejected, u64::from(refused.is_some()), "{body}: {answer}");
        if let Some(reason) = refused {
            assert!(message.contains(reason), "{reason:?} not in {message:?}");
            refused_by_receiver.push(reason);
        }
    }
    assert_eq!(serve.terminate().code(), Some(0));

    let file = tmp.path().join("same.jsonl");
    std::fs::write(&file, &lines).unwrap();
    let (from_receiver, from_file) = (dump_json(&spool), dump_json(&file));
    let kept = spans(&from_file);
    assert_eq!(spans(&from_receiver), kept);
    let names: BTreeSet<&str> = kept.iter().map(|k| k.3.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from(["root", "child", "zero parent", "upper", "base64"])
    );
    // Upper-case hex reads as lower-case, an all-zero parent as none.
    let by_name = |name: &str| kept.iter().find(|k| k.3 == name).unwrap().clone();
    assert_eq!(by_name("upper").0, "abcdef0123456789abcdef0123456789");
    assert_eq!(by_name("zero parent").2, "");
    assert_eq!(by_name("base64").2, "");
    assert_eq!(by_name("child").2, "eee19b7ec3c1b174");

    // The file reports each refused span on its line, for the receiver's reason.
    let problems = from_file["problems"].as_array().unwrap();
    for reason in &refused_by_receiver {
        assert!(
            problems
                .iter()
                .any(|p| p["message"].as_str().unwrap_or("").contains(reason)),
            "the file does not refuse for {reason:?}: {problems:?}"
        );
    }
    let refusals = problems
        .iter()
        .filter(|p| {
            let m = p["message"].as_str().unwrap_or("");
            m.contains(" id is ") && !m.contains("base64")
        })
        .count();
    assert_eq!(refusals, refused_by_receiver.len(), "{problems:?}");
}

/// The bytes an id text stands for: hex, else base64 (what canonical protobuf JSON writes);
/// `None` for text that is neither, which protobuf cannot carry.
fn id_bytes(text: &str) -> Option<Vec<u8>> {
    if text.len().is_multiple_of(2) && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return hex::decode(text).ok();
    }
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// A case as protobuf, when its ids can be written as bytes.
fn as_protobuf(body: &Value) -> Option<ExportTraceServiceRequest> {
    let span = &body["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
    let id = |key: &str| match span[key].as_str() {
        Some(text) => id_bytes(text),
        None => Some(Vec::new()),
    };
    let span = ProtoSpan {
        trace_id: id("traceId")?,
        span_id: id("spanId")?,
        parent_span_id: id("parentSpanId")?,
        name: span["name"].as_str()?.to_owned(),
        kind: 1,
        ..Default::default()
    };
    Some(ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![span],
                ..Default::default()
            }],
            ..Default::default()
        }],
    })
}

/// (trace id, span id, parent id, name) of the spans of built batches read in `format`.
fn batch_spans(batches: &[Batch], format: &str) -> BTreeSet<(String, String, String, String)> {
    batches
        .iter()
        .flat_map(|batch| &batch.spans)
        .filter(|span| span.format() == format)
        .map(|span| {
            (
                span.trace_id.to_string(),
                span.span_id.to_string(),
                span.parent_span_id
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                span.name.to_string(),
            )
        })
        .collect()
}

/// `--listen` builds its spans from the request its receiver decoded: over OTLP/HTTP JSON, and
/// over gRPC for every case protobuf can carry, it keeps and refuses what the trace file does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_keeps_and_refuses_the_spans_a_trace_file_does_over_http_and_grpc() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("same.jsonl");
    let lines: String = cases()
        .iter()
        .map(|(body, _)| format!("{body}\n"))
        .collect();
    std::fs::write(&file, lines).unwrap();
    let from_file = tokio::task::spawn_blocking(move || spans(&dump_json(&file)))
        .await
        .unwrap();

    let (handle, mut rx) = crate::support::listen_on_loopback(
        toolcap::sources::live_spool::DEFAULT_LIVE_SPOOL_BYTES,
        true,
        tmp.path(),
    )
    .await;
    let http = handle.receiver.http_addr.unwrap().to_string();
    let grpc = format!("http://{}", handle.receiver.grpc_addr.unwrap());

    let mut sent_over_grpc = BTreeSet::new();
    for (body, refused) in cases() {
        let addr = http.clone();
        let json = body.to_string();
        let answer = tokio::task::spawn_blocking(move || {
            raw_http(
                &addr,
                "POST",
                "/v1/traces",
                &[("Content-Type", "application/json")],
                json.as_bytes(),
            )
            .expect("POST")
        })
        .await
        .unwrap();
        assert_eq!(answer.status, 200, "{body}");
        let rejected = answer.json()["partialSuccess"]["rejectedSpans"].clone();
        let rejected = rejected
            .as_u64()
            .or_else(|| rejected.as_str().and_then(|s| s.parse().ok()))
            .unwrap_or(0);
        assert_eq!(rejected, u64::from(refused.is_some()), "{body}");

        let Some(request) = as_protobuf(&body) else {
            continue;
        };
        let mut client = TraceServiceClient::connect(grpc.clone()).await.unwrap();
        let answer = client
            .export(request)
            .await
            .expect("gRPC export")
            .into_inner();
        let rejected = answer.partial_success.map_or(0, |p| p.rejected_spans);
        assert_eq!(rejected, i64::from(refused.is_some()), "{body} over gRPC");
        let name = &body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"];
        sent_over_grpc.insert(name.as_str().unwrap_or_default().to_owned());
    }

    let accepted = cases()
        .iter()
        .filter(|(_, refused)| refused.is_none())
        .count();
    let accepted_over_grpc = cases()
        .iter()
        .filter(|(body, refused)| refused.is_none() && as_protobuf(body).is_some())
        .count();
    let mut batches = Vec::new();
    while batches.len() < accepted + accepted_over_grpc {
        let event = tokio::time::timeout(std::time::Duration::from_secs(30), rx.recv())
            .await
            .expect("every accepted request arrives")
            .expect("channel open");
        if let IngestEvent::Batch(batch) = event {
            assert!(batch.problems.is_empty(), "{:?}", batch.problems);
            batches.push(batch);
        }
    }
    handle.shutdown().await;
    assert_eq!(
        batch_spans(&batches, "otlp-json"),
        from_file,
        "over OTLP/HTTP JSON"
    );
    let file_spans_grpc_can_carry: BTreeSet<_> = from_file
        .iter()
        .filter(|span| sent_over_grpc.contains(&span.3))
        .cloned()
        .collect();
    assert_eq!(
        batch_spans(&batches, "otlp-protobuf"),
        file_spans_grpc_can_carry,
        "over gRPC"
    );
    assert!(
        file_spans_grpc_can_carry.len() >= 4,
        "{file_spans_grpc_can_carry:?}"
    );
}
