//! `toolcap-tui serve` as a process: the spool on disk, the stream and health API, restart,
//! a torn last line, `kill -9` under load, and a gzip bomb's memory cost.

mod receiver_support;

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use receiver_support::{
    Serve, StreamReader, json_request, raw_http, read_stream, span_ids, spool_lines, spool_segments,
};

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

    let (head, records) = read_stream(&serve.http, "/api/v1/stream", "*/*", lines.len());
    assert!(
        head.to_ascii_lowercase().contains("application/x-ndjson"),
        "{head}"
    );
    assert_eq!(records, lines, "the stream replays the spool line for line");

    // SSE, resumed after 100 records, then following live.
    let mut stream = StreamReader::open(&serve.http, "/api/v1/stream?format=sse&skip=100", "*/*");
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
    let (_, by_accept) = read_stream(
        &serve.http,
        "/api/v1/stream?skip=120",
        "text/event-stream",
        1,
    );
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
