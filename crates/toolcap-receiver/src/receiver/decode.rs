//! Turning an untrusted export body into a validated request: content type and encoding
//! negotiation, decompression bounded by the size limit (a gzip bomb stops at the limit, it is
//! never inflated whole), then decoding and span id validation by the trace files' decoders.

use std::io::Read;

use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

use crate::formats::otlp::CheckedRequest;
use crate::formats::otlp::container::{self, ZstdError};

/// The two OTLP/HTTP body encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyType {
    Protobuf,
    Json,
}

impl BodyType {
    /// Parses a `Content-Type` header value, ignoring parameters such as `charset`.
    pub fn from_content_type(value: &str) -> Option<Self> {
        let essence = value.split(';').next().unwrap_or("").trim();
        if essence.eq_ignore_ascii_case("application/x-protobuf") {
            Some(Self::Protobuf)
        } else if essence.eq_ignore_ascii_case("application/json") {
            Some(Self::Json)
        } else {
            None
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => "application/x-protobuf",
            Self::Json => "application/json",
        }
    }
}

/// `Content-Encoding` values the receiver understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Identity,
    Gzip,
    Deflate,
    Zstd,
}

impl Compression {
    pub fn from_content_encoding(value: Option<&str>) -> Option<Self> {
        match value.map(str::trim) {
            None | Some("") => Some(Self::Identity),
            Some(v) if v.eq_ignore_ascii_case("identity") => Some(Self::Identity),
            Some(v) if v.eq_ignore_ascii_case("gzip") || v.eq_ignore_ascii_case("x-gzip") => {
                Some(Self::Gzip)
            }
            Some(v) if v.eq_ignore_ascii_case("deflate") => Some(Self::Deflate),
            Some(v) if v.eq_ignore_ascii_case("zstd") => Some(Self::Zstd),
            Some(_) => None,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("request body is larger than {limit} bytes after decompression")]
    TooLarge { limit: usize },
    #[error("cannot decompress the {encoding} body: {reason}")]
    Decompress {
        encoding: &'static str,
        reason: String,
    },
    #[error("cannot decode the {what} body as an ExportTraceServiceRequest: {reason}")]
    Undecodable { what: &'static str, reason: String },
}

/// Decompresses `body`, reading at most `limit + 1` bytes so an oversized or malicious body
/// costs no more than the limit in memory.
pub fn decompress(
    body: bytes::Bytes,
    compression: Compression,
    limit: usize,
) -> Result<bytes::Bytes, DecodeError> {
    let (reader, encoding): (Box<dyn Read + '_>, &'static str) = match compression {
        Compression::Identity => {
            return if body.len() > limit {
                Err(DecodeError::TooLarge { limit })
            } else {
                Ok(body)
            };
        }
        Compression::Gzip => (Box::new(MultiGzDecoder::new(&body[..])), "gzip"),
        Compression::Zstd => {
            let cap = u64::try_from(limit).unwrap_or(u64::MAX);
            return match container::zstd_decode(&body, cap) {
                Ok(inflated) => Ok(inflated.into()),
                Err(ZstdError::TooLarge(_)) => Err(DecodeError::TooLarge { limit }),
                Err(ZstdError::Corrupt(reason)) => Err(DecodeError::Decompress {
                    encoding: "zstd",
                    reason,
                }),
            };
        }
        // HTTP's `deflate` is zlib-wrapped (what Python's exporter sends); some clients send
        // raw deflate, recognisable by a missing zlib header checksum.
        Compression::Deflate if has_zlib_header(&body) => {
            (Box::new(ZlibDecoder::new(&body[..])), "deflate")
        }
        Compression::Deflate => (Box::new(DeflateDecoder::new(&body[..])), "deflate"),
    };
    let mut inflated = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(cap)
        .read_to_end(&mut inflated)
        .map_err(|err| DecodeError::Decompress {
            encoding,
            reason: err.to_string(),
        })?;
    if inflated.len() > limit {
        return Err(DecodeError::TooLarge { limit });
    }
    Ok(inflated.into())
}

fn has_zlib_header(body: &[u8]) -> bool {
    match body {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) * 256 + u16::from(*flg)) % 31 == 0,
        _ => false,
    }
}

/// Result of [`check`]: what the client is told.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Validation {
    pub accepted: usize,
    pub rejected: usize,
    /// Human-readable summary for `partialSuccess.errorMessage`: the spans rejected, then what
    /// had to be tolerated; empty when neither happened.
    pub message: String,
}

/// Decodes an uncompressed body with the decoders trace files use and judges its spans by the
/// files' id rule, so the receiver keeps exactly the spans a file holding the same request
/// would show. Protobuf-canonical JSON (base64 ids, enum names) is accepted as files accept
/// it; what had to be tolerated is in the message, for `partialSuccess.errorMessage`.
pub fn check(
    body: &[u8],
    body_type: BodyType,
) -> Result<(CheckedRequest<'_>, Validation), DecodeError> {
    let checked =
        CheckedRequest::decode(body, body_type == BodyType::Protobuf).map_err(|reason| {
            DecodeError::Undecodable {
                what: match body_type {
                    BodyType::Protobuf => "protobuf",
                    BodyType::Json => "OTLP/JSON",
                },
                reason: reason.to_string(),
            }
        })?;
    let mut validation = Validation {
        accepted: checked.accepted,
        rejected: checked.rejected,
        message: String::new(),
    };
    if let Some(reason) = &checked.first_rejection {
        validation.message = format!(
            "rejected {} of {} spans with invalid ids (first: {reason})",
            checked.rejected,
            checked.rejected + checked.accepted
        );
    }
    // `rejectedSpans: 0` with a message is the spec's way to warn the client.
    for warning in &checked.warnings {
        if !validation.message.is_empty() {
            validation.message.push_str("; ");
        }
        validation.message.push_str(warning);
    }
    Ok((checked, validation))
}

/// `google.rpc.Status`, the body of every OTLP/HTTP failure response.
#[derive(Clone, PartialEq, prost::Message, serde::Serialize)]
pub struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

/// gRPC status codes used in failure bodies.
pub mod rpc_code {
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    pub const UNAVAILABLE: i32 = 14;
    pub const UNAUTHENTICATED: i32 = 16;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> bytes::Bytes {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap().into()
    }

    #[test]
    fn content_types_are_matched_on_their_essence() {
        assert_eq!(
            BodyType::from_content_type("application/json; charset=utf-8"),
            Some(BodyType::Json)
        );
        assert_eq!(
            BodyType::from_content_type("Application/X-Protobuf"),
            Some(BodyType::Protobuf)
        );
        assert_eq!(BodyType::from_content_type("text/plain"), None);
        assert_eq!(Compression::from_content_encoding(Some("br")), None);
        assert_eq!(
            Compression::from_content_encoding(Some("zstd")),
            Some(Compression::Zstd)
        );
        assert_eq!(
            Compression::from_content_encoding(Some("GZIP")),
            Some(Compression::Gzip)
        );
    }

    #[test]
    fn decompression_stops_at_the_limit() {
        let bomb = gzip(&vec![0u8; 4 * 1024 * 1024]);
        assert_eq!(
            decompress(bomb.clone(), Compression::Gzip, 1024 * 1024),
            Err(DecodeError::TooLarge { limit: 1024 * 1024 })
        );
        assert_eq!(
            decompress(bomb, Compression::Gzip, 4 * 1024 * 1024)
                .unwrap()
                .len(),
            4 * 1024 * 1024
        );
    }

    #[test]
    fn deflate_accepts_zlib_and_raw_streams() {
        let data = b"hello otlp".repeat(10);
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&data).unwrap();
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(&data).unwrap();
        for body in [zlib.finish().unwrap(), raw.finish().unwrap()] {
            let out = decompress(body.into(), Compression::Deflate, 1 << 20).unwrap();
            assert_eq!(&out[..], &data[..]);
        }
    }

    #[test]
    fn invalid_ids_are_removed_and_counted() {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::trace::v1::Span;
        use prost::Message as _;
        let good = Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            name: "good".into(),
            ..Default::default()
        };
        let short_span_id = Span {
            span_id: vec![2; 4],
            ..good.clone()
        };
        let zero_trace = Span {
            trace_id: vec![0; 16],
            ..good.clone()
        };
        let bad_parent = Span {
            parent_span_id: vec![3; 3],
            ..good.clone()
        };
        let json = serde_json::json!({"resourceSpans": [{"scopeSpans": [
            {"spans": []}]}]});
        let mut request: ExportTraceServiceRequest = serde_json::from_value(json).unwrap();
        request.resource_spans[0].scope_spans[0].spans =
            vec![good.clone(), short_span_id, zero_trace, bad_parent];
        let body = request.encode_to_vec();
        let (checked, validation) = check(&body, BodyType::Protobuf).unwrap();
        assert_eq!((validation.accepted, validation.rejected), (1, 3));
        assert!(validation.message.contains("3 of 4"));
        let kept = checked.to_owned_request();
        assert_eq!(kept.resource_spans[0].scope_spans[0].spans, vec![good]);
    }
}
