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

/// Set in the child process that runs [`a_listen_request_is_decoded_once`] alone.
const COUNTING_ALONE: &str = "TOOLCAP_TEST_COUNT_DECODES_ALONE";

/// `--listen` decodes a request once: the receiver's decode, which decides what is accepted,
/// is the one its spans are built from (no second decode of the body, no owned request);
/// `serve`'s spool decodes each body once more, into the owned request it writes. The decode
/// counts are process-wide, so the counting runs alone, in a child process of this test
/// binary.
#[test]
fn a_listen_request_is_decoded_once() {
    if std::env::var_os(COUNTING_ALONE).is_some() {
        count_decodes_of_three_requests();
        return;
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "listen_embedded::a_listen_request_is_decoded_once",
            "--test-threads=1",
        ])
        .env(COUNTING_ALONE, "1")
        .output()
        .expect("run the counting alone");
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
}

/// One request each over OTLP/HTTP protobuf, OTLP/HTTP JSON (one span refused) and gRPC.
fn count_decodes_of_three_requests() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
    use prost::Message as _;
    use toolcap::formats::otlp::checked::decode_counts;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let spool_parent = tempfile::tempdir().unwrap();
        let (handle, mut rx) = crate::support::listen_on_loopback(
            toolcap::sources::live_spool::DEFAULT_LIVE_SPOOL_BYTES,
            true,
            spool_parent.path(),
        )
        .await;
        let http = handle.receiver.http_addr.unwrap().to_string();
        let grpc = format!("http://{}", handle.receiver.grpc_addr.unwrap());
        let protobuf = std::fs::read(BODY).unwrap();
        let mut json = crate::support::json_request(0xabc, 4);
        json["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["spanId"] = "0102".into();
        let before = decode_counts();

        let posts = tokio::task::spawn_blocking(move || {
            let post = |content_type: &str, body: &[u8]| {
                let headers = [("Content-Type", content_type)];
                crate::support::raw_http(&http, "POST", "/v1/traces", &headers, body)
                    .expect("request answered")
                    .status
            };
            let json = json.to_string();
            [
                post("application/x-protobuf", &protobuf),
                post("application/json", json.as_bytes()),
            ]
        });
        assert_eq!(posts.await.unwrap(), [200, 200]);
        let request = ExportTraceServiceRequest::decode(&std::fs::read(BODY).unwrap()[..]).unwrap();
        let mut client = TraceServiceClient::connect(grpc).await.unwrap();
        client.export(request).await.expect("gRPC export");

        let mut spans = Vec::new();
        while spans.len() < 3 {
            let event = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .expect("every request arrives")
                .expect("channel open");
            if let IngestEvent::Batch(batch) = event {
                spans.push(batch.spans.len());
            }
        }
        spans.sort_unstable();
        assert_eq!(spans, [3, 7, 7], "all accepted spans are built");
        let after = decode_counts();
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (3, 0),
            "three requests, each decoded once into the borrowed model and never into the owned one"
        );
        handle.shutdown().await;
        spool_a_protobuf_and_a_json_request().await;
    });
}

/// What `serve`'s spool does with an accepted request: a protobuf body and a JSON body are
/// each written through one owned request.
async fn spool_a_protobuf_and_a_json_request() {
    use toolcap::formats::otlp::CheckedRequest;
    use toolcap::formats::otlp::checked::decode_counts;
    use toolcap::receiver::decode::BodyType;
    use toolcap::receiver::spool::{Spool, SpoolConfig};
    use toolcap::receiver::{RawBody, ReceivedRequest, RequestSink, Transport};

    let dir = tempfile::tempdir().unwrap();
    let spool = Spool::open(SpoolConfig {
        dir: dir.path().join("spool"),
        segment_bytes: 1 << 20,
        queue_bytes: 1 << 20,
    })
    .unwrap();
    let json = crate::support::json_request(0xdef, 2).to_string();
    let bodies = [
        (
            std::fs::read(BODY).unwrap(),
            BodyType::Protobuf,
            Transport::HttpProtobuf,
        ),
        (json.into_bytes(), BodyType::Json, Transport::HttpJson),
    ];
    let mut owned_decodes = Vec::new();
    for (bytes, body_type, transport) in bodies {
        let body = RawBody {
            bytes: bytes.into(),
            body_type,
        };
        let checked = CheckedRequest::decode(&body.bytes, body_type == BodyType::Protobuf).unwrap();
        let before = decode_counts().1;
        let received = ReceivedRequest {
            body: &body,
            checked: &checked,
            transport,
        };
        let delivery = spool.take(received).map_err(|e| e.to_string()).unwrap();
        delivery.await.map_err(|e| e.to_string()).unwrap();
        owned_decodes.push(decode_counts().1 - before);
    }
    assert_eq!(
        owned_decodes,
        [1, 1],
        "each body is spooled through one owned request"
    );
    assert_eq!(spool.state().committed().requests, 2);
}
