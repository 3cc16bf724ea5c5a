//! The durable spool behind `toolcap-tui serve`: every accepted request becomes one OTLP/JSON
//! line in `DIR/spool-NNNNNN.otlp.jsonl`, segments rotated by size, and is on disk
//! (`fdatasync`) before the request is acknowledged, so `kill -9` (or a power cut) loses no
//! acknowledged span.
//!
//! One writer thread owns the files. Requests queue to it (bounded by bytes: a full queue is
//! reported as [`SinkError::Full`], i.e. 503), and it commits whatever has queued up with a
//! single sync ("group commit"), which is what keeps durable throughput high.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot, watch};

use super::{ReceivedRequest, RequestSink, SinkError};
use crate::formats::MAX_LINE_BYTES;

const SEGMENT_PREFIX: &str = "spool-";
const SEGMENT_SUFFIX: &str = ".otlp.jsonl";
/// Most bytes one group commit writes before syncing.
const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;

/// File name of segment `number`; zero-padded so names sort in write order.
pub fn segment_name(number: u32) -> String {
    format!("{SEGMENT_PREFIX}{number:06}{SEGMENT_SUFFIX}")
}

fn segment_number(name: &str) -> Option<u32> {
    name.strip_prefix(SEGMENT_PREFIX)?
        .strip_suffix(SEGMENT_SUFFIX)?
        .parse()
        .ok()
}

#[derive(Debug, Clone)]
pub struct SpoolConfig {
    pub dir: PathBuf,
    /// A segment that has reached this size is closed and the next write starts a new one.
    pub segment_bytes: u64,
    /// Serialized requests waiting for the writer, in bytes, before clients get 503.
    pub queue_bytes: usize,
}

/// A segment file and how many of its bytes are committed (complete, synced lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub number: u32,
    pub committed_len: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Committed {
    pub requests: u64,
    pub spans: u64,
    pub segments: Vec<Segment>,
}

/// Published after every commit so feed readers wake up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub requests: u64,
    pub closed: bool,
}

/// What readers of the spool share with the writer.
pub struct SpoolState {
    pub dir: PathBuf,
    committed: Mutex<Committed>,
    progress: watch::Sender<Progress>,
    /// Why the last commit failed, until one succeeds again (health reports it).
    write_failure: Mutex<Option<String>>,
}

impl SpoolState {
    /// The error of the last commit if it failed and none has succeeded since.
    pub fn write_failure(&self) -> Option<String> {
        lock(&self.write_failure).clone()
    }

    pub fn committed(&self) -> Committed {
        lock(&self.committed).clone()
    }

    pub fn subscribe(&self) -> watch::Receiver<Progress> {
        self.progress.subscribe()
    }

    /// Committed length of segment `number` and the number of the segment after it.
    pub fn segment_extent(&self, number: u32) -> Option<(u64, Option<u32>)> {
        let committed = lock(&self.committed);
        let index = committed
            .segments
            .iter()
            .position(|segment| segment.number == number)?;
        let next = committed.segments.get(index + 1).map(|s| s.number);
        Some((committed.segments[index].committed_len, next))
    }

    pub fn first_segment(&self) -> Option<u32> {
        lock(&self.committed).segments.first().map(|s| s.number)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct Job {
    line: Vec<u8>,
    spans: u64,
    done: oneshot::Sender<Result<(), Arc<std::io::Error>>>,
    _queue_space: OwnedSemaphorePermit,
}

pub struct Spool {
    state: Arc<SpoolState>,
    /// Held open for the spool's life: its exclusive lock keeps a second writer out of `dir`.
    _lock: File,
    jobs: Mutex<Option<mpsc::UnboundedSender<Job>>>,
    queue_space: Arc<Semaphore>,
    queue_bytes: usize,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Spool {
    /// Opens (or creates) the spool in `config.dir`, recovering counts from existing segments and
    /// cutting off a torn last line left by a crash (it was never acknowledged).
    pub fn open(config: SpoolConfig) -> std::io::Result<Self> {
        if !config.dir.is_dir() {
            let mut builder = fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(&config.dir)?;
            // The new directory's own entry must survive a crash too.
            if let Some(parent) = config.dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                File::open(parent)?.sync_all()?;
            }
        }
        owner_only(&config.dir, 0o700)?;
        let lock_file = lock_dir(&config.dir)?;
        let committed = recover(&config.dir)?;
        let (progress, _) = watch::channel(Progress {
            requests: committed.requests,
            closed: false,
        });
        let state = Arc::new(SpoolState {
            dir: config.dir.clone(),
            committed: Mutex::new(committed),
            progress,
            write_failure: Mutex::new(None),
        });
        let (jobs, receiver) = mpsc::unbounded_channel();
        let writer_state = state.clone();
        let segment_bytes = config.segment_bytes.max(1);
        let writer = std::thread::Builder::new()
            .name("spool-writer".into())
            .spawn(move || write_loop(receiver, &writer_state, segment_bytes))?;
        let queue_bytes = config.queue_bytes.clamp(1, Semaphore::MAX_PERMITS);
        Ok(Self {
            state,
            _lock: lock_file,
            jobs: Mutex::new(Some(jobs)),
            queue_space: Arc::new(Semaphore::new(queue_bytes)),
            queue_bytes,
            writer: Mutex::new(Some(writer)),
        })
    }

    pub fn state(&self) -> Arc<SpoolState> {
        self.state.clone()
    }

    /// Appends one line (without its newline) and resolves once it is synced to disk.
    pub async fn append(&self, line: Vec<u8>, spans: u64) -> Result<(), SinkError> {
        self.enqueue(line, spans)?.await
    }

    /// Queues one line (without its newline) for the writer; what is returned resolves once
    /// the line is synced to disk. A full queue is refused at once.
    fn enqueue(&self, mut line: Vec<u8>, spans: u64) -> Result<super::Delivery, SinkError> {
        line.push(b'\n');
        // A line larger than the whole queue still gets in, alone.
        let wanted = u32::try_from(line.len().min(self.queue_bytes)).unwrap_or(u32::MAX);
        let queue_space = self
            .queue_space
            .clone()
            .try_acquire_many_owned(wanted)
            .map_err(|_| SinkError::Full)?;
        let (done, acknowledged) = oneshot::channel();
        let job = Job {
            line,
            spans,
            done,
            _queue_space: queue_space,
        };
        let sent = lock(&self.jobs)
            .as_ref()
            .map(|jobs| jobs.send(job).is_ok())
            .unwrap_or(false);
        if !sent {
            return Err(SinkError::Unavailable("the spool is shutting down".into()));
        }
        Ok(Box::pin(async move {
            match acknowledged.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(reason)) => Err(SinkError::Unavailable(reason.to_string())),
                Err(_) => Err(SinkError::Unavailable("the spool writer stopped".into())),
            }
        }))
    }

    /// Commits what is queued, stops the writer and wakes feed readers so they can finish.
    pub fn close(&self) {
        lock(&self.jobs).take();
        if let Some(writer) = lock(&self.writer).take() {
            let _ = writer.join();
        }
        self.state
            .progress
            .send_modify(|progress| progress.closed = true);
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.close();
    }
}

impl RequestSink for Spool {
    /// The spool keeps OTLP/JSON with every field the client sent: the accepted spans are
    /// written as one line by [`CheckedRequest::spool_line`] (straight from a protobuf body's
    /// bytes, through the owned request for JSON).
    ///
    /// [`CheckedRequest::spool_line`]: crate::formats::otlp::CheckedRequest::spool_line
    fn take(&self, received: ReceivedRequest<'_>) -> Result<super::Delivery, SinkError> {
        let spans = u64::try_from(received.spans()).unwrap_or(u64::MAX);
        let line = received
            .checked
            .spool_line()
            .map_err(|err| SinkError::Unavailable(format!("cannot encode request: {err}")))?;
        // A longer line would be skipped by every reader of the spool (the tailer's bound):
        // acknowledging it would promise data nobody can load.
        if line.len() as u64 > MAX_LINE_BYTES {
            return Err(SinkError::TooLarge(format!(
                "the request is {:.1} MiB once written as OTLP/JSON, over the {} MiB a spool line may hold; send fewer spans per request",
                line.len() as f64 / f64::from(1 << 20),
                MAX_LINE_BYTES >> 20
            )));
        }
        self.enqueue(line, spans)
    }
}

struct OpenSegment {
    number: u32,
    file: File,
    len: u64,
}

fn write_loop(mut receiver: mpsc::UnboundedReceiver<Job>, state: &SpoolState, segment_bytes: u64) {
    let mut current: Option<OpenSegment> = None;
    while let Some(first) = receiver.blocking_recv() {
        let mut batch_bytes = first.line.len();
        let mut batch = vec![first];
        while batch_bytes < MAX_BATCH_BYTES {
            match receiver.try_recv() {
                Ok(job) => {
                    batch_bytes += job.line.len();
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        let result = commit_batch(&mut current, &batch, state, segment_bytes).map_err(Arc::new);
        match &result {
            Err(err) => {
                tracing::error!("spool write failed: {err}");
                *lock(&state.write_failure) = Some(err.to_string());
                // Reopen on the next batch so a transient error does not poison the handle.
                current = None;
            }
            Ok(()) => {
                lock(&state.write_failure).take();
            }
        }
        for job in batch {
            let _ = job
                .done
                .send(result.as_ref().map(|_| ()).map_err(Arc::clone));
        }
    }
    if let Some(segment) = current {
        let _ = segment.file.sync_all();
    }
}

/// Writes a batch to one segment and syncs it; on failure the segment is cut back to its
/// previous length so the spool never holds a half-written line.
fn commit_batch(
    current: &mut Option<OpenSegment>,
    batch: &[Job],
    state: &SpoolState,
    segment_bytes: u64,
) -> std::io::Result<()> {
    let batch_bytes: u64 = batch.iter().map(|job| job.line.len() as u64).sum();
    let needs_new = match current {
        Some(segment) => !fits(segment.len, batch_bytes, segment_bytes),
        None => true,
    };
    if needs_new {
        *current = Some(open_segment(state, segment_bytes, batch_bytes)?);
    }
    let Some(segment) = current.as_mut() else {
        return Err(std::io::Error::other("no open segment"));
    };
    let before = segment.len;
    // Line by line rather than one concatenated buffer: a batch can be megabytes and copying
    // it would double the writer's memory for a handful of saved syscalls.
    let written = batch
        .iter()
        .try_for_each(|job| segment.file.write_all(&job.line))
        .and_then(|()| segment.file.sync_data());
    if let Err(err) = written {
        let _ = segment.file.set_len(before);
        return Err(err);
    }
    segment.len = before + batch.iter().map(|job| job.line.len() as u64).sum::<u64>();
    let spans: u64 = batch.iter().map(|job| job.spans).sum();
    let requests = batch.len() as u64;
    let total = {
        let mut committed = lock(&state.committed);
        committed.requests += requests;
        committed.spans += spans;
        match committed.segments.last_mut() {
            Some(last) if last.number == segment.number => last.committed_len = segment.len,
            _ => committed.segments.push(Segment {
                number: segment.number,
                committed_len: segment.len,
            }),
        }
        committed.requests
    };
    state
        .progress
        .send_modify(|progress| progress.requests = total);
    Ok(())
}

/// Continues the last segment while it has room, otherwise creates the next one (and syncs
/// the directory so the new file's name survives a crash too).
fn open_segment(
    state: &SpoolState,
    segment_bytes: u64,
    batch_bytes: u64,
) -> std::io::Result<OpenSegment> {
    let last = lock(&state.committed).segments.last().copied();
    let number = match last {
        Some(last) if fits(last.committed_len, batch_bytes, segment_bytes) => last.number,
        Some(last) => last.number.saturating_add(1),
        None => 1,
    };
    let path = state.dir.join(segment_name(number));
    let file = crate::system::owner_only_file()
        .create(true)
        .append(true)
        .open(&path)?;
    let len = file.metadata()?.len();
    if last.map(|l| l.number) != Some(number) {
        File::open(&state.dir)?.sync_all()?;
    }
    Ok(OpenSegment { number, file, len })
}

/// Whether `batch` more bytes keep a segment of `len` within `limit`. An empty segment takes
/// any batch: a single request larger than the limit still has to go somewhere.
fn fits(len: u64, batch: u64, limit: u64) -> bool {
    len == 0 || len.saturating_add(batch) <= limit
}

/// Name of the lock file in the spool directory. A dot-file, because loading and watching a
/// directory pass over dot-files silently: opening a spool must not report its lock as a skipped file.
pub const LOCK_FILE_NAME: &str = ".serve.lock";

/// Takes the spool directory's exclusive lock, or says who holds it.
fn lock_dir(dir: &Path) -> std::io::Result<File> {
    let path = dir.join(LOCK_FILE_NAME);
    let file = crate::system::owner_only_file()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            format!(
                "the spool directory {} is in use by another toolcap-tui serve (it holds {}); \
                 stop that one or give this one another --out",
                dir.display(),
                path.display()
            ),
        )),
        Err(fs::TryLockError::Error(err)) => Err(std::io::Error::new(
            err.kind(),
            format!("cannot lock {}: {err}", path.display()),
        )),
    }
}

/// Makes `path` accessible to its owner only (spooled traces hold raw payloads).
fn owner_only(path: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let current = fs::metadata(path)?.permissions().mode() & 0o777;
        if current != mode {
            fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
        }
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
}

#[derive(Deserialize)]
struct SpanCountRequest {
    #[serde(default, rename = "resourceSpans")]
    resource_spans: Vec<SpanCountResource>,
}

#[derive(Deserialize)]
struct SpanCountResource {
    #[serde(default, rename = "scopeSpans")]
    scope_spans: Vec<SpanCountScope>,
}

#[derive(Deserialize)]
struct SpanCountScope {
    #[serde(default)]
    spans: Vec<IgnoredAny>,
}

/// Spans in one spool line, without building the spans themselves.
pub fn count_spans(line: &[u8]) -> Option<u64> {
    let request: SpanCountRequest = serde_json::from_slice(line).ok()?;
    Some(
        request
            .resource_spans
            .iter()
            .flat_map(|resource| &resource.scope_spans)
            .map(|scope| scope.spans.len() as u64)
            .sum(),
    )
}

/// Segment numbers present in `dir`, in order.
pub fn list_segments(dir: &Path) -> std::io::Result<Vec<u32>> {
    let mut numbers: Vec<u32> = fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|entry| segment_number(&entry.file_name().to_string_lossy()))
        .collect();
    numbers.sort_unstable();
    Ok(numbers)
}

fn recover(dir: &Path) -> std::io::Result<Committed> {
    let numbers = list_segments(dir)?;
    let mut committed = Committed::default();
    for (index, number) in numbers.iter().enumerate() {
        let path = dir.join(segment_name(*number));
        let mut reader = BufReader::new(File::open(&path)?);
        let mut line = Vec::new();
        let mut complete_len = 0u64;
        loop {
            line.clear();
            let read = reader.read_until(b'\n', &mut line)?;
            if read == 0 || line.last() != Some(&b'\n') {
                break;
            }
            complete_len += read as u64;
            committed.requests += 1;
            match count_spans(&line) {
                Some(spans) => committed.spans += spans,
                None => tracing::warn!(
                    "{}: a line is not an OTLP/JSON request; kept as is",
                    path.display()
                ),
            }
        }
        let file_len = reader.seek(SeekFrom::End(0))?;
        if file_len > complete_len && index + 1 == numbers.len() {
            tracing::warn!(
                "{}: dropping a torn last line ({} bytes, never acknowledged)",
                path.display(),
                file_len - complete_len
            );
            let file = OpenOptions::new().write(true).open(&path)?;
            file.set_len(complete_len)?;
            file.sync_all()?;
        }
        committed.segments.push(Segment {
            number: *number,
            committed_len: complete_len,
        });
    }
    Ok(committed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;

    #[test]
    fn segment_names_sort_in_write_order_and_parse_back() {
        assert_eq!(segment_name(7), "spool-000007.otlp.jsonl");
        assert!(segment_name(9) < segment_name(10));
        assert_eq!(segment_number(&segment_name(123_456)), Some(123_456));
        assert_eq!(segment_number("spool-000001.otlp.jsonl.tmp"), None);
        assert_eq!(segment_number("notes.txt"), None);
    }

    #[test]
    fn a_spool_line_is_otlp_json_that_decodes_to_the_same_request() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/corpus/otlp-python-sdk/http-protobuf");
        let mut checked = 0;
        for entry in fs::read_dir(fixtures).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("pb") {
                continue;
            }
            let request = ExportTraceServiceRequest::decode(&fs::read(&path).unwrap()[..]).unwrap();
            let line = serde_json::to_vec(&request).unwrap();
            assert!(!line.contains(&b'\n'), "one request, one line");
            let text = String::from_utf8(line.clone()).unwrap();
            assert!(text.contains("\"traceId\":\"") && text.contains("\"startTimeUnixNano\":\""));
            let back: ExportTraceServiceRequest = serde_json::from_slice(&line).unwrap();
            assert_eq!(back, request, "{}", path.display());
            let spans = crate::formats::otlp::checked::span_count(&request);
            assert_eq!(count_spans(&line), Some(spans as u64));
            checked += 1;
        }
        assert_eq!(checked, 5);
    }
}
