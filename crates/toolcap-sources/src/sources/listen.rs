//! The TUI's embedded OTLP receiver (`--listen`): the same receiver `serve` runs, with a channel
//! instead of a spool, so any OpenTelemetry SDK can export straight into the app. Each accepted
//! body is written to a bounded temporary spool ([`super::live_spool`]) and its spans are built
//! from the request the receiver decoded (with the decoders files use, once), so payloads are
//! byte ranges into the spool, not copies in memory.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio::sync::mpsc;

use super::live_spool::Keeper;
use super::{IngestEvent, SourceStatus};
use crate::model::{Batch, Origin, Problem};
use crate::receiver::{
    self, Delivery, ReceivedRequest, ReceiverConfig, ReceiverHandle, RequestSink, SinkError,
    Transport,
};

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

/// What `--listen` does with an accepted request, on the thread that decoded it: keeps the body
/// in the live spool and builds its accepted spans from the decoded request, with payloads as
/// ranges into the spool, so the request is decoded once. Built batches wait in a bounded
/// channel; when it is full the client is told to retry (503), never dropped.
pub struct ListenSink {
    batches: mpsc::Sender<Batch>,
    keeper: Mutex<Keeper>,
    /// The address as configured, until [`ListenSink::bound_to`] names the one bound (port 0).
    configured: Origin,
    bound: OnceLock<Origin>,
}

impl ListenSink {
    /// A sink whose spans come from `origin`, keeping bodies with `keeper`, with room for
    /// `capacity` built requests.
    pub fn new(keeper: Keeper, origin: Origin, capacity: usize) -> (Self, mpsc::Receiver<Batch>) {
        let (batches, receiver) = mpsc::channel(capacity.max(1));
        let sink = ListenSink {
            batches,
            keeper: Mutex::new(keeper),
            configured: origin,
            bound: OnceLock::new(),
        };
        (sink, receiver)
    }

    /// Names spans' origin by the address actually bound. Clients learn that address only
    /// after this is called, so every request they send is named by it.
    pub fn bound_to(&self, origin: Origin) {
        let _ = self.bound.set(origin);
    }

    fn origin(&self) -> &Origin {
        self.bound.get().unwrap_or(&self.configured)
    }

    /// The live spool's directory; `None` when it could not be created.
    pub fn spool_dir(&self) -> Option<PathBuf> {
        let keeper = self.keeper.lock().unwrap_or_else(PoisonError::into_inner);
        keeper.spool().map(|spool| spool.dir().to_path_buf())
    }
}

impl RequestSink for ListenSink {
    fn take(&self, received: ReceivedRequest<'_>) -> Result<Delivery, SinkError> {
        // The place is taken first: a request that cannot be queued is neither kept nor built.
        let place = self.batches.try_reserve().map_err(|err| match err {
            mpsc::error::TrySendError::Full(()) => SinkError::Full,
            mpsc::error::TrySendError::Closed(()) => {
                SinkError::Unavailable("the consumer has stopped".into())
            }
        })?;
        let (kept, warning) = {
            let mut keeper = self.keeper.lock().unwrap_or_else(PoisonError::into_inner);
            (keeper.keep(&received.body.bytes), keeper.take_warning())
        };
        let format = match received.transport {
            Transport::HttpJson => "otlp-json",
            Transport::HttpProtobuf | Transport::Grpc => "otlp-protobuf",
        };
        let kept_in = kept.map(|kept| (kept.segment, kept.offset));
        let origin = self.origin();
        let mut batch = received.checked.build(origin, format, kept_in);
        if let Some(warning) = warning {
            batch.problems.push(Problem::warning(origin, None, warning));
        }
        place.send(batch);
        Ok(receiver::delivered())
    }
}

/// Binds the receiver and forwards every accepted request to `tx` as a normalized batch.
/// Must run inside a tokio runtime.
pub async fn spawn_listen(
    config: ListenConfig,
    tx: mpsc::Sender<IngestEvent>,
) -> Result<ListenHandle, crate::Error> {
    let keeper = Keeper::new(config.spool_bytes, config.spool_parent.as_deref());
    let (sink, mut batches) = ListenSink::new(
        keeper,
        Origin::endpoint(format!("otlp://{}", config.http)),
        PENDING_REQUESTS,
    );
    let spool_dir = sink.spool_dir();
    let sink = Arc::new(sink);
    let receiver = receiver::start(
        ReceiverConfig {
            http: Some(config.http.clone()),
            grpc: config.grpc.clone(),
            token: config.token.clone(),
            max_body_bytes: receiver::DEFAULT_MAX_BODY_BYTES,
            limits: receiver::Limits::default(),
        },
        sink.clone(),
        None,
    )
    .await?;
    let http = receiver
        .http_addr
        .map(|a| a.to_string())
        .unwrap_or_default();
    sink.bound_to(Origin::endpoint(format!("otlp://{http}")));
    let grpc = receiver.grpc_addr.map(|a| a.to_string());
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
        while let Some(batch) = batches.recv().await {
            accepted += 1;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::otlp::{CheckedRequest, payload_range};
    use crate::model::PayloadBody;
    use crate::receiver::RawBody;
    use crate::receiver::decode::BodyType;
    use crate::sources::live_spool::LiveSpool;

    const TRACE: &str = "5b8efff798038103d269b633813fc60c";

    fn body(prompt: &str) -> RawBody {
        let span = serde_json::json!({
            "traceId": TRACE, "spanId": "eee19b7ec3c1b174", "name": "chat",
            "attributes": [{"key": "gen_ai.prompt", "value": {"stringValue": prompt}}]
        });
        let json = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]});
        RawBody {
            bytes: json.to_string().into_bytes().into(),
            body_type: BodyType::Json,
        }
    }

    fn take(sink: &ListenSink, body: &RawBody) -> Result<Delivery, SinkError> {
        let checked = CheckedRequest::decode(&body.bytes, false).unwrap();
        sink.take(ReceivedRequest {
            body,
            checked: &checked,
            transport: Transport::HttpJson,
        })
    }

    #[test]
    fn spans_are_built_on_taking_with_payloads_in_the_spool_and_a_full_queue_is_said() {
        let parent = tempfile::tempdir().unwrap();
        let keeper = Keeper::with(LiveSpool::create_in(parent.path(), 1 << 20).unwrap());
        let (sink, mut batches) = ListenSink::new(keeper, Origin::endpoint("otlp://a"), 1);
        sink.bound_to(Origin::endpoint("otlp://bound"));
        let prompt = "a prompt long enough to be kept as a range, not inline: ".repeat(8);
        assert!(take(&sink, &body(&prompt)).is_ok());
        assert!(matches!(take(&sink, &body("x")), Err(SinkError::Full)));

        let batch = batches.try_recv().unwrap();
        assert_eq!(batch.spans.len(), 1);
        let origin = batch.spans[0].origin().map(ToString::to_string);
        assert_eq!(origin.as_deref(), Some("otlp://bound"));
        let spool_dir = sink.spool_dir().unwrap();
        let input = batch.spans[0].input();
        let PayloadBody::Range(range) = &input.body else {
            panic!("not a range: {input:?}");
        };
        assert!(range.path.starts_with(&spool_dir), "{range:?}");
        assert_eq!(payload_range::read(range).unwrap(), prompt);

        drop(batches);
        assert!(matches!(
            take(&sink, &body("x")),
            Err(SinkError::Unavailable(_))
        ));
    }
}
