//! `--listen`: an OTLP/HTTP JSON export sent to the TUI's embedded receiver arrives on the
//! app's ingest channel as a batch of normalized spans, followed by a status update.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use toolcap::sources::{IngestEvent, SourceStatus};
use toolcap::tui::listen::spawn_listener;

/// One OTLP/JSON export body from the Python SDK corpus: 7 spans of one trace (counted with
/// python from the file).
const BODY: &str = include_str!("fixtures/corpus/otlp-python-sdk/otlp-json/0001-v1_traces.json");

async fn post_json(addr: &str, body: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    response
}

/// The next event, or `None` after a generous deadline (a hang fails the test, not CI).
async fn next(rx: &mut mpsc::Receiver<IngestEvent>) -> Option<IngestEvent> {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .ok()
        .flatten()
}

#[tokio::test]
async fn an_export_reaches_the_ingest_channel() {
    let (tx, mut rx) = mpsc::channel(16);
    let handle = spawn_listener("127.0.0.1:0".into(), None, None, tx)
        .await
        .expect("binds a free port");
    let addr = handle.http_addr.expect("http address").to_string();

    let Some(IngestEvent::Status(SourceStatus::Listening {
        http, requests: 0, ..
    })) = next(&mut rx).await
    else {
        panic!("first event is the listening status");
    };
    assert_eq!(http, addr);

    let response = post_json(&addr, BODY).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let Some(IngestEvent::Batch(batch)) = next(&mut rx).await else {
        panic!("a batch follows the request");
    };
    assert_eq!(batch.spans.len(), 7);
    assert!(
        batch
            .spans
            .iter()
            .all(|s| s.trace_id == "bdd640fb06671ad11c80317fa3b1799d")
    );
    assert!(batch.spans.iter().all(|s| s.format == "otlp-json"));
    let Some(IngestEvent::Status(SourceStatus::Listening { requests: 1, .. })) =
        next(&mut rx).await
    else {
        panic!("the status counts the request");
    };
    handle.shutdown().await;
}
