//! A received request body decoded once, by the decoders trace files use ([`protobuf`] and the
//! borrowed JSON model [`wire`]), and its spans judged by the id rule files use. The receiver
//! answers from it (accepted and rejected counts, leniency warnings), `--listen` builds spans
//! from it, and `serve` spools it: nothing decodes the body a second time to decide anything.
//! Only `serve`'s spool line decodes it again, into opentelemetry-proto's owned request, which
//! keeps every field the client sent (docs/RECEIVER.md says why the spool is OTLP/JSON).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;

use super::wire::{self, Leniency};
use super::{LENIENCY_PREFIX, build, proto, protobuf};
use crate::model::{Batch, Origin};

/// Bodies decoded into the owned request by [`CheckedRequest::to_owned_request`], process-wide.
static OWNED_DECODES: AtomicU64 = AtomicU64::new(0);

/// How many whole requests were decoded so far in this process: into the borrowed model (by
/// anyone: files, the receiver, live sources) and into the owned request (for `serve`'s spool).
/// What lets a test see that a request is decoded once.
pub fn decode_counts() -> (u64, u64) {
    (
        wire::requests_decoded(),
        OWNED_DECODES.load(Ordering::Relaxed),
    )
}

/// A request body, decoded and judged; the spans whose ids the rule refuses are removed.
pub struct CheckedRequest<'a> {
    /// The decoded request, holding the accepted spans only.
    request: wire::Request<'a>,
    body: &'a [u8],
    protobuf: bool,
    pub accepted: usize,
    pub rejected: usize,
    /// Where the rejected spans were, counted over all spans in request order.
    rejected_at: Vec<usize>,
    /// Why the first rejected span was refused, naming it.
    pub first_rejection: Option<String>,
    /// What had to be tolerated to read the body, one sentence each.
    pub warnings: Vec<String>,
}

impl<'a> CheckedRequest<'a> {
    /// Decodes an uncompressed body (protobuf, or else OTLP/JSON) as trace files are decoded
    /// and judges every span by the files' id rule. The error is the decoder's.
    pub fn decode(body: &'a [u8], protobuf: bool) -> Result<Self, crate::Error> {
        let mut request = if protobuf {
            protobuf::request(body)?
        } else {
            wire::Request::parse(body)?
        };
        let mut checked = CheckedRequest {
            request: wire::Request::default(),
            body,
            protobuf,
            accepted: 0,
            rejected: 0,
            rejected_at: Vec::new(),
            first_rejection: None,
            warnings: Vec::new(),
        };
        let mut leniencies = Vec::new();
        let mut position = 0;
        for resource_spans in &mut request.resource_spans {
            for scope_spans in &mut resource_spans.scope_spans {
                scope_spans.spans.retain(|span| {
                    position += 1;
                    let Some(reason) = span_problem(span, &mut leniencies) else {
                        checked.accepted += 1;
                        return true;
                    };
                    checked.rejected += 1;
                    checked.rejected_at.push(position - 1);
                    checked
                        .first_rejection
                        .get_or_insert_with(|| format!("{reason} (span {:?})", span.name));
                    false
                });
            }
        }
        checked.warnings = leniencies
            .iter()
            .map(|leniency| format!("{LENIENCY_PREFIX}{}", leniency.describe()))
            .collect();
        checked.request = request;
        Ok(checked)
    }

    /// Builds the accepted spans as a file's spans are built. `kept_in` is the file the body's
    /// bytes were written to and where they start in it: payloads become ranges into it;
    /// `None` keeps them inline. Leniencies are not reported: the client was told.
    pub fn build(
        &self,
        origin: &Origin,
        format: &'static str,
        kept_in: Option<(Arc<PathBuf>, u64)>,
    ) -> Batch {
        let mut batch = Batch::default();
        let ctx = build::Context {
            origin,
            span_origin: Some(Arc::new(origin.clone())),
            format: format.into(),
            file: kept_in.map(|(path, base_offset)| build::FileBuffer {
                path,
                bytes: self.body,
                base_offset,
                gzip: false,
            }),
            record: None,
            line: None,
        };
        build::build_request(&self.request, &ctx, &mut Vec::new(), &mut batch);
        batch
    }

    /// The line `serve` spools: [`Self::to_owned_request`] as `serde_json` writes it.
    pub fn spool_line(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&self.to_owned_request())
    }

    /// The accepted spans as opentelemetry-proto's owned request, every field the body carries
    /// included (what `serve` spools as OTLP/JSON),
    /// resources and scopes left without spans dropped. Decoded again from the body, since
    /// the borrowed model keeps only what views read; the spans removed are the ones judged
    /// here, by position. A body that the owned
    /// decoder refuses, or reads with other spans, is converted from the borrowed model.
    pub fn to_owned_request(&self) -> ExportTraceServiceRequest {
        OWNED_DECODES.fetch_add(1, Ordering::Relaxed);
        let decoded = if self.protobuf {
            ExportTraceServiceRequest::decode(self.body).ok()
        } else {
            serde_json::from_slice::<ExportTraceServiceRequest>(self.body).ok()
        };
        let mut owned = match decoded {
            Some(owned) if span_count(&owned) == self.accepted + self.rejected => {
                remove_spans_at(owned, &self.rejected_at)
            }
            _ => proto::request_from_wire(&self.request, &mut Vec::new()),
        };
        for resource_spans in &mut owned.resource_spans {
            resource_spans
                .scope_spans
                .retain(|scope_spans| !scope_spans.spans.is_empty());
        }
        owned
            .resource_spans
            .retain(|resource_spans| !resource_spans.scope_spans.is_empty());
        owned
    }
}

/// Why a span's ids make it unusable, if they do, read as the span builder reads them; every
/// leniency needed to read the span is noted, for refused spans too.
fn span_problem(span: &wire::Span, leniencies: &mut Vec<Leniency>) -> Option<String> {
    let problem = build::span_ids(span, leniencies)
        .err()
        .map(|e| e.to_string());
    wire::enum_value(span.kind.as_ref(), wire::SPAN_KIND_NAMES, leniencies);
    if let Some(status) = &span.status {
        wire::enum_value(status.code.as_ref(), wire::STATUS_CODE_NAMES, leniencies);
    }
    problem
}

/// How many spans an owned request holds.
pub fn span_count(request: &ExportTraceServiceRequest) -> usize {
    request
        .resource_spans
        .iter()
        .flat_map(|resource_spans| &resource_spans.scope_spans)
        .map(|scope_spans| scope_spans.spans.len())
        .sum()
}

/// Removes the spans at `positions` (ascending, counted over all spans in request order).
fn remove_spans_at(
    mut request: ExportTraceServiceRequest,
    positions: &[usize],
) -> ExportTraceServiceRequest {
    if positions.is_empty() {
        return request;
    }
    let mut position = 0;
    let mut next = positions.iter().peekable();
    for resource_spans in &mut request.resource_spans {
        for scope_spans in &mut resource_spans.scope_spans {
            scope_spans.spans.retain(|_| {
                let removed = next.next_if_eq(&&position).is_some();
                position += 1;
                !removed
            });
        }
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_body(spans: &[(&str, &str, Option<&str>)]) -> String {
        let spans: Vec<_> = spans
            .iter()
            .map(|(trace, span, parent)| {
                let mut span = serde_json::json!({"traceId": trace, "spanId": span, "name": span});
                if let Some(parent) = parent {
                    span["parentSpanId"] = (*parent).into();
                }
                span
            })
            .collect();
        serde_json::json!({"resourceSpans": [
            {"scopeSpans": [{"spans": spans[..2]}]},
            {"scopeSpans": [{"spans": spans[2..]}]},
        ]})
        .to_string()
    }

    const TRACE: &str = "5b8efff798038103d269b633813fc60c";

    #[test]
    fn refused_spans_are_removed_from_the_model_and_from_the_owned_request_by_position() {
        let body = json_body(&[
            (TRACE, "eee19b7ec3c1b174", None),
            (TRACE, "abcd", None),
            (TRACE, "eee19b7ec3c1b175", Some("eee19b7ec3c1b174")),
            (TRACE, "eee19b7ec3c1b176", Some("abcdef")),
        ]);
        let checked = CheckedRequest::decode(body.as_bytes(), false).unwrap();
        assert_eq!((checked.accepted, checked.rejected), (2, 2));
        assert_eq!(checked.rejected_at, vec![1, 3]);
        assert_eq!(
            checked.first_rejection.as_deref(),
            Some("span id is 2 bytes long (span \"abcd\")")
        );
        let batch = checked.build(&Origin::endpoint("otlp://test"), "otlp-json", None);
        let built: Vec<String> = batch.spans.iter().map(|s| s.name.to_string()).collect();
        assert_eq!(built, ["eee19b7ec3c1b174", "eee19b7ec3c1b175"]);
        assert!(batch.problems.is_empty(), "{:?}", batch.problems);

        let owned = checked.to_owned_request();
        let names: Vec<&str> = owned
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, built);
    }

    #[test]
    fn a_resource_left_without_spans_is_dropped_from_the_owned_request() {
        let body = json_body(&[
            (TRACE, "eee19b7ec3c1b174", None),
            (TRACE, "eee19b7ec3c1b177", None),
            (TRACE, "abcd", None),
        ]);
        let checked = CheckedRequest::decode(body.as_bytes(), false).unwrap();
        assert_eq!(checked.to_owned_request().resource_spans.len(), 1);
    }

    #[test]
    fn canonical_json_is_read_with_warnings_and_protobuf_without() {
        use base64::Engine as _;
        let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let (trace, span) = (encode(&[7; 16]), encode(&[9; 8]));
        let base64 = json_body(&[(&trace, &span, None), (TRACE, "eee19b7ec3c1b175", None)]);
        let checked = CheckedRequest::decode(base64.as_bytes(), false).unwrap();
        assert_eq!((checked.accepted, checked.rejected), (2, 0));
        assert_eq!(checked.warnings.len(), 1);
        assert!(
            checked.warnings[0].contains("base64"),
            "{:?}",
            checked.warnings
        );

        let protobuf = checked.to_owned_request().encode_to_vec();
        let checked = CheckedRequest::decode(&protobuf, true).unwrap();
        assert_eq!((checked.accepted, checked.rejected), (2, 0));
        assert!(checked.warnings.is_empty());
        assert!(CheckedRequest::decode(&protobuf[..protobuf.len() / 2], true).is_err());
    }
}
