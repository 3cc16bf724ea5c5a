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

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::common::timestamp::rfc3339_nanos;
use super::{Format, Input, MAX_DECOMPRESSED_BYTES};
use crate::model::{Batch, Case, EvalVerdict, Origin, Problem, RecordRef, ScorerVerdict};

pub struct InspectJson;

const NAME: &str = "inspect-json";
const JSON_REASON: &str = "Inspect AI log: \"version\" and \"eval\" with a \"task\"";

mod json_log;
pub use json_log::{JsonLogFile, JsonLogRead, OpenedJsonLog};

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
/// [`MAX_DECOMPRESSED_BYTES`] in total.
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

/// What a zip's bytes are read through: the bytes in memory, or the file itself read at
/// positions ([`FileAt`]). Cloned, it shares what it reads with its clones.
trait ZipSource: std::io::Read + std::io::Seek + Clone + Send + Sync {}
impl<T: std::io::Read + std::io::Seek + Clone + Send + Sync> ZipSource for T {}

/// A log's samples made into runs, handed to `sink` a group of samples at a time in the log's
/// order: the header (or the journal's start) first, then every `samples/*.json` member, then
/// the log's coverage. An error from `sink` stops the reading and is returned.
///
/// With `after`, what a read of the same file remembered while its eval ran, and a directory
/// that still holds every member that read took, each where it lay (Inspect appends each
/// flush's samples, and at the finish its header, and writes the directory anew), only the
/// samples added since are read, and the pieces say they add to that read ([`Piece::adds`]).
/// Gives what this read remembers when the eval is still running.
fn read_log<R: ZipSource, E>(
    zip: &zip::ZipArchive<R>,
    input: &Input,
    after: Option<&EvalSoFar>,
    mut sink: impl FnMut(Piece) -> Result<(), E>,
) -> Result<Option<EvalSoFar>, E> {
    let mut batch = Batch::default();
    let budget = AtomicU64::new(MAX_DECOMPRESSED_BYTES);
    let names: Vec<String> = zip
        .file_names_raw()
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    // The finished header wins over the journal's start, whatever their order. Without
    // header.json the eval is still running (or was killed): its journal says what has
    // been written so far.
    let header_name = ["header.json", "_journal/start.json"]
        .into_iter()
        .find(|wanted| names.iter().any(|name| name == wanted));
    let header =
        header_name.and_then(|name| read(&mut zip.clone(), name, &budget, input, &mut batch));
    let header = header.map(|(header, _)| header);
    let (Some(header), Some(header_name)) = (header, header_name) else {
        batch.problems.push(Problem::error(
            input.origin,
            None,
            "no readable header.json or _journal/start.json",
        ));
        sink(Piece::last(batch))?;
        return Ok(None);
    };
    let in_progress = header_name != "header.json" || header["status"] == "started";
    // The finish too: Inspect writes its header after the samples and leaves them in place.
    let after = after.filter(|so_far| so_far.still_in(zip));
    let adds = after.is_some();
    let taken: std::collections::HashSet<&str> = after
        .iter()
        .flat_map(|so_far| so_far.members.iter().map(|(name, _)| name.as_str()))
        .collect();
    let samples: Vec<&String> = names
        .iter()
        .filter(|name| name.starts_with("samples/") && name.ends_with(".json"))
        .filter(|name| !taken.contains(name.as_str()))
        .collect();
    // Progress is worth saying only for a log read in several groups.
    let total = (samples.len() > SAMPLES_PER_GROUP).then(|| zip.central_directory_start());
    // Samples are read a group at a time on every core, each group through its own clone of
    // the zip (one directory shared by all); each sample's document is made into spans and
    // dropped, and the groups' runs go to `sink` in the log's order as they are made, so the
    // whole log's spans are never held here at once.
    let mut runs = SampleRuns::new(input, EVAL_NAME, &header["eval"]);
    let earlier = after.map_or([0; 3], |so_far| so_far.counts);
    runs.count(earlier);
    let eval = &header["eval"];
    let read_group = |(k, group): (usize, &[&String])| {
        let mut part = Batch::default();
        let mut runs = SampleRuns::new(input, EVAL_NAME, eval);
        runs.before = earlier[0] + k * SAMPLES_PER_GROUP;
        let mut zip = zip.clone();
        // Where the group's members end in the file: how far the reading has come (known
        // for a log read from its file, the only one whose progress is said).
        let mut end = 0;
        for name in group {
            if let Some((sample, lies)) = read(&mut zip, name, &budget, input, &mut part) {
                runs.record = record_of(lies, input);
                if let Some(record) = &runs.record {
                    end = end.max(record.offset + record.len);
                }
                runs.add(&sample, &mut part);
            }
        }
        runs.build(&mut part);
        (part, runs.counts(), end)
    };
    sink(Piece {
        batch,
        progress: total.map(|total| (0, total)),
        more: true,
        adds,
    })?;
    let mut read_so_far = 0;
    let mut take = |(part, counts, end): (Batch, [usize; 3], u64)| {
        runs.count(counts);
        read_so_far = read_so_far.max(end);
        sink(Piece {
            batch: part,
            progress: total.map(|total| (read_so_far.min(total), total)),
            more: true,
            adds,
        })
    };
    let groups = samples.chunks(SAMPLES_PER_GROUP).enumerate();
    if input.may_use_every_core {
        crate::machine::map_in_order(groups, GROUPS_AHEAD, read_group, &mut take)?;
    } else {
        groups.map(read_group).try_for_each(&mut take)?;
    }
    // Every member this read took (those that failed too: their problems are said once),
    // for the next read of a log still being written.
    let so_far = in_progress.then(|| EvalSoFar {
        members: std::iter::once(header_name)
            .chain(after.iter().flat_map(|so_far| so_far.sample_names()))
            .chain(samples.iter().map(|name| name.as_str()))
            .filter_map(|name| Some((name.to_owned(), mark_of(zip, name)?)))
            .collect(),
        counts: runs.counts(),
    });
    let mut last = Batch::default();
    runs.finish(in_progress, &mut last);
    sink(Piece {
        batch: last,
        progress: total.map(|total| (total, total)),
        more: false,
        adds,
    })?;
    Ok(so_far)
}

/// What a read of a log still being written remembers, for the next read of the same file to
/// take only the samples added since (see [`read_log`]).
#[derive(Debug, Clone, Default)]
pub struct EvalSoFar {
    /// The header member read (the journal's start) and every sample member taken, each with
    /// where it lay.
    members: Vec<(String, Mark)>,
    /// Samples taken so far: seen, scored, errored.
    counts: [usize; 3],
}

impl EvalSoFar {
    /// Whether `zip` still holds every member taken, each where it lay and as it was.
    fn still_in<R: ZipSource>(&self, zip: &zip::ZipArchive<R>) -> bool {
        !zip.has_duplicate_names()
            && self
                .members
                .iter()
                .all(|(name, mark)| mark_of(zip, name) == Some(*mark))
    }

    fn sample_names(&self) -> impl Iterator<Item = &str> {
        self.members
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| name.starts_with("samples/"))
    }
}

/// Where a member's local header lies, its compressed size and its checksum, as the zip's
/// directory says them (no reading): the same in a later directory for a member left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    header_start: u64,
    compressed: u64,
    crc: u32,
}

fn mark_of<R: ZipSource>(zip: &zip::ZipArchive<R>, name: &str) -> Option<Mark> {
    let entry = zip
        .by_index_data(zip.index_for_name_raw(name.as_bytes())?)
        .ok()?;
    Some(Mark {
        header_start: entry.header_start(),
        compressed: entry.compressed_size(),
        crc: entry.crc32(),
    })
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

/// An Inspect log's file, read where its members lie instead of whole: the zip's directory
/// first, then each sample's member in turn, so a log of any size costs what its runs cost.
#[cfg(unix)]
pub struct EvalFile {
    zip: zip::ZipArchive<FileAt>,
}

/// What [`EvalFile::open`] found.
#[cfg(unix)]
pub enum OpenedEval {
    /// A zip holding an Inspect log's header or journal.
    Log(EvalFile),
    /// Starts as a zip, but its directory does not read: still being written, or damaged.
    Incomplete(String),
    /// Not a zip, or a zip that is not an Inspect log: read it whole, as any document.
    Other,
}

#[cfg(unix)]
impl EvalFile {
    pub fn open(path: &std::path::Path) -> std::io::Result<OpenedEval> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let mut magic = [0u8; 4];
        if file.read(&mut magic)? < 4 || &magic != b"PK\x03\x04" {
            return Ok(OpenedEval::Other);
        }
        let len = file.metadata()?.len();
        let reader = FileAt {
            file: std::sync::Arc::new(file),
            len,
            position: 0,
        };
        let zip = match zip::ZipArchive::new(reader) {
            Ok(zip) => zip,
            Err(why) => return Ok(OpenedEval::Incomplete(why.to_string())),
        };
        let is_log = zip
            .file_names_raw()
            .any(|name| name == b"header.json" || name == b"_journal/start.json");
        Ok(match is_log {
            true => OpenedEval::Log(EvalFile { zip }),
            false => OpenedEval::Other,
        })
    }

    /// Why the file was read as this format, as detection says it of the same bytes.
    pub fn reason(&self) -> String {
        EVAL_REASON.to_owned()
    }

    /// The log's runs, read as [`InspectEval`] reads the same bytes, handed to `sink` a group
    /// of samples at a time; after a read of the same file while its eval ran, only the
    /// samples added since, when the rest is as it was (see [`read_log`]).
    pub fn parse<E>(
        &self,
        input: &Input,
        after: Option<&EvalSoFar>,
        sink: impl FnMut(Piece) -> Result<(), E>,
    ) -> Result<Option<EvalSoFar>, E> {
        read_log(&self.zip, input, after, sink)
    }
}

/// A file read at positions: every clone has its own position and shares the open file, so
/// threads read their members side by side, and the length is the one seen at opening.
#[cfg(unix)]
#[derive(Clone)]
struct FileAt {
    file: std::sync::Arc<std::fs::File>,
    len: u64,
    position: u64,
}

#[cfg(unix)]
impl std::io::Read for FileAt {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let left = self.len.saturating_sub(self.position);
        let wanted = (buf.len() as u64).min(left) as usize;
        let read = self.file.read_at(&mut buf[..wanted], self.position)?;
        self.position += read as u64;
        Ok(read)
    }
}

#[cfg(unix)]
impl std::io::Seek for FileAt {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let position = match to {
            std::io::SeekFrom::Start(at) => Some(at),
            std::io::SeekFrom::End(by) => self.len.checked_add_signed(by),
            std::io::SeekFrom::Current(by) => self.position.checked_add_signed(by),
        };
        let Some(position) = position else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the start of the file",
            ));
        };
        self.position = position;
        Ok(position)
    }
}

/// Samples read together by one thread: enough to keep the threads busy between hand-overs,
/// few enough that a group's documents and spans stay small.
const SAMPLES_PER_GROUP: usize = 32;

/// Where a sample's member lies in the log file, for its payloads to stay there: the
/// compressed bytes of one member are a record [`InspectEval::load_payload`] reads again.
/// `None` when the log did not come from a file as it is on disk.
fn record_of(lies: Option<MemberAt>, input: &Input) -> Option<std::sync::Arc<RecordRef>> {
    let Origin::File(path) = input.origin else {
        return None;
    };
    if input.was_gzip || input.base_offset != 0 {
        return None;
    }
    let MemberAt { offset, len } = lies?;
    Some(std::sync::Arc::new(RecordRef {
        path: path.clone(),
        offset,
        len,
        gzip: false,
        format: EVAL_NAME,
    }))
}

/// Where a member's compressed bytes lie in the zip.
#[derive(Clone, Copy)]
struct MemberAt {
    offset: u64,
    len: u64,
}

/// A member read as JSON, and where it lies; or `None` with the reason in `batch`'s problems.
fn read<R: ZipSource>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    budget: &AtomicU64,
    input: &Input,
    batch: &mut Batch,
) -> Option<(Value, Option<MemberAt>)> {
    let document = member(zip, name, budget).and_then(|(bytes, lies)| {
        serde_json::from_slice::<Value>(&bytes)
            .map(|document| (document, lies))
            .map_err(|why| format!("not JSON: {why}"))
    });
    document
        .map_err(|why| {
            batch.problems.push(Problem::error(
                input.origin,
                None,
                format!("member {name}: {why}"),
            ))
        })
        .ok()
}

/// One member decompressed, charged to `budget`, and where its compressed bytes lie.
fn member<R: ZipSource>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    budget: &AtomicU64,
) -> Result<(Vec<u8>, Option<MemberAt>), String> {
    use std::io::Read;
    let mut entry = zip
        .by_name_raw(name.as_bytes())
        .map_err(|why| why.to_string())?;
    let lies = entry.data_start().map(|offset| MemberAt {
        offset,
        len: entry.compressed_size(),
    });
    let method = entry.compression();
    let left = budget.load(Ordering::Relaxed);
    let mut raw = Vec::new();
    (&mut entry)
        .take(left + 1)
        .read_to_end(&mut raw)
        .map_err(|why| why.to_string())?;
    // Compared, not matched: which variants exist depends on the zip crate's features.
    let out = if method == zip::CompressionMethod::Stored {
        raw
    } else if method == zip::CompressionMethod::DEFLATE {
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(&raw[..])
            .take(left + 1)
            .read_to_end(&mut out)
            .map_err(|why| why.to_string())?;
        out
    } else if method == zip::CompressionMethod::ZSTD {
        super::otlp::container::zstd_decode(&raw, left).map_err(|why| why.to_string())?
    } else {
        return Err(format!("compression method {method} is not read"));
    };
    // Charged whole or not at all, also while other threads charge theirs.
    let charged = budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
        left.checked_sub(out.len() as u64)
    });
    if charged.is_err() {
        return Err(format!(
            "over {} MiB decompressed in total",
            MAX_DECOMPRESSED_BYTES >> 20
        ));
    }
    Ok((out, lies))
}

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
        let attributes = span["attributes"].as_array()?;
        let attribute = attributes.iter().find(|a| a["key"] == key)?;
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

/// The spans of the sample in `record` (a member as the zip holds it), as the log's reading
/// made them under `trace_id`.
fn spans_of_member(record: &[u8], trace_id: &str) -> Option<Vec<Value>> {
    let sample: Value = serde_json::from_slice(&unpack_member(record)?).ok()?;
    let run = Sample {
        trace_id,
        task: "",
        sample_id: &text_of(&sample["id"])?,
        epoch: sample["epoch"].as_u64().unwrap_or(1),
        sample: &sample,
    };
    let mut spans = Vec::new();
    run.spans(&mut spans);
    Some(spans)
}

/// A member's bytes as the zip holds them, decompressed: zstd frames by their magic number,
/// a stored JSON document as it is, anything else as deflate.
fn unpack_member(raw: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    if raw.starts_with(&super::otlp::container::ZSTD_MAGIC) {
        return super::otlp::container::zstd_decode(raw, MAX_DECOMPRESSED_BYTES).ok();
    }
    if raw.first() == Some(&b'{') {
        return Some(raw.to_vec());
    }
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(raw)
        .take(MAX_DECOMPRESSED_BYTES + 1)
        .read_to_end(&mut out)
        .ok()?;
    (out.len() as u64 <= MAX_DECOMPRESSED_BYTES).then_some(out)
}

/// Spans held before they are built into the batch: a log's samples are turned into spans a
/// group at a time, so neither every sample's document nor every span's JSON is held at once.
const SPANS_PER_BUILD: usize = 512;

/// The runs of an Inspect log's samples, one per sample and epoch, added sample by sample;
/// their spans are built by the OTLP code.
struct SampleRuns<'a, 'i> {
    input: &'a Input<'i>,
    format: &'static str,
    eval: &'a Value,
    task: &'a str,
    eval_id: &'a str,
    spans: Vec<Value>,
    /// The member the next sample added was read from (see [`record_of`]).
    record: Option<std::sync::Arc<RecordRef>>,
    /// The log's samples before the first one added here (another group's).
    before: usize,
    total: usize,
    scored: usize,
    errored: usize,
}

impl<'a, 'i> SampleRuns<'a, 'i> {
    fn new(input: &'a Input<'i>, format: &'static str, eval: &'a Value) -> Self {
        SampleRuns {
            input,
            format,
            eval,
            task: eval["task"].as_str().unwrap_or("task"),
            eval_id: eval["eval_id"].as_str().unwrap_or(""),
            spans: Vec::new(),
            record: None,
            before: 0,
            total: 0,
            scored: 0,
            errored: 0,
        }
    }

    /// One sample's run: its spans, verdict, case and name.
    fn add(&mut self, sample: &Value, batch: &mut Batch) {
        let n = self.before + self.total;
        self.total += 1;
        if sample["error"].is_object() {
            self.errored += 1;
        } else if sample["scores"]
            .as_object()
            .is_some_and(|scores| !scores.is_empty())
        {
            self.scored += 1;
        }
        let Some(sample_id) = text_of(&sample["id"]) else {
            batch.problems.push(Problem::warning(
                self.input.origin,
                None,
                format!("sample #{n} has no id; skipped"),
            ));
            return;
        };
        let epoch = sample["epoch"].as_u64().unwrap_or(1);
        let trace_id = hex128(&format!("{}/{sample_id}/{epoch}", self.eval_id));
        let run = Sample {
            trace_id: &trace_id,
            task: self.task,
            sample_id: &sample_id,
            epoch,
            sample,
        };
        run.spans(&mut self.spans);
        batch.evals.push((trace_id.clone(), run.verdict()));
        batch.cases.push((
            trace_id.clone(),
            Case {
                id: sample_id.clone(),
                index: epoch,
                index_is_repeat: true,
                task: Some(self.task.to_owned()),
            },
        ));
        batch.invocation_names.push((
            trace_id,
            format!("{} · {sample_id} · epoch {epoch}", self.task),
        ));
        // A sample whose payloads stay in its member is built on its own, with its record.
        if self.record.is_some() || self.spans.len() >= SPANS_PER_BUILD {
            self.build(batch);
        }
    }

    /// The spans held so far, built into `batch` as one OTLP/JSON request.
    fn build(&mut self, batch: &mut Batch) {
        if self.spans.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let request = json!({"resourceSpans": [{
            "resource": {"attributes": [text_attr("service.name", self.task)]},
            "scopeSpans": [{"scope": {"name": "inspect_ai"}, "spans": spans}]
        }]});
        let bytes = serde_json::to_vec(&request).unwrap_or_default();
        drop(request);
        let record = self.record.take();
        if let Err(why) =
            super::otlp::build_json_from_record(self.input, self.format, &bytes, record, batch)
        {
            batch
                .problems
                .push(Problem::error(self.input.origin, None, why.to_string()));
        }
    }

    /// Samples seen, scored and errored so far.
    fn counts(&self) -> [usize; 3] {
        [self.total, self.scored, self.errored]
    }

    /// Counts another group's samples as this log's.
    fn count(&mut self, [total, scored, errored]: [usize; 3]) {
        self.total += total;
        self.scored += scored;
        self.errored += errored;
    }

    /// The rest of the spans, and the log's coverage said once.
    fn finish(mut self, in_progress: bool, batch: &mut Batch) {
        self.build(batch);
        let (total, scored, errored) = (self.total, self.scored, self.errored);
        // A finished log without samples lost them (`--no-log-samples`); a running eval has
        // written none yet, which its coverage says.
        if total == 0 && !in_progress {
            batch.problems.push(Problem::warning(
                self.input.origin,
                None,
                "the log holds no samples (written with --no-log-samples?)",
            ));
            return;
        }
        // Inspect's headline metrics leave errored samples out; here they fail, and the
        // coverage is said once per log.
        let eval = self.eval;
        let progress = if in_progress {
            let planned = eval["dataset"]["samples"]
                .as_u64()
                .map(|samples| samples * eval["config"]["epochs"].as_u64().unwrap_or(1).max(1));
            match planned {
                Some(planned) => format!(" (eval in progress: {total} of {planned} written)"),
                None => " (eval in progress)".to_owned(),
            }
        } else {
            String::new()
        };
        batch.problems.push(Problem::note(
            self.input.origin,
            None,
            format!(
                "Inspect log of {}{progress}: {total} samples, {scored} scored, {errored} errored, {} neither (errored samples count as failing)",
                self.task,
                total - scored - errored
            ),
        ));
    }
}

/// A sample id or other scalar as text (Inspect ids are strings or integers).
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An Inspect scope (`span_begin` … `span_end`): a solver, a scorer, the sample's init.
struct Scope<'a> {
    parent: Option<&'a str>,
    name: &'a str,
    start: u64,
    end: Option<u64>,
}

struct Sample<'a> {
    trace_id: &'a str,
    task: &'a str,
    sample_id: &'a str,
    epoch: u64,
    sample: &'a Value,
}

impl<'a> Sample<'a> {
    fn span_id(&self, inspect_id: &str) -> String {
        format!(
            "{:016x}",
            fnv64(&format!("{}/{inspect_id}", self.trace_id), 0)
        )
    }

    fn root_id(&self) -> String {
        self.span_id("")
    }

    /// Every span of the sample, the root first.
    fn spans(&self, out: &mut Vec<Value>) {
        let sample = self.sample;
        let events = sample["events"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let started = time(&sample["started_at"])
            .or_else(|| events.first().and_then(|e| time(&e["timestamp"])))
            .unwrap_or(0);
        let ended = time(&sample["completed_at"]).unwrap_or(started);
        let error = sample["error"]["message"].as_str();
        let mut root = self.span(
            &self.root_id(),
            None,
            &format!("{} · {}", self.task, self.sample_id),
            (started, ended),
            vec![
                text_attr("gen_ai.operation.name", "invoke_agent"),
                text_attr("gen_ai.agent.name", self.task),
                text_attr("inspect.sample.id", self.sample_id),
                attr("inspect.epoch", json!({"intValue": self.epoch.to_string()})),
            ],
        );
        if let Some(message) = error {
            root["status"] = json!({"code": 2, "message": message});
        }
        if let Some(limit) = sample["limit"]["type"].as_str() {
            push_attr(&mut root, text_attr("inspect.limit", limit));
        }
        out.push(root);

        // Scopes by id, in id order. A tool's own scope is left out and stands for its parent.
        let mut scopes: BTreeMap<&'a str, Scope<'a>> = BTreeMap::new();
        let mut stand_in: HashMap<&'a str, Option<&'a str>> = HashMap::new();
        for event in events {
            let Some(id) = event["id"].as_str() else {
                continue;
            };
            match event["event"].as_str() {
                Some("span_begin") if event["type"] == "tool" => {
                    stand_in.insert(id, event["parent_id"].as_str());
                }
                Some("span_begin") => {
                    scopes.insert(
                        id,
                        Scope {
                            parent: event["parent_id"].as_str(),
                            name: event["name"].as_str().unwrap_or("span"),
                            start: time(&event["timestamp"]).unwrap_or(started),
                            end: None,
                        },
                    );
                }
                Some("span_end") => {
                    if let Some(scope) = scopes.get_mut(id) {
                        scope.end = time(&event["timestamp"]);
                    }
                }
                _ => {}
            }
        }
        // The span a scope id stands for: a kept scope, or through a chain of tool scopes
        // (bounded: a hostile log may loop) the kept scope around them, else the root.
        let parent_of = |first: Option<&'a str>| {
            let mut id = first;
            for _ in 0..64 {
                match id {
                    Some(scope) if scopes.contains_key(scope) => return self.span_id(scope),
                    Some(scope) => id = stand_in.get(scope).copied().flatten(),
                    None => break,
                }
            }
            self.root_id()
        };
        for (id, scope) in &scopes {
            out.push(self.span(
                &self.span_id(id),
                Some(parent_of(scope.parent)),
                scope.name,
                (scope.start, scope.end.unwrap_or(scope.start)),
                Vec::new(),
            ));
        }
        for (n, event) in events.iter().enumerate() {
            let parent = parent_of(event["span_id"].as_str());
            match event["event"].as_str() {
                Some("model") => out.push(self.model_span(n, event, parent)),
                Some("tool") => out.push(self.tool_span(n, event, parent)),
                _ => {}
            }
        }
    }

    fn span(
        &self,
        id: &str,
        parent: Option<String>,
        name: &str,
        (start, end): (u64, u64),
        attributes: Vec<Value>,
    ) -> Value {
        let mut span = json!({
            "traceId": self.trace_id,
            "spanId": id,
            "name": name,
            "startTimeUnixNano": start.to_string(),
            "endTimeUnixNano": end.max(start).to_string(),
            "attributes": attributes,
        });
        if let Some(parent) = parent {
            span["parentSpanId"] = json!(parent);
        }
        span
    }

    /// The span of event `n`, timed by its `timestamp` and `completed`.
    fn event_span(
        &self,
        n: usize,
        event: &Value,
        parent: String,
        name: &str,
        attributes: Vec<Value>,
    ) -> Value {
        let start = time(&event["timestamp"]).unwrap_or(0);
        let end = time(&event["completed"]).unwrap_or(start);
        self.span(
            &self.span_id(&format!("event-{n}")),
            Some(parent),
            name,
            (start, end),
            attributes,
        )
    }

    fn model_span(&self, n: usize, event: &Value, parent: String) -> Value {
        let model = event["model"].as_str().unwrap_or("model");
        let mut attributes = vec![
            text_attr("gen_ai.operation.name", "chat"),
            text_attr("gen_ai.request.model", model),
        ];
        let usage = &event["output"]["usage"];
        for (key, field) in [
            ("gen_ai.usage.input_tokens", "input_tokens"),
            ("gen_ai.usage.output_tokens", "output_tokens"),
        ] {
            if let Some(tokens) = usage[field].as_u64() {
                attributes.push(attr(key, json!({"intValue": tokens.to_string()})));
            }
        }
        let input = self.model_input(event);
        if !input.is_empty() {
            let messages: Vec<Value> = input.iter().map(|m| self.genai_message(m)).collect();
            attributes.push(text_attr(
                "gen_ai.input.messages",
                &Value::Array(messages).to_string(),
            ));
        }
        let choices = event["output"]["choices"].as_array();
        let output: Vec<Value> = choices
            .into_iter()
            .flatten()
            .map(|choice| {
                let mut message = self.genai_message(&choice["message"]);
                if let Some(reason) = choice["stop_reason"].as_str() {
                    message["finish_reason"] = json!(reason);
                }
                message
            })
            .collect();
        if !output.is_empty() {
            attributes.push(text_attr(
                "gen_ai.output.messages",
                &Value::Array(output).to_string(),
            ));
        }
        let mut span = self.event_span(n, event, parent, &format!("chat {model}"), attributes);
        if let Some(error) = event["error"].as_str() {
            span["status"] = json!({"code": 2, "message": error});
        }
        span
    }

    fn tool_span(&self, n: usize, event: &Value, parent: String) -> Value {
        let function = event["function"].as_str().unwrap_or("tool");
        let mut attributes = vec![
            text_attr("gen_ai.operation.name", "execute_tool"),
            text_attr("gen_ai.tool.name", function),
        ];
        if let Some(call_id) = event["id"].as_str() {
            attributes.push(text_attr("gen_ai.tool.call.id", call_id));
        }
        if !event["arguments"].is_null() {
            attributes.push(text_attr(
                "gen_ai.tool.call.arguments",
                &event["arguments"].to_string(),
            ));
        }
        if let Some(result) = text_or_json(&event["result"]).map(|text| self.resolved(text)) {
            attributes.push(text_attr("gen_ai.tool.call.result", &result));
        }
        let name = format!("execute_tool {function}");
        let mut span = self.event_span(n, event, parent, &name, attributes);
        let error = &event["error"];
        if error.is_object() {
            let kind = error["type"].as_str().unwrap_or("unknown");
            let message = self.resolved(error["message"].as_str().unwrap_or("").to_owned());
            push_attr(&mut span, text_attr("error.type", kind));
            span["status"] = json!({"code": 2, "message": message});
        } else if event["failed"].as_bool() == Some(true) {
            push_attr(&mut span, text_attr("error.type", "failed"));
            span["status"] =
                json!({"code": 2, "message": "the tool call failed (the sample errored)"});
        }
        span
    }

    /// The messages a model event was given: its `input`, else its `input_refs` ranges
    /// (`[start, end)`) into the sample's `events_data.messages`.
    fn model_input(&self, event: &'a Value) -> Vec<&'a Value> {
        if let Some(input) = event["input"].as_array().filter(|input| !input.is_empty()) {
            return input.iter().collect();
        }
        let pool = self.sample["events_data"]["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let ranges = event["input_refs"].as_array().map(Vec::as_slice);
        let mut messages = Vec::new();
        for range in ranges.unwrap_or(&[]) {
            let (Some(start), Some(end)) = (range[0].as_u64(), range[1].as_u64()) else {
                continue;
            };
            let (start, end) = (start as usize, (end as usize).min(pool.len()));
            if start < end {
                messages.extend(&pool[start..end]);
            }
        }
        messages
    }

    /// An Inspect chat message as a GenAI semantic-conventions message: `role` and `parts`
    /// (text, reasoning, tool calls, a tool's response), attachment references resolved.
    fn genai_message(&self, message: &Value) -> Value {
        let role = message["role"].as_str().unwrap_or("user");
        let mut parts = Vec::new();
        let text_part =
            |text: &str| json!({"type": "text", "content": self.resolved(text.to_owned())});
        let content = match &message["content"] {
            Value::String(text) if text.is_empty() => Vec::new(),
            Value::String(text) => vec![text_part(text)],
            Value::Array(items) => items
                .iter()
                .map(|item| match item["type"].as_str() {
                    Some("text") => text_part(item["text"].as_str().unwrap_or("")),
                    Some("reasoning") => json!({
                        "type": "reasoning",
                        "content": self.resolved(item["reasoning"].as_str().unwrap_or("").to_owned()),
                    }),
                    _ => item.clone(),
                })
                .collect(),
            _ => Vec::new(),
        };
        if role == "tool" {
            let response = match (&message["error"], content.as_slice()) {
                (Value::Object(error), _) => {
                    let text = self.resolved(
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    );
                    json!({"error": {"type": error.get("type").cloned().unwrap_or(Value::Null), "message": text}})
                }
                (_, [only]) if only["type"] == "text" => only["content"].clone(),
                (_, parts) => Value::Array(parts.to_vec()),
            };
            parts.push(json!({
                "type": "tool_call_response",
                "id": message["tool_call_id"],
                "response": response,
            }));
        } else {
            parts.extend(content);
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            parts.push(json!({
                "type": "tool_call",
                "id": call["id"],
                "name": call["function"],
                "arguments": call["arguments"],
            }));
        }
        json!({"role": role, "parts": parts})
    }

    /// `text` with an `attachment://HASH` reference replaced by the attachment's text (events
    /// hold text over 100 characters that way); other text as it is.
    fn resolved(&self, text: String) -> String {
        match text.strip_prefix("attachment://") {
            Some(hash) => match self.sample["attachments"][hash].as_str() {
                Some(attached) => attached.to_owned(),
                None => text,
            },
            None => text,
        }
    }

    /// The scorers' verdicts as one evaluation, every scorer deciding (a [`ScorerRule`] may
    /// choose others later); a sample error fails it whatever they say.
    ///
    /// [`ScorerRule`]: crate::model::ScorerRule
    fn verdict(&self) -> EvalVerdict {
        let scores = self.sample["scores"].as_object();
        let scorers: Vec<ScorerVerdict> = scores
            .into_iter()
            .flatten()
            .map(|(name, score)| ScorerVerdict {
                name: name.clone(),
                value: score["value"].clone(),
                answer: text_or_json(&score["answer"]),
                explanation: text_or_json(&score["explanation"]),
            })
            .collect();
        if let Some(message) = self.sample["error"]["message"].as_str() {
            return EvalVerdict {
                passed: false,
                label: "sample error".into(),
                reason: message.lines().next().unwrap_or(message).to_owned(),
                // The error decides, whatever any scorer said: no rule may choose otherwise.
                ..EvalVerdict::default()
            };
        }
        let failing: Vec<&ScorerVerdict> =
            scorers.iter().filter(|s| s.fails_by_default()).collect();
        let reasons: Vec<String> = failing
            .iter()
            .filter_map(|s| Some(format!("{}: {}", s.name, s.explanation.as_deref()?)))
            .collect();
        let labels: Vec<String> = scorers
            .iter()
            .map(|s| format!("{}={}", s.name, s.value_text()))
            .collect();
        EvalVerdict {
            passed: failing.is_empty(),
            label: labels.join(" "),
            // The explanations repeat the completion, as the scorers' own do.
            reason_quotes_output: !reasons.is_empty(),
            reason: reasons.join("; "),
            scorers,
            ..EvalVerdict::default()
        }
    }
}

fn text_or_json(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn time(value: &Value) -> Option<u64> {
    rfc3339_nanos(value.as_str()?)
}

/// A text attribute.
fn text_attr(key: &str, text: &str) -> Value {
    attr(key, json!({"stringValue": text}))
}

fn attr(key: &str, value: Value) -> Value {
    json!({"key": key, "value": value})
}

fn push_attr(span: &mut Value, attribute: Value) {
    if let Some(attributes) = span["attributes"].as_array_mut() {
        attributes.push(attribute);
    }
}

/// FNV-1a, 64 bits, from `seed`: ids made from Inspect's own (spans and traces need hex ids
/// of a fixed length; the same log gives the same ids).
fn fnv64(text: &str, seed: u64) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn hex128(text: &str) -> String {
    format!(
        "{:016x}{:016x}",
        fnv64(text, 0),
        fnv64(text, 0x9e37_79b9_7f4a_7c15)
    )
}
