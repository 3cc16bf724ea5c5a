//! The TUI's embedded OTLP receiver (`--listen`): the same receiver `serve` runs, with a channel
//! instead of a spool, so any OpenTelemetry SDK can export straight into the app. Each accepted
//! body is written to a bounded temporary spool ([`super::live_spool`]) and built from those
//! bytes by the decoders files use, so payloads are byte ranges, not copies in memory.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::live_spool::{Keeper, Spooled};
use super::{IngestEvent, SourceStatus};
use crate::formats::otlp::{LiveBody, batch_from_live_body};
use crate::model::{Batch, Origin, Problem};
use crate::receiver::decode::BodyType;
use crate::receiver::{self, AcceptedBody, ChannelSink, ReceiverConfig, ReceiverHandle, Transport};

/// Requests waiting between the receiver and the app. When it is full the receiver answers
/// 503 + Retry-After, so the exporter backs off instead of the app growing without bound.
const PENDING_REQUESTS: usize = 256;

/// Where to listen; `grpc: None` serves OTLP/HTTP only.
#[derive(Debug, Clone)]
pub struct ListenConfig {
    pub http: String,
    pub grpc: Option<String>,
    pub token: Option<String>,
    /// Bytes of received bodies the live spool keeps (payloads of older ones are dropped).
    pub spool_bytes: u64,
    /// Where the spool's directory is made; `None`: [`super::live_spool::default_parent`].
    pub spool_parent: Option<PathBuf>,
}

/// A running embedded receiver; [`ListenHandle::shutdown`] stops it.
pub struct ListenHandle {
    pub receiver: ReceiverHandle,
    /// The live spool's directory; `None` when it could not be created.
    pub spool_dir: Option<PathBuf>,
    forwarder: tokio::task::JoinHandle<()>,
}

impl ListenHandle {
    /// Stops the receiver, then the forwarder, whose end removes the live spool.
    pub async fn shutdown(self) {
        self.receiver.shutdown().await;
        self.forwarder.abort();
        let _ = self.forwarder.await;
    }
}

/// Builds an accepted body as the TUI shows it, with the decoders files use; payloads are ranges
/// into the spool where the body was `kept`, inline otherwise. Leniencies are not reported: the
/// client was told in its response.
pub fn batch_from_accepted(
    accepted: &AcceptedBody,
    origin: &Origin,
    kept: Option<Spooled>,
) -> Batch {
    let format = match accepted.transport {
        Transport::HttpJson => "otlp-json",
        Transport::HttpProtobuf | Transport::Grpc => "otlp-protobuf",
    };
    let body = LiveBody {
        bytes: &accepted.body.bytes,
        protobuf: accepted.body.body_type == BodyType::Protobuf,
        kept_in: kept.map(|kept| (kept.segment, kept.offset)),
    };
    batch_from_live_body(&body, origin, format, false)
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
    let mut keeper = Keeper::new(config.spool_bytes, config.spool_parent.as_deref());
    let spool_dir = keeper.spool().map(|spool| spool.dir().to_path_buf());
    let forwarder = tokio::spawn(async move {
        let mut accepted = 0u64;
        while let Some(received) = requests.recv().await {
            accepted += 1;
            let kept = keeper.keep(&received.body.bytes);
            let mut batch = batch_from_accepted(&received, &origin, kept);
            if let Some(warning) = keeper.take_warning() {
                batch
                    .problems
                    .push(Problem::warning(&origin, None, warning));
            }
            if tx.send(IngestEvent::Batch(batch)).await.is_err()
                || tx.send(status(accepted)).await.is_err()
            {
                break;
            }
        }
    });
    Ok(ListenHandle {
        receiver,
        spool_dir,
        forwarder,
    })
}
