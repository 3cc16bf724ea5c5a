//! Loading one big JSON-lines file in pieces for the headless commands: the file is read a
//! piece at a time (the tailer's pieces, cut at line ends), pieces are parsed on every core,
//! and parsed pieces reach the store in file order while later ones are still being read and
//! parsed. Neither the whole file nor the whole parsed batch is ever in memory at once.
//!
//! ```text
//!  reader ──pieces──▶ parsers (one per core) ──batches──▶ caller: apply in file order
//!     ▲                                                       │
//!     └──────────────── a token back per applied piece ───────┘
//! ```
//! The tokens bound what is read but not yet applied to one piece per parser and
//! [`PIECES_BEYOND_PARSERS`] more.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::mpsc;

use crate::formats::{self, Detection, Format, Input};
use crate::model::{Batch, Origin, Problem};

use super::tail::{LineChunk, Tailer, long_line_problem, starts_as_json_lines};

/// Files smaller than this are read whole (sixteen pieces or fewer): cutting them gains little.
pub const PIECEWISE_MIN_BYTES: u64 = 8 << 20;
/// Pieces read but not yet applied, at most, besides one per parser: one being applied while
/// each core parses one. More pieces in flight raise the peak and are no faster.
const PIECES_BEYOND_PARSERS: usize = 1;

/// What loading a file in pieces read, for the file's load record (the spans went to the store).
#[derive(Debug)]
pub struct PiecewiseLoad {
    pub detection: Detection,
    pub spans: usize,
    pub problems: Vec<Problem>,
}

/// Loads `path` in pieces when it is a big, plain JSON-lines file of a format whose lines stand
/// alone, handing each parsed piece to `apply` in file order; `None` when the file is not one
/// (small, compressed, a single document, another format): read it whole instead.
pub fn load_in_pieces(path: &Path, apply: &mut dyn FnMut(Batch)) -> Option<PiecewiseLoad> {
    let size = std::fs::metadata(path).ok().filter(|m| m.is_file())?.len();
    if size < PIECEWISE_MIN_BYTES {
        return None;
    }
    let origin = Origin::File(std::sync::Arc::new(path.to_path_buf()));
    let mut tailer = Tailer::new(path);
    let first = tailer.poll(true).ok()?;
    let first_chunk = first.chunks.first()?;
    // Only lines too long to read may come before the first piece: they are told and skipped.
    let lines_before = first.long_lines.len() as u64;
    if first_chunk.line != lines_before || !starts_as_json_lines(&first_chunk.bytes) {
        return None;
    }
    let (format, reason) = detect(&origin, &first_chunk.bytes)?;
    let mut load = PiecewiseLoad {
        detection: Detection {
            format: Some(format.name()),
            reason,
        },
        spans: 0,
        problems: Vec::new(),
    };
    let mut said_once = Vec::new();
    let mut take = |mut batch: Batch| {
        load.spans += batch.spans.len();
        batch
            .problems
            .retain(|problem| formats::otlp::not_said_yet(&mut said_once, problem));
        load.problems.extend(batch.problems.iter().cloned());
        apply(batch);
    };
    read_parse_apply(format, &origin, tailer, first, &mut take);
    Some(load)
}

fn detect(origin: &Origin, bytes: &[u8]) -> Option<(&'static dyn Format, String)> {
    let input = Input::new(origin, bytes, formats::extension_of(origin));
    formats::detect(formats::REGISTRY, &input).filter(|(format, _)| format.lines_stand_alone())
}

/// One piece to parse: its place in the file's order, and its lines.
type Job = (usize, LineChunk);

fn read_parse_apply(
    format: &'static dyn Format,
    origin: &Origin,
    mut tailer: Tailer,
    first: super::tail::TailPoll,
    take: &mut dyn FnMut(Batch),
) {
    let parsers = crate::machine::cores();
    let (job_sender, job_receiver) = mpsc::sync_channel::<Job>(parsers);
    let job_receiver = Mutex::new(job_receiver);
    let (parsed_sender, parsed_receiver) = mpsc::channel::<(usize, Batch)>();
    // Parsed pieces' buffers go back to the reader, to be read into again.
    let (spare_sender, spare_receiver) = mpsc::channel::<Vec<u8>>();
    let in_flight = parsers + PIECES_BEYOND_PARSERS;
    let (token_sender, token_receiver) = mpsc::sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        let _ = token_sender.send(());
    }
    std::thread::scope(|scope| {
        for _ in 0..parsers {
            let parsed_sender = parsed_sender.clone();
            let spare_sender = spare_sender.clone();
            let job_receiver = &job_receiver;
            scope.spawn(move || {
                loop {
                    let job = match job_receiver.lock() {
                        Ok(receiver) => receiver.recv(),
                        Err(_) => return,
                    };
                    let Ok((place, chunk)) = job else { return };
                    let batch = parse_piece(format, origin, &chunk);
                    let _ = spare_sender.send(chunk.bytes);
                    if parsed_sender.send((place, batch)).is_err() {
                        return;
                    }
                }
            });
        }
        let reader_sender = parsed_sender.clone();
        scope.spawn(move || {
            let mut place = 0usize;
            let mut poll = first;
            loop {
                let mut problems: Vec<Problem> = poll
                    .long_lines
                    .iter()
                    .map(|long| long_line_problem(origin, long))
                    .collect();
                if poll.reset {
                    problems.push(Problem::error(
                        origin,
                        None,
                        "the file changed while it was read; what follows the change is not loaded",
                    ));
                }
                let stop = poll.reset || !poll.more;
                for chunk in poll.chunks {
                    if token_receiver.recv().is_err() || job_sender.send((place, chunk)).is_err() {
                        return;
                    }
                    place += 1;
                }
                if !problems.is_empty() {
                    let batch = Batch {
                        problems,
                        ..Default::default()
                    };
                    if token_receiver.recv().is_err() || reader_sender.send((place, batch)).is_err()
                    {
                        return;
                    }
                    place += 1;
                }
                if stop {
                    return;
                }
                for buffer in spare_receiver.try_iter() {
                    tailer.recycle(buffer);
                }
                poll = match tailer.poll(true) {
                    Ok(poll) => poll,
                    Err(e) => {
                        let problem = Problem::error(origin, None, format!("read failed: {e}"));
                        let batch = Batch {
                            problems: vec![problem],
                            ..Default::default()
                        };
                        if token_receiver.recv().is_ok() {
                            let _ = reader_sender.send((place, batch));
                        }
                        return;
                    }
                };
            }
        });
        // Pieces finish out of order; they are applied in file order.
        let mut waiting: BTreeMap<usize, Batch> = BTreeMap::new();
        let mut next = 0usize;
        drop(parsed_sender);
        for (place, batch) in parsed_receiver.iter() {
            waiting.insert(place, batch);
            while let Some(batch) = waiting.remove(&next) {
                take(batch);
                next += 1;
                let _ = token_sender.send(());
            }
        }
    });
}

fn parse_piece(format: &'static dyn Format, origin: &Origin, chunk: &LineChunk) -> Batch {
    // The pieces are already parsed side by side, one per core.
    formats::parse_chunk_as(
        format,
        origin,
        &chunk.bytes,
        chunk.offset,
        chunk.line,
        false,
    )
}
