//! Inspect AI evaluation logs (log version 2): one JSON document (`--log-format json`) or the
//! zip form (`.eval`, [`InspectEval`]). Both hold the same samples.
//!
//! One invocation per sample and epoch, its case the sample id and epoch. The sample's events
//! become spans, rewritten as one OTLP/JSON request with GenAI attributes and built by the OTLP
//! code, so they classify and fail like exported spans: `span_begin`/`span_end` scopes (solvers,
//! scorers) nest by `parent_id`; a `model` event is an LLM span (model, tokens, timing from
//! `timestamp` and `completed`); a `tool` event is a tool span, failed when it has an `error`
//! (its type and message shown) or `failed: true`. The scope Inspect opens around a tool call
//! is left out (the tool event is the call); events inside it hang under the scope's parent.
//! The scorers' verdicts become the run's evaluation: failing when a scorer's value is `I`, `0`
//! or `false`, or when the sample errored (`sample.error`, which also fails the root span).

use serde_json::Value;

use super::{Format, Input};
use crate::model::{Batch, Problem};

pub struct InspectJson;

const NAME: &str = "inspect-json";
const JSON_REASON: &str = "Inspect AI log: \"version\" and \"eval\" with a \"task\"";

mod eval_zip;
mod json_log;
mod sample;
pub use eval_zip::EvalSoFar;
use eval_zip::read_log;
#[cfg(unix)]
pub use eval_zip::{EvalFile, OpenedEval};
pub use json_log::{JsonLogFile, JsonLogRead, OpenedJsonLog};
use sample::{SampleRuns, spans_of_member};

/// Why a log read from its file ([`JsonLogFile`]) was read as [`InspectJson`].
pub fn json_reason() -> String {
    JSON_REASON.to_owned()
}

impl Format for InspectJson {
    fn name(&self) -> &'static str {
        NAME
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let head = input.head_json()?.as_object()?;
        let is_log = head.get("version").is_some_and(Value::is_number)
            && head.get("eval").is_some_and(|e| e.get("task").is_some())
            && (head.contains_key("samples") || head.contains_key("status"));
        is_log.then(|| JSON_REASON.to_owned())
    }

    /// `record` is one sample's text in a log read from its file ([`JsonLogFile`]).
    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        payload_of_sample(record, locator)
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        // Detection parsed the whole document already (it is one value, not JSON lines).
        let parsed;
        let log = match input.head_json() {
            Some(head) if head.get("eval").is_some() => head,
            _ => match super::arksim::read_json_document(input, &mut batch) {
                Some(document) => {
                    parsed = document;
                    &parsed
                }
                None => return batch,
            },
        };
        let samples = log["samples"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let mut runs = SampleRuns::new(input, NAME, &log["eval"]);
        for sample in samples {
            runs.add(sample, &mut batch);
        }
        runs.finish(log["status"] == "started", &mut batch);
        batch
    }
}

/// Inspect AI logs in their zip form (`.eval`): `header.json` (or, while the eval runs,
/// `_journal/start.json`) and one `samples/<id>_epoch_<n>.json` member per sample, each
/// compressed with zstd (method 93) or deflate. Every member is decompressed within
/// [`MAX_DECOMPRESSED_BYTES`](super::MAX_DECOMPRESSED_BYTES) in total.
pub struct InspectEval;

const EVAL_NAME: &str = "inspect-eval";
const EVAL_REASON: &str = "Inspect AI log: a zip holding header.json or _journal/start.json";

/// For a zip (bytes starting with a local file header): whether it is whole, its central
/// directory written. A zip being written has its members first and that directory last.
pub fn zip_is_complete(bytes: &[u8]) -> Option<bool> {
    bytes
        .starts_with(b"PK\x03\x04")
        .then(|| zip::ZipArchive::new(std::io::Cursor::new(bytes)).is_ok())
}

/// Whether `bytes` are a zip whose members name an Inspect log's header or journal.
fn is_eval_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
        && zip::ZipArchive::new(std::io::Cursor::new(bytes)).is_ok_and(|zip| {
            zip.file_names_raw()
                .any(|name| name == b"header.json" || name == b"_journal/start.json")
        })
}

impl Format for InspectEval {
    fn name(&self) -> &'static str {
        EVAL_NAME
    }

    fn sniff(&self, input: &Input) -> Option<String> {
        is_eval_zip(input.bytes).then(|| EVAL_REASON.to_owned())
    }

    fn detect(&self, input: &Input) -> Option<String> {
        self.sniff(input)
    }

    /// `record` is one sample's member as the zip holds it (zstd, deflate or stored);
    /// `locator` is `trace/span#attribute` (see [`payload_of_sample`]).
    fn load_payload(&self, record: &[u8], locator: &str) -> Option<String> {
        payload_of_sample(record, locator)
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        match zip::ZipArchive::new(std::io::Cursor::new(input.bytes)) {
            Ok(zip) => {
                let read = read_log(&zip, input, None, |piece| {
                    batch.extend(piece.batch);
                    Ok::<(), std::convert::Infallible>(())
                });
                let Ok(_) = read;
            }
            Err(why) => batch.problems.push(Problem::error(
                input.origin,
                None,
                format!("not a readable zip: {why}"),
            )),
        }
        batch
    }
}

/// Runs of a log read in pieces, and how far the reading is.
pub struct Piece {
    pub batch: Batch,
    /// Bytes of the file read so far and in all, for a log read in several groups of samples.
    pub progress: Option<(u64, u64)>,
    /// More pieces follow.
    pub more: bool,
    /// The piece adds to what the last read of the same file gave, instead of replacing it (a
    /// running eval's log read again: only its new samples come, and the last piece says the
    /// log's coverage anew).
    pub adds: bool,
}

impl Piece {
    fn last(batch: Batch) -> Self {
        Piece {
            batch,
            progress: None,
            more: false,
            adds: false,
        }
    }
}

/// Groups read ahead of the one `sink` takes next: enough to keep every core busy, few enough
/// that a slow taker does not make the log's spans pile up.
const GROUPS_AHEAD: usize = 8;

/// Samples read together by one thread: enough to keep the threads busy between hand-overs,
/// few enough that a group's documents and spans stay small.
const SAMPLES_PER_GROUP: usize = 32;

/// A payload of the sample in `record` (a `.eval` member as the zip holds it, or a sample's
/// text in a JSON log); `locator` is `trace/span#attribute`. The sample's spans are made again
/// and the attribute's text taken from the one span.
fn payload_of_sample(record: &[u8], locator: &str) -> Option<String> {
    let (ids, key) = locator.rsplit_once('#')?;
    let (trace_id, span_id) = ids.split_once('/')?;
    LAST_SAMPLE.with_borrow_mut(|last| {
        // A search reads a run's payloads one after another: its sample is made into
        // spans once, not once per payload.
        let held = last
            .as_ref()
            .is_some_and(|held| held.record == record && held.trace_id == trace_id);
        if !held {
            *last = Some(SampleSpans {
                record: record.to_vec(),
                trace_id: trace_id.to_owned(),
                spans: spans_of_member(record, trace_id)?,
            });
        }
        let spans = &last.as_ref()?.spans;
        let span = spans.iter().find(|span| span["spanId"] == span_id)?;
        // The span's own attributes, then its events' (a sample error's traceback).
        let events = span["events"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let lists =
            std::iter::once(&span["attributes"]).chain(events.iter().map(|e| &e["attributes"]));
        let attribute = lists
            .filter_map(Value::as_array)
            .flatten()
            .find(|a| a["key"] == key)?;
        attribute["value"]["stringValue"]
            .as_str()
            .map(str::to_owned)
    })
}

/// The spans last made from a sample for [`payload_of_sample`], per thread.
struct SampleSpans {
    record: Vec<u8>,
    trace_id: String,
    spans: Vec<Value>,
}

thread_local! {
    static LAST_SAMPLE: std::cell::RefCell<Option<SampleSpans>> = const { std::cell::RefCell::new(None) };
}
