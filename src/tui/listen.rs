//! `--listen`: the embedded OTLP receiver. Accepted requests are normalized here and sent to
//! the app's ingest channel like any other source, with a status for the status bar.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::formats::otlp::batch_from_request;
use crate::model::Origin;
use crate::receiver::{self, ChannelSink, ReceiverConfig, ReceiverHandle, Transport};
use crate::sources::{IngestEvent, SourceStatus};

/// Requests waiting for the app; beyond this, clients are told to retry (never dropped).
const PENDING_REQUESTS: usize = 64;

/// Starts the receiver on `http` (and `grpc`); returns its handle, or why it could not bind.
pub async fn spawn_listener(
    http: String,
    grpc: Option<String>,
    token: Option<String>,
    tx: mpsc::Sender<IngestEvent>,
) -> Result<ReceiverHandle, String> {
    let (sink, mut requests) = ChannelSink::new(PENDING_REQUESTS);
    let config = ReceiverConfig {
        http: Some(http),
        grpc,
        token,
        ..ReceiverConfig::default()
    };
    let handle = receiver::start(config, Arc::new(sink), None)
        .await
        .map_err(|e| e.to_string())?;
    let http_addr = handle.http_addr.map(|a| a.to_string()).unwrap_or_default();
    let grpc_addr = handle.grpc_addr.map(|a| a.to_string());
    let origin = Origin::Endpoint(format!("http://{http_addr}"));
    let status = move |requests: u64| {
        IngestEvent::Status(SourceStatus::Listening {
            http: http_addr.clone(),
            grpc: grpc_addr.clone(),
            requests,
            rejected: 0,
        })
    };
    let _ = tx.send(status(0)).await;
    tokio::spawn(async move {
        let mut count = 0u64;
        while let Some(received) = requests.recv().await {
            count += 1;
            let format = match received.transport {
                Transport::HttpJson => "otlp-json",
                Transport::HttpProtobuf | Transport::Grpc => "otlp-protobuf",
            };
            let batch = batch_from_request(&received.request, &origin, format, None, None);
            if tx.send(IngestEvent::Batch(batch)).await.is_err()
                || tx.send(status(count)).await.is_err()
            {
                return;
            }
        }
    });
    Ok(handle)
}
