//! Loading one big JSON-lines file in pieces for the headless commands: the file is read a
//! piece at a time (the tailer's pieces, cut at line ends), pieces are parsed on every core,
//! and parsed pieces reach the store in file order while later ones are still being read and
//! parsed. Neither the whole file nor the whole parsed batch is ever in memory at once: what is
//! read but not yet applied is at most one piece per core and [`PIECES_BEYOND_PARSERS`] more.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use crate::formats::{self, Detection, Format, Input};
use crate::model::{Batch, Origin, Problem};

use super::tail::{LineChunk, TailPoll, Tailer, long_line_problem, starts_as_json_lines};

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

/// What the reader hands on, in file order: lines to parse, or problems it met itself.
enum Piece {
    Lines(LineChunk),
    Told(Batch),
}

fn read_parse_apply(
    format: &'static dyn Format,
    origin: &Origin,
    mut tailer: Tailer,
    first: TailPoll,
    take: &mut dyn FnMut(Batch),
) {
    // Parsed pieces' buffers go back to the reader, to be read into again.
    let spare: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    let mut next_poll = Some(first);
    let mut read_all = false;
    let mut unread: VecDeque<Piece> = VecDeque::new();
    // The next poll is read only once every piece of the one before is handed on.
    let pieces = std::iter::from_fn(|| {
        loop {
            if let Some(piece) = unread.pop_front() {
                return Some(piece);
            }
            if read_all {
                return None;
            }
            let poll = match next_poll.take() {
                Some(first) => Ok(first),
                None => {
                    let mut spare = spare.lock().unwrap_or_else(PoisonError::into_inner);
                    spare.drain(..).for_each(|buffer| tailer.recycle(buffer));
                    drop(spare);
                    tailer.poll(true)
                }
            };
            read_all = match poll {
                Ok(poll) => unpack(origin, poll, &mut unread),
                Err(e) => {
                    let problem = Problem::error(origin, None, format!("read failed: {e}"));
                    unread.push_back(told(vec![problem]));
                    true
                }
            };
        }
    });
    let parse = |piece| match piece {
        Piece::Lines(chunk) => {
            let batch = parse_piece(format, origin, &chunk);
            let mut spare = spare.lock().unwrap_or_else(PoisonError::into_inner);
            spare.push(chunk.bytes);
            batch
        }
        Piece::Told(batch) => batch,
    };
    let ahead = crate::machine::cores() + PIECES_BEYOND_PARSERS;
    let applied = crate::machine::map_in_order(pieces, ahead, parse, |batch| {
        take(batch);
        Ok::<(), std::convert::Infallible>(())
    });
    let Ok(()) = applied;
}

/// Queues a poll's pieces, then the problems it met; true when nothing is to be read after it.
fn unpack(origin: &Origin, poll: TailPoll, unread: &mut VecDeque<Piece>) -> bool {
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
    unread.extend(poll.chunks.into_iter().map(Piece::Lines));
    if !problems.is_empty() {
        unread.push_back(told(problems));
    }
    poll.reset || !poll.more
}

fn told(problems: Vec<Problem>) -> Piece {
    Piece::Told(Batch {
        problems,
        ..Default::default()
    })
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
