//! The real client: the OpenTelemetry Python SDK's own OTLP exporters (HTTP protobuf, HTTP with
//! gzip, gRPC with gzip) send GenAI agent traces to a spawned `toolcap-tui serve`; every span
//! the SDK created must be in the spool files, in `dump --json` of the spool, and come back
//! through `/api/v1/stream`.
//!
//! Needs `.venv` with the SDK (`.ci/run` creates it). Without it this test fails: a skipped
//! real-client test would hide exactly the breakage it exists to catch.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::support::{Serve, StreamReader, span_ids, spool_lines};

fn venv_python() -> std::path::PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: create it with `python3 -m venv .venv && .venv/bin/pip install \
         opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2 \
         opentelemetry-exporter-otlp-proto-grpc==1.45.2` (as .ci/run does)",
        python.display()
    );
    python
}

#[test]
fn python_sdk_spans_reach_the_spool_and_the_stream() {
    let python = venv_python();
    let tmp = tempfile::tempdir().unwrap();
    let spool = tmp.path().join("spool");
    let ids_file = tmp.path().join("ids.jsonl");
    let serve = Serve::start(&spool, &["--token", "py-t0ken"]);

    let output = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/emit_genai.py"))
        .args([
            "--http-endpoint",
            &format!("http://{}/v1/traces", serve.http),
        ])
        .args(["--grpc-endpoint", &serve.grpc])
        .args(["--modes", "http,http-gzip,grpc"])
        .args(["--traces-per-mode", "80", "--batch", "100"])
        .args(["--token", "py-t0ken"])
        .arg("--ids-out")
        .arg(&ids_file)
        // The exporters honour proxy variables; loopback must go direct.
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .output()
        .expect("run the Python emitter");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "emitter failed: {report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("{report}");

    let mut sent_by_mode: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for line in std::fs::read_to_string(&ids_file).unwrap().lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        sent_by_mode
            .entry(record["mode"].as_str().unwrap().to_string())
            .or_default()
            .insert((
                record["trace_id"].as_str().unwrap().to_string(),
                record["span_id"].as_str().unwrap().to_string(),
            ));
    }
    let modes: Vec<&str> = sent_by_mode.keys().map(String::as_str).collect();
    assert_eq!(modes, ["grpc", "http", "http-gzip"]);
    let sent: BTreeSet<(String, String)> = sent_by_mode.values().flatten().cloned().collect();
    let traces: BTreeSet<&String> = sent.iter().map(|(trace, _)| trace).collect();
    assert!(traces.len() >= 200, "only {} traces sent", traces.len());

    let lines = spool_lines(&spool);
    let stored = span_ids(&lines);
    for (mode, ids) in &sent_by_mode {
        let missing = ids.difference(&stored).count();
        assert_eq!(
            missing,
            0,
            "{missing} of {} {mode} spans are not in the spool",
            ids.len()
        );
    }
    assert_eq!(stored, sent, "the spool holds exactly the spans sent");

    // The spool is a trace directory like any other: `dump --json` of it shows every span.
    let dump = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json"])
        .arg(&spool)
        .output()
        .expect("run dump on the spool");
    assert_eq!(dump.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&dump.stdout).expect("dump prints JSON");
    let mut dumped: BTreeSet<(String, String)> = BTreeSet::new();
    for invocation in doc["invocations"].as_array().expect("invocations") {
        for span in invocation["spans"].as_array().expect("spans") {
            dumped.insert((
                invocation["id"].as_str().unwrap().to_string(),
                span["span_id"].as_str().unwrap().to_string(),
            ));
        }
    }
    assert_eq!(
        dumped, sent,
        "dump --json of the spool shows exactly the spans sent"
    );
    assert_eq!(doc["problems"].as_array().map(Vec::len), Some(0));

    let health = serve.health();
    assert_eq!(health["requests"], lines.len());
    assert_eq!(health["spans"], sent.len());

    // The read API is behind the same token.
    let refused = crate::support::raw_http(&serve.http, "GET", "/api/v1/health", &[], b"");
    assert_eq!(refused.unwrap().status, 401);
    let authorization = serve.authorization.clone().unwrap();
    let mut stream = StreamReader::open_with_headers(
        &serve.http,
        "/api/v1/stream",
        &[("Authorization", &authorization)],
    );
    assert!(
        stream
            .head
            .to_ascii_lowercase()
            .contains("application/x-ndjson")
    );
    let streamed: Vec<String> = (0..lines.len()).map(|_| stream.next_record()).collect();
    assert_eq!(
        streamed, lines,
        "the stream replays the spool line for line"
    );
    assert_eq!(
        span_ids(&streamed),
        sent,
        "every span arrives through /api/v1/stream"
    );
}
