//! Reads a payload from its byte range: the exact bytes of the raw value, decoded by how it
//! was written (JSON string token, raw JSON, protobuf UTF-8). No record around it is parsed.
//!
//! Gzipped files cannot be read at an offset without inflating what comes before it. A seek
//! index (zran-style checkpoints with a 32 KiB window each) would bound one read to the span
//! between two checkpoints, but needs a full inflate pass at load and window memory per
//! checkpoint; payloads of one file are read in bursts (a tree view, `dump --reveal`), so a
//! small bounded cache of inflated files answers every read of a burst after the first with no
//! inflate at all. Figures for both are in `benches/ingest.rs`'s gzip read measurement.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::Error;
use crate::model::{PayloadRange, RawEncoding};

/// Inflated gzip files kept for later payload reads, largest total first evicted.
const GZIP_CACHE_BYTES: usize = 256 << 20;

/// Reads and decodes one payload range.
pub fn read(range: &PayloadRange) -> Result<String, Error> {
    let raw = if range.gzip {
        let inflated = inflated_file(&range.path)?;
        let start = usize::try_from(range.offset).map_err(|_| changed(&range.path))?;
        let end = start + range.len as usize;
        inflated
            .get(start..end)
            .ok_or_else(|| changed(&range.path))?
            .to_vec()
    } else {
        read_exact_range(&range.path, range.offset, range.len).map_err(|e| {
            match (e.kind(), expired_note(&range.path)) {
                (std::io::ErrorKind::NotFound, Some(note)) => Error::Expired { note },
                _ => Error::Unreadable {
                    path: range.path.to_path_buf(),
                    source: e,
                },
            }
        })?
    };
    decode(&raw, range.encoding).ok_or_else(|| changed(&range.path))
}

/// Directories whose files are deleted on purpose (a live spool drops its oldest segments),
/// each with what to tell a reader of a file that is gone there.
static EXPIRING_DIRS: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

/// Declares that files in `dir` may be deleted on purpose; a payload whose file is gone then
/// reads as `note` instead of an I/O error. Declaring a directory again replaces its note.
pub fn note_expiring_dir(dir: &Path, note: String) {
    let mut dirs = EXPIRING_DIRS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    dirs.retain(|(known, _)| known != dir);
    dirs.push((dir.to_path_buf(), note));
}

fn expired_note(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    let dirs = EXPIRING_DIRS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    dirs.iter()
        .find(|(known, _)| known == dir)
        .map(|(_, note)| note.clone())
}

/// Decodes the raw bytes of a value. `None` when they are not what the range promised (the
/// file changed on disk).
pub fn decode(raw: &[u8], encoding: RawEncoding) -> Option<String> {
    match encoding {
        RawEncoding::JsonString => serde_json::from_slice::<String>(raw).ok(),
        RawEncoding::RawJson => {
            serde_json::from_slice::<serde::de::IgnoredAny>(raw).ok()?;
            String::from_utf8(raw.to_vec()).ok()
        }
        RawEncoding::Utf8 => String::from_utf8(raw.to_vec()).ok(),
        RawEncoding::JsonValue => match serde_json::from_slice::<serde_json::Value>(raw).ok()? {
            serde_json::Value::String(s) => Some(s),
            other => Some(other.to_string()),
        },
    }
}

fn changed(path: &Path) -> Error {
    Error::PayloadMoved {
        path: path.to_path_buf(),
    }
}

/// Reads `len` bytes at `offset`. The file stays open for the next read on this thread (a
/// `dump --json` reads thousands of payloads from one file, and opening, seeking and closing
/// for each would be most of its system time), with the bytes around the last read: a run's
/// payloads sit together on one line, so most reads after the first are a copy.
///
/// Both are used only while the path still names the same, unchanged file. That is asked of
/// the open file (`fstat`, no walk of the path): a file deleted, or replaced by a rename, has
/// no links left, and a file rewritten in place has a new size or time. Then the path is
/// opened again, so an evicted spool segment is reported and a replaced file read anew.
/// Not seen: a rewrite in place to the same size within the file system's time granularity,
/// or a file moved away (keeping its links) with another put at its path; both go on being
/// read as the file that was open.
#[cfg(unix)]
struct OpenFile {
    path: Arc<PathBuf>,
    file: std::fs::File,
    /// Size and modification time (seconds, nanoseconds) when `window` was read.
    stamp: (u64, i64, i64),
    window: Vec<u8>,
    window_offset: u64,
}

/// Bytes read at once for short ranges, so that the next few reads are served from memory.
#[cfg(unix)]
const READ_AHEAD: usize = 16 << 10;

#[cfg(unix)]
fn read_exact_range(path: &Arc<PathBuf>, offset: u64, len: u32) -> std::io::Result<Vec<u8>> {
    use std::cell::RefCell;
    use std::os::unix::fs::{FileExt, MetadataExt};
    thread_local! {
        static OPEN: RefCell<Option<OpenFile>> = const { RefCell::new(None) };
    }
    let stamp = |m: &std::fs::Metadata| (m.size(), m.mtime(), m.mtime_nsec());
    OPEN.with(|open| {
        let mut open = open.borrow_mut();
        let unchanged = match open.as_ref().filter(|o| o.path == *path) {
            Some(o) => {
                let metadata = o.file.metadata()?;
                (metadata.nlink() > 0).then(|| stamp(&metadata))
            }
            None => None,
        };
        let o = match (open.as_mut(), unchanged) {
            (Some(o), Some(now)) => {
                if o.stamp != now {
                    o.stamp = now;
                    o.window.clear();
                }
                o
            }
            _ => {
                *open = None;
                let file = std::fs::File::open(path.as_path())?;
                let now = stamp(&file.metadata()?);
                open.insert(OpenFile {
                    path: path.clone(),
                    file,
                    stamp: now,
                    window: Vec::new(),
                    window_offset: 0,
                })
            }
        };
        let wanted = len as usize;
        let start = offset.checked_sub(o.window_offset).map(|s| s as usize);
        if let Some(bytes) = start.and_then(|s| o.window.get(s..s.checked_add(wanted)?)) {
            return Ok(bytes.to_vec());
        }
        if wanted > READ_AHEAD / 2 {
            let mut out = vec![0; wanted];
            o.file.read_exact_at(&mut out, offset)?;
            return Ok(out);
        }
        o.window.resize(READ_AHEAD, 0);
        let mut filled = 0;
        while filled < READ_AHEAD {
            match o
                .file
                .read_at(&mut o.window[filled..], offset + filled as u64)
            {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    o.window.clear();
                    return Err(e);
                }
            }
        }
        o.window.truncate(filled);
        o.window_offset = offset;
        match o.window.get(..wanted) {
            Some(bytes) => Ok(bytes.to_vec()),
            None => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    })
}

#[cfg(not(unix))]
fn read_exact_range(path: &Arc<PathBuf>, offset: u64, len: u32) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path.as_path())?;
    file.seek(SeekFrom::Start(offset))?;
    let mut out = vec![0; len as usize];
    file.read_exact(&mut out)?;
    Ok(out)
}

type Cache = VecDeque<(Arc<PathBuf>, Arc<Vec<u8>>)>;

fn inflated_file(path: &Arc<PathBuf>) -> Result<Arc<Vec<u8>>, Error> {
    static CACHE: Mutex<Cache> = Mutex::new(VecDeque::new());
    let cached = {
        let cache = CACHE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        cache
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, bytes)| bytes.clone())
    };
    if let Some(bytes) = cached {
        return Ok(bytes);
    }
    let raw = std::fs::read(path.as_path()).map_err(|source| Error::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let inflated = crate::formats::maybe_gunzip(&raw)?.ok_or_else(|| Error::NoLongerGzip {
        path: path.to_path_buf(),
    })?;
    let inflated = Arc::new(inflated);
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    cache.retain(|(p, _)| p != path);
    cache.push_back((path.clone(), inflated.clone()));
    let mut total: usize = cache.iter().map(|(_, b)| b.len()).sum();
    // Keep at least the file just inflated, even when it alone is over the bound.
    while total > GZIP_CACHE_BYTES && cache.len() > 1 {
        if let Some((_, evicted)) = cache.pop_front() {
            total -= evicted.len();
        }
    }
    Ok(inflated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_each_encoding_and_refuses_what_does_not_match() {
        assert_eq!(
            decode(br#""a\"b\u00e9""#, RawEncoding::JsonString).as_deref(),
            Some("a\"bé")
        );
        assert_eq!(decode(b"\"cut", RawEncoding::JsonString), None);
        assert_eq!(
            decode(br#"{"k": [1]}"#, RawEncoding::RawJson).as_deref(),
            Some(r#"{"k": [1]}"#)
        );
        assert_eq!(decode(b"{\"k\"", RawEncoding::RawJson), None);
        assert_eq!(
            decode("é".as_bytes(), RawEncoding::Utf8).as_deref(),
            Some("é")
        );
        assert_eq!(decode(&[0xff], RawEncoding::Utf8), None);
    }
}
