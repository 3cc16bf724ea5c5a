//! OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export`.

use std::sync::Arc;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tokio::sync::watch;
use tonic::codec::CompressionEncoding;
use tonic::codegen::{BoxFuture, Context, Poll, Service, http};
use tonic::server::NamedService;
use tonic::{Request, Response, Status};

use super::connections::{Registry, TrackedIo};
use super::{ReceivedRequest, Shared, SinkError, Transport};

struct Export {
    shared: Arc<Shared>,
}

#[tonic::async_trait]
impl TraceService for Export {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let authorization = request
            .metadata()
            .get("authorization")
            .map(|value| value.as_bytes());
        if !super::bearer_matches(self.shared.token.as_deref(), authorization) {
            return Err(Status::unauthenticated("missing or wrong bearer token"));
        }
        // tonic has decoded the message already; the slot still bounds what is held while
        // the sink works.
        let _slot = self
            .shared
            .request_slot()
            .await
            .map_err(|err| Status::unavailable(err.to_string()))?;
        let mut request = request.into_inner();
        let validation = super::decode::retain_valid_spans(&mut request);
        if validation.accepted > 0 {
            let received = ReceivedRequest {
                request,
                body: None,
                spans: validation.accepted,
                transport: Transport::Grpc,
            };
            self.shared
                .sink
                .deliver(received)
                .await
                .map_err(|err| match err {
                    SinkError::Full | SinkError::Unavailable(_) => {
                        Status::unavailable(err.to_string())
                    }
                })?;
        }
        let partial_success = (validation.rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(validation.rejected).unwrap_or(i64::MAX),
            error_message: validation.message,
        });
        Ok(Response::new(ExportTraceServiceResponse {
            partial_success,
        }))
    }
}

pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    registry: Arc<Registry>,
    stopped: watch::Receiver<bool>,
) {
    let limit = shared.max_body_bytes;
    let request_timeout = shared.limits.grpc_request_timeout;
    // tonic's default 4 MiB decode limit is below the spec's 20 MiB; the limit applies to
    // the decompressed message.
    let service = TraceServiceServer::new(Export { shared })
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(limit);
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
