//! An Inspect log in its JSON form read from its file as a stream: the document's top level is
//! read key by key, and its `samples` one at a time, each made into runs and dropped. Neither
//! the file nor the document is held whole, and each sample's payloads stay in the file (the
//! sample's byte range is their record, as a `.eval` member's is).

use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::panic::resume_unwind;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{GROUPS_AHEAD, NAME, Piece, SAMPLES_PER_GROUP, SampleRuns};
use crate::formats::Input;
use crate::model::{Batch, Origin, Problem, RecordRef};

/// What [`JsonLogFile::open`] found.
pub enum OpenedJsonLog {
    /// A JSON document whose first key is `version`, as Inspect writes its logs.
    Log(JsonLogFile),
    /// Such a document not finished yet: its last character is not the closing brace.
    Incomplete(String),
    /// Anything else: read it whole, as any document.
    Other,
}

/// An Inspect JSON log's file and its length when opened.
pub struct JsonLogFile {
    file: File,
    len: u64,
}

/// How [`JsonLogFile::parse`] went when `sink` did not stop it.
pub enum JsonLogRead {
    /// Read as an Inspect log; its runs went to `sink`.
    Read,
    /// Not an Inspect log after all, or one whose samples come before its `eval`: nothing went
    /// to `sink`, and the file is for the whole read.
    NotRead,
    /// The document breaks off in its samples, and why: the runs of the samples before the
    /// break went to `sink`, the log's coverage did not. A log being rewritten reads so until
    /// its writer is done.
    BrokenOff(String),
}

/// The bytes looked at to tell an Inspect JSON log from other documents.
const HEAD_BYTES: usize = 4096;

/// What a stream read of the file is buffered by.
const READ_BUFFER_BYTES: usize = 256 * 1024;

impl JsonLogFile {
    pub fn open(path: &Path) -> std::io::Result<OpenedJsonLog> {
        use std::io::{Seek, SeekFrom};
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        let mut head = Vec::with_capacity(HEAD_BYTES);
        (&mut file).take(HEAD_BYTES as u64).read_to_end(&mut head)?;
        if !starts_with_version_key(&head) {
            return Ok(OpenedJsonLog::Other);
        }
        // The last characters say whether the writer has finished the document.
        file.seek(SeekFrom::Start(len.saturating_sub(HEAD_BYTES as u64)))?;
        let mut tail = Vec::with_capacity(HEAD_BYTES);
        (&mut file).take(HEAD_BYTES as u64).read_to_end(&mut tail)?;
        if tail.trim_ascii_end().last() != Some(&b'}') {
            return Ok(OpenedJsonLog::Incomplete(
                "the JSON document does not end yet".to_owned(),
            ));
        }
        file.seek(SeekFrom::Start(0))?;
        Ok(OpenedJsonLog::Log(JsonLogFile { file, len }))
    }

    /// The log's runs, as [`super::InspectJson`] reads the same bytes, handed to `sink` a group
    /// of samples at a time, in the log's order, with how far into the file the reading is.
    /// One thread reads the document and cuts out each sample's text; the samples are made
    /// into runs on every core.
    pub fn parse<E>(
        self,
        input: &Input,
        mut sink: impl FnMut(Piece) -> Result<(), E>,
    ) -> Result<JsonLogRead, E> {
        let len = self.len;
        let (to_makers, from_reader) = mpsc::sync_channel(GROUPS_AHEAD);
        std::thread::scope(|scope| {
            let reader = scope.spawn(move || read_document(self, to_makers));
            // The reader says the log's `eval` when its samples start, then sends them.
            let Ok(FromReader::Eval(eval)) = from_reader.recv() else {
                let outcome = reader.join().unwrap_or_else(|panic| resume_unwind(panic));
                return finish(input, len, outcome, &mut sink);
            };
            let groups = from_reader.into_iter().map_while(|read| match read {
                FromReader::Group(group) => Some(group),
                FromReader::Eval(_) => None,
            });
            let make = |(k, group): (usize, Vec<RawSample>)| {
                let mut part = Batch::default();
                let mut runs = SampleRuns::new(input, NAME, &eval);
                runs.before = k * SAMPLES_PER_GROUP;
                let mut end = 0;
                for (n, RawSample { text, at }) in group.into_iter().enumerate() {
                    end = at.offset + at.len;
                    runs.record = record_at(at, input);
                    match serde_json::from_str::<Value>(text.get()) {
                        Ok(sample) => runs.add(&sample, &mut part),
                        Err(why) => part.problems.push(Problem::error(
                            input.origin,
                            None,
                            format!("sample #{}: {why}", runs.before + n),
                        )),
                    }
                }
                runs.build(&mut part);
                (part, runs.counts(), end)
            };
            let mut counts = [0; 3];
            let mut take = |(part, more, end): (Batch, [usize; 3], u64)| {
                add_counts(&mut counts, more);
                sink(Piece {
                    batch: part,
                    progress: Some((end, len)),
                    more: true,
                    adds: false,
                })
            };
            let groups = groups.enumerate();
            let made = if input.may_use_every_core {
                crate::machine::map_in_order(groups, GROUPS_AHEAD, make, &mut take)
            } else {
                groups.map(make).try_for_each(&mut take)
            };
            // Stopped by `sink`: the reader stops at its next group, the channel being gone.
            let outcome = reader.join().unwrap_or_else(|panic| resume_unwind(panic));
            made?;
            if let Some(why) = outcome.error {
                return Ok(JsonLogRead::BrokenOff(format!(
                    "the log breaks off after {} samples: {why}",
                    counts[0]
                )));
            }
            let mut last = Batch::default();
            let mut runs = SampleRuns::new(input, NAME, &eval);
            runs.count(counts);
            runs.finish(outcome.status == "started", &mut last);
            sink(Piece {
                batch: last,
                progress: Some((len, len)),
                more: false,
                adds: false,
            })?;
            Ok(JsonLogRead::Read)
        })
    }
}

/// A log without samples, or a document that is not one: read here only when it is a whole
/// log, else left to the whole read.
fn finish<E>(
    input: &Input,
    len: u64,
    outcome: ReadOutcome,
    sink: &mut impl FnMut(Piece) -> Result<(), E>,
) -> Result<JsonLogRead, E> {
    let Some(eval) = outcome.eval.filter(|_| outcome.error.is_none()) else {
        return Ok(JsonLogRead::NotRead);
    };
    let mut last = Batch::default();
    SampleRuns::new(input, NAME, &eval).finish(outcome.status == "started", &mut last);
    sink(Piece {
        batch: last,
        progress: Some((len, len)),
        more: false,
        adds: false,
    })?;
    Ok(JsonLogRead::Read)
}

/// What the reading thread sends: the log's `eval` once its samples start, then the samples'
/// texts a group at a time.
enum FromReader {
    Eval(Value),
    Group(Vec<RawSample>),
}

/// A sample's text as the file holds it, and where.
struct RawSample {
    text: Box<RawValue>,
    at: SampleBytes,
}

/// How the reading of the document ended.
#[derive(Default)]
struct ReadOutcome {
    status: Value,
    /// The log's `eval`, when it was not sent (a log without samples).
    eval: Option<Value>,
    /// Where the document stopped being JSON (or being a log, before its samples).
    error: Option<serde_json::Error>,
}

/// Reads the document, sending its samples' texts to `makers`.
fn read_document(file: JsonLogFile, makers: mpsc::SyncSender<FromReader>) -> ReadOutcome {
    let position = Rc::new(Cell::new(0));
    let counted = Counted {
        inner: BufReader::with_capacity(READ_BUFFER_BYTES, file.file.take(file.len)),
        read: position.clone(),
    };
    let mut reader = serde_json::Deserializer::from_reader(counted);
    let mut log = LogState {
        position,
        makers,
        version: false,
        outcome: ReadOutcome::default(),
    };
    if let Err(why) = TopLevel(&mut log).deserialize(&mut reader) {
        log.outcome.error = Some(why);
    }
    log.outcome
}

/// True for `{` then, past white space, the key `"version"`: the first key of every log
/// Inspect writes.
fn starts_with_version_key(head: &[u8]) -> bool {
    head.trim_ascii_start()
        .strip_prefix(b"{")
        .is_some_and(|rest| rest.trim_ascii_start().starts_with(b"\"version\""))
}

/// A reader that counts the bytes it gave. serde_json reads a byte at a time from it, so the
/// count is where the parser is in the file.
struct Counted<R> {
    inner: R,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.read.set(self.read.get() + read as u64);
        Ok(read)
    }
}

/// What reading the document has found so far.
struct LogState {
    /// Where the reader is in the file.
    position: Rc<Cell<u64>>,
    makers: mpsc::SyncSender<FromReader>,
    version: bool,
    outcome: ReadOutcome,
}

impl LogState {
    fn send<E: de::Error>(&self, read: FromReader) -> Result<(), E> {
        self.makers
            .send(read)
            .map_err(|_| E::custom(STOPPED_BY_SINK))
    }
}

/// Why the reading stopped before the document's end.
const STOPPED_BY_SINK: &str = "stopped by the taker";
const NOT_A_LOG: &str = "not an Inspect log";

/// The document's top level, read key by key.
struct TopLevel<'l>(&'l mut LogState);

impl<'de> DeserializeSeed<'de> for TopLevel<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an Inspect log")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let log = self.0;
        // Sent to the makers once its samples start; kept for the end when there are none.
        let mut sent = false;
        while let Some(key) = map.next_key::<String>()? {
            match (key.as_str(), log.outcome.eval.is_some() || sent) {
                ("version", _) => log.version = map.next_value::<Value>()?.is_number(),
                ("status", _) => log.outcome.status = map.next_value()?,
                ("eval", false) => {
                    let eval: Value = map.next_value()?;
                    if !log.version || eval.get("task").is_none() {
                        return Err(de::Error::custom(NOT_A_LOG));
                    }
                    log.outcome.eval = Some(eval);
                }
                // Inspect writes `version`, `status` and `eval` first: a document with another
                // key before them is read whole, without a second pass through it here.
                (_, false) => return Err(de::Error::custom(NOT_A_LOG)),
                ("samples", true) if !sent => {
                    let eval = log.outcome.eval.take().unwrap_or_default();
                    log.send(FromReader::Eval(eval))?;
                    sent = true;
                    map.next_value_seed(Samples(&mut *log))?;
                }
                (_, true) => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The `samples` array, its samples' texts sent a group at a time.
struct Samples<'l>(&'l mut LogState);

impl<'de> DeserializeSeed<'de> for Samples<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Samples<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of samples")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let log = self.0;
        let mut group = Vec::with_capacity(SAMPLES_PER_GROUP);
        loop {
            let text = match seq.next_element::<Box<RawValue>>() {
                Ok(Some(text)) => text,
                Ok(None) => break,
                Err(why) => {
                    // The samples before the break still load.
                    log.send(FromReader::Group(group))?;
                    return Err(why);
                }
            };
            // The reader has just passed the sample's closing brace.
            let end = log.position.get();
            let len = text.get().len() as u64;
            let at = SampleBytes {
                offset: end.saturating_sub(len),
                len,
            };
            group.push(RawSample { text, at });
            if group.len() == SAMPLES_PER_GROUP {
                let full = std::mem::replace(&mut group, Vec::with_capacity(SAMPLES_PER_GROUP));
                log.send(FromReader::Group(full))?;
            }
        }
        if !group.is_empty() {
            log.send(FromReader::Group(group))?;
        }
        Ok(())
    }
}

fn add_counts(counts: &mut [usize; 3], more: [usize; 3]) {
    for (count, more) in counts.iter_mut().zip(more) {
        *count += more;
    }
}

/// Where a sample lies in the file.
#[derive(Clone, Copy)]
struct SampleBytes {
    offset: u64,
    len: u64,
}

/// The sample's record: its bytes in the log file, read again to find its payloads.
fn record_at(at: SampleBytes, input: &Input) -> Option<Arc<RecordRef>> {
    let Origin::File(path) = input.origin else {
        return None;
    };
    Some(Arc::new(RecordRef {
        path: path.clone(),
        offset: at.offset,
        len: at.len,
        gzip: false,
        format: NAME,
    }))
}
