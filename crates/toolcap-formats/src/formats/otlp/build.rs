//! Turns a wire-model request into normalized spans: validates ids (a bad span becomes a
//! problem, the rest of the request loads), converts attributes (big strings become payloads
//! held by reference), then classifies each span.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use super::classify::{self, AttrSource};
use super::wire::{self, Leniency, Scalar, Text};
use crate::model::interner;
use crate::model::{
    ArcStr, AttrValue, Batch, FormatName, Id, Origin, Payload, PayloadBody, PayloadRange,
    PayloadState, Problem, Provenance, RawEncoding, RecordRef, Span, SpanEvent, SpanStatus,
    truncation_marker_total,
};

/// String attribute values longer than this are held as payloads, not in the skeleton.
pub const INLINE_ATTR_MAX: usize = 1024;
/// An attribute a span's input or output is taken from (`classify::is_payload_source`:
/// messages, arguments, results) longer than this stays in the file even when short: nothing
/// but a revealed view or search reads it (facts drawn from it are read while parsing), and a
/// run's short messages would be the biggest thing its live store holds. Shorter values cost less
/// inline than a payload's reference.
pub const PAYLOAD_SOURCE_INLINE_MAX: usize = 128;

/// How many rejected spans of one request are reported one by one before summarising.
const MAX_SPAN_PROBLEMS: usize = 20;

/// Where spans come from and where their payloads can be found again.
pub struct Context<'c> {
    pub origin: &'c Origin,
    /// The origin as the spans hold it, shared by all of them.
    pub span_origin: Option<Arc<Origin>>,
    /// Looked up once per context, not once per span.
    pub format: FormatName,
    /// `None`: payloads are kept inline (network requests).
    pub file: Option<FileBuffer<'c>>,
    /// A record of the source the request was made from (an Inspect sample's zip member):
    /// big payloads with no range in `file` stay there, found again by the format through
    /// a locator naming the span and the attribute.
    pub record: Option<Arc<RecordRef>>,
    pub line: Option<u64>,
}

/// The bytes a request was parsed from and where they sit in their file: a borrowed value's
/// position in `bytes` is then its position in the file, which is all a payload keeps.
#[derive(Clone)]
pub struct FileBuffer<'c> {
    pub path: Arc<PathBuf>,
    pub bytes: &'c [u8],
    /// Where `bytes` start in the (decompressed) file.
    pub base_offset: u64,
    pub gzip: bool,
}

impl FileBuffer<'_> {
    /// The range of `raw` in the file, when `raw` borrows from this buffer.
    fn range_of(&self, raw: &[u8], encoding: RawEncoding) -> Option<PayloadRange> {
        let start = (raw.as_ptr() as usize).checked_sub(self.bytes.as_ptr() as usize)?;
        if start + raw.len() > self.bytes.len() {
            return None;
        }
        Some(PayloadRange {
            path: self.path.clone(),
            offset: self.base_offset + start as u64,
            len: u32::try_from(raw.len()).ok()?,
            encoding,
            gzip: self.gzip,
        })
    }
}

/// What happened to the spans of one request.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub valid: usize,
    pub rejected: usize,
    pub first_reason: Option<String>,
}

/// Builds every valid span of `request` into `batch`; rejected spans and leniencies become
/// problems at the context's source and line.
pub fn build_request(
    request: &wire::Request,
    ctx: &Context,
    leniencies: &mut Vec<Leniency>,
    batch: &mut Batch,
) -> Outcome {
    let mut builder = RequestBuilder::new(ctx);
    for (index, resource_spans) in request.resource_spans.iter().enumerate() {
        for scope_spans in &resource_spans.scope_spans {
            for wire_span in &scope_spans.spans {
                let resource = resource_spans.resource.as_ref();
                builder.add(index, resource, wire_span, leniencies, batch);
            }
        }
    }
    builder.finish(batch)
}

/// Builds the spans of the request on one line into `batch`. A line in the shape exporters
/// write is read straight from its bytes, span by span (`wire::for_each_span_directly`); any
/// other line (snake_case keys, escaped field names, nulls, a malformed line) is read whole
/// through the serde model (`wire::Request::parse`), whose verdict stands. Nothing the direct
/// reader built before giving up is kept: the whole request's spans, or its error, are the
/// line's.
pub fn build_line(
    line: &[u8],
    ctx: &Context,
    leniencies: &mut Vec<Leniency>,
    batch: &mut Batch,
) -> Result<(), serde_json::Error> {
    if built_directly(line, ctx, leniencies, batch) {
        return Ok(());
    }
    let request = wire::Request::parse(line)?;
    build_request(&request, ctx, leniencies, batch);
    Ok(())
}

/// Builds what the direct reader hands on from `line` into `batch`; when it gives up, drops
/// all it built (spans, problems, leniencies) and says so.
fn built_directly(
    line: &[u8],
    ctx: &Context,
    leniencies: &mut Vec<Leniency>,
    batch: &mut Batch,
) -> bool {
    let Ok(text) = std::str::from_utf8(line) else {
        return false;
    };
    let before = (batch.spans.len(), batch.problems.len(), leniencies.len());
    let mut builder = RequestBuilder::new(ctx);
    let read = wire::for_each_span_directly(text, &mut |index, resource, span| {
        builder.add(index, resource, span, leniencies, batch)
    });
    if read.is_ok() {
        builder.finish(batch);
        return true;
    }
    batch.spans.truncate(before.0);
    batch.problems.truncate(before.1);
    leniencies.truncate(before.2);
    false
}

/// Builds the spans of one request as they are read, in request order: [`build_request`]
/// feeds it a whole decoded request, and `wire::for_each_span_directly` span by span.
pub struct RequestBuilder<'c> {
    ctx: &'c Context<'c>,
    outcome: Outcome,
    /// The service named by the resource the last span came under, by the resource's position.
    service: Option<(usize, Option<ArcStr>)>,
}

impl<'c> RequestBuilder<'c> {
    pub fn new(ctx: &'c Context<'c>) -> Self {
        RequestBuilder {
            ctx,
            outcome: Outcome::default(),
            service: None,
        }
    }

    /// Builds `wire_span`, read under the request's `resource_index`th resource.
    pub fn add(
        &mut self,
        resource_index: usize,
        resource: Option<&wire::Resource>,
        wire_span: &wire::Span,
        leniencies: &mut Vec<Leniency>,
        batch: &mut Batch,
    ) {
        let ctx = self.ctx;
        let service = match &self.service {
            Some((index, service)) if *index == resource_index => service,
            _ => {
                &self
                    .service
                    .insert((resource_index, service_of(resource)))
                    .1
            }
        };
        match build_span(wire_span, service.as_ref(), ctx, leniencies) {
            Ok(span) => {
                if span.parent_span_id.as_ref() == Some(&span.span_id) {
                    batch.problems.push(Problem::warning(
                        ctx.origin,
                        ctx.line,
                        format!(
                            "span {} ({}) names itself as its parent; shown at the root",
                            span.span_id, span.name
                        ),
                    ));
                }
                self.outcome.valid += 1;
                batch.spans.push(span);
            }
            Err(reason) => {
                self.outcome.rejected += 1;
                if self.outcome.rejected <= MAX_SPAN_PROBLEMS {
                    batch.problems.push(Problem::error(
                        ctx.origin,
                        ctx.line,
                        format!("span dropped: {reason}"),
                    ));
                }
                self.outcome.first_reason.get_or_insert(reason.to_string());
            }
        }
    }

    /// Sums up what was dropped past the problems reported one by one.
    pub fn finish(self, batch: &mut Batch) -> Outcome {
        let outcome = self.outcome;
        if outcome.rejected > MAX_SPAN_PROBLEMS {
            batch.problems.push(Problem::error(
                self.ctx.origin,
                self.ctx.line,
                format!(
                    "{} more spans dropped for invalid ids",
                    outcome.rejected - MAX_SPAN_PROBLEMS
                ),
            ));
        }
        outcome
    }
}

/// The `service.name` a resource names.
fn service_of(resource: Option<&wire::Resource>) -> Option<ArcStr> {
    resource?
        .attributes
        .iter()
        .find(|kv| kv.key == "service.name")
        .and_then(|kv| kv.value.as_ref()?.string_value.as_ref())
        // Shared: every request of a process names the same service, and a file of
        // one-request lines would hold one copy per line.
        .map(|t| t.with_decoded(interner::value))
}

/// Why a span's ids make it unusable, if they do. Shared by the builder and the receiver's
/// partial-success count so both always agree.
pub fn id_problem(
    trace_id: &Result<wire::IdBytes, wire::IdError>,
    span_id: &Result<wire::IdBytes, wire::IdError>,
    parent: &[u8],
) -> Option<String> {
    if let Err(e) = trace_id {
        return Some(format!("trace id is {e}"));
    }
    if let Err(e) = span_id {
        return Some(format!("span id is {e}"));
    }
    if !parent.is_empty() && parent.len() != 8 {
        return Some(format!("parent span id is {} bytes long", parent.len()));
    }
    None
}

/// A span's id bytes as read from the wire; an empty or all-zero parent is a root.
pub(super) struct SpanIds {
    pub trace: wire::IdBytes,
    pub span: wire::IdBytes,
    pub parent: wire::IdBytes,
}

/// Reads a span's ids by the one rule for files and the receiver, or says why they make the
/// span unusable. Every leniency needed to read them is noted, for a refused span too.
pub(super) fn span_ids(
    ws: &wire::Span,
    leniencies: &mut Vec<Leniency>,
) -> Result<SpanIds, crate::Error> {
    let trace_id = wire::decode_id(ws.trace_id.as_deref(), 16, leniencies);
    let span_id = wire::decode_id(ws.span_id.as_deref(), 8, leniencies);
    let parent = wire::parent_id_bytes(ws.parent_span_id.as_deref(), leniencies);
    if let Some(reason) = id_problem(&trace_id, &span_id, &parent) {
        return Err(crate::Error::UnusableIds { reason });
    }
    match (trace_id, span_id) {
        (Ok(trace), Ok(span)) => Ok(SpanIds {
            trace,
            span,
            parent,
        }),
        _ => Err(crate::Error::UnusableIds {
            reason: "invalid ids".into(),
        }),
    }
}

fn build_span(
    ws: &wire::Span,
    service: Option<&ArcStr>,
    ctx: &Context,
    leniencies: &mut Vec<Leniency>,
) -> Result<Span, crate::Error> {
    let SpanIds {
        trace: trace_id,
        span: span_id,
        parent,
    } = span_ids(ws, leniencies).map_err(|reason| crate::Error::SpanRefused {
        reason: reason.to_string(),
        name: truncate(&ws.name, 80),
    })?;
    let parent_span_id =
        (!parent.is_empty() && parent.iter().any(|b| *b != 0)).then(|| Id::from_bytes(&parent));

    // Payloads left in a record are found again by trace, span and attribute.
    let locator = ctx
        .record
        .as_ref()
        .map(|_| format!("{}/{}", hex::encode(&trace_id), hex::encode(&span_id)));
    let payloads = Payloads {
        ctx,
        locator: locator.as_deref(),
    };
    let mut attributes = crate::model::Attributes::spare();
    attributes.extend(ws.attributes.iter().map(|kv| {
        (
            interner::key(&kv.key),
            payloads.attr_value(&kv.key, kv.value.as_ref()),
        )
    }));
    // Input/output payloads that are also big attributes are that attribute's payload, one
    // allocation with two owners.
    let shared: Vec<(&str, Arc<Payload>)> = ws
        .attributes
        .iter()
        .zip(attributes.as_open().unwrap_or_default())
        .filter_map(|(kv, (_, value))| match value {
            AttrValue::Payload(payload) => Some((kv.key.as_ref(), payload.clone())),
            _ => None,
        })
        .collect();
    let events = ws
        .events
        .iter()
        .map(|event| SpanEvent {
            time_unix_nano: time(&event.time_unix_nano),
            name: interner::key(&event.name),
            attributes: event
                .attributes
                .iter()
                .map(|kv| {
                    (
                        interner::key(&kv.key),
                        payloads.attr_value(&kv.key, kv.value.as_ref()),
                    )
                })
                .collect(),
        })
        .collect();
    let status_code = ws.status.as_ref().map_or(0, |s| {
        wire::enum_value(s.code.as_ref(), wire::STATUS_CODE_NAMES, leniencies)
    });
    // The OTel span kind is not our kind, but enum names must still be noticed for the warning.
    wire::enum_value(ws.kind.as_ref(), wire::SPAN_KIND_NAMES, leniencies);
    let mut span = Span {
        trace_id: Id::from_bytes(&trace_id).into(),
        span_id: Id::from_bytes(&span_id).into(),
        parent_span_id: parent_span_id.map(Into::into),
        name: interner::value(&ws.name),
        status: match status_code {
            1 => SpanStatus::Ok,
            2 => SpanStatus::Error,
            _ => SpanStatus::Unset,
        },
        start_unix_nano: time(&ws.start_time_unix_nano),
        end_unix_nano: time(&ws.end_time_unix_nano),
        attributes,
        provenance: Provenance::shared(ctx.span_origin.as_ref(), service, ctx.format),
        line: ctx.line.and_then(crate::model::LineNumber::new),
        ..Default::default()
    };
    span.set_events(events);
    let status_message = ws
        .status
        .as_ref()
        .and_then(|s| s.message.as_deref())
        .filter(|m| !m.is_empty());
    let source = WireSource {
        span: ws,
        payloads,
        shared: &shared,
    };
    let (input, output) = classify::classify(&mut span, status_message, &source);
    // Packed now, while its values are still in the cache: packing a batched line's spans
    // after the whole line is parsed reads them from memory again. Payload ranges need no pass
    // over the list later; OTLP records them as it parses.
    span.pack_with_payloads(input, output);
    Ok(span)
}

fn time(value: &Option<Scalar>) -> u64 {
    value.as_ref().and_then(Scalar::as_u64).unwrap_or(0)
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Makes payloads: by byte range into the source file for files, inline for the network.
#[derive(Clone, Copy)]
struct Payloads<'c> {
    ctx: &'c Context<'c>,
    /// `trace/span` of the span whose payloads these are, when they may stay in a record.
    locator: Option<&'c str>,
}

impl Payloads<'_> {
    fn attr_value(&self, key: &str, value: Option<&wire::AnyValue>) -> AttrValue {
        let Some(value) = value else {
            return AttrValue::Null;
        };
        if let Some(text) = &value.string_value {
            let big = text.raw_len() > INLINE_ATTR_MAX && text.decoded_len() > INLINE_ATTR_MAX;
            // With or without a file (a request keeps it inline): the same span read from two
            // sources must hold the same kind of value, or it reads as a conflict. Decoded
            // length, as for big values: encodings escape differently.
            let payload_source = text.raw_len() > PAYLOAD_SOURCE_INLINE_MAX
                && classify::is_payload_source(key)
                && text.decoded_len() > PAYLOAD_SOURCE_INLINE_MAX;
            if big || payload_source {
                return AttrValue::Payload(std::sync::Arc::new(self.payload(key, text, None)));
            }
            return AttrValue::Str(text.with_decoded(interner::value));
        }
        plain_value(value)
    }

    /// `decoded`: the text unescaped, when the caller has it (it spares decoding it again).
    fn payload(&self, field: &str, text: &Text, decoded: Option<&str>) -> Payload {
        let (raw, encoding) = match text {
            Text::Json { token, .. } => (token.as_bytes(), RawEncoding::JsonString),
            Text::Plain(Cow::Borrowed(plain)) => (plain.as_bytes(), RawEncoding::Utf8),
            Text::Plain(Cow::Owned(_)) => (&[][..], RawEncoding::Utf8),
        };
        let range = self
            .ctx
            .file
            .as_ref()
            .and_then(|file| file.range_of(raw, encoding));
        let Some(range) = range else {
            let text = decoded.map_or_else(|| text.decoded(), Cow::Borrowed);
            if let (Some(record), Some(span)) = (&self.ctx.record, self.locator) {
                let mut payload = Payload::inline(interner::key(field), text.as_ref());
                payload.body = PayloadBody::InRecord {
                    record: record.clone(),
                    locator: format!("{span}#{field}").into(),
                };
                return payload;
            }
            return Payload::inline(interner::key(field), text.as_ref());
        };
        let len = text.decoded_len();
        let state = if len <= classify::WHOLE_TEXT_STATE_MAX {
            match decoded {
                Some(decoded) => PayloadState::of_text(decoded),
                None => text.with_decoded(PayloadState::of_text),
            }
        } else {
            match truncation_marker_total(&text.tail(64)) {
                Some(total) => PayloadState::Truncated { total_bytes: total },
                None => PayloadState::Present,
            }
        };
        Payload {
            state,
            bytes: len as u64,
            field: Some(interner::key(field)),
            body: PayloadBody::Range(range),
        }
    }
}

/// Non-string values (strings nested in arrays and maps stay inline: they are rarely big).
fn plain_value(value: &wire::AnyValue) -> AttrValue {
    if let Some(text) = &value.string_value {
        AttrValue::Str(text.with_decoded(interner::value))
    } else if let Some(b) = value.bool_value {
        AttrValue::Bool(b)
    } else if let Some(i) = &value.int_value {
        i.as_i64().map_or(AttrValue::Null, AttrValue::Int)
    } else if let Some(d) = &value.double_value {
        d.as_f64().map_or(AttrValue::Null, AttrValue::Float)
    } else if let Some(b) = &value.bytes_value {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(b.as_bytes())
            .map_or(AttrValue::Null, |bytes| AttrValue::Bytes(bytes.into()))
    } else if let Some(array) = &value.array_value {
        AttrValue::List(array.values.iter().map(plain_value).collect())
    } else if let Some(kv) = &value.kvlist_value {
        AttrValue::Map(
            kv.values
                .iter()
                .map(|kv| {
                    let v = kv.value.as_ref().map_or(AttrValue::Null, plain_value);
                    (kv.key.to_string(), v)
                })
                .collect(),
        )
    } else {
        AttrValue::Null
    }
}

/// Gives the classifier the full text of any attribute, even one held as a payload.
struct WireSource<'w, 'a, 'c> {
    span: &'w wire::Span<'a>,
    payloads: Payloads<'c>,
    shared: &'w [(&'w str, Arc<Payload>)],
}

impl WireSource<'_, '_, '_> {
    fn find(&self, key: &str) -> Option<&wire::AnyValue<'_>> {
        self.span
            .attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
    }
}

impl AttrSource for WireSource<'_, '_, '_> {
    fn full_text(&self, key: &str) -> Option<Cow<'_, str>> {
        self.find(key)?.string_value.as_ref().map(Text::decoded)
    }

    fn payload(&self, key: &str, decoded: Option<&str>) -> Option<Arc<Payload>> {
        if let Some((_, payload)) = self.shared.iter().find(|(k, _)| *k == key) {
            return Some(payload.clone());
        }
        let value = self.find(key)?;
        match &value.string_value {
            Some(text) => Some(Arc::new(self.payloads.payload(key, text, decoded))),
            None => {
                let rendered = render_json(&plain_value(value));
                Some(Arc::new(Payload::inline(key, rendered.to_string())))
            }
        }
    }
}

/// A JSON rendering of a non-string attribute (e.g. a string array used as a payload).
pub fn render_json(value: &AttrValue) -> serde_json::Value {
    use serde_json::Value;
    match value {
        AttrValue::Str(s) => Value::String(s.to_string()),
        AttrValue::Int(i) => Value::from(*i),
        AttrValue::Float(f) => Value::from(*f),
        AttrValue::Bool(b) => Value::Bool(*b),
        AttrValue::Bytes(b) => {
            use base64::Engine as _;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        AttrValue::List(items) => Value::Array(items.iter().map(render_json).collect()),
        AttrValue::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), render_json(v)))
                .collect(),
        ),
        AttrValue::Payload(_) | AttrValue::Null => Value::Null,
    }
}
