//! Shared by the watcher and attach tests: a tiny line format the tests control (the real
//! parsers live on other branches), and a recorder that applies ingest events the way the
//! store would (a `Forget` drops what a file delivered).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toolcap::formats::{Format, Input};
use toolcap::model::{AttrValue, Batch, Origin, Problem, Span};
use toolcap::sources::{IngestEvent, SourceStatus};

/// `{"t":"ID"}` per line (or a document `{"spans":["ID",...]}`): one span per id. A span
/// remembers the 1-based line and byte offset it was read from, so tests can check that
/// tailed chunks keep file positions. Anything else becomes a problem with its line.
pub struct TestLines;

pub static TEST_REGISTRY: &[&dyn Format] = &[&TestLines];

impl Format for TestLines {
    fn name(&self) -> &'static str {
        "test-lines"
    }

    fn detect(&self, input: &Input) -> Option<String> {
        let head = input.head_json()?;
        (head.get("t").is_some() || head.get("spans").is_some()).then(|| "test ids".into())
    }

    fn parse(&self, input: &Input) -> Batch {
        let mut batch = Batch::default();
        if let Ok(doc) = serde_json::from_slice::<serde_json::Value>(input.bytes)
            && let Some(ids) = doc.get("spans").and_then(|s| s.as_array())
        {
            for id in ids.iter().filter_map(|i| i.as_str()) {
                batch
                    .spans
                    .push(span(input.origin, id, None, input.base_offset));
            }
            return batch;
        }
        let mut local_offset = 0u64;
        for (index, line) in input.bytes.split_inclusive(|b| *b == b'\n').enumerate() {
            let number = input.base_line + index as u64 + 1;
            let offset = input.base_offset + local_offset;
            local_offset += line.len() as u64;
            if line.trim_ascii().is_empty() {
                continue;
            }
            let id = serde_json::from_slice::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("t").and_then(|t| t.as_str()).map(str::to_owned));
            match id {
                Some(id) => batch
                    .spans
                    .push(span(input.origin, &id, Some(number), offset)),
                None => batch.problems.push(Problem::error(
                    input.origin,
                    Some(number),
                    format!("bad line: {}", String::from_utf8_lossy(line).trim()),
                )),
            }
        }
        batch
    }
}

fn span(origin: &Origin, id: &str, line: Option<u64>, offset: u64) -> Span {
    Span {
        trace_id: "test".into(),
        span_id: id.into(),
        name: id.into(),
        provenance: toolcap::model::Provenance::shared(
            Some(&std::sync::Arc::new(origin.clone())),
            None,
            "test-lines".into(),
        ),
        line: line.and_then(toolcap::model::LineNumber::new),
        attributes: vec![("offset".into(), AttrValue::Int(offset as i64))].into(),
        ..Span::default()
    }
}

/// One received span: id, line, byte offset.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Got {
    pub id: String,
    pub line: Option<u64>,
    pub offset: i64,
}

/// What the app would hold after applying every event so far.
#[derive(Debug, Default)]
pub struct Recorder {
    pub by_file: BTreeMap<PathBuf, Vec<Got>>,
    pub problems: Vec<Problem>,
    pub forgets: Vec<PathBuf>,
    /// Files whose re-read came as one batch replacing what they gave (also in `forgets`).
    pub replaced: Vec<PathBuf>,
    /// The spans each of those replacing batches brought.
    pub replacing_spans: Vec<usize>,
    pub statuses: Vec<SourceStatus>,
    /// Every span ever delivered, including ones later forgotten.
    pub delivered: usize,
}

impl Recorder {
    pub fn apply(&mut self, event: IngestEvent) {
        match event {
            IngestEvent::Batch(mut batch) => {
                if let Some(path) = batch.replaces.take() {
                    self.replaced.push(path.clone());
                    self.replacing_spans.push(batch.spans.len());
                    self.apply(IngestEvent::Forget(path));
                }
                if let Some(path) = batch.renews_notes.take() {
                    self.problems.retain(|p| !p.is_note_of(&path));
                }
                for span in batch.spans {
                    self.delivered += 1;
                    let key = match span.origin() {
                        Some(Origin::File(path)) => (**path).clone(),
                        Some(Origin::Endpoint(url)) => PathBuf::from(url.as_str()),
                        None => PathBuf::new(),
                    };
                    let offset = match span.attributes.first().map(|(_, v)| (*v).clone()) {
                        Some(AttrValue::Int(offset)) => offset,
                        _ => -1,
                    };
                    self.by_file.entry(key).or_default().push(Got {
                        id: span.span_id.to_string(),
                        line: span.line.map(toolcap::model::LineNumber::get),
                        offset,
                    });
                }
                self.problems.extend(batch.problems);
            }
            IngestEvent::Forget(path) => {
                self.by_file.remove(&path);
                self.problems
                    .retain(|p| p.source != path.display().to_string());
                self.forgets.push(path);
            }
            IngestEvent::Status(status) => self.statuses.push(status),
        }
    }

    pub fn ids(&self, path: &Path) -> Vec<String> {
        self.by_file
            .get(path)
            .map(|spans| spans.iter().map(|g| g.id.clone()).collect())
            .unwrap_or_default()
    }

    pub fn spans(&self, path: &Path) -> Vec<Got> {
        self.by_file.get(path).cloned().unwrap_or_default()
    }

    pub fn total_spans(&self) -> usize {
        self.by_file.values().map(Vec::len).sum()
    }
}

/// Receives events until `done` holds, or panics with what was seen after `limit`.
pub async fn wait_for(
    rx: &mut tokio::sync::mpsc::Receiver<IngestEvent>,
    recorder: &mut Recorder,
    what: &str,
    done: impl Fn(&Recorder) -> bool,
) {
    let limit = Duration::from_secs(20);
    let deadline = tokio::time::Instant::now() + limit;
    while !done(recorder) {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(event)) => recorder.apply(event),
            Ok(None) => panic!("channel closed while waiting for {what}: {recorder:#?}"),
            Err(_) => panic!("timed out after {limit:?} waiting for {what}: {recorder:#?}"),
        }
    }
}

/// `{"t":"ID"}\n` for each id.
pub fn lines(ids: &[&str]) -> String {
    ids.iter()
        .map(|id| format!("{{\"t\":\"{id}\"}}\n"))
        .collect()
}

pub fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    file.write_all(text.as_bytes()).expect("append");
}

pub fn strings(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}
