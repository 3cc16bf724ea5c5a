//! The TUI's embedded OTLP receiver (`--listen`): the same receiver `serve` runs, with a channel
//! instead of a spool, so any OpenTelemetry SDK can export straight into the app.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{IngestEvent, SourceStatus};
use crate::formats::otlp::batch_from_request;
use crate::model::Origin;
use crate::receiver::{self, ChannelSink, ReceiverConfig, ReceiverHandle, Transport};

/// Requests waiting between the receiver and the app. When it is full the receiver answers
/// 503 + Retry-After, so the exporter backs off instead of the app growing without bound.
const PENDING_REQUESTS: usize = 256;

/// Where to listen; `grpc: None` serves OTLP/HTTP only.
#[derive(Debug, Clone)]
pub struct ListenConfig {
    pub http: String,
    pub grpc: Option<String>,
    pub token: Option<String>,
}

/// A running embedded receiver; [`ListenHandle::shutdown`] stops it.
pub struct ListenHandle {
    pub receiver: ReceiverHandle,
    forwarder: tokio::task::JoinHandle<()>,
}

impl ListenHandle {
    pub async fn shutdown(self) {
        self.receiver.shutdown().await;
        self.forwarder.abort();
    }
}

/// Binds the receiver and forwards every accepted request to `tx` as a normalized batch.
/// Must run inside a tokio runtime.
pub async fn spawn_listen(
    config: ListenConfig,
    tx: mpsc::Sender<IngestEvent>,
) -> Result<ListenHandle, String> {
    let (sink, mut requests) = ChannelSink::new(PENDING_REQUESTS);
    let receiver = receiver::start(
        ReceiverConfig {
            http: Some(config.http.clone()),
            grpc: config.grpc.clone(),
            token: config.token.clone(),
            max_body_bytes: receiver::DEFAULT_MAX_BODY_BYTES,
            limits: receiver::Limits::default(),
        },
        Arc::new(sink),
        None,
    )
    .await
    .map_err(|e| e.to_string())?;
    let http = receiver
        .http_addr
        .map(|a| a.to_string())
        .unwrap_or_default();
    let grpc = receiver.grpc_addr.map(|a| a.to_string());
    let origin = Origin::endpoint(format!("otlp://{http}"));
    let status = move |requests: u64| {
        IngestEvent::Status(SourceStatus::Listening {
            http: http.clone(),
            grpc: grpc.clone(),
            requests,
            rejected: 0,
        })
    };
    let _ = tx.send(status(0)).await;
    let forwarder = tokio::spawn(async move {
        let mut accepted = 0u64;
        while let Some(received) = requests.recv().await {
            accepted += 1;
            let format = match received.transport {
                Transport::HttpJson => "otlp-json",
                Transport::HttpProtobuf | Transport::Grpc => "otlp-protobuf",
            };
            let batch = batch_from_request(&received.request, &origin, format, None);
            if tx.send(IngestEvent::Batch(batch)).await.is_err()
                || tx.send(status(accepted)).await.is_err()
            {
                break;
            }
        }
    });
    Ok(ListenHandle {
        receiver,
        forwarder,
    })
}
