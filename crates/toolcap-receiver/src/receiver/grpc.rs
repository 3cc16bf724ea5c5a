//! OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export`.

use std::sync::Arc;

use bytes::{Buf, Bytes};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use prost::Message as _;
use tokio::sync::watch;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::{BoxFuture, Context, Poll, Service, http};
use tonic::server::{NamedService, UnaryService};
use tonic::{Request, Response, Status};

use super::connections::{Registry, TrackedIo};
use super::decode::BodyType;
use super::{RawBody, Refusal, Shared, SinkError, Transport};

/// `TraceService/Export`, served by hand rather than by opentelemetry-proto's generated server,
/// whose codec decodes every message into the owned request: this one takes the message's
/// bytes, which go through the same decoder as OTLP/HTTP bodies and trace files.
#[derive(Clone)]
struct ExportService {
    shared: Arc<Shared>,
}

const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

impl NamedService for ExportService {
    const NAME: &'static str = "opentelemetry.proto.collector.trace.v1.TraceService";
}

impl<B> Service<http::Request<B>> for ExportService
where
    B: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<tonic::codegen::StdError> + Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if request.uri().path() != EXPORT_PATH {
            return Box::pin(async { Ok(Status::unimplemented("").into_http()) });
        }
        let export = Export {
            shared: self.shared.clone(),
        };
        // The limit applies to the decompressed message; tonic's default 4 MiB is below the
        // spec's 20 MiB.
        let limit = self.shared.max_body_bytes;
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(RawRequestCodec)
                .accept_compressed(CompressionEncoding::Gzip)
                .send_compressed(CompressionEncoding::Gzip)
                .max_decoding_message_size(limit);
            Ok(grpc.unary(export, request).await)
        })
    }
}

/// Reads a message as its bytes and writes the response with prost.
struct RawRequestCodec;

impl Codec for RawRequestCodec {
    type Encode = ExportTraceServiceResponse;
    type Decode = Bytes;
    type Encoder = ResponseEncoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        ResponseEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawDecoder
    }
}

struct ResponseEncoder;

impl Encoder for ResponseEncoder {
    type Item = ExportTraceServiceResponse;
    type Error = Status;

    fn encode(&mut self, item: Self::Item, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|err| Status::internal(format!("cannot encode the response: {err}")))
    }
}

struct RawDecoder;

impl Decoder for RawDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

struct Export {
    shared: Arc<Shared>,
}

impl UnaryService<Bytes> for Export {
    type Response = ExportTraceServiceResponse;
    type Future = BoxFuture<Response<ExportTraceServiceResponse>, Status>;

    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        let shared = self.shared.clone();
        Box::pin(async move { export(&shared, request).await })
    }
}

async fn export(
    shared: &Shared,
    request: Request<Bytes>,
) -> Result<Response<ExportTraceServiceResponse>, Status> {
    let authorization = request
        .metadata()
        .get("authorization")
        .map(|value| value.as_bytes());
    if !super::bearer_matches(shared.token.as_deref(), authorization) {
        return Err(Status::unauthenticated("missing or wrong bearer token"));
    }
    // tonic has read (and inflated) the message already; the slot still bounds what is held
    // while it is decoded and while the sink works.
    let _slot = shared
        .request_slot()
        .await
        .map_err(|err| Status::unavailable(err.to_string()))?;
    let body = RawBody {
        bytes: request.into_inner(),
        body_type: BodyType::Protobuf,
    };
    let sink = shared.sink.clone();
    let judged = tokio::task::spawn_blocking(move || {
        super::judge_and_take(sink.as_ref(), body, Transport::Grpc)
    })
    .await
    .map_err(|err| Status::unavailable(format!("decoding was interrupted: {err}")))?;
    let (validation, delivery) = match judged {
        Ok(judged) => judged,
        Err(Refusal::Decode(err)) => return Err(Status::invalid_argument(err.to_string())),
        Err(Refusal::Sink(SinkError::TooLarge(why))) => return Err(Status::invalid_argument(why)),
        Err(Refusal::Sink(err)) => return Err(Status::unavailable(err.to_string())),
    };
    if let Some(delivery) = delivery {
        delivery
            .await
            .map_err(|err| Status::unavailable(err.to_string()))?;
    }
    let partial_success = (validation.rejected > 0).then(|| ExportTracePartialSuccess {
        rejected_spans: i64::try_from(validation.rejected).unwrap_or(i64::MAX),
        error_message: validation.message,
    });
    Ok(Response::new(ExportTraceServiceResponse {
        partial_success,
    }))
}

pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    registry: Arc<Registry>,
    stopped: watch::Receiver<bool>,
) {
    let request_timeout = shared.limits.grpc_request_timeout;
    let service = ExportService { shared };
    tokio::spawn(registry.clone().reap_until(stopped.clone()));
    let incoming = admitted(listener, registry.clone());
    let server = tonic::transport::Server::builder()
        .concurrency_limit_per_connection(super::MAX_REQUESTS_IN_FLIGHT)
        .timeout(request_timeout)
        .add_service(GrpcOnly(service))
        .serve_with_incoming_shutdown(incoming, super::wait_for_stop(stopped));
    if let Err(err) = server.await {
        tracing::error!("OTLP/gRPC server stopped: {err}");
    }
}

/// Accepted connections, through the registry (cap, fair eviction, idle timeout). Accept
/// errors (out of file descriptors) are not passed on: tonic would stop serving.
fn admitted(
    listener: tokio::net::TcpListener,
    registry: Arc<Registry>,
) -> impl futures::Stream<Item = Result<TrackedIo, std::io::Error>> {
    futures::stream::unfold(
        (listener, registry, 0u32),
        |(listener, registry, mut failures)| async move {
            loop {
                match listener.accept().await {
                    Ok((stream, peer)) => {
                        failures = 0;
                        let _ = stream.set_nodelay(true);
                        // Refused (every connection busy): closing it makes the client retry.
                        if let Ok(io) = registry.admit(stream, peer) {
                            return Some((Ok(io), (listener, registry, failures)));
                        }
                    }
                    Err(err) => {
                        if failures == 0 {
                            tracing::warn!("OTLP/gRPC cannot accept a connection: {err}");
                        }
                        failures = failures.saturating_add(1);
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        },
    )
}

/// The gRPC spec: a request whose Content-Type is not `application/grpc[+proto|;...]` gets
/// HTTP 415. And tonic answers an undecodable message with INTERNAL (its codec's choice);
/// OTLP wants INVALID_ARGUMENT for bad data, which also tells clients not to retry it.
#[derive(Clone)]
struct GrpcOnly<S>(S);

impl<S: NamedService> NamedService for GrpcOnly<S> {
    const NAME: &'static str = S::NAME;
}

/// Whether a Content-Type names gRPC with the protobuf codec (the only one OTLP uses).
pub(crate) fn is_grpc_content_type(value: Option<&[u8]>) -> bool {
    let Some(value) = value else {
        return false;
    };
    let value = String::from_utf8_lossy(value).to_ascii_lowercase();
    let essence = value.split(';').next().unwrap_or_default().trim();
    matches!(essence, "application/grpc" | "application/grpc+proto")
}

impl<S, B> Service<http::Request<B>> for GrpcOnly<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|value| value.as_bytes());
        if !is_grpc_content_type(content_type) {
            let mut response = http::Response::new(tonic::body::Body::empty());
            *response.status_mut() = http::StatusCode::UNSUPPORTED_MEDIA_TYPE;
            response.headers_mut().insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static("application/grpc"),
            );
            return Box::pin(async move { Ok(response) });
        }
        let response = self.0.call(request);
        Box::pin(async move {
            let mut response = response.await?;
            let headers = response.headers_mut();
            let internal = headers.get("grpc-status").is_some_and(|code| code == "13");
            let bad_data = headers.get("grpc-message").is_some_and(|message| {
                let message = String::from_utf8_lossy(message.as_bytes()).to_ascii_lowercase();
                message.contains("decod") || message.contains("decompress")
            });
            if internal && bad_data {
                headers.insert("grpc-status", http::HeaderValue::from_static("3"));
            }
            Ok(response)
        })
    }
}
