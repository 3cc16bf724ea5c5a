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
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

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
        let mut request = request.into_inner();
        let validation = super::decode::retain_valid_spans(&mut request);
        if validation.accepted > 0 {
            let received = ReceivedRequest {
                request,
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
    stopped: watch::Receiver<bool>,
) {
    let limit = shared.max_body_bytes;
    // tonic's default 4 MiB decode limit is below the spec's 20 MiB; the limit applies to
    // the decompressed message.
    let service = TraceServiceServer::new(Export { shared })
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(limit);
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let server = tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, super::wait_for_stop(stopped));
    if let Err(err) = server.await {
        eprintln!("toolcap-tui: OTLP/gRPC server stopped: {err}");
    }
}
