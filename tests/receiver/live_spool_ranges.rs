//! Live data goes through a bounded temporary spool: a payload of a span that arrived over
//! `--listen` (JSON, protobuf, gzip, gRPC) or from an attached `serve` feed is a byte range
//! into the spool and reads back equal to what the client sent; the spool is removed when the
//! source stops, and past its cap the oldest segment goes and its payloads say so.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use prost::Message;
use tokio::sync::mpsc;
use toolcap::formats::{self, otlp};
use toolcap::model::{AttrValue, Payload, PayloadBody, Problem, Span};
use toolcap::sources::IngestEvent;
use toolcap::sources::listen::ListenHandle;
use toolcap::sources::live_spool::DEFAULT_LIVE_SPOOL_BYTES;

use crate::support::{Serve, listen_on_loopback, raw_http};

const ARGUMENTS: &str = "gen_ai.tool.call.arguments";

/// Tool arguments big enough to be a payload, with what JSON must escape and non-ASCII text.
fn arguments(trace: u128) -> String {
    let filler = "x".repeat(1500);
    format!("{{\"trace\": {trace}, \"q\": \"Frage – ü \\\"quoted\\\"\\n{filler}\"}}")
}

fn span_json(trace: u128, span_id: &str, arguments: &str) -> serde_json::Value {
    serde_json::json!({
        "traceId": format!("{trace:032x}"),
        "spanId": span_id,
        "name": "execute_tool lookup",
        "kind": 1,
        "startTimeUnixNano": "1768471200000000000",
        "endTimeUnixNano": "1768471200100000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}},
            {"key": ARGUMENTS, "value": {"stringValue": arguments}}
        ]
    })
}

fn request_json(spans: Vec<serde_json::Value>) -> Vec<u8> {
    serde_json::json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "spool-test"}}]},
        "scopeSpans": [{"scope": {"name": "spool-test"}, "spans": spans}]
    }]})
    .to_string()
    .into_bytes()
}

fn one_span_request(trace: u128) -> Vec<u8> {
    request_json(vec![span_json(
        trace,
        "00000000000000a1",
        &arguments(trace),
    )])
}

fn as_protobuf(json: &[u8]) -> Vec<u8> {
    let (request, _) = otlp::decode_request_json(json).expect("test request decodes");
    request.encode_to_vec()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

async fn post(handle: &ListenHandle, headers: &[(&'static str, &'static str)], body: Vec<u8>) {
    let addr = handle.receiver.http_addr.expect("http bound").to_string();
    let headers = headers.to_vec();
    let response = tokio::task::spawn_blocking(move || {
        raw_http(&addr, "POST", "/v1/traces", &headers, &body).expect("request answered")
    })
    .await
    .unwrap();
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
}

/// Spans from the channel until `wanted` have arrived; problems are returned, not dropped.
async fn spans(rx: &mut mpsc::Receiver<IngestEvent>, wanted: usize) -> (Vec<Span>, Vec<Problem>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (mut spans, mut problems) = (Vec::new(), Vec::new());
    while spans.len() < wanted {
        let event = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("the spans arrive before the deadline")
            .expect("channel open");
        if let IngestEvent::Batch(batch) = event {
            spans.extend(batch.spans);
            problems.extend(batch.problems);
        }
    }
    (spans, problems)
}

fn arguments_payload(span: &Span) -> Payload {
    span.attributes
        .iter()
        .find_map(|(key, value)| match &*value {
            AttrValue::Payload(payload) if key == ARGUMENTS => Some((**payload).clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("span {} has no {ARGUMENTS} payload", span.span_id))
}

/// The payload is a range into a file under `dir`, and reads back as `expected`.
fn assert_read_back(payload: &Payload, dir: &Path, expected: &str) {
    let PayloadBody::Range(range) = &payload.body else {
        panic!("payload held as {:?}, not as a range", payload.body);
    };
    assert!(range.path.starts_with(dir), "{}", range.path.display());
    assert!(!range.gzip);
    let text = formats::load_payload(payload).expect("payload readable");
    assert_eq!(text.as_deref(), Some(expected));
}

fn trace_of(span: &Span) -> u128 {
    u128::from_str_radix(&span.trace_id.text(), 16).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_payloads_are_ranges_into_the_spool_for_every_encoding() {
    let spool_parent = tempfile::tempdir().unwrap();
    let (handle, mut rx) =
        listen_on_loopback(DEFAULT_LIVE_SPOOL_BYTES, true, spool_parent.path()).await;
    let dir = handle.spool_dir.clone().expect("a live spool");
    assert!(dir.is_dir());

    const JSON: &str = "application/json";
    const PROTOBUF: &str = "application/x-protobuf";
    post(&handle, &[("Content-Type", JSON)], one_span_request(1)).await;
    let protobuf = as_protobuf(&one_span_request(2));
    post(&handle, &[("Content-Type", PROTOBUF)], protobuf).await;
    let gzip_json = gzip(&one_span_request(3));
    post(
        &handle,
        &[("Content-Type", JSON), ("Content-Encoding", "gzip")],
        gzip_json,
    )
    .await;
    let gzip_protobuf = gzip(&as_protobuf(&one_span_request(4)));
    let gzip_headers = [("Content-Type", PROTOBUF), ("Content-Encoding", "gzip")];
    post(&handle, &gzip_headers, gzip_protobuf).await;
    // gRPC bodies reach us decoded by tonic: they are spooled re-encoded.
    let grpc = format!("http://{}", handle.receiver.grpc_addr.expect("grpc bound"));
    let (request, _) = otlp::decode_request_json(&one_span_request(5)).unwrap();
    TraceServiceClient::connect(grpc)
        .await
        .unwrap()
        .send_compressed(tonic::codec::CompressionEncoding::Gzip)
        .export(request)
        .await
        .expect("gRPC export accepted");

    let (spans, problems) = spans(&mut rx, 5).await;
    assert!(problems.is_empty(), "{problems:?}");
    for span in &spans {
        assert_read_back(&arguments_payload(span), &dir, &arguments(trace_of(span)));
    }
    let mut traces: Vec<u128> = spans.iter().map(trace_of).collect();
    traces.sort_unstable();
    assert_eq!(traces, [1, 2, 3, 4, 5]);

    handle.shutdown().await;
    assert!(
        !dir.exists(),
        "the spool is removed when the receiver stops"
    );
    let gone = formats::load_payload(&arguments_payload(&spans[0]))
        .unwrap_err()
        .to_string();
    assert!(gone.contains("no longer kept"), "{gone}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_rejected_spans_keeps_only_the_accepted_ones_as_ranges() {
    let spool_parent = tempfile::tempdir().unwrap();
    let (handle, mut rx) =
        listen_on_loopback(DEFAULT_LIVE_SPOOL_BYTES, false, spool_parent.path()).await;
    let dir = handle.spool_dir.clone().unwrap();
    let body = request_json(vec![
        span_json(9, "00000000000000a1", &arguments(9)),
        span_json(9, "abcd", "short span id"),
    ]);
    post(&handle, &[("Content-Type", "application/json")], body).await;
    let (spans, problems) = spans(&mut rx, 1).await;
    assert!(
        problems.is_empty(),
        "the client was told, not the view: {problems:?}"
    );
    assert_eq!(spans.len(), 1);
    assert_read_back(&arguments_payload(&spans[0]), &dir, &arguments(9));
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_the_oldest_segment_goes_and_its_payloads_say_so() {
    // Each body is about 2 KiB: 16 KiB keeps the newest seven or so.
    let spool_parent = tempfile::tempdir().unwrap();
    let (handle, mut rx) = listen_on_loopback(16 << 10, false, spool_parent.path()).await;
    let dir = handle.spool_dir.clone().unwrap();
    for trace in 1..=20 {
        post(
            &handle,
            &[("Content-Type", "application/json")],
            one_span_request(trace),
        )
        .await;
    }
    let (spans, problems) = spans(&mut rx, 20).await;
    assert!(problems.is_empty(), "{problems:?}");
    let on_disk: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum();
    assert!(on_disk <= 16 << 10, "{on_disk} bytes kept");
    let first = spans.iter().find(|s| trace_of(s) == 1).unwrap();
    assert_eq!(
        formats::load_payload(&arguments_payload(first))
            .unwrap_err()
            .to_string(),
        "no longer kept: the live spool keeps the newest 16 KiB"
    );
    let last = spans.iter().find(|s| trace_of(s) == 20).unwrap();
    assert_read_back(&arguments_payload(last), &dir, &arguments(20));
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_body_reaches_neither_the_spool_nor_the_view() {
    let spool_parent = tempfile::tempdir().unwrap();
    let (handle, mut rx) =
        listen_on_loopback(DEFAULT_LIVE_SPOOL_BYTES, false, spool_parent.path()).await;
    let dir = handle.spool_dir.clone().unwrap();
    let addr = handle.receiver.http_addr.unwrap().to_string();
    let refused = tokio::task::spawn_blocking(move || {
        let json = [("Content-Type", "application/json")];
        let garbage = raw_http(&addr, "POST", "/v1/traces", &json, b"{\"resourceSpans\": 7")
            .unwrap()
            .status;
        let gzip_headers = [
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ];
        let bad_gzip = raw_http(&addr, "POST", "/v1/traces", &gzip_headers, b"not gzip")
            .unwrap()
            .status;
        (garbage, bad_gzip)
    })
    .await
    .unwrap();
    assert_eq!(refused, (400, 400));
    // A good request after them is the first thing the view and the spool see.
    post(
        &handle,
        &[("Content-Type", "application/json")],
        one_span_request(3),
    )
    .await;
    let (spans, problems) = spans(&mut rx, 1).await;
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(spans.iter().map(trace_of).collect::<Vec<_>>(), [3]);
    let PayloadBody::Range(range) = &arguments_payload(&spans[0]).body else {
        panic!("not a range");
    };
    assert_eq!(
        range.offset,
        range_start_in(&one_span_request(3), &arguments(3))
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    handle.shutdown().await;
}

/// Where the JSON string token of `value` starts in `body` (the spool holds only `body`).
fn range_start_in(body: &[u8], value: &str) -> u64 {
    let token = serde_json::to_string(value).unwrap();
    let at = body
        .windows(token.len())
        .position(|window| window == token.as_bytes())
        .expect("the value is in the body");
    at as u64
}

#[test]
fn attach_payloads_are_ranges_into_a_spool_removed_when_the_feed_ends() {
    use toolcap::sources::attach::{AttachOptions, spawn_attach_with};
    use toolcap::sources::remote::RemoteOptions;

    let dir = tempfile::tempdir().unwrap();
    let spool_parent = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &["--token", "attach-token"]);
    for trace in 1..=3 {
        let response = raw_http(
            &serve.http,
            "POST",
            "/v1/traces",
            &[
                ("Content-Type", "application/json"),
                ("Authorization", "Bearer attach-token"),
            ],
            &one_span_request(trace),
        )
        .expect("post");
        assert_eq!(response.status, 200);
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (tx, mut rx) = mpsc::channel(64);
        let options = AttachOptions {
            remote: RemoteOptions::from_args(Some("attach-token".into()), &[]).unwrap(),
            spool_parent: Some(spool_parent.path().to_path_buf()),
            ..AttachOptions::default()
        };
        let task = spawn_attach_with(format!("http://{}", serve.http), tx, options);
        let (spans, problems) = spans(&mut rx, 3).await;
        assert!(problems.is_empty(), "{problems:?}");
        let spools: Vec<PathBuf> = std::fs::read_dir(spool_parent.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert_eq!(spools.len(), 1, "one spool per feed");
        for span in &spans {
            assert_read_back(
                &arguments_payload(span),
                &spools[0],
                &arguments(trace_of(span)),
            );
        }
        drop(rx);
        task.await
            .expect("the feed ends when the app stops listening");
        assert!(!spools[0].exists(), "the spool is removed with the feed");
    });
}
