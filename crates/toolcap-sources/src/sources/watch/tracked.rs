//! One watched file's state: is it a JSON-lines file being appended to (tailed line by line)
//! or a whole document (re-read when it changes, loaded only once it is complete)?

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::formats::{self, Format, InPlace, Input};
use crate::model::{Batch, Origin, Problem};
use crate::sources::files;
use crate::sources::tail::{LineChunk, TailPoll, Tailer, long_line_problem, starts_as_json_lines};
use crate::sources::{IngestEvent, SourceStatus};

/// The app stopped listening; the watcher winds down.
#[derive(Debug)]
pub(super) struct Closed;

/// Sends to the app, waiting while the channel is full (never dropping).
pub(super) struct Emitter {
    pub tx: tokio::sync::mpsc::Sender<IngestEvent>,
}

impl Emitter {
    pub fn send(&self, event: IngestEvent) -> Result<(), Closed> {
        self.tx.blocking_send(event).map_err(|_| Closed)
    }
}

/// Settings every tracked file shares.
pub(super) struct Ctx {
    pub registry: &'static [&'static dyn Format],
    pub quiet: Duration,
}

/// Why a file is being looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// The file system reported a change (or the file was just found).
    Change,
    /// Nothing happened to it for the quiet period: flush or give up on what is pending.
    Settle,
}

/// The file is not there (any more).
pub(super) struct Gone;

enum Mode {
    Undecided,
    Lines {
        tailer: Tailer,
        format: Option<&'static dyn Format>,
        unrecognised_reported: bool,
    },
    /// `settled` is the content hash last loaded or last reported as invalid.
    Document {
        settled: Option<u64>,
    },
}

pub(super) struct TrackedFile {
    path: PathBuf,
    origin: Origin,
    extension: Option<String>,
    mode: Mode,
    /// Something from this file reached the app, so a re-read must replace it.
    emitted: bool,
    /// What the file sent before goes with the next batch it sends (see
    /// [`TrackedFile::replace_with_next`]).
    replace_pending: bool,
    /// What the last read of a log still being written remembers, for the next read to take
    /// only what was added.
    eval_so_far: Option<formats::EvalSoFar>,
    /// When to look again if nothing changes (a pending line or an incomplete document).
    pub deadline: Option<Instant>,
    error_reported: bool,
    /// Size and modification time of a settled document: when both are unchanged, an event
    /// (e.g. for its directory) needs no re-read.
    settled_stamp: Option<(u64, SystemTime)>,
}

impl TrackedFile {
    pub fn new(path: &Path) -> Self {
        let extension = extension_of(path);
        let mode = if lines_by_name(path) && !starts_unlike_json_lines(path) {
            Mode::Lines {
                tailer: Tailer::new(path),
                format: None,
                unrecognised_reported: false,
            }
        } else {
            Mode::Undecided
        };
        TrackedFile {
            path: path.to_path_buf(),
            origin: Origin::File(std::sync::Arc::new(path.to_path_buf())),
            extension,
            mode,
            emitted: false,
            replace_pending: false,
            eval_so_far: None,
            deadline: None,
            error_reported: false,
            settled_stamp: None,
        }
    }

    /// Looks at the file and sends whatever became complete.
    pub fn process(
        &mut self,
        why: Why,
        ctx: &Ctx,
        out: &Emitter,
    ) -> Result<Result<(), Gone>, Closed> {
        let looked = self.look(why, ctx, out);
        // A re-read that sent nothing (the file emptied, or gone) still drops what it gave.
        if self.replace_pending {
            self.replace_pending = false;
            out.send(IngestEvent::Forget(self.path.clone()))?;
        }
        looked
    }

    fn look(&mut self, why: Why, ctx: &Ctx, out: &Emitter) -> Result<Result<(), Gone>, Closed> {
        if why == Why::Settle {
            self.deadline = None;
        }
        if matches!(self.mode, Mode::Lines { .. }) {
            return self.follow_lines(why, ctx, out);
        }
        let stamp = stamp_of(&self.path);
        if matches!(self.mode, Mode::Document { settled: Some(_) })
            && stamp.is_some()
            && stamp == self.settled_stamp
        {
            return Ok(Ok(()));
        }
        let (origin, path) = (self.origin.clone(), self.path.clone());
        // A file that gave runs before is replaced by this read once it is whole: its pieces are
        // held and sent as one batch, so the views keep the file's runs until then rather than
        // watching them shrink to the first piece's and grow back. A first read hands each piece
        // on as it comes; a read that only adds to the last one (a running eval's new samples)
        // does too, and says the file's notes anew.
        let rereading = self.emitted;
        let mut held = Batch::default();
        let started = Instant::now();
        let mut so_far = self.eval_so_far.take();
        let in_place =
            formats::follow_in_place(ctx.registry, &origin, &path, &mut so_far, |piece| {
                let mut batch = piece.batch;
                if piece.adds {
                    if !piece.more {
                        batch.renews_notes = Some(path.clone());
                    }
                } else if rereading {
                    held.extend(batch);
                    batch = match piece.more {
                        true => Batch::default(),
                        false => {
                            self.replace_with_next();
                            std::mem::take(&mut held)
                        }
                    };
                }
                self.send_piece(batch, piece.progress, piece.more, started, out)
            })?;
        self.eval_so_far = so_far;
        match in_place {
            InPlace::Whole => {}
            InPlace::Loaded(_) => {
                self.error_reported = false;
                self.mode = Mode::Document {
                    settled: Some(hash_of_stamp(stamp)),
                };
                self.deadline = None;
                self.settled_stamp = stamp;
                return Ok(Ok(()));
            }
            InPlace::Incomplete(reason) => {
                self.error_reported = false;
                let hash = hash_of_stamp(stamp);
                if self.settled() != Some(hash) {
                    self.incomplete(hash, reason, why, ctx, out)?;
                }
                return Ok(Ok(()));
            }
        }
        let read = match read_whole(&self.path) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Err(Gone)),
            Err(e) => return self.report_error(e.to_string(), out).map(Ok),
        };
        self.error_reported = false;
        // JSON lines, or a line past the limit (no document then), are followed as lines: the
        // tailer reads what is new and tells and skips long lines one by one.
        let bytes = match read.into_whole() {
            Some(bytes) if !starts_as_json_lines(&bytes) => bytes,
            _ => {
                self.replace_with_next();
                self.mode = Mode::Lines {
                    tailer: Tailer::new(&self.path),
                    format: None,
                    unrecognised_reported: false,
                };
                return self.follow_lines(why, ctx, out);
            }
        };
        if bytes.trim_ascii().is_empty() {
            // A fresh file an exporter has not written to yet (nothing to say), or a document
            // emptied for a rewrite: its old content goes once it stays empty.
            match why {
                Why::Change => self.deadline = Some(Instant::now() + ctx.quiet),
                Why::Settle => {
                    self.forget(out)?;
                    self.mode = Mode::Undecided;
                }
            }
            return Ok(Ok(()));
        }
        self.document(bytes, why, ctx, out)?;
        self.settled_stamp = match self.mode {
            Mode::Document { settled: Some(_) } => stamp,
            _ => None,
        };
        Ok(Ok(()))
    }

    fn document(
        &mut self,
        bytes: Vec<u8>,
        why: Why,
        ctx: &Ctx,
        out: &Emitter,
    ) -> Result<(), Closed> {
        let hash = content_hash(&bytes);
        if self.settled() == Some(hash) {
            return Ok(());
        }
        match completeness(&bytes) {
            Ok(()) => {
                let batch = parse_document(ctx.registry, &self.origin, &bytes);
                drop(bytes);
                self.settle_document(batch, hash, out)
            }
            Err(reason) => self.incomplete(hash, reason.to_string(), why, ctx, out),
        }
    }

    /// The hash of the content the document's runs were last sent for.
    fn settled(&self) -> Option<u64> {
        match self.mode {
            Mode::Document { settled } => settled,
            _ => None,
        }
    }

    /// Replaces what the document sent before with `batch`, the runs of the content `hash`.
    fn settle_document(&mut self, batch: Batch, hash: u64, out: &Emitter) -> Result<(), Closed> {
        if self.settled() == Some(hash) {
            return Ok(());
        }
        self.replace_with_next();
        self.mode = Mode::Document {
            settled: Some(hash),
        };
        self.deadline = None;
        self.send(batch, out)
    }

    /// A document that is not whole yet: waited for while it changes, and said once when it
    /// stays so for a whole quiet period, until it changes again.
    fn incomplete(
        &mut self,
        hash: u64,
        reason: String,
        why: Why,
        ctx: &Ctx,
        out: &Emitter,
    ) -> Result<(), Closed> {
        if why == Why::Change {
            let settled = self.settled();
            self.mode = Mode::Document { settled };
            self.deadline = Some(Instant::now() + ctx.quiet);
            return Ok(());
        }
        self.mode = Mode::Document {
            settled: Some(hash),
        };
        self.replace_with_next();
        let mut batch = Batch::default();
        batch.problems.push(Problem::error(
            &self.origin,
            None,
            format!(
                "still not a complete document after {} ms without changes: {reason}",
                ctx.quiet.as_millis()
            ),
        ));
        self.send(batch, out)
    }

    /// Reads and sends the file's new complete lines, a budget's worth per batch, so a big
    /// file's first runs reach the list while the rest is read.
    fn follow_lines(
        &mut self,
        why: Why,
        ctx: &Ctx,
        out: &Emitter,
    ) -> Result<Result<(), Gone>, Closed> {
        let started = Instant::now();
        let mut in_pieces = false;
        loop {
            let piece = match self.follow_lines_once(why, ctx, out)? {
                Ok(piece) => piece,
                Err(gone) => return Ok(Err(gone)),
            };
            // Progress is worth a status line only for a file that takes several pieces.
            in_pieces |= piece.more;
            let progress = piece.progress.filter(|_| in_pieces);
            self.send_piece(piece.batch, progress, piece.more, started, out)?;
            if !piece.more {
                return Ok(Ok(()));
            }
            if let Mode::Lines {
                format: Some(format),
                ..
            } = self.mode
            {
                return self.follow_lines_in_parallel(format, why, ctx, started, out);
            }
        }
    }

    /// Sends a piece's runs and the read's progress after it (`None`: a file read in one
    /// piece says nothing). While more follows, the progress goes first, so the first runs
    /// listed never look like the end of the read; the last piece's runs go before the
    /// progress that says the read is done.
    fn send_piece(
        &mut self,
        batch: Batch,
        progress: Option<(u64, u64)>,
        more: bool,
        started: Instant,
        out: &Emitter,
    ) -> Result<(), Closed> {
        let status = progress.map(|(read, total)| {
            let seconds = started.elapsed().as_secs_f64().max(1e-3);
            IngestEvent::Status(SourceStatus::Reading {
                path: self.path.clone(),
                read,
                total: total.max(read),
                bytes_per_sec: (read as f64 / seconds) as u64,
            })
        });
        match status {
            Some(status) if more => {
                out.send(status)?;
                self.send(batch, out)
            }
            Some(status) => {
                self.send(batch, out)?;
                out.send(status)
            }
            None => self.send(batch, out),
        }
    }

    /// The rest of a big read once its format is known: pieces are read in turn and parsed on
    /// every core, and each piece's progress and runs are sent in file order, as the serial
    /// path sends them. A rewrite or a read error met on the way goes to the serial path.
    fn follow_lines_in_parallel(
        &mut self,
        format: &'static dyn Format,
        why: Why,
        ctx: &Ctx,
        started: Instant,
        out: &Emitter,
    ) -> Result<Result<(), Gone>, Closed> {
        let Mode::Lines { tailer, .. } = &mut self.mode else {
            return Ok(Ok(()));
        };
        let mut tailer = std::mem::replace(tailer, Tailer::new(&self.path));
        let flush = why == Why::Settle;
        let origin = self.origin.clone();
        // Parsed pieces' buffers go back to the tailer, to be read into again.
        let spare: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
        let mut at_end = false;
        // A poll the serial path handles: a rewrite, or a read error.
        let mut handed_back: Option<std::io::Result<TailPoll>> = None;
        let polls = std::iter::from_fn(|| {
            if at_end || handed_back.is_some() {
                return None;
            }
            let mut spare = spare.lock().unwrap_or_else(PoisonError::into_inner);
            spare.drain(..).for_each(|buffer| tailer.recycle(buffer));
            drop(spare);
            match tailer.poll(flush) {
                Ok(poll) if !poll.reset => {
                    at_end = !poll.more;
                    Some(poll)
                }
                other => {
                    handed_back = Some(other);
                    None
                }
            }
        });
        let parse = |poll: TailPoll| {
            let mut batch = Batch::default();
            for chunk in poll.chunks {
                batch.extend(formats::parse_chunk_as(
                    format,
                    &origin,
                    &chunk.bytes,
                    chunk.offset,
                    chunk.line,
                    false,
                ));
                let mut spare = spare.lock().unwrap_or_else(PoisonError::into_inner);
                spare.push(chunk.bytes);
            }
            for long in &poll.long_lines {
                batch.problems.push(long_line_problem(&origin, long));
            }
            let progress = (poll.consumed, poll.file_len);
            (batch, progress, poll.more, poll.pending_bytes)
        };
        let mut pending_bytes = 0;
        let ahead = crate::machine::cores() + 1;
        let sent = crate::machine::map_in_order(
            polls,
            ahead,
            parse,
            |(batch, progress, more, pending)| {
                pending_bytes = pending;
                self.send_piece(batch, Some(progress), more, started, out)
            },
        );
        if let Mode::Lines { tailer: slot, .. } = &mut self.mode {
            *slot = tailer;
        }
        sent?;
        if pending_bytes > 0 && why == Why::Change {
            self.deadline = Some(Instant::now() + ctx.quiet);
        }
        match handed_back {
            None => Ok(Ok(())),
            Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(Err(Gone)),
            Some(Err(e)) => self.report_error(e.to_string(), out).map(Ok),
            // Rewritten while read: what was sent goes with the first of the new, and the file
            // is read again.
            Some(Ok(_)) => {
                self.replace_with_next();
                self.mode = if self.extension_is_lines() {
                    Mode::Lines {
                        tailer: Tailer::new(&self.path),
                        format: None,
                        unrecognised_reported: false,
                    }
                } else {
                    Mode::Undecided
                };
                self.process(why, ctx, out)
            }
        }
    }

    /// One poll and the batch of its lines, not sent yet.
    fn follow_lines_once(
        &mut self,
        why: Why,
        ctx: &Ctx,
        out: &Emitter,
    ) -> Result<Result<Piece, Gone>, Closed> {
        let Mode::Lines { tailer, .. } = &mut self.mode else {
            return Ok(Ok(Piece::default()));
        };
        let poll = match tailer.poll(why == Why::Settle) {
            Ok(poll) => poll,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Err(Gone)),
            Err(e) => {
                return self
                    .report_error(e.to_string(), out)
                    .map(|()| Ok(Piece::default()));
            }
        };
        self.error_reported = false;
        if poll.reset {
            self.replace_with_next();
            if self.extension_is_lines() {
                self.mode = Mode::Lines {
                    tailer: Tailer::new(&self.path),
                    format: None,
                    unrecognised_reported: false,
                };
            } else {
                // Rewritten: it may not even be JSON lines any more.
                self.mode = Mode::Undecided;
            }
            return self
                .process(why, ctx, out)
                .map(|r| r.map(|()| Piece::default()));
        }
        let mut batch = Batch::default();
        let Mode::Lines {
            format,
            unrecognised_reported,
            ..
        } = &mut self.mode
        else {
            return Ok(Ok(Piece::default()));
        };
        for chunk in &poll.chunks {
            let parsed = match format {
                Some(known) => {
                    formats::load_chunk_as(
                        *known,
                        self.origin.clone(),
                        &chunk.bytes,
                        chunk.offset,
                        chunk.line,
                    )
                    .batch
                }
                None => {
                    let (found, mut parsed, unrecognised) =
                        detect_in_chunk(ctx.registry, &self.origin, &self.extension, chunk);
                    if found.is_some() {
                        *format = found;
                    }
                    if let Some(line) = unrecognised
                        && !*unrecognised_reported
                    {
                        *unrecognised_reported = true;
                        parsed.problems.push(Problem::error(
                            &self.origin,
                            Some(line),
                            UNRECOGNISED,
                        ));
                    }
                    parsed
                }
            };
            batch.extend(parsed);
        }
        for long in &poll.long_lines {
            batch.problems.push(long_line_problem(&self.origin, long));
        }
        if poll.pending_bytes > 0 && why == Why::Change {
            self.deadline = Some(Instant::now() + ctx.quiet);
        }
        Ok(Ok(Piece {
            more: poll.more,
            progress: Some((poll.consumed, poll.file_len)),
            batch,
        }))
    }

    fn extension_is_lines(&self) -> bool {
        lines_by_name(&self.path)
    }

    fn send(&mut self, mut batch: Batch, out: &Emitter) -> Result<(), Closed> {
        if self.replace_pending {
            self.replace_pending = false;
            batch.replaces = Some(self.path.clone());
        }
        if is_empty(&batch) {
            return Ok(());
        }
        self.emitted = true;
        out.send(IngestEvent::Batch(batch))
    }

    /// Makes the next batch sent, the first of a re-read, replace what the file sent before:
    /// both in one event, so no view settles in between without the file's runs (the cursor
    /// stays put). A look that ends without sending one forgets on its own.
    fn replace_with_next(&mut self) {
        self.eval_so_far = None;
        if self.emitted {
            self.emitted = false;
            self.replace_pending = true;
        }
    }

    /// Tells the app to drop what it has from this file (when it vanished, or before a
    /// re-read that may send nothing).
    pub fn forget(&mut self, out: &Emitter) -> Result<(), Closed> {
        self.eval_so_far = None;
        if self.emitted || self.replace_pending {
            self.emitted = false;
            self.replace_pending = false;
            out.send(IngestEvent::Forget(self.path.clone()))?;
        }
        Ok(())
    }

    fn report_error(&mut self, message: String, out: &Emitter) -> Result<(), Closed> {
        if self.error_reported {
            return Ok(());
        }
        self.error_reported = true;
        let mut batch = Batch::default();
        batch
            .problems
            .push(Problem::error(&self.origin, None, message));
        self.send(batch, out)
    }
}

/// What one poll of a lines file did.
#[derive(Default)]
struct Piece {
    /// Complete lines are still waiting past the poll's budget.
    more: bool,
    /// Bytes consumed of the file's size.
    progress: Option<(u64, u64)>,
    /// What the poll's lines held, sent after the progress it makes.
    batch: Batch,
}

const UNRECOGNISED: &str = "no known trace format recognised this content";

/// Detects the format at the first line of `chunk` that some format recognises and parses
/// from there. Also returns the 1-based number of the first non-blank line nobody recognised.
fn detect_in_chunk(
    registry: &[&'static dyn Format],
    origin: &Origin,
    extension: &Option<String>,
    chunk: &LineChunk,
) -> (Option<&'static dyn Format>, Batch, Option<u64>) {
    let mut start = 0usize;
    let mut line = chunk.line;
    let mut unrecognised = None;
    while let Some(rest) = chunk
        .bytes
        .get(start..)
        .filter(|r| !r.trim_ascii().is_empty())
    {
        let mut input = Input::new(origin, rest, extension.clone());
        input.base_offset = chunk.offset + start as u64;
        input.base_line = line;
        if let Some((format, _)) = formats::detect(registry, &input) {
            return (Some(format), formats::parse(format, &input), unrecognised);
        }
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        if unrecognised.is_none() && !rest.get(..end).unwrap_or_default().trim_ascii().is_empty() {
            unrecognised = Some(line + 1);
        }
        start += end + 1;
        line += 1;
    }
    (None, Batch::default(), unrecognised)
}

fn is_empty(batch: &Batch) -> bool {
    batch.replaces.is_none()
        && batch.renews_notes.is_none()
        && batch.spans.is_empty()
        && batch.problems.is_empty()
        && batch.evals.is_empty()
        && batch.golds.is_empty()
        && batch.aliases.is_empty()
        && batch.invocation_names.is_empty()
}

/// `Ok` when a document can be parsed now; otherwise why it looks unfinished.
fn completeness(bytes: &[u8]) -> Result<(), crate::Error> {
    match formats::otlp::container::unwrap(bytes) {
        Err(error) => return Err(error.into()),
        Ok(Some(unwrapped)) if unwrapped.incomplete_tail => {
            return Err(crate::Error::IncompleteMessage);
        }
        Ok(Some(_)) => return Ok(()),
        Ok(None) => {}
    }
    if formats::inspect::zip_is_complete(bytes) == Some(false) {
        return Err(crate::Error::IncompleteZip);
    }
    let text = bytes.trim_ascii();
    if text.starts_with(b"{") || text.starts_with(b"[") {
        return serde_json::from_slice::<serde::de::IgnoredAny>(text)
            .map(|_| ())
            .map_err(crate::Error::InvalidJson);
    }
    // Binary (protobuf) documents carry no end marker; the debounce is all the waiting we do.
    Ok(())
}

/// Detects and parses a whole document against `registry` with the loader `dump` uses.
pub(super) fn parse_document(
    registry: &[&'static dyn Format],
    origin: &Origin,
    raw: &[u8],
) -> Batch {
    formats::load_bytes_with(registry, origin.clone(), raw).batch
}

fn stamp_of(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// The file read as `dump` reads a file whole, refused at once when it is bigger than a
/// document may be.
fn read_whole(path: &Path) -> std::io::Result<files::WholeRead> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > formats::MAX_DECOMPRESSED_BYTES {
        return Err(std::io::Error::other(format!(
            "file is {len} bytes, more than the {} bytes a document may have",
            formats::MAX_DECOMPRESSED_BYTES
        )));
    }
    files::read_whole(&mut file, len)
}

/// What stands for the content of a file read in place: its size and modification time.
fn hash_of_stamp(stamp: Option<(u64, SystemTime)>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    stamp.hash(&mut hasher);
    hasher.finish()
}

fn content_hash(bytes: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

/// `.jsonl` / `.ndjson` files are tailed from their first byte (gzipped ones are documents).
/// A `.jsonl` name promises JSON lines, but the Collector's file exporter keeps the name for
/// gzip, zstd and length-prefixed output: bytes already there that do not open like JSON send
/// the file through the document loader, which recognises containers by content.
fn starts_unlike_json_lines(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 64];
    let read = std::fs::File::open(path)
        .and_then(|mut file| file.read(&mut head))
        .unwrap_or(0);
    let text = head[..read].trim_ascii_start();
    !text.is_empty() && !text.starts_with(b"{")
}

fn lines_by_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    name.ends_with(".jsonl") || name.ends_with(".ndjson")
}

/// Lower-cased extension, looking through a trailing `.gz`.
fn extension_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().to_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    Path::new(name)
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
}
