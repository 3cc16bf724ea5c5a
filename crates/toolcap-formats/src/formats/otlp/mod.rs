//! OTLP `ExportTraceServiceRequest` as OTLP/JSON (one document or JSONL) and protobuf.
//!
//! Both encodings go through one borrowed model ([`wire`]): JSON is parsed straight into it
//! (string values stay raw JSON tokens, so big payloads are never copied), protobuf is decoded
//! by prost and viewed through it. A JSON line in the shape exporters write is read by a direct
//! reader span by span; any other JSON request is parsed whole by serde, that reader's one
//! fallback. [`build`] then validates ids and normalizes spans.
//! The receiver uses the public functions at the bottom.

mod build;
pub mod checked;
pub mod classify;
pub mod container;
pub mod decode_budget;
pub mod otel_spans;
pub mod payload_range;
mod proto;
mod protobuf;
pub mod span_list_reading;
mod wire;

use std::path::PathBuf;
use std::sync::Arc;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::ResourceSpans;
use prost::Message as _;

use super::{Format, Input};
use crate::model::{Batch, Origin, Problem};

pub use build::INLINE_ATTR_MAX;
pub use checked::CheckedRequest;

/// Builds the spans of one OTLP/JSON request held in memory (not a byte range of the source:
/// payloads are kept inline). Other formats that convert their spans to OTLP use this.
pub(crate) fn build_json_in_memory(
    input: &Input,
    format: &'static str,
    request_json: &[u8],
    batch: &mut Batch,
) -> Result<(), crate::Error> {
    build_json_from_record(input, format, request_json, None, batch)
}

/// [`build_json_in_memory`], with big payloads left in `record` (which the request was made
/// from) when one is given: the format finds them again by span and attribute.
pub(crate) fn build_json_from_record(
    input: &Input,
    format: &'static str,
    request_json: &[u8],
    record: Option<Arc<crate::model::RecordRef>>,
    batch: &mut Batch,
) -> Result<(), crate::Error> {
    let request = wire::Request::parse(request_json).map_err(crate::Error::NotOtlpSpan)?;
    let ctx = build::Context {
        origin: input.origin,
        span_origin: Some(input.span_origin()),
        format: format.into(),
        file: None,
        record,
        line: None,
    };
    let mut leniencies = Vec::new();
    build::build_request(&request, &ctx, &mut leniencies, batch);
    warn_leniencies(&leniencies, input.origin, None, batch);
    Ok(())
}

pub struct OtlpJson;
pub struct OtlpProtobuf;

const JSON_NAME: &str = "otlp-json";
const PROTOBUF_NAME: &str = "otlp-protobuf";

const LENIENCY_PREFIX: &str = "loaded leniently: ";

/// False for a note on how a file was read leniently that `said` already holds: such a note
/// is said once per file, however many pieces the file was parsed in. Every other problem is
/// kept.
pub fn not_said_yet(said: &mut Vec<String>, problem: &Problem) -> bool {
    if !problem.message.starts_with(LENIENCY_PREFIX) {
        return true;
    }
    if said.contains(&problem.message) {
        return false;
    }
    said.push(problem.message.clone());
    true
}

/// How many leading lines detection looks at for a `{"resourceSpans"` start.
const DETECT_LINES: usize = 8;

impl Format for OtlpJson {
    fn name(&self) -> &'static str {
        JSON_NAME
    }

    /// A line is one export request: nothing ties it to its neighbours.
    fn lines_stand_alone(&self) -> bool {
        true
    }

    fn sniff(&self, input: &Input) -> Option<String> {
        starts_with_resource_spans(input.bytes)
            .then(|| "a JSON object whose first key is resourceSpans".into())
    }

    fn detect(&self, input: &Input) -> Option<String> {
        if let Some(reason) = self.sniff(input) {
            return Some(reason);
        }
        let lines = input
            .bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
            .take(DETECT_LINES);
        for (index, line) in lines.enumerate() {
            if starts_with_resource_spans(line) {
                return Some(format!(
                    "JSON lines; line {} starts with resourceSpans",
                    index + 1
                ));
            }
        }
        // Keys in another order: worth a full parse of the first value only when the file
        // name says JSON.
        let json_name = matches!(
            input.extension.as_deref(),
            Some("json" | "jsonl" | "ndjson")
        );
        let head = json_name.then(|| input.head_json()).flatten()?;
        (head.get("resourceSpans").is_some() || head.get("resource_spans").is_some())
            .then(|| "a JSON object with a resourceSpans key".into())
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        let jsonl_hint = matches!(input.extension.as_deref(), Some("jsonl" | "ndjson"));
        if !jsonl_hint && !is_single_line(input.bytes) {
            // A pretty-printed document: one request, one record.
            let mut leniencies = Vec::new();
            match wire::Request::parse(input.bytes) {
                Ok(request) => {
                    let ctx = context(input, JSON_NAME, input.bytes, input.base_offset, None);
                    build::build_request(&request, &ctx, &mut leniencies, &mut batch);
                    warn_leniencies(&leniencies, input.origin, None, &mut batch);
                    return batch;
                }
                // Unless its first line is a whole request (JSON lines), report the
                // document's one error instead of one error per pretty-printed line.
                Err(e) if !first_line_is_request(input.bytes) => {
                    batch.problems.push(Problem::error(
                        input.origin,
                        Some(input.base_line + e.line() as u64),
                        format!("not an OTLP/JSON request: {e}"),
                    ));
                    return batch;
                }
                Err(_) => {}
            }
        }
        parse_lines_in_parallel(input, &mut batch);
        batch
    }
}

fn first_line_is_request(bytes: &[u8]) -> bool {
    bytes
        .split(|b| *b == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|l| !l.is_empty())
        .is_some_and(|l| starts_with_resource_spans(l) && l.ends_with(b"}"))
}

fn is_single_line(bytes: &[u8]) -> bool {
    let trimmed = bytes.trim_ascii();
    memchr::memchr(b'\n', trimmed).is_none()
}

/// True when the bytes open a JSON object whose first key is `resourceSpans` (or snake_case).
fn starts_with_resource_spans(bytes: &[u8]) -> bool {
    let rest = bytes.trim_ascii_start();
    let Some(rest) = rest.strip_prefix(b"{") else {
        return false;
    };
    let rest = rest.trim_ascii_start();
    rest.starts_with(b"\"resourceSpans\"") || rest.starts_with(b"\"resource_spans\"")
}

/// Inputs smaller than this are parsed on the calling thread. The watcher hands over a big
/// file in pieces well below this (512 KiB): cutting its pieces in two as well raises the
/// TUI's peak and does not make its read faster.
const PARALLEL_MIN_BYTES: usize = 2 << 20;

/// Splits big JSON-lines inputs at line boundaries and parses the pieces on all cores; spans
/// and problems keep file order, and positions stay file positions.
fn parse_lines_in_parallel(input: &Input, batch: &mut Batch) {
    let threads = crate::machine::cores();
    if threads < 2 || !input.may_use_every_core || input.bytes.len() < PARALLEL_MIN_BYTES {
        parse_lines(input, batch);
        return;
    }
    let bytes = input.bytes;
    let mut pieces = Vec::with_capacity(threads);
    let mut start = 0usize;
    let mut lines_before = 0u64;
    for part in 1..=threads {
        let target = (bytes.len() * part / threads).max(start);
        let end = if part == threads {
            bytes.len()
        } else {
            memchr::memchr(b'\n', &bytes[target..]).map_or(bytes.len(), |i| target + i + 1)
        };
        if end > start {
            let chunk = &bytes[start..end];
            let mut piece = Input::new(input.origin, chunk, input.extension.clone());
            piece.was_gzip = input.was_gzip;
            piece.base_offset = input.base_offset + start as u64;
            piece.base_line = input.base_line + lines_before;
            lines_before += memchr::memchr_iter(b'\n', chunk).count() as u64;
            pieces.push(piece);
        }
        start = end;
    }
    let batches = crate::machine::map_all(pieces.iter(), |piece| {
        or_lost(input.origin, || {
            let mut part = Batch::default();
            parse_lines(piece, &mut part);
            part
        })
    });
    let mut warned: Vec<String> = Vec::new();
    for part in batches {
        batch.spans.extend(part.spans);
        let kept = part.problems.into_iter();
        batch
            .problems
            .extend(kept.filter(|problem| not_said_yet(&mut warned, problem)));
    }
}

/// Runs the parser of one part of an input: a part whose parser panics leaves a problem behind,
/// never silence.
fn or_lost(origin: &Origin, parse: impl FnOnce() -> Batch) -> Batch {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse)).unwrap_or_else(|_| {
        let mut lost = Batch::default();
        lost.problems.push(Problem::error(
            origin,
            None,
            "the parser failed on part of this file; that part is missing",
        ));
        lost
    })
}

fn parse_lines(input: &Input, batch: &mut Batch) {
    let mut start = 0usize;
    let mut line_number = input.base_line;
    // Each leniency is reported once per input, at the first line that needed it.
    let mut leniencies = Vec::new();
    let bytes = input.bytes;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        line_number += 1;
        let line = &bytes[start..end];
        let line_start = start;
        start = end + 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        let already_warned = leniencies.len();
        let ctx = context(
            input,
            JSON_NAME,
            line,
            input.base_offset + line_start as u64,
            Some(line_number),
        );
        match build::build_line(line, &ctx, &mut leniencies, batch) {
            Ok(()) => warn_leniencies(
                &leniencies[already_warned..],
                input.origin,
                Some(line_number),
                batch,
            ),
            Err(e) => batch.problems.push(Problem::error(
                input.origin,
                Some(line_number),
                format!("not an OTLP/JSON request: {e}"),
            )),
        }
    }
}

/// The context for a request parsed from `bytes`, which start `offset` bytes into the
/// (decompressed) source.
fn context<'c>(
    input: &'c Input,
    format: &'static str,
    bytes: &'c [u8],
    offset: u64,
    line: Option<u64>,
) -> build::Context<'c> {
    let file = match input.origin {
        Origin::File(path) => Some(build::FileBuffer {
            path: path.clone(),
            bytes,
            base_offset: offset,
            gzip: input.was_gzip,
        }),
        Origin::Endpoint(_) => None,
    };
    build::Context {
        origin: input.origin,
        span_origin: Some(input.span_origin()),
        format: format.into(),
        file,
        record: None,
        line,
    }
}

fn warn_leniencies(
    leniencies: &[wire::Leniency],
    origin: &Origin,
    line: Option<u64>,
    batch: &mut Batch,
) {
    for leniency in leniencies {
        batch.problems.push(Problem::warning(
            origin,
            line,
            format!("{LENIENCY_PREFIX}{}", leniency.describe()),
        ));
    }
}

impl Format for OtlpProtobuf {
    fn name(&self) -> &'static str {
        PROTOBUF_NAME
    }

    fn sniff(&self, input: &Input) -> Option<String> {
        looks_like_request(input.bytes)
            .then(|| "protobuf ExportTraceServiceRequest with valid span ids".into())
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let by_extension = matches!(
            input.extension.as_deref(),
            Some("pb" | "binpb" | "protobuf")
        );
        self.sniff(input).or_else(|| {
            by_extension.then(|| "protobuf by file extension (content did not decode)".into())
        })
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        let ctx = context(input, PROTOBUF_NAME, input.bytes, input.base_offset, None);
        let build = |request: &wire::Request, batch: &mut Batch| {
            let mut leniencies = Vec::new();
            build::build_request(request, &ctx, &mut leniencies, batch);
        };
        // Decoding one resource at a time keeps only one resource's skeleton alive at once.
        match top_level_resource_spans(input.bytes) {
            Some(bodies) => {
                let parse_group = |group: &[&[u8]]| {
                    // The group's resources share one decode budget (it is per thread).
                    let _budget =
                        decode_budget::Budget::for_input(group.iter().map(|b| b.len()).sum());
                    let mut part = Batch::default();
                    for body in group {
                        match protobuf::resource_spans(body) {
                            Ok(resource_spans) => build(
                                &wire::Request {
                                    resource_spans: vec![resource_spans],
                                },
                                &mut part,
                            ),
                            Err(e) => part.problems.push(Problem::error(
                                input.origin,
                                None,
                                format!("not a protobuf ExportTraceServiceRequest: {e}"),
                            )),
                        }
                    }
                    part
                };
                let threads = crate::machine::cores();
                if threads < 2
                    || !input.may_use_every_core
                    || input.bytes.len() < PARALLEL_MIN_BYTES
                    || bodies.len() < 2
                {
                    batch = parse_group(&bodies);
                } else {
                    let group_len = bodies.len().div_ceil(threads);
                    let groups = bodies.chunks(group_len);
                    let parts = crate::machine::map_all(groups, |group| {
                        or_lost(input.origin, || parse_group(group))
                    });
                    for part in parts {
                        batch.extend(part);
                    }
                }
            }
            None => match protobuf::request(input.bytes) {
                Ok(request) => build(&request, &mut batch),
                Err(e) => batch.problems.push(Problem::error(
                    input.origin,
                    None,
                    format!("not a protobuf ExportTraceServiceRequest: {e}"),
                )),
            },
        }
        batch
    }
}
/// The bodies of the top-level `resource_spans` fields (field 1, length-delimited), when
/// they are all the input holds and exactly fill it.
fn top_level_resource_spans(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    let mut rest = bytes;
    let mut bodies = Vec::new();
    while let Some((&tag, after_tag)) = rest.split_first() {
        if tag != 0x0a {
            return None;
        }
        let mut cursor = after_tag;
        let len = prost::encoding::decode_varint(&mut cursor).ok()?;
        let body = cursor.get(..usize::try_from(len).ok()?)?;
        bodies.push(body);
        rest = &cursor[body.len()..];
    }
    Some(bodies)
}

fn decode_resource_spans(body: &[u8]) -> Result<ExportTraceServiceRequest, crate::Error> {
    let resource_spans = ResourceSpans::decode(body).map_err(crate::Error::NotOtlpProtobuf)?;
    Ok(ExportTraceServiceRequest {
        resource_spans: vec![resource_spans],
    })
}

/// Cheap structural check: the top level is only `resource_spans` fields exactly filling the
/// input, and the first of them holds a span with valid ids.
fn looks_like_request(bytes: &[u8]) -> bool {
    top_level_resource_spans(bytes)
        .and_then(|bodies| decode_resource_spans(bodies.first()?).ok())
        .is_some_and(|probe| count_invalid_spans(&probe).0 > 0)
}

// ---- Whole requests from outside a file: owned ones (tests decode with them independently,
// benches, examples), bodies `attach` receives, and the id rule for both -----------------------

/// Decodes an OTLP/JSON body. Protobuf's canonical JSON (base64 ids, enum names, snake_case
/// keys) is accepted; each leniency it needed is returned as a warning.
pub fn decode_request_json(
    bytes: &[u8],
) -> Result<(ExportTraceServiceRequest, Vec<String>), crate::Error> {
    let request = wire::Request::parse(bytes).map_err(crate::Error::NotOtlpJson)?;
    let mut leniencies = Vec::new();
    let owned = proto::request_from_wire(&request, &mut leniencies);
    let warnings = leniencies
        .iter()
        .map(|l| format!("{LENIENCY_PREFIX}{}", l.describe()))
        .collect();
    Ok((owned, warnings))
}

/// Decodes a binary protobuf body.
pub fn decode_request_protobuf(bytes: &[u8]) -> Result<ExportTraceServiceRequest, crate::Error> {
    ExportTraceServiceRequest::decode(bytes).map_err(crate::Error::NotOtlpProtobuf)
}

/// Normalizes a decoded request. Spans with invalid ids become problems, so
/// `batch.spans.len()` + rejected = total. Payloads are inline (a request has no file).
pub fn batch_from_request(
    request: &ExportTraceServiceRequest,
    origin: &Origin,
    format: &'static str,
    line: Option<u64>,
) -> Batch {
    let mut batch = Batch::default();
    let ctx = build::Context {
        origin,
        span_origin: Some(Arc::new(origin.clone())),
        format: format.into(),
        file: None,
        record: None,
        line,
    };
    let wire = proto::request_to_wire(request);
    let mut leniencies = Vec::new();
    build::build_request(&wire, &ctx, &mut leniencies, &mut batch);
    batch
}

/// A request body as a live source received it, and where it was kept.
pub struct LiveBody<'b> {
    pub bytes: &'b [u8],
    /// Protobuf; otherwise OTLP/JSON.
    pub protobuf: bool,
    /// The file the bytes were written to and where they start in it: payloads become ranges
    /// into it, as a trace file's do. `None` keeps them inline.
    pub kept_in: Option<(Arc<PathBuf>, u64)>,
}

/// Builds a received body with the decoders files use (borrowed, no owned request on the
/// way). Leniencies become warnings only with `report_leniencies` (the receiver has told its
/// client already).
pub fn batch_from_live_body(
    body: &LiveBody,
    origin: &Origin,
    format: &'static str,
    report_leniencies: bool,
) -> Batch {
    let mut batch = Batch::default();
    let parsed = if body.protobuf {
        protobuf::request(body.bytes)
            .map_err(|e| format!("not a protobuf ExportTraceServiceRequest: {e}"))
    } else {
        wire::Request::parse(body.bytes).map_err(|e| format!("not an OTLP/JSON request: {e}"))
    };
    let request = match parsed {
        Ok(request) => request,
        Err(message) => {
            batch.problems.push(Problem::error(origin, None, message));
            return batch;
        }
    };
    let ctx = build::Context {
        origin,
        span_origin: Some(Arc::new(origin.clone())),
        format: format.into(),
        file: body
            .kept_in
            .as_ref()
            .map(|(path, offset)| build::FileBuffer {
                path: path.clone(),
                bytes: body.bytes,
                base_offset: *offset,
                gzip: false,
            }),
        record: None,
        line: None,
    };
    let mut leniencies = Vec::new();
    build::build_request(&request, &ctx, &mut leniencies, &mut batch);
    if report_leniencies {
        warn_leniencies(&leniencies, origin, None, &mut batch);
    }
    batch
}

/// Why a decoded span's id bytes make it unusable, if they do: the one rule for files and the
/// receiver (an all-zero or empty parent is a root; a parent of another length is refused).
pub fn span_id_problem(trace_id: &[u8], span_id: &[u8], parent: &[u8]) -> Option<String> {
    let trace = wire::check_id(trace_id, 16).map(|_| wire::IdBytes::new());
    let id = wire::check_id(span_id, 8).map(|_| wire::IdBytes::new());
    build::id_problem(&trace, &id, parent)
}

/// Counts spans the builder would keep and reject (for OTLP partial success), with the
/// first rejection's reason.
pub fn count_invalid_spans(request: &ExportTraceServiceRequest) -> (usize, usize, Option<String>) {
    let (mut valid, mut rejected, mut first) = (0, 0, None);
    let spans = request
        .resource_spans
        .iter()
        .flat_map(|rs| &rs.scope_spans)
        .flat_map(|ss| &ss.spans);
    for span in spans {
        match span_id_problem(&span.trace_id, &span.span_id, &span.parent_span_id) {
            None => valid += 1,
            Some(reason) => {
                rejected += 1;
                first.get_or_insert(format!("{reason} (span {:?})", span.name));
            }
        }
    }
    (valid, rejected, first)
}
