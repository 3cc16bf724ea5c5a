//! The receiver's answers to raw OTLP/HTTP and OTLP/gRPC requests, one test per status code,
//! each checking the body the OTLP spec requires. The receiver runs in-process with a test sink.

use std::io::Write;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use toolcap::receiver::{self, ReceivedRequest, ReceiverConfig, RequestSink, SinkError};

use crate::support::{json_request, raw_http};

const PROTOBUF_FIXTURE: &str =
    "tests/fixtures/corpus/otlp-python-sdk/http-protobuf/0001-v1_traces.pb";

/// `google.rpc.Status` as the spec defines it, declared here independently of the receiver.
#[derive(Clone, PartialEq, prost::Message)]
struct GoogleRpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// What a sink was given: the accepted spans as the owned request `serve` spools, and their count.
struct Received {
    request: ExportTraceServiceRequest,
    spans: usize,
}

#[derive(Default)]
struct CollectingSink {
    received: Mutex<Vec<Received>>,
}

impl RequestSink for CollectingSink {
    fn take(&self, received: ReceivedRequest<'_>) -> Result<receiver::Delivery, SinkError> {
        self.received.lock().unwrap().push(Received {
            request: received.checked.to_owned_request(),
            spans: received.spans(),
        });
        Ok(receiver::delivered())
    }
}

struct FullSink;

impl RequestSink for FullSink {
    fn take(&self, _received: ReceivedRequest<'_>) -> Result<receiver::Delivery, SinkError> {
        Err(SinkError::Full)
    }
}

struct Running {
    runtime: tokio::runtime::Runtime,
    http: String,
    grpc: String,
}

fn start(sink: Arc<dyn RequestSink>, token: Option<&str>, max_body_bytes: usize) -> Running {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = ReceiverConfig {
        http: Some("127.0.0.1:0".into()),
        grpc: Some("127.0.0.1:0".into()),
        token: token.map(str::to_string),
        max_body_bytes,
        limits: Default::default(),
    };
    let handle = runtime
        .block_on(receiver::start(config, sink, None))
        .unwrap();
    let http = handle.http_addr.unwrap().to_string();
    let grpc = handle.grpc_addr.unwrap().to_string();
    std::mem::forget(handle); // the servers live as long as the runtime
    Running {
        runtime,
        http,
        grpc,
    }
}

fn post(addr: &str, headers: &[(&str, &str)], body: &[u8]) -> crate::support::RawResponse {
    raw_http(addr, "POST", "/v1/traces", headers, body).unwrap()
}

const PB: (&str, &str) = ("Content-Type", "application/x-protobuf");
const JSON: (&str, &str) = ("Content-Type", "application/json");

fn fixture_spans() -> usize {
    let body = std::fs::read(PROTOBUF_FIXTURE).unwrap();
    let request = ExportTraceServiceRequest::decode(&body[..]).unwrap();
    toolcap::formats::otlp::checked::span_count(&request)
}

#[test]
fn protobuf_json_gzip_deflate_and_zstd_bodies_are_accepted_in_kind() {
    let sink = Arc::new(CollectingSink::default());
    let server = start(sink.clone(), None, receiver::DEFAULT_MAX_BODY_BYTES);
    let body = std::fs::read(PROTOBUF_FIXTURE).unwrap();

    let response = post(&server.http, &[PB], &body);
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("application/x-protobuf")
    );
    assert!(
        response.body.is_empty(),
        "full success is an empty protobuf body"
    );

    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(&body).unwrap();
    let response = post(
        &server.http,
        &[PB, ("Content-Encoding", "gzip")],
        &gzip.finish().unwrap(),
    );
    assert_eq!(response.status, 200);

    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    zlib.write_all(&body).unwrap();
    let response = post(
        &server.http,
        &[PB, ("Content-Encoding", "deflate")],
        &zlib.finish().unwrap(),
    );
    assert_eq!(response.status, 200);

    let zstd =
        ruzstd::encoding::compress_to_vec(&body[..], ruzstd::encoding::CompressionLevel::Fastest);
    let response = post(&server.http, &[PB, ("Content-Encoding", "zstd")], &zstd);
    assert_eq!(response.status, 200);

    let json = std::fs::read("tests/fixtures/corpus/otlp-python-sdk/otlp-json/0001-v1_traces.json")
        .unwrap();
    let response = post(&server.http, &[JSON], &json);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.body, b"{}");

    let received = sink.received.lock().unwrap();
    assert_eq!(received.len(), 5);
    let first = &received[0].request;
    for other in received.iter().skip(1) {
        assert_eq!(
            &other.request, first,
            "all encodings decode to the same request"
        );
    }
    assert!(received.iter().all(|r| r.spans == fixture_spans()));
}

#[test]
fn unsupported_content_type_or_encoding_is_415_with_a_status_body() {
    let server = start(Arc::new(CollectingSink::default()), None, 1 << 20);
    let response = post(&server.http, &[("Content-Type", "text/plain")], b"hello");
    assert_eq!(response.status, 415);
    let status = response.json();
    assert!(status["message"].as_str().unwrap().contains("text/plain"));

    let body = std::fs::read(PROTOBUF_FIXTURE).unwrap();
    let response = post(&server.http, &[PB, ("Content-Encoding", "br")], &body);
    assert_eq!(response.status, 415);
    assert_eq!(
        response.header("content-type"),
        Some("application/x-protobuf")
    );
    let status = GoogleRpcStatus::decode(&response.body[..]).unwrap();
    assert!(status.message.contains("br"), "{}", status.message);
}

#[test]
fn garbage_is_400_with_a_status_body_in_the_request_type() {
    let sink = Arc::new(CollectingSink::default());
    let server = start(sink.clone(), None, 1 << 20);

    let response = post(&server.http, &[PB], b"\xff\xff\xff\xff not protobuf");
    assert_eq!(response.status, 400);
    assert_eq!(
        response.header("content-type"),
        Some("application/x-protobuf")
    );
    let status = GoogleRpcStatus::decode(&response.body[..]).unwrap();
    assert_eq!(status.code, 3, "INVALID_ARGUMENT");
    assert!(!status.message.is_empty());

    let response = post(&server.http, &[JSON], b"{\"resourceSpans\": [");
    assert_eq!(response.status, 400);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let status = response.json();
    assert_eq!(status["code"], 3);
    assert!(status["message"].as_str().unwrap().contains("OTLP/JSON"));

    let response = post(
        &server.http,
        &[PB, ("Content-Encoding", "gzip")],
        b"not gzip at all",
    );
    assert_eq!(response.status, 400);
    assert!(sink.received.lock().unwrap().is_empty());
}

#[test]
fn oversize_and_gzip_or_zstd_bombs_are_413() {
    let limit = 64 * 1024;
    let sink = Arc::new(CollectingSink::default());
    let server = start(sink.clone(), None, limit);

    let response = post(&server.http, &[JSON], &vec![b' '; limit + 1]);
    assert_eq!(response.status, 413);
    assert!(
        response.json()["message"]
            .as_str()
            .unwrap()
            .contains("larger than")
    );

    // Small on the wire, far above the limit once inflated.
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    for _ in 0..64 {
        bomb.write_all(&vec![b' '; 64 * 1024]).unwrap();
    }
    let bomb = bomb.finish().unwrap();
    assert!(bomb.len() < limit);
    let response = post(&server.http, &[PB, ("Content-Encoding", "gzip")], &bomb);
    assert_eq!(response.status, 413);
    let status = GoogleRpcStatus::decode(&response.body[..]).unwrap();
    assert!(status.message.contains("after decompression"));

    let zstd_bomb = ruzstd::encoding::compress_to_vec(
        &vec![b' '; 4 << 20][..],
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    assert!(zstd_bomb.len() < limit);
    let response = post(
        &server.http,
        &[JSON, ("Content-Encoding", "zstd")],
        &zstd_bomb,
    );
    assert_eq!(response.status, 413);
    assert!(sink.received.lock().unwrap().is_empty());
}

#[test]
fn missing_or_wrong_token_is_401() {
    let sink = Arc::new(CollectingSink::default());
    let server = start(sink.clone(), Some("s3cret"), 1 << 20);
    let body = std::fs::read(PROTOBUF_FIXTURE).unwrap();

    let response = post(&server.http, &[PB], &body);
    assert_eq!(response.status, 401);
    assert_eq!(response.header("www-authenticate"), Some("Bearer"));
    let status = GoogleRpcStatus::decode(&response.body[..]).unwrap();
    assert_eq!(status.code, 16, "UNAUTHENTICATED");

    let response = post(
        &server.http,
        &[JSON, ("Authorization", "Bearer wrong")],
        b"{}",
    );
    assert_eq!(response.status, 401);
    assert!(
        response.json()["message"]
            .as_str()
            .unwrap()
            .contains("token")
    );

    let response = post(
        &server.http,
        &[PB, ("Authorization", "Bearer s3cret")],
        &body,
    );
    assert_eq!(response.status, 200);
    assert_eq!(sink.received.lock().unwrap().len(), 1);
}

#[test]
fn one_bad_id_span_is_a_partial_success() {
    let sink = Arc::new(CollectingSink::default());
    let server = start(sink.clone(), None, 1 << 20);
    let mut request = json_request(0xabc, 4);
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["spanId"] = "0102".into();
    let response = post(&server.http, &[JSON], request.to_string().as_bytes());
    assert_eq!(response.status, 200);
    let body = response.json();
    let rejected = &body["partialSuccess"]["rejectedSpans"];
    assert!(rejected == "1" || rejected == 1, "{body}");
    assert!(
        body["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap()
            .contains("span id")
    );

    // The same over protobuf: the response is an ExportTraceServiceResponse.
    let mut decoded: ExportTraceServiceRequest =
        serde_json::from_value(json_request(0xdef, 3)).unwrap();
    decoded.resource_spans[0].scope_spans[0].spans[0].trace_id = vec![0; 16];
    let response = post(&server.http, &[PB], &decoded.encode_to_vec());
    assert_eq!(response.status, 200);
    let answer = ExportTraceServiceResponse::decode(&response.body[..]).unwrap();
    assert_eq!(answer.partial_success.unwrap().rejected_spans, 1);

    let received = sink.received.lock().unwrap();
    assert_eq!(
        received.iter().map(|r| r.spans).collect::<Vec<_>>(),
        vec![3, 2]
    );
    let kept: Vec<&[u8]> = received[0].request.resource_spans[0].scope_spans[0]
        .spans
        .iter()
        .map(|span| &span.span_id[..])
        .collect();
    assert!(kept.iter().all(|id| id.len() == 8));
}

#[test]
fn a_full_sink_is_503_with_retry_after() {
    let server = start(Arc::new(FullSink), None, 1 << 20);
    let body = std::fs::read(PROTOBUF_FIXTURE).unwrap();
    let response = post(&server.http, &[PB], &body);
    assert_eq!(response.status, 503);
    let retry_after: u64 = response.header("retry-after").unwrap().parse().unwrap();
    assert!(retry_after >= 1);
    let status = GoogleRpcStatus::decode(&response.body[..]).unwrap();
    assert_eq!(status.code, 14, "UNAVAILABLE");

    let response = post(
        &server.http,
        &[JSON],
        json_request(1, 1).to_string().as_bytes(),
    );
    assert_eq!(response.status, 503);
    assert!(response.header("retry-after").is_some());
    assert!(
        response.json()["message"]
            .as_str()
            .unwrap()
            .contains("full")
    );
}

#[test]
fn non_post_is_405() {
    let server = start(Arc::new(CollectingSink::default()), None, 1 << 20);
    let response = raw_http(&server.http, "GET", "/v1/traces", &[], b"").unwrap();
    assert_eq!(response.status, 405);
    assert!(response.header("allow").unwrap().contains("POST"));
}

fn grpc_export(
    server: &Running,
    request: ExportTraceServiceRequest,
    token: Option<&str>,
) -> Result<ExportTraceServiceResponse, tonic::Status> {
    let endpoint = format!("http://{}", server.grpc);
    server.runtime.block_on(async move {
        let mut client = TraceServiceClient::connect(endpoint)
            .await
            .unwrap()
            .send_compressed(tonic::codec::CompressionEncoding::Gzip);
        let mut request = tonic::Request::new(request);
        if let Some(token) = token {
            request
                .metadata_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        client
            .export(request)
            .await
            .map(tonic::Response::into_inner)
    })
}

#[test]
fn grpc_accepts_gzip_reports_partial_success_and_refuses_without_token() {
    let sink = Arc::new(CollectingSink::default());
    let server = start(sink.clone(), Some("t0k"), 1 << 20);
    let mut request: ExportTraceServiceRequest =
        serde_json::from_value(json_request(7, 3)).unwrap();

    let refused = grpc_export(&server, request.clone(), None).unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);

    let accepted = grpc_export(&server, request.clone(), Some("t0k")).unwrap();
    assert_eq!(accepted.partial_success, None);

    request.resource_spans[0].scope_spans[0].spans[1].parent_span_id = vec![1, 2, 3];
    let partial = grpc_export(&server, request, Some("t0k")).unwrap();
    assert_eq!(partial.partial_success.unwrap().rejected_spans, 1);
    assert_eq!(
        sink.received
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.spans)
            .collect::<Vec<_>>(),
        vec![3, 2]
    );
}

#[test]
fn grpc_with_a_full_sink_is_unavailable() {
    let server = start(Arc::new(FullSink), None, 1 << 20);
    let request: ExportTraceServiceRequest = serde_json::from_value(json_request(9, 2)).unwrap();
    let status = grpc_export(&server, request, None).unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
}

/// Sends arbitrary bytes as the Export request message, to see how bad data is answered.
mod raw_grpc {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
    use prost::Message;
    use prost::bytes::BufMut;
    use tonic::Status;
    use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

    pub struct RawCodec;
    pub struct RawEncoder;
    pub struct ResponseDecoder;

    impl Codec for RawCodec {
        type Encode = Vec<u8>;
        type Decode = ExportTraceServiceResponse;
        type Encoder = RawEncoder;
        type Decoder = ResponseDecoder;
        fn encoder(&mut self) -> RawEncoder {
            RawEncoder
        }
        fn decoder(&mut self) -> ResponseDecoder {
            ResponseDecoder
        }
    }

    impl Encoder for RawEncoder {
        type Item = Vec<u8>;
        type Error = Status;
        fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
            dst.put_slice(&item);
            Ok(())
        }
    }

    impl Decoder for ResponseDecoder {
        type Item = ExportTraceServiceResponse;
        type Error = Status;
        fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Self::Item>, Status> {
            ExportTraceServiceResponse::decode(src)
                .map(Some)
                .map_err(|err| Status::internal(err.to_string()))
        }
    }
}

#[test]
fn grpc_garbage_is_invalid_argument() {
    let sink = Arc::new(CollectingSink::default());
    let server = start(sink.clone(), None, 1 << 20);
    let endpoint = format!("http://{}", server.grpc);
    let status = server.runtime.block_on(async move {
        let channel = tonic::transport::Endpoint::from_shared(endpoint)
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.unwrap();
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
        );
        let garbage = b"\xff\xff\xff\xff\x0f not protobuf".to_vec();
        grpc.unary(tonic::Request::new(garbage), path, raw_grpc::RawCodec)
            .await
            .unwrap_err()
    });
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(sink.received.lock().unwrap().is_empty());
}

#[test]
fn protobuf_canonical_json_is_accepted_with_a_warning() {
    // Base64 ids and enum names, as `json_format.MessageToJson` writes them; it holds the same
    // spans as the SDK's first protobuf body.
    let canonical = std::fs::read(
        "tests/fixtures/corpus/otlp-python-sdk/negative-proto3-canonical-json/0001-v1_traces.proto3-canonical.json",
    )
    .unwrap();
    let sink = Arc::new(CollectingSink::default());
    let server = start(sink.clone(), None, 1 << 20);
    let response = post(&server.http, &[JSON], &canonical);
    assert_eq!(response.status, 200);
    let body = response.json();
    let rejected = &body["partialSuccess"]["rejectedSpans"];
    assert!(rejected == "0" || rejected == 0, "{body}");
    let warning = body["partialSuccess"]["errorMessage"]
        .as_str()
        .unwrap_or("");
    assert!(
        !warning.is_empty(),
        "a warning says what was tolerated: {body}"
    );

    let received = sink.received.lock().unwrap();
    assert_eq!(received.len(), 1);
    let expected = ExportTraceServiceRequest::decode(
        &std::fs::read("tests/fixtures/corpus/otlp-python-sdk/http-protobuf/0001-v1_traces.pb")
            .unwrap()[..],
    )
    .unwrap();
    let ids = |request: &ExportTraceServiceRequest| {
        let mut ids: Vec<Vec<u8>> = request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
            .map(|span| span.span_id.clone())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&received[0].request), ids(&expected));
}

/// One HTTP/2 POST to the gRPC Export path with `content_type`, a gRPC-framed valid message
/// as the body; returns the HTTP status and the `grpc-status` (header or trailer).
fn grpc_post_with_content_type(server: &Running, content_type: &str) -> (u16, Option<String>) {
    let addr = server.grpc.clone();
    let content_type = content_type.to_string();
    server.runtime.block_on(async move {
        use http_body_util::BodyExt;
        let stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(stream),
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        let message: ExportTraceServiceRequest =
            serde_json::from_value(json_request(11, 2)).unwrap();
        let message = message.encode_to_vec();
        let mut framed = vec![0u8];
        framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
        framed.extend_from_slice(&message);
        let request = hyper::Request::post(format!(
            "http://{addr}/opentelemetry.proto.collector.trace.v1.TraceService/Export"
        ))
        .header("content-type", content_type)
        .header("te", "trailers")
        .body(http_body_util::Full::new(bytes::Bytes::from(framed)))
        .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let in_headers = response
            .headers()
            .get("grpc-status")
            .map(|v| v.to_str().unwrap().to_string());
        let collected = response.into_body().collect().await.unwrap();
        let in_trailers = collected
            .trailers()
            .and_then(|t| t.get("grpc-status"))
            .map(|v| v.to_str().unwrap().to_string());
        (status, in_headers.or(in_trailers))
    })
}

#[test]
fn grpc_refuses_a_wrong_content_type_with_415() {
    let sink = Arc::new(CollectingSink::default());
    let server = start(sink.clone(), None, 1 << 20);
    for wrong in ["application/json", "text/plain", "application/grpc-web"] {
        let (status, _) = grpc_post_with_content_type(&server, wrong);
        assert_eq!(status, 415, "{wrong}");
    }
    assert!(sink.received.lock().unwrap().is_empty());
    // The same bytes with the right type are accepted: only the type was wrong.
    for right in ["application/grpc", "application/grpc+proto"] {
        let (status, grpc_status) = grpc_post_with_content_type(&server, right);
        assert_eq!(
            (status, grpc_status.as_deref()),
            (200, Some("0")),
            "{right}"
        );
    }
    assert_eq!(sink.received.lock().unwrap().len(), 2);
}
