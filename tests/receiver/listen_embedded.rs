//! `--listen`: the embedded receiver turns OTLP exports into batches on the app's ingest
//! channel, with the same span ids the exporter sent, and reports itself for the status bar.

use std::time::Duration;

use tokio::sync::mpsc;
use toolcap::sources::listen::{ListenConfig, spawn_listen};
use toolcap::sources::{IngestEvent, SourceStatus};
use toolcap::store::Store;

const BODY: &str = "tests/fixtures/corpus/otlp-python-sdk/http-protobuf/0001-v1_traces.pb";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_protobuf_export_arrives_as_a_batch_with_its_spans() {
    let (tx, mut rx) = mpsc::channel(16);
    let spool_parent = tempfile::tempdir().unwrap();
    let handle = spawn_listen(
        ListenConfig {
            http: "127.0.0.1:0".into(),
            grpc: None,
            token: Some("s3cret".into()),
            spool_bytes: toolcap::sources::live_spool::DEFAULT_LIVE_SPOOL_BYTES,
            spool_parent: Some(spool_parent.path().to_path_buf()),
        },
        tx,
    )
    .await
    .expect("receiver binds a free loopback port");
    let addr = handle.receiver.http_addr.expect("http bound").to_string();
    assert!(addr.starts_with("127.0.0.1:"));

    let body = std::fs::read(BODY).unwrap();
    let post = |token: Option<&'static str>| {
        let addr = addr.clone();
        let body = body.clone();
        tokio::task::spawn_blocking(move || {
            let mut headers = vec![("Content-Type", "application/x-protobuf")];
            let authorization = token.map(|t| format!("Bearer {t}"));
            if let Some(a) = &authorization {
                headers.push(("Authorization", a.as_str()));
            }
            crate::support::raw_http(&addr, "POST", "/v1/traces", &headers, &body)
                .expect("request answered")
                .status
        })
    };
    assert_eq!(post(None).await.unwrap(), 401, "the token is required");
    assert_eq!(post(Some("s3cret")).await.unwrap(), 200);

    let mut store = Store::new();
    let mut listening = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while store.stats().spans_seen == 0 {
        let event = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("a batch arrives before the deadline")
            .expect("channel open");
        match event {
            IngestEvent::Batch(batch) => {
                store.ingest(batch);
            }
            IngestEvent::Status(SourceStatus::Listening { http, .. }) => {
                assert_eq!(http, addr);
                listening = true;
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert!(listening, "the receiver announced its address first");
    // 0001 holds one trace of 7 spans (the SDK's first request; see its SOURCES.md).
    assert_eq!(store.len(), 1);
    assert_eq!(store.stats().spans_seen, 7);
    let invocation = store.invocations().next().unwrap();
    assert_eq!(
        invocation.id.text().len(),
        32,
        "OTLP invocations are keyed by hex trace id"
    );
    assert!(store.problems().is_empty(), "{:?}", store.problems());
    handle.shutdown().await;
}
