//! `toolcap-tui serve` as a process: the spool on disk, the stream and health API, restart,
//! a torn last line, `kill -9` under load, and a gzip bomb's memory cost.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{Serve, json_request, raw_http, span_ids, spool_lines, spool_segments};

const JSON: (&str, &str) = ("Content-Type", "application/json");

fn post_json(addr: &str, body: &serde_json::Value) -> u16 {
    raw_http(
        addr,
        "POST",
        "/v1/traces",
        &[JSON],
        body.to_string().as_bytes(),
    )
    .map(|response| response.status)
    .unwrap_or(0)
}

fn expected_ids(traces: impl IntoIterator<Item = u128>, spans: u64) -> BTreeSet<(String, String)> {
    traces
        .into_iter()
        .flat_map(|trace| {
            (1..=spans).map(move |span| (format!("{trace:032x}"), format!("{span:016x}")))
        })
        .collect()
}

#[test]
fn spool_stream_health_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("spool");
    let serve = Serve::start(&dir, &["--segment-mb", "1"]);
    let (requests, spans) = (120u128, 40u64);
    for trace in 1..=requests {
        assert_eq!(post_json(&serve.http, &json_request(trace, spans)), 200);
    }

    let lines = spool_lines(&dir);
    assert_eq!(
        lines.len(),
        requests as usize,
        "one line per accepted request"
    );
    assert_eq!(span_ids(&lines), expected_ids(1..=requests, spans));
    let segments = spool_segments(&dir);
    assert!(segments.len() >= 2, "1 MiB segments rotate: {segments:?}");

    let health = serve.health();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["requests"], requests as u64);
    assert_eq!(health["spans"], requests as u64 * spans);
    assert_eq!(health["segments"], segments.len());
    assert_eq!(health["spool"], dir.display().to_string());

    let (head, records) = serve.read_stream("/api/v1/stream", "*/*", lines.len());
    assert!(
        head.to_ascii_lowercase().contains("application/x-ndjson"),
        "{head}"
    );
    assert_eq!(records, lines, "the stream replays the spool line for line");

    // SSE, resumed after 100 records, then following live.
    let mut stream = serve.stream("/api/v1/stream?format=sse&skip=100", "*/*");
    assert!(
        stream
            .head
            .to_ascii_lowercase()
            .contains("text/event-stream")
    );
    let replayed: Vec<String> = (0..20).map(|_| stream.next_record()).collect();
    assert_eq!(replayed, lines[100..]);
    assert_eq!(post_json(&serve.http, &json_request(1000, 3)), 200);
    let live = stream.next_record();
    assert_eq!(span_ids(&[live]), expected_ids([1000], 3));
    let (_, by_accept) = serve.read_stream("/api/v1/stream?skip=120", "text/event-stream", 1);
    assert_eq!(span_ids(&by_accept), expected_ids([1000], 3));

    // A follower that is still connected does not hold up shutdown; its response just ends.
    let status = serve.terminate();
    assert_eq!(status.code(), Some(0), "clean exit on SIGTERM");
    assert!(stream.remaining_records().is_empty());

    let serve = Serve::start(&dir, &["--segment-mb", "1"]);
    let health = serve.health();
    assert_eq!(health["requests"], requests as u64 + 1);
    assert_eq!(health["spans"], requests as u64 * spans + 3);
    assert_eq!(post_json(&serve.http, &json_request(2000, 2)), 200);
    let after = spool_lines(&dir);
    assert_eq!(after.len(), requests as usize + 2);
    assert_eq!(
        after[..lines.len()],
        lines[..],
        "a restart appends, never rewrites"
    );
    assert_eq!(span_ids(&after[after.len() - 1..]), expected_ids([2000], 2));
}

#[test]
fn a_torn_last_line_is_dropped_on_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let serve = Serve::start(&dir, &[]);
    assert_eq!(post_json(&serve.http, &json_request(1, 5)), 200);
    assert_eq!(serve.terminate().code(), Some(0));

    let last = spool_segments(&dir).pop().unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&last)
        .unwrap();
    file.write_all(br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00"#)
        .unwrap();
    drop(file);

    let serve = Serve::start(&dir, &[]);
    assert_eq!(serve.health()["requests"], 1);
    assert_eq!(post_json(&serve.http, &json_request(2, 4)), 200);
    let lines = spool_lines(&dir); // asserts every segment ends with a complete line
    assert_eq!(
        span_ids(&lines),
        &expected_ids([1], 5) | &expected_ids([2], 4)
    );
}

#[test]
fn kill_9_mid_load_loses_no_acknowledged_request() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let mut serve = Serve::start(&dir, &["--segment-mb", "1"]);
    let acknowledged = Arc::new(Mutex::new(Vec::<u128>::new()));
    let killed = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..6u128)
        .map(|client| {
            let (addr, acknowledged, killed) =
                (serve.http.clone(), acknowledged.clone(), killed.clone());
            std::thread::spawn(move || {
                for sequence in 1.. {
                    let trace = (client << 64) | sequence;
                    match post_json(&addr, &json_request(trace, 20)) {
                        200 => acknowledged.lock().unwrap().push(trace),
                        _ if killed.load(Ordering::SeqCst) => return,
                        status => panic!("unexpected status {status} before the kill"),
                    }
                }
            })
        })
        .collect();

    let deadline = Instant::now() + Duration::from_secs(120);
    while acknowledged.lock().unwrap().len() < 300 {
        assert!(Instant::now() < deadline, "load did not get going");
        std::thread::sleep(Duration::from_millis(10));
    }
    killed.store(true, Ordering::SeqCst);
    serve.child.kill().unwrap(); // SIGKILL
    serve.child.wait().unwrap();
    for client in clients {
        client.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();

    let serve = Serve::start(&dir, &["--segment-mb", "1"]);
    let lines = spool_lines(&dir);
    let stored = span_ids(&lines);
    let missing: Vec<u128> = acknowledged
        .iter()
        .copied()
        .filter(|trace| !expected_ids([*trace], 20).is_subset(&stored))
        .collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged requests lost: {missing:?}",
        missing.len()
    );
    assert_eq!(serve.health()["requests"], lines.len());
    assert!(lines.len() >= acknowledged.len());
}

#[test]
fn a_gzip_bomb_is_413_without_inflating_it() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(tmp.path(), &[]);
    let inflated_mib = 512;
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..inflated_mib {
        bomb.write_all(&zeros).unwrap();
    }
    let bomb = bomb.finish().unwrap();
    let response = raw_http(
        &serve.http,
        "POST",
        "/v1/traces",
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "gzip"),
        ],
        &bomb,
    )
    .unwrap();
    assert_eq!(response.status, 413);
    let peak_mib = serve.peak_rss_kib() / 1024;
    assert!(
        peak_mib < inflated_mib / 4,
        "serve peaked at {peak_mib} MiB for a {inflated_mib} MiB bomb"
    );
    assert_eq!(serve.health()["requests"], 0);
}

/// A request whose OTLP/JSON line would be longer than any reader of the spool takes is refused
/// as too large (not retried, not acknowledged), and the next request is spooled as usual.
#[test]
fn a_request_too_long_for_one_spool_line_is_413_and_not_spooled() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
    use prost::Message as _;
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(tmp.path(), &[]);
    // 11 MiB of control characters in protobuf, 66 MiB once each is escaped as `\u0001`.
    let blob = KeyValue {
        key: "blob".into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue("\u{1}".repeat(11 << 20))),
        }),
        ..Default::default()
    };
    let span = Span {
        trace_id: vec![1; 16],
        span_id: vec![2; 8],
        name: "big".into(),
        attributes: vec![blob],
        ..Default::default()
    };
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans: vec![span],
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    let response = raw_http(
        &serve.http,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/x-protobuf")],
        &request.encode_to_vec(),
    )
    .unwrap();
    assert_eq!(response.status, 413);
    assert!(
        !response
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("retry-after")),
        "not a request to retry: {:?}",
        response.headers
    );
    assert_eq!(post_json(&serve.http, &json_request(7, 2)), 200);
    let lines = spool_lines(tmp.path());
    assert_eq!(span_ids(&lines), expected_ids([7], 2));
}

#[test]
fn a_body_of_empty_spans_is_refused_before_it_decodes_to_far_more_than_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(tmp.path(), &[]);
    // 4,000,000 empty spans: 8 MB of protobuf that would decode to 1 GB.
    let body = crate::protobuf_bytes::request_of_empty_spans(4_000_000);
    let response = raw_http(
        &serve.http,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/x-protobuf")],
        &body,
    )
    .unwrap();
    assert_eq!(response.status, 400);
    let text = String::from_utf8_lossy(&response.body);
    assert!(text.contains("bytes per byte of input"), "{text}");
    assert_eq!(post_json(&serve.http, &json_request(8, 2)), 200);
    let lines = spool_lines(tmp.path());
    assert_eq!(span_ids(&lines), expected_ids([8], 2));
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
#[cfg(unix)]
fn the_feed_needs_the_token_serve_made_up_and_the_spool_is_owner_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("spool");
    let serve = Serve::start(&dir, &["--segment-mb", "1"]);
    let token_file = serve
        .token_file
        .clone()
        .expect("serve printed its token file");
    assert_eq!(token_file, dir.join("serve.token"));
    assert_eq!(mode(&token_file), 0o600);
    assert_eq!(mode(&dir), 0o700);

    // Ingest is open on loopback: SDKs send no token by default.
    for trace in 1..=30 {
        assert_eq!(post_json(&serve.http, &json_request(trace, 200)), 200);
    }
    let segments = spool_segments(&dir);
    assert!(segments.len() >= 2, "{segments:?}");
    for segment in &segments {
        assert_eq!(mode(segment), 0o600, "{}", segment.display());
        let len = std::fs::metadata(segment).unwrap().len();
        assert!(
            len <= 1024 * 1024,
            "{} holds {len} bytes",
            segment.display()
        );
    }

    let stream = |headers: &[(&str, &str)]| {
        // HTTP/1.0 so a 200 stream would not be waited for: only the status line matters.
        let mut request = format!("GET /api/v1/stream HTTP/1.0\r\nHost: {}\r\n", serve.http);
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        let mut socket = std::net::TcpStream::connect(&serve.http).unwrap();
        socket.write_all(request.as_bytes()).unwrap();
        let mut status = [0u8; 12];
        std::io::Read::read_exact(&mut socket, &mut status).unwrap();
        String::from_utf8_lossy(&status[9..12]).into_owned()
    };
    assert_eq!(stream(&[]), "401");
    assert_eq!(stream(&[("Authorization", "Bearer not-the-token")]), "401");
    assert_eq!(
        stream(&[("Authorization", serve.feed_authorization.as_str())]),
        "200"
    );
    let (_, records) = serve.read_stream("/api/v1/stream", "*/*", 30);
    assert_eq!(records.len(), 30);

    // The spool, with the token and the lock beside its segments, opens as a trace directory
    // that reports nothing: neither bookkeeping file is a skipped trace.
    let dump = std::process::Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(dump.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&dump.stdout).unwrap();
    assert_eq!(doc["problems"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["invocations"].as_array().map(Vec::len), Some(30));
}

#[test]
fn a_given_token_file_guards_ingest_and_feed_and_nothing_is_written_for_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("spool");
    let token_path = tmp.path().join("my.token");
    std::fs::write(&token_path, "s3cret-from-file\n").unwrap();
    let serve = Serve::start(&dir, &["--token-file", token_path.to_str().unwrap()]);
    assert_eq!(serve.token_file.as_deref(), Some(token_path.as_path()));
    assert_eq!(serve.feed_authorization, "Bearer s3cret-from-file");
    assert!(!dir.join("serve.token").exists());
    assert_eq!(post_json(&serve.http, &json_request(1, 2)), 401);
    let accepted = raw_http(
        &serve.http,
        "POST",
        "/v1/traces",
        &[JSON, ("Authorization", "Bearer s3cret-from-file")],
        json_request(1, 2).to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(accepted.status, 200);
    let (_, records) = serve.read_stream("/api/v1/stream", "*/*", 1);
    assert_eq!(span_ids(&records), expected_ids([1], 2));
}

#[test]
fn a_second_serve_on_the_same_out_refuses_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("spool");
    let first = Serve::start(&dir, &[]);
    let second = std::process::Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
            "--out",
        ])
        .arg(&dir)
        .env_remove("TOOLCAP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("in use by another toolcap-tui serve"),
        "{stderr}"
    );
    assert!(second.stdout.is_empty(), "it bound nothing");
    // The first one is unaffected, token included.
    assert_eq!(post_json(&first.http, &json_request(5, 1)), 200);
    let (_, records) = first.read_stream("/api/v1/stream", "*/*", 1);
    assert_eq!(span_ids(&records), expected_ids([5], 1));
    let status = first.terminate();
    assert_eq!(status.code(), Some(0));
    // Released on exit.
    let third = Serve::start(&dir, &[]);
    assert_eq!(third.health()["requests"], 1);
}

#[test]
#[cfg(target_os = "linux")]
fn health_is_degraded_with_the_reason_while_writes_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("spool");
    // Files may not grow past 200 bytes (the token file fits, a request does not); the
    // signal that would kill the process on the failed write is ignored, as on a full disk.
    let serve = Serve::start_with(&dir, &[], |command| {
        toolcap::system::limit_file_size(command, 200);
    });
    assert_eq!(serve.health()["status"], "ok");
    let refused = raw_http(
        &serve.http,
        "POST",
        "/v1/traces",
        &[JSON],
        json_request(1, 5).to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(
        refused.status,
        503,
        "a failed write is retryable: {}",
        String::from_utf8_lossy(&refused.body)
    );
    eprintln!("refused: {}", String::from_utf8_lossy(&refused.body));
    assert!(refused.header("Retry-After").is_some());
    let health = serve.health();
    assert_eq!(health["status"], "degraded", "{health}");
    let reason = health["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("spool writes are failing"), "{reason}");
    assert_eq!(health["requests"], 0);
    assert!(
        spool_lines(&dir).is_empty(),
        "no half-written line is left behind"
    );

    // The disk recovers: the next write succeeds and health says so.
    toolcap::system::lift_file_size_limit(serve.child.id()).expect("the limit is lifted");
    assert_eq!(post_json(&serve.http, &json_request(2, 5)), 200);
    let health = serve.health();
    assert_eq!(health["status"], "ok", "{health}");
    assert!(health.get("reason").is_none());
    assert_eq!(health["requests"], 1);
}
