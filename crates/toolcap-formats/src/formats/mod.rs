//! Trace formats, grouped by family, each registered in [`REGISTRY`] with content-based
//! detection. This module is the registry and the entry points ([`load_bytes`],
//! [`load_chunk_as`], [`load_payload`]); the families hold the formats:
//!
//! - [`otlp`]: OTLP/JSON and protobuf, the containers a file may wrap them in (gzip, zstd, the
//!   Collector's framing), span lists without the envelope, attribute classification, and
//!   payloads read back from their byte range.
//! - [`message_logs`]: one agent run per file read into a conversation (OpenAI chat and
//!   responses, Anthropic, Gemini, LangChain, toolscore's custom calls), with the shared
//!   document reader and the one dialect decision they detect through.
//! - [`mcp`]: MCP JSON-RPC sessions, built by the message-log machinery.
//! - [`arksim`]: simulations, evaluations, scenarios, the receiver dump and A2A tasks carrying
//!   arksim's tool-call capture.
//! - [`openai_agents`], [`openarmature`]: those SDKs' own trace exports.
//! - [`common`]: JSON records, payload references and timestamps shared by the families.
//!
//! Adding a format means one new file implementing [`Format`] in its family and one line in
//! [`REGISTRY`]. Parsers produce a [`Batch`] of normalized spans; they never touch the store
//! or the UI.

use std::io::Read;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::model::{Batch, Origin, Payload, PayloadBody, Problem};

pub mod arksim;
pub mod common;
pub mod inspect;
pub mod mcp;
pub mod message_logs;
pub mod openai_agents;
pub mod openarmature;
pub mod otlp;

pub use inspect::{EvalSoFar, Piece};

/// The longest line of a JSON-lines trace file: a longer one is reported and skipped rather
/// than buffered, by every reader (and `serve` refuses a request that would make one).
pub const MAX_LINE_BYTES: u64 = 64 << 20;
/// The largest input a single source may decompress to. Bigger inputs are refused with a
/// problem rather than exhausting memory.
pub const MAX_DECOMPRESSED_BYTES: u64 = 1 << 30;

/// The raw bytes of one source plus cheap, lazily computed views of them for detection.
pub struct Input<'a> {
    pub origin: &'a Origin,
    /// Already decompressed.
    pub bytes: &'a [u8],
    /// The file name's extension, lower-cased, if the source is a file (`json`, `jsonl`, `pb`).
    pub extension: Option<String>,
    /// True when the bytes were taken out of a container ([`otlp::container`]: gzip, zstd, the
    /// Collector's framing): byte ranges in them are not ranges of the file.
    pub was_gzip: bool,
    /// Where `bytes` start inside the source file: a tailed JSONL file hands over only its new
    /// complete lines, and record references and problem lines must still point at the file.
    pub base_offset: u64,
    /// Number of lines before `bytes` in the source (problem line = base_line + local line).
    pub base_line: u64,
    /// A parser may cut a big input and parse the parts on every core; not when the input is
    /// itself one of several parsed at once (`sources::pieces`).
    pub may_use_every_core: bool,
    head: OnceLock<Option<serde_json::Value>>,
    /// The message-log dialect and why, decided once for the formats that share that decision
    /// (see [`message_logs::detect_dialect`]).
    message_log_dialect: OnceLock<Option<(message_logs::dialect::Dialect, String)>>,
    /// The origin as spans hold it, made once for all the spans parsed from this input.
    span_origin: OnceLock<Arc<Origin>>,
}

impl<'a> Input<'a> {
    pub fn new(origin: &'a Origin, bytes: &'a [u8], extension: Option<String>) -> Self {
        Input {
            origin,
            bytes,
            extension,
            was_gzip: false,
            base_offset: 0,
            base_line: 0,
            may_use_every_core: true,
            head: OnceLock::new(),
            message_log_dialect: OnceLock::new(),
            span_origin: OnceLock::new(),
        }
    }

    /// The origin for a span parsed from this input: one allocation shared by all of them.
    pub fn span_origin(&self) -> Arc<Origin> {
        let origin = self
            .span_origin
            .get_or_init(|| Arc::new(self.origin.clone()));
        origin.clone()
    }

    /// Where a span parsed from this input as `format` was read from, with no service named.
    pub fn span_provenance(
        &self,
        format: crate::model::FormatName,
    ) -> Option<Arc<crate::model::Provenance>> {
        crate::model::Provenance::shared(Some(&self.span_origin()), None, format)
    }

    /// The first JSON value of the input: the first non-blank line if it parses on its own
    /// (JSONL), else the whole document. `None` when neither is JSON.
    pub fn head_json(&self) -> Option<&serde_json::Value> {
        self.head
            .get_or_init(|| {
                let text = self.bytes.trim_ascii_start();
                if !text.starts_with(b"{") && !text.starts_with(b"[") {
                    return None;
                }
                let first_line = text.split(|b| *b == b'\n').next().unwrap_or(text);
                serde_json::from_slice(first_line)
                    .ok()
                    .or_else(|| serde_json::from_slice(text).ok())
            })
            .as_ref()
    }

    /// True when the input looks like JSON lines: more than one line, each starting with `{`.
    pub fn looks_like_jsonl(&self) -> bool {
        let mut lines = self
            .bytes
            .split(|b| *b == b'\n')
            .map(|l| l.trim_ascii())
            .filter(|l| !l.is_empty());
        let first = lines.next();
        let second = lines.next();
        matches!((first, second), (Some(a), Some(b)) if a.starts_with(b"{") && b.starts_with(b"{"))
            && serde_json::from_slice::<serde::de::IgnoredAny>(first.unwrap_or_default()).is_ok()
    }
}

/// A trace format: how to recognise it, parse it, and find a payload in one of its records.
pub trait Format: Sync {
    /// Registry name, used in `dump --json` `format` and in [`crate::model::RecordRef`].
    fn name(&self) -> &'static str;
    /// `Some(reason)` from the bytes alone (a key prefix, a binary structure), without parsing
    /// the input as JSON. Every format's `sniff` runs before any [`Format::detect`], so a file
    /// whose first bytes say what it is is never parsed whole to find out. Claim only what no
    /// other format's `detect` could read, and answer for it in `detect` too.
    fn sniff(&self, _input: &Input) -> Option<String> {
        None
    }
    /// `Some(reason)` when this format can read the input; the reason is shown by `--explain`.
    /// May look at the parsed [`Input::head_json`], which is parsed once for all formats.
    fn detect(&self, input: &Input) -> Option<String>;
    /// Parses everything it can; bad records become problems and the good ones around them load.
    fn parse(&self, input: &Input) -> Batch;
    /// True when every line of a JSON-lines file of this format is a record on its own, so a
    /// big file can be cut at any line and its pieces parsed apart (see
    /// `sources::pieces`). A format that ties lines together (a session, a conversation) says no.
    fn lines_stand_alone(&self) -> bool {
        false
    }
    /// Finds a payload again inside one record (the bytes of a [`crate::model::RecordRef`]).
    fn load_payload(&self, _record: &[u8], _locator: &str) -> Option<String> {
        None
    }
}

/// Every known format, most specific first: the first whose `sniff` answers wins, else the
/// first whose `detect` answers (see [`detect`]).
pub static REGISTRY: &[&dyn Format] = &[
    &openai_agents::OpenAiAgents,
    &openarmature::OpenArmatureEvents,
    &arksim::ArksimSimulation,
    &arksim::eval::ArksimEvaluation,
    &arksim::eval::ArksimScenarios,
    &arksim::ArksimReceiverDump,
    &arksim::a2a::A2aTask,
    &inspect::InspectEval,
    &inspect::InspectJson,
    &otlp::OtlpProtobuf,
    &otlp::OtlpJson,
    &otlp::otel_spans::OtelSpanList,
    &mcp::McpSession,
    &message_logs::openai_chat::OpenAiChat,
    &message_logs::anthropic::AnthropicMessages,
    &message_logs::gemini::GeminiContents,
    &message_logs::langchain::LangChainLog,
    &message_logs::toolscore_custom::ToolscoreCustom,
];

pub fn by_name(name: &str) -> Option<&'static dyn Format> {
    REGISTRY.iter().copied().find(|f| f.name() == name)
}

/// The format that reads `input`, and why: the first of `registry` whose cheap
/// [`Format::sniff`] claims it, else the first whose [`Format::detect`] does. The full
/// detections (which parse the input's head) run only when no sniff answered.
pub fn detect(
    registry: &[&'static dyn Format],
    input: &Input,
) -> Option<(&'static dyn Format, String)> {
    let answer = |check: fn(&dyn Format, &Input) -> Option<String>| {
        registry
            .iter()
            .find_map(|format| Some((*format, check(*format, input)?)))
    };
    answer(|format, input| format.sniff(input))
        .or_else(|| answer(|format, input| format.detect(input)))
}

/// What detection decided for one source, for `dump --explain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub format: Option<&'static str>,
    pub reason: String,
}

/// One loaded source.
#[derive(Debug)]
pub struct Loaded {
    pub origin: Origin,
    pub detection: Detection,
    pub batch: Batch,
}

/// Decompresses gzip (by magic bytes, not extension), bounded by [`MAX_DECOMPRESSED_BYTES`].
pub fn maybe_gunzip(bytes: &[u8]) -> Result<Option<Vec<u8>>, crate::Error> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(None);
    }
    let mut out = Vec::new();
    let decoder = flate2::read::MultiGzDecoder::new(bytes);
    decoder
        .take(MAX_DECOMPRESSED_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(crate::Error::GzipCorrupt)?;
    if out.len() as u64 > MAX_DECOMPRESSED_BYTES {
        return Err(crate::Error::GzipTooLarge {
            limit: MAX_DECOMPRESSED_BYTES,
        });
    }
    Ok(Some(out))
}

pub fn extension_of(origin: &Origin) -> Option<String> {
    let Origin::File(path) = origin else {
        return None;
    };
    let name = path.file_name()?.to_string_lossy().to_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    Path::new(name)
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
}

/// Bytes out of their container (if any), what the container was, and what could not be
/// read from it; the problems are already attributed to `origin`.
pub struct Opened<'a> {
    pub bytes: std::borrow::Cow<'a, [u8]>,
    pub container: Option<String>,
    pub problems: Vec<Problem>,
    pub incomplete_tail: bool,
}

/// Opens any container around a source's bytes; `Err` is the problem when it cannot be opened.
pub fn open<'a>(origin: &Origin, raw: &'a [u8]) -> Result<Opened<'a>, Problem> {
    match otlp::container::unwrap(raw) {
        Ok(Some(unwrapped)) => Ok(Opened {
            bytes: std::borrow::Cow::Owned(unwrapped.bytes),
            problems: unwrapped
                .problems
                .into_iter()
                .map(|message| Problem::error(origin, None, message))
                .collect(),
            container: Some(unwrapped.container),
            incomplete_tail: unwrapped.incomplete_tail,
        }),
        Ok(None) => Ok(Opened {
            bytes: std::borrow::Cow::Borrowed(raw),
            container: None,
            problems: Vec::new(),
            incomplete_tail: false,
        }),
        Err(error) => Err(Problem::error(origin, None, error.to_string())),
    }
}

/// Detects and parses one source's bytes.
pub fn load_bytes(origin: Origin, raw: &[u8]) -> Loaded {
    load_bytes_with(REGISTRY, origin, raw)
}

/// [`load_bytes`] against `registry`: the one loader for whole documents, used by the headless
/// commands and by the TUI's watcher alike, so both read a file the same way.
pub fn load_bytes_with(registry: &[&'static dyn Format], origin: Origin, raw: &[u8]) -> Loaded {
    let opened = match open(&origin, raw) {
        Ok(opened) => opened,
        Err(problem) => {
            let mut batch = Batch::default();
            batch.problems.push(problem);
            return Loaded {
                detection: Detection {
                    format: None,
                    reason: "a compressed or framed container that could not be opened".into(),
                },
                origin,
                batch,
            };
        }
    };
    let bytes = opened.bytes;
    let was_gzip = opened.container.is_some();
    let container_problems = opened.problems;
    let mut input = Input::new(&origin, &bytes, extension_of(&origin));
    input.was_gzip = was_gzip;
    if let Some((format, reason)) = detect(registry, &input) {
        let mut batch = parse(format, &input);
        batch.problems.extend(container_problems);
        let reason = match &opened.container {
            Some(container) => format!("{container}; {reason}"),
            None => reason,
        };
        return Loaded {
            detection: Detection {
                format: Some(format.name()),
                reason,
            },
            batch,
            origin: origin.clone(),
        };
    }
    let mut batch = Batch::default();
    batch.problems.extend(container_problems);
    batch
        .problems
        .push(unrecognised(&origin, &bytes, input.extension.as_deref()));
    Loaded {
        detection: Detection {
            format: None,
            reason: "no format matched".into(),
        },
        batch,
        origin: origin.clone(),
    }
}

/// The problem for content no format recognised. Only content that looks like a trace format
/// (JSON that does not parse, a protobuf file by its extension) is an error; anything else — a
/// log, a YAML config, a README, JSON with no trace shape, an empty file — is a note: the file
/// is skipped on purpose and nothing was lost.
pub fn unrecognised(origin: &Origin, bytes: &[u8], extension: Option<&str>) -> Problem {
    const UNRECOGNISED: &str = "no known trace format recognised this content";
    let text = bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(bytes)
        .trim_ascii();
    if text.is_empty() {
        return Problem::note(origin, None, "skipped: not a trace (empty file)");
    }
    if matches!(extension, Some("pb" | "binpb" | "protobuf")) {
        return Problem::error(origin, None, UNRECOGNISED);
    }
    if text.starts_with(b"{") || text.starts_with(b"[") {
        let whole = serde_json::from_slice::<serde::de::IgnoredAny>(text);
        let lines_parse = || {
            text.split(|b| *b == b'\n')
                .map(<[u8]>::trim_ascii)
                .filter(|l| !l.is_empty())
                .all(|l| serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok())
        };
        return match whole {
            Ok(_) => Problem::note(
                origin,
                None,
                format!("skipped: not a trace (JSON, but {UNRECOGNISED})"),
            ),
            Err(_) if lines_parse() => Problem::note(
                origin,
                None,
                format!("skipped: not a trace (JSON lines, but {UNRECOGNISED})"),
            ),
            Err(why) => Problem::error(
                origin,
                None,
                format!("looks like JSON but does not parse ({why}); {UNRECOGNISED}"),
            ),
        };
    }
    let sample = &text[..text.len().min(4096)];
    // A multi-byte character cut by the sample's end is not a sign of binary data.
    let binary =
        sample.contains(&0) || std::str::from_utf8(sample).is_err_and(|e| e.error_len().is_some());
    let what = if binary {
        "binary data"
    } else {
        "text, not JSON"
    };
    Problem::note(origin, None, format!("skipped: not a trace ({what})"))
}

/// Parses `input` with `format`; payloads left in their records become byte ranges while the
/// bytes are at hand (see [`common::ranges`]). Every load goes through here.
pub fn parse(format: &dyn Format, input: &Input) -> Batch {
    let batch = format.parse(input);
    parsed(batch, input)
}

/// What every parse ends with, whichever way its input was read.
fn parsed(mut batch: Batch, input: &Input) -> Batch {
    common::ranges::resolve_record_payloads(&mut batch, input);
    // Packed here, on the parser's thread, rather than by the store: loads parse on every core.
    for span in &mut batch.spans {
        span.pack();
    }
    batch
}

/// How [`load_in_place`] went.
pub enum InPlace {
    /// Read where its parts lie in the file, as this format for this reason.
    Loaded(Detection),
    /// Still being written, or damaged, and why: an archive whose directory does not read yet
    /// (nothing went to the sink), or a log document that breaks off (the runs before the break
    /// went to the sink, the log's coverage did not). Read whole, it is reported as it is.
    Incomplete(String),
    /// No format in the registry reads it in place: read it whole, as any document.
    Whole,
}

/// Loads a file that a format reads where its parts lie, without holding the file whole: an
/// Inspect `.eval` log (a zip), read member by member, or an Inspect JSON log, read as a stream
/// sample by sample. Its runs go to `sink` a piece at a time, and all the pieces' batches
/// together are what [`load_bytes_with`] gives for the file's bytes. An error from `sink` stops
/// the load and is returned.
pub fn load_in_place<E>(
    registry: &[&'static dyn Format],
    origin: &Origin,
    path: &Path,
    sink: impl FnMut(Piece) -> Result<(), E>,
) -> Result<InPlace, E> {
    follow_in_place(registry, origin, path, &mut None, sink)
}

/// [`load_in_place`] for a file read again as it changes: `so_far` is what the last read of
/// the same file remembered of a log still being written, and this read's when it still is.
/// A read that finds that log only added to gives only what was added, its pieces saying so
/// ([`Piece::adds`]).
pub fn follow_in_place<E>(
    registry: &[&'static dyn Format],
    origin: &Origin,
    path: &Path,
    so_far: &mut Option<EvalSoFar>,
    mut sink: impl FnMut(Piece) -> Result<(), E>,
) -> Result<InPlace, E> {
    use inspect::{JsonLogFile, JsonLogRead, OpenedJsonLog};
    let after = so_far.take();
    let in_registry = |format: &dyn Format| registry.iter().any(|f| f.name() == format.name());
    let input = Input::new(origin, &[], extension_of(origin));
    let mut sink = |piece: Piece| {
        sink(Piece {
            batch: parsed(piece.batch, &input),
            ..piece
        })
    };
    #[cfg(unix)]
    if in_registry(&inspect::InspectEval) {
        use inspect::{EvalFile, OpenedEval};
        match EvalFile::open(path) {
            Ok(OpenedEval::Log(file)) => {
                *so_far = file.parse(&input, after.as_ref(), &mut sink)?;
                return Ok(InPlace::Loaded(Detection {
                    format: Some(inspect::InspectEval.name()),
                    reason: file.reason(),
                }));
            }
            Ok(OpenedEval::Incomplete(why)) => return Ok(InPlace::Incomplete(why)),
            // Unreadable files are reported by the whole read.
            Ok(OpenedEval::Other) | Err(_) => {}
        }
    }
    if in_registry(&inspect::InspectJson) {
        match JsonLogFile::open(path) {
            Ok(OpenedJsonLog::Log(file)) => match file.parse(&input, &mut sink)? {
                JsonLogRead::Read => {
                    return Ok(InPlace::Loaded(Detection {
                        format: Some(inspect::InspectJson.name()),
                        reason: inspect::json_reason(),
                    }));
                }
                JsonLogRead::BrokenOff(why) => return Ok(InPlace::Incomplete(why)),
                JsonLogRead::NotRead => {}
            },
            Ok(OpenedJsonLog::Incomplete(why)) => return Ok(InPlace::Incomplete(why)),
            Ok(OpenedJsonLog::Other) | Err(_) => {}
        }
    }
    Ok(InPlace::Whole)
}

/// Parses a chunk of a source whose format is already known (a tailed JSONL file's new lines):
/// no detection, and positions are shifted by `base_offset` / `base_line`.
pub fn load_chunk_as(
    format: &'static dyn Format,
    origin: Origin,
    bytes: &[u8],
    base_offset: u64,
    base_line: u64,
) -> Loaded {
    let batch = parse_chunk_as(format, &origin, bytes, base_offset, base_line, true);
    Loaded {
        detection: Detection {
            format: Some(format.name()),
            reason: "continuing the format detected earlier".into(),
        },
        batch,
        origin: origin.clone(),
    }
}

/// Parses complete lines of a file known to be `format`, starting `base_offset` bytes and
/// `base_line` lines into it; `may_use_every_core` as [`Input::may_use_every_core`].
pub fn parse_chunk_as(
    format: &'static dyn Format,
    origin: &Origin,
    bytes: &[u8],
    base_offset: u64,
    base_line: u64,
    may_use_every_core: bool,
) -> Batch {
    let mut input = Input::new(origin, bytes, extension_of(origin));
    input.base_offset = base_offset;
    input.base_line = base_line;
    input.may_use_every_core = may_use_every_core;
    parse(format, &input)
}

/// Reads a payload's text: inline values directly, on-disk ones by re-reading their record.
pub fn load_payload(payload: &Payload) -> Result<Option<String>, crate::Error> {
    match &payload.body {
        PayloadBody::Absent => Ok(None),
        PayloadBody::Inline(text) => Ok(Some(text.to_string())),
        PayloadBody::Range(range) => {
            let text = otlp::payload_range::read(range)?;
            if text.len() as u64 != payload.bytes {
                return Err(crate::Error::PayloadMoved {
                    path: range.path.to_path_buf(),
                });
            }
            Ok(Some(text))
        }
        PayloadBody::InRecord { record, locator } => {
            let format =
                by_name(record.format).ok_or(crate::Error::UnknownFormat(record.format))?;
            let bytes = read_range(&record.path, record.offset, record.len).map_err(|source| {
                crate::Error::Unreadable {
                    path: record.path.to_path_buf(),
                    source,
                }
            })?;
            let bytes = if record.gzip {
                otlp::container::unwrap(&bytes)?.map_or(bytes, |unwrapped| unwrapped.bytes)
            } else {
                bytes
            };
            format
                .load_payload(&bytes, locator)
                .map(Some)
                .ok_or_else(|| crate::Error::PayloadGone {
                    path: record.path.to_path_buf(),
                    locator: locator.to_string(),
                })
        }
    }
}

fn read_range(path: &Path, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut out = Vec::with_capacity(len.min(1 << 26) as usize);
    file.take(len).read_to_end(&mut out)?;
    Ok(out)
}
