//! OTLP/HTTP: `POST /v1/traces`, answered in the request's content type.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceResponse,
};
use prost::Message;
use tokio::sync::watch;

use super::decode::{self, BodyType, Compression, DecodeError, RpcStatus, rpc_code};
use super::{RETRY_AFTER_SECS, ReceivedRequest, Shared, SinkError, Transport};

pub(crate) fn router(shared: Arc<Shared>, extra_routes: Option<Router>) -> Router {
    let mut router: Router = Router::new()
        .route("/v1/traces", post(export))
        .with_state(shared.clone());
    if let Some(extra) = extra_routes {
        router = router.merge(extra);
    }
    router.layer(middleware::from_fn_with_state(shared, require_token))
}

pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    stopped: watch::Receiver<bool>,
) {
    let server =
        axum::serve(listener, router).with_graceful_shutdown(super::wait_for_stop(stopped));
    if let Err(err) = server.await {
        eprintln!("toolcap-tui: OTLP/HTTP server stopped: {err}");
    }
}

async fn require_token(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes);
    if super::bearer_matches(shared.token.as_deref(), authorization) {
        return next.run(request).await;
    }
    let body_type = request_body_type(request.headers()).unwrap_or(BodyType::Json);
    let mut response = failure(
        StatusCode::UNAUTHORIZED,
        body_type,
        rpc_code::UNAUTHENTICATED,
        "missing or wrong bearer token".into(),
    );
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

fn request_body_type(headers: &HeaderMap) -> Option<BodyType> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(BodyType::from_content_type)
}

async fn export(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let Some(body_type) = request_body_type(request.headers()) else {
        let got = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
            .unwrap_or_else(|| "none".into());
        return failure(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            BodyType::Json,
            rpc_code::INVALID_ARGUMENT,
            format!(
                "unsupported Content-Type {got:?}: send application/x-protobuf or application/json"
            ),
        );
    };
    let encoding = request
        .headers()
        .get(header::CONTENT_ENCODING)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
    let Some(compression) = Compression::from_content_encoding(encoding.as_deref()) else {
        return failure(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            body_type,
            rpc_code::INVALID_ARGUMENT,
            format!(
                "unsupported Content-Encoding {:?}: send gzip, deflate, zstd or none",
                encoding.unwrap_or_default()
            ),
        );
    };

    let _slot = match shared.request_slot().await {
        Ok(slot) => slot,
        Err(err) => return sink_failure(body_type, &err),
    };
    let limit = shared.max_body_bytes;
    let raw = match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.downcast_ref::<LengthLimitError>().is_some() => {
            return decode_failure(body_type, DecodeError::TooLarge { limit });
        }
        Err(err) => {
            return failure(
                StatusCode::BAD_REQUEST,
                body_type,
                rpc_code::INVALID_ARGUMENT,
                format!("cannot read the request body: {err}"),
            );
        }
    };
    // Inflating and decoding up to 20 MiB is CPU work; keep it off the async workers.
    let decoded = tokio::task::spawn_blocking(move || {
        let body = decode::decompress(raw, compression, limit)?;
        let (mut request, warnings) = decode::decode(&body, body_type)?;
        let mut validation = decode::retain_valid_spans(&mut request);
        // `rejectedSpans: 0` with a message is the spec's way to warn the client.
        for warning in warnings {
            if !validation.message.is_empty() {
                validation.message.push_str("; ");
            }
            validation.message.push_str(&warning);
        }
        Ok::<_, DecodeError>((request, validation))
    })
    .await;
    let (request, validation) = match decoded {
        Ok(Ok(decoded)) => decoded,
        Ok(Err(err)) => return decode_failure(body_type, err),
        Err(join_error) => {
            return failure(
                StatusCode::SERVICE_UNAVAILABLE,
                body_type,
                rpc_code::UNAVAILABLE,
                format!("decoding was interrupted: {join_error}"),
            );
        }
    };

    if validation.accepted > 0 {
        let transport = match body_type {
            BodyType::Protobuf => Transport::HttpProtobuf,
            BodyType::Json => Transport::HttpJson,
        };
        let received = ReceivedRequest {
            request,
            spans: validation.accepted,
            transport,
        };
        if let Err(err) = shared.sink.deliver(received).await {
            return sink_failure(body_type, &err);
        }
    }
    success(body_type, validation.rejected, validation.message)
}

fn success(body_type: BodyType, rejected: usize, message: String) -> Response {
    let body = if rejected == 0 && message.is_empty() {
        match body_type {
            BodyType::Protobuf => Vec::new(),
            // The crate's serde writes `{"partialSuccess":null}`; the spec wants `{}`.
            BodyType::Json => b"{}".to_vec(),
        }
    } else {
        let rejected_spans = i64::try_from(rejected).unwrap_or(i64::MAX);
        match body_type {
            BodyType::Protobuf => ExportTraceServiceResponse {
                partial_success: Some(ExportTracePartialSuccess {
                    rejected_spans,
                    error_message: message,
                }),
            }
            .encode_to_vec(),
            // int64 is a decimal string in proto3 JSON.
            BodyType::Json => serde_json::json!({"partialSuccess": {
                "rejectedSpans": rejected_spans.to_string(),
                "errorMessage": message,
            }})
            .to_string()
            .into_bytes(),
        }
    };
    with_body(StatusCode::OK, body_type, body)
}

fn decode_failure(body_type: BodyType, err: DecodeError) -> Response {
    let status = match err {
        DecodeError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        DecodeError::Decompress { .. } | DecodeError::Undecodable { .. } => StatusCode::BAD_REQUEST,
    };
    failure(
        status,
        body_type,
        rpc_code::INVALID_ARGUMENT,
        err.to_string(),
    )
}

fn sink_failure(body_type: BodyType, err: &SinkError) -> Response {
    let mut response = failure(
        StatusCode::SERVICE_UNAVAILABLE,
        body_type,
        rpc_code::UNAVAILABLE,
        err.to_string(),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    response
}

/// A failure response whose body is a `google.rpc.Status` in the request's encoding.
fn failure(status: StatusCode, body_type: BodyType, code: i32, message: String) -> Response {
    let rpc_status = RpcStatus { code, message };
    let body = match body_type {
        BodyType::Protobuf => rpc_status.encode_to_vec(),
        BodyType::Json => serde_json::to_vec(&rpc_status).unwrap_or_else(|_| b"{}".to_vec()),
    };
    with_body(status, body_type, body)
}

fn with_body(status: StatusCode, body_type: BodyType, body: Vec<u8>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, body_type.content_type())],
        Body::from(body),
    )
        .into_response()
}
