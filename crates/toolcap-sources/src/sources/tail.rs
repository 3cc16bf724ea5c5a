//! Following a growing JSON-lines file: hands over only complete lines, with the byte offset
//! and line number they start at, and notices when the file was truncated, rewritten or
//! replaced so the caller can forget what it read and start again.
//!
//! The tailer keeps no file content in memory between polls: it remembers how far it has
//! consumed plus two small fingerprints (the file's first bytes and the bytes just before
//! the consumed offset). A half-written last line stays on disk until its newline arrives.

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::model::Problem;

/// Window read per step while looking for complete lines, and complete lines handed over by
/// one poll, at most (plus the rest of a line that goes on past it): a big file arrives in
/// pieces, so its first runs show while the rest is read, and memory holds a few pieces at a
/// time. The pieces in flight, their buffers and their parsed spans, are what a load's peak
/// holds beyond the store. Half a megabyte keeps that peak lowest for `dump` and the TUI at the
/// same CPU time and first rows: bigger pieces hold more, and so do smaller ones on batched
/// lines, which are longer than a piece and read on past it ([`read_on_to_line_end`]).
const PIECE_BYTES: u64 = 512 << 10;
pub use crate::formats::MAX_LINE_BYTES;
/// Bytes hashed at the start of the file and just before the consumed offset to recognise a
/// file that was rewritten in place with different content.
const FINGERPRINT_BYTES: u64 = 4096;

/// Complete lines of a file, starting at `offset` (bytes) after `line` earlier lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineChunk {
    pub offset: u64,
    /// Lines before this chunk: its first line is `line + 1`. Pass it as `base_line`.
    pub line: u64,
    pub bytes: Vec<u8>,
}

/// A line longer than [`MAX_LINE_BYTES`], skipped: its 1-based number and its length in
/// bytes, newline excluded (so far, when its end has not been read yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongLine {
    pub line: u64,
    pub bytes: u64,
    pub ended: bool,
}

/// The problem that says `long` was skipped, the same from every reader.
pub fn long_line_problem(origin: impl std::fmt::Display, long: &LongLine) -> Problem {
    let limit = MAX_LINE_BYTES >> 20;
    let size = size_text(long.bytes);
    let message = if long.ended {
        format!(
            "line {} is {size}, over the {limit} MiB line limit: skipped",
            long.line
        )
    } else {
        format!(
            "line {} is over the {limit} MiB line limit ({size} read, no newline yet): skipped",
            long.line
        )
    };
    Problem::error(origin, Some(long.line), message)
}

fn size_text(bytes: u64) -> String {
    const GIB: u64 = 1 << 30;
    if bytes >= GIB {
        format!("{:.1} GiB", bytes as f64 / GIB as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    }
}

/// What one [`Tailer::poll`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TailPoll {
    /// The file no longer holds what was consumed (truncated, rewritten, or replaced by a new
    /// file at the same path): everything read before must be forgotten. Chunks in this poll
    /// start again from offset 0.
    pub reset: bool,
    pub chunks: Vec<LineChunk>,
    /// Lines longer than [`MAX_LINE_BYTES`], skipped; each is told once, in the poll that
    /// read its end or, when its end is not there yet, in the poll that reached the limit.
    pub long_lines: Vec<LongLine>,
    /// Bytes after the last newline that are waiting for the rest of their line.
    pub pending_bytes: u64,
    /// The poll stopped at its budget: more complete lines may be waiting; poll again.
    pub more: bool,
    /// Bytes consumed so far, and the file's size when polled.
    pub consumed: u64,
    pub file_len: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    hash: u64,
}

/// Follows one JSON-lines file. See the module documentation.
#[derive(Debug)]
pub struct Tailer {
    path: PathBuf,
    offset: u64,
    /// Newlines consumed so far.
    line: u64,
    identity: Option<(u64, u64)>,
    head: Option<Fingerprint>,
    before_offset: Option<Fingerprint>,
    /// The last consumed record had no newline yet (it was flushed as complete JSON); a
    /// newline arriving next belongs to it.
    open_line: bool,
    /// Inside a line longer than [`MAX_LINE_BYTES`], dropping bytes until its newline.
    skipping: Option<Skipping>,
    /// Buffers of pieces already parsed, handed back to be read into again (see
    /// [`Tailer::recycle`]).
    spare: Vec<Vec<u8>>,
    /// Bytes read per window, and handed over per poll at most (see [`PIECE_BYTES`]).
    piece_bytes: u64,
}

/// A long line being dropped: its number, where it starts, and whether it was told already.
#[derive(Debug, Clone, Copy)]
struct Skipping {
    line: u64,
    start: u64,
    told: bool,
}

/// Buffers kept for reuse, at most: the pieces a loader has in flight.
const MAX_SPARE_BUFFERS: usize = 4;

impl Tailer {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Tailer {
            path: path.into(),
            offset: 0,
            line: 0,
            identity: None,
            head: None,
            before_offset: None,
            open_line: false,
            skipping: None,
            spare: Vec::new(),
            piece_bytes: PIECE_BYTES,
        }
    }

    /// A tailer that reads windows of `bytes` and hands over at most that much per poll (a
    /// line longer than that still comes whole).
    pub fn with_piece_bytes(path: impl Into<PathBuf>, bytes: u64) -> Self {
        Tailer {
            piece_bytes: bytes.max(1),
            ..Tailer::new(path)
        }
    }

    /// Takes back the buffer of a piece its reader is done with; the next windows are read into
    /// it. A loader that reads a big file piece after piece then allocates a few buffers once,
    /// where a fresh one for each piece would have the allocator hand out new pages every time,
    /// and its peak would depend on where each freed piece had been placed.
    pub fn recycle(&mut self, mut buffer: Vec<u8>) {
        // A window widened for one long line is not kept: it may be up to the line limit.
        if self.spare.len() < MAX_SPARE_BUFFERS && buffer.capacity() as u64 <= 2 * self.piece_bytes
        {
            buffer.clear();
            self.spare.push(buffer);
        }
    }

    /// `len` bytes at `offset`, read into a spare buffer when there is one.
    fn read_window(&mut self, file: &mut File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let mut buffer = self.spare.pop().unwrap_or_default();
        buffer.clear();
        buffer.reserve(len as usize);
        file.seek(SeekFrom::Start(offset))?;
        file.take(len).read_to_end(&mut buffer)?;
        Ok(buffer)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Complete lines consumed so far.
    pub fn lines(&self) -> u64 {
        self.line
    }

    /// Reads what was appended since the last poll. With `flush_unterminated`, a last line
    /// without its newline is consumed too, but only when it is a complete JSON value on its
    /// own (a writer that never ends its file with a newline, seen after a quiet period).
    pub fn poll(&mut self, flush_unterminated: bool) -> io::Result<TailPoll> {
        let mut file = File::open(&self.path)?;
        let meta = file.metadata()?;
        let len = meta.len();
        let identity = identity_of(&meta);
        let mut out = TailPoll::default();
        let replaced = self.identity.is_some() && identity != self.identity;
        if replaced || len < self.offset || !self.fingerprints_hold(&mut file)? {
            out.reset = self.offset > 0 || replaced;
            self.restart();
        }
        self.identity = identity;

        let mut handed_over = 0;
        while self.offset < len {
            if handed_over >= self.piece_bytes {
                out.more = true;
                break;
            }
            let remaining = len - self.offset;
            let want = remaining.min(self.piece_bytes);
            let mut buf = self.read_window(&mut file, self.offset, want)?;
            if buf.is_empty() {
                break; // shrank while we read; the next event sorts it out
            }
            if let Some(skipping) = self.skipping {
                match memchr::memchr(b'\n', &buf) {
                    Some(i) => {
                        if !skipping.told {
                            out.long_lines.push(LongLine {
                                line: skipping.line,
                                bytes: self.offset + i as u64 - skipping.start,
                                ended: true,
                            });
                        }
                        self.offset += i as u64 + 1;
                        self.line += 1;
                        self.skipping = None;
                    }
                    None => self.offset += buf.len() as u64,
                }
                self.recycle(buf);
                continue;
            }
            if self.open_line && buf.first() == Some(&b'\n') {
                self.offset += 1;
                self.line += 1;
                self.open_line = false;
                self.recycle(buf);
                continue;
            }
            self.open_line = false;
            read_on_to_line_end(&mut file, self.offset, remaining, &mut buf)?;
            match memchr::memrchr(b'\n', &buf) {
                Some(last) => {
                    let mut bytes = buf;
                    bytes.truncate(last + 1);
                    let newlines = memchr::memchr_iter(b'\n', &bytes).count() as u64;
                    let consumed = bytes.len() as u64;
                    out.chunks.push(LineChunk {
                        offset: self.offset,
                        line: self.line,
                        bytes,
                    });
                    self.offset += consumed;
                    self.line += newlines;
                    handed_over += consumed;
                }
                None if (buf.len() as u64) < remaining.min(MAX_LINE_BYTES) => {
                    self.recycle(buf);
                    break; // shrank while we read; the next event sorts it out
                }
                None if (buf.len() as u64) < remaining => {
                    // Read on to the line limit without finding the line's end.
                    self.skipping = Some(Skipping {
                        line: self.line + 1,
                        start: self.offset,
                        told: false,
                    });
                    self.offset += buf.len() as u64;
                    self.recycle(buf);
                }
                None => {
                    if flush_unterminated && is_whole_json(&buf) {
                        let consumed = buf.len() as u64;
                        out.chunks.push(LineChunk {
                            offset: self.offset,
                            line: self.line,
                            bytes: buf,
                        });
                        self.offset += consumed;
                        self.open_line = true;
                    } else {
                        out.pending_bytes = buf.len() as u64;
                    }
                    break;
                }
            }
        }
        if let Some(skipping) = self.skipping.as_mut().filter(|s| !s.told) {
            skipping.told = true;
            out.long_lines.push(LongLine {
                line: skipping.line,
                bytes: self.offset - skipping.start,
                ended: false,
            });
        }
        self.head = fingerprint(&mut file, 0, self.offset.min(FINGERPRINT_BYTES))?;
        let tail_len = self.offset.min(FINGERPRINT_BYTES);
        self.before_offset = fingerprint(&mut file, self.offset - tail_len, tail_len)?;
        out.consumed = self.offset;
        out.file_len = len;
        Ok(out)
    }

    fn restart(&mut self) {
        self.offset = 0;
        self.line = 0;
        self.head = None;
        self.before_offset = None;
        self.open_line = false;
        self.skipping = None;
    }

    /// Whether the bytes already consumed still look the same on disk.
    fn fingerprints_hold(&self, file: &mut File) -> io::Result<bool> {
        let consumed_tail = self.offset.min(FINGERPRINT_BYTES);
        for (expected, start) in [
            (self.head, 0),
            (self.before_offset, self.offset - consumed_tail),
        ] {
            if let Some(expected) = expected
                && fingerprint(file, start, expected.len)? != Some(expected)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Reads on into `buf` (the bytes at `offset`) until it holds a newline, the file's `remaining`
/// bytes or [`MAX_LINE_BYTES`]. A line longer than a window grows its buffer a step at a time,
/// so the buffer ends about as big as the line: doubling the window and reading it again would
/// hold up to twice the line and read it two or three times.
fn read_on_to_line_end(
    file: &mut File,
    offset: u64,
    remaining: u64,
    buf: &mut Vec<u8>,
) -> io::Result<()> {
    let mut searched = 0;
    while memchr::memchr(b'\n', &buf[searched..]).is_none() {
        let held = buf.len() as u64;
        if held >= remaining.min(MAX_LINE_BYTES) {
            break;
        }
        searched = buf.len();
        // An eighth of what is held, at least 64 KiB: few reads for a long line, and a buffer
        // at most an eighth bigger than it.
        let step = (held / 8)
            .max(64 << 10)
            .min(remaining.min(MAX_LINE_BYTES) - held);
        buf.reserve_exact(step as usize);
        file.seek(SeekFrom::Start(offset + held))?;
        if file.take(step).read_to_end(buf)? == 0 {
            break; // shrank while we read
        }
    }
    Ok(())
}

/// True when `bytes` is one complete JSON object or array (surrounding whitespace allowed).
/// A text file whose first line is a whole JSON object on its own is JSON lines (a one-line
/// document with a newline reads the same either way). Gzip and binary files never are.
pub fn starts_as_json_lines(bytes: &[u8]) -> bool {
    let text = bytes.trim_ascii_start();
    if !text.starts_with(b"{") {
        return false;
    }
    match memchr::memchr(b'\n', text) {
        Some(end) => text.get(..end).is_some_and(is_whole_json),
        None => false,
    }
}

pub fn is_whole_json(bytes: &[u8]) -> bool {
    let text = bytes.trim_ascii();
    (text.starts_with(b"{") || text.starts_with(b"["))
        && serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok()
}

/// Device and inode: a new file moved over the path has a different identity.
#[cfg(unix)]
fn identity_of(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity_of(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

fn read_range(file: &mut File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::with_capacity(len as usize);
    file.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

fn fingerprint(file: &mut File, offset: u64, len: u64) -> io::Result<Option<Fingerprint>> {
    if len == 0 {
        return Ok(None);
    }
    let bytes = read_range(file, offset, len)?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    Ok(Some(Fingerprint {
        len: bytes.len() as u64,
        hash: hasher.finish(),
    }))
}
