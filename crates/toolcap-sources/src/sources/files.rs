//! Loading files and directories once (the watcher builds on this for live updates).

use std::path::{Path, PathBuf};

use std::io::Read;

use crate::formats::{self, Loaded, MAX_DECOMPRESSED_BYTES, MAX_LINE_BYTES};
use crate::model::{Batch, Origin, Problem};

use super::tail::{LineChunk, LongLine, long_line_problem};

/// Extensions that are never traces: skipped inside directories with a note (a file named
/// explicitly on the command line is always tried).
const NOT_TRACES: &[&str] = &[
    "md", "txt", "yaml", "yml", "toml", "py", "rs", "lock", "sh", "html", "css", "js", "png",
    "jpg", "svg", "snap",
];

/// The name that means standard input (`dump -`, `check -`).
pub const STDIN: &str = "-";

/// What a walk over one source found: files to load, and notes about entries skipped.
#[derive(Debug, Default)]
pub struct Walk {
    pub files: Vec<PathBuf>,
    pub notes: Vec<Problem>,
}

/// Every file under `path` worth trying, sorted for a stable load order. Hidden entries
/// (starting with `.`) are skipped inside directories.
pub fn trace_files(path: &Path) -> Result<Vec<PathBuf>, crate::Error> {
    walk(path).map(|w| w.files)
}

/// Like [`trace_files`], with notes for what was skipped. A path named explicitly is read
/// whatever its name (`-`, a FIFO, `/dev/stdin`, `<(…)`), unless reading it could hang or never
/// end (a device, a file of `/proc` or `/sys`): that is an error. Inside a directory, symbolic
/// links are followed — a link back to a directory already walked is a loop, reported and not
/// followed — and FIFOs, sockets, devices, kernel file systems and directories that cannot be
/// read are skipped with a note. A file reached under two names loads once.
pub fn walk(path: &Path) -> Result<Walk, crate::Error> {
    if path == Path::new(STDIN) {
        return Ok(Walk {
            files: vec![path.to_path_buf()],
            notes: Vec::new(),
        });
    }
    let meta = std::fs::metadata(path).map_err(|source| crate::Error::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    if let Some(reason) = not_readable_safely(path, &meta.file_type()) {
        return Err(crate::Error::NotReadSafely {
            path: path.to_path_buf(),
            reason,
        });
    }
    if !meta.is_dir() {
        return Ok(Walk {
            files: vec![path.to_path_buf()],
            notes: Vec::new(),
        });
    }
    let mut walk = Walk::default();
    let mut seen_dirs = std::collections::HashSet::new();
    let mut seen_files = std::collections::HashSet::new();
    if let Ok(real) = std::fs::canonicalize(path) {
        seen_dirs.insert(real);
    }
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(source) if dir == path => {
                return Err(crate::Error::Unreadable { path: dir, source });
            }
            // One unreadable directory costs only its own files.
            Err(e) => {
                walk.notes.push(Problem::note(
                    dir.display(),
                    None,
                    format!("skipped: directory not readable ({e})"),
                ));
                continue;
            }
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == crate::receiver::token::TOKEN_FILE_NAME {
                continue;
            }
            let child = entry.path();
            let Ok(mut kind) = entry.file_type() else {
                continue;
            };
            let is_link = kind.is_symlink();
            if is_link {
                match std::fs::metadata(&child) {
                    Ok(target) => kind = target.file_type(),
                    Err(e) => {
                        walk.notes.push(Problem::note(
                            child.display(),
                            None,
                            format!("skipped: symbolic link to nothing readable ({e})"),
                        ));
                        continue;
                    }
                }
            }
            // A directory may be a mount point and a link may lead anywhere: either can reach a
            // kernel file system.
            if (is_link || kind.is_dir())
                && let Some(reason) = not_readable_safely(&child, &kind)
            {
                walk.notes.push(Problem::note(
                    child.display(),
                    None,
                    format!("skipped: {reason}"),
                ));
                continue;
            }
            if kind.is_dir() {
                let real = std::fs::canonicalize(&child).unwrap_or_else(|_| child.clone());
                if seen_dirs.insert(real.clone()) {
                    pending.push(child);
                } else if is_link {
                    walk.notes.push(Problem::note(
                        child.display(),
                        None,
                        format!(
                            "skipped: symbolic link loop (leads back to {})",
                            real.display()
                        ),
                    ));
                }
            } else if kind.is_file() {
                if let Some(reason) = skip_reason(&child) {
                    walk.notes.push(Problem::note(
                        child.display(),
                        None,
                        format!("skipped: {reason}"),
                    ));
                    continue;
                }
                let real = std::fs::canonicalize(&child).unwrap_or_else(|_| child.clone());
                if seen_files.insert(real) {
                    walk.files.push(child);
                }
            } else {
                walk.notes.push(Problem::note(
                    child.display(),
                    None,
                    format!("skipped: not a regular file ({})", special_kind(&kind)),
                ));
            }
        }
    }
    walk.files.sort();
    walk.notes.sort_by(|a, b| a.source.cmp(&b.source));
    Ok(walk)
}

/// Why reading `path` (of type `kind`) could hang or never end, if it could: a device (its
/// stream may be endless) or anything on a kernel file system, whose files claim a size of 0
/// and may block a read until the kernel has something to say. FIFOs and sockets are streams a
/// user names on purpose (`<(…)`, `/dev/stdin`): they are read, and skipped only inside a
/// directory.
fn not_readable_safely(path: &Path, kind: &std::fs::FileType) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_block_device() || kind.is_char_device() {
            return Some("a device, not a trace".into());
        }
    }
    if kind.is_file() || kind.is_dir() {
        return kernel_file_system(path)
            .map(|name| format!("on {name}, a kernel file system whose reads may block"));
    }
    None
}

/// The name of the kernel file system `path` lies on, if it does.
fn kernel_file_system(path: &Path) -> Option<&'static str> {
    const KERNEL: &[(u64, &str)] = &[
        (0x9fa0, "procfs"),
        (0x6265_6572, "sysfs"),
        (0x6462_6720, "debugfs"),
        (0x7472_6163, "tracefs"),
        (0x7363_6673, "securityfs"),
    ];
    let kind = crate::system::file_system_magic(path)?;
    KERNEL
        .iter()
        .find(|(magic, _)| *magic == kind)
        .map(|(_, name)| *name)
}

fn special_kind(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    let _ = kind;
    "special file"
}

/// Whether a file inside a directory should be tried as a trace.
pub fn is_candidate(path: &Path) -> bool {
    skip_reason(path).is_none()
}

/// Why a file inside a directory is not tried as a trace, judged by its name alone; `None`
/// when it should be tried.
fn skip_reason(path: &Path) -> Option<String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let ext = Path::new(name)
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Gold trajectories are `check` inputs, and toolscore's own reports (toolscore-result.json,
    // toolscore-record.json) sit next to the traces it scored: neither is a trace.
    if crate::formats::message_logs::is_gold_name(&Origin::File(std::sync::Arc::new(
        path.to_path_buf(),
    ))) {
        return Some("a gold trajectory, not a trace".into());
    }
    // A spool is opened as a trace directory; the feed token `serve` keeps beside its segments
    // is passed over silently by the walk, and never tried when the watcher sees it appear.
    if name == crate::receiver::token::TOKEN_FILE_NAME {
        return Some("the receiver's feed token, not a trace".into());
    }
    if name.starts_with("toolscore-") && ext == "json" {
        return Some("a toolscore report, not a trace".into());
    }
    if name.ends_with(".meta.json") {
        return Some("not a trace (metadata sidecar)".into());
    }
    NOT_TRACES
        .contains(&ext.as_str())
        .then(|| format!("not a trace (.{ext} file)"))
}

/// Reads and parses one file, skipping lines past the line limit (see [`read_whole`]). `-` is
/// standard input; it and FIFOs cannot be read a second time, so their payloads are kept in
/// memory like those that arrive over the network.
pub fn load_file(path: &Path) -> Loaded {
    let stdin = path == Path::new(STDIN);
    let special = !stdin && std::fs::metadata(path).is_ok_and(|m| !m.is_file());
    let origin = if stdin {
        Origin::endpoint("stdin")
    } else if special {
        Origin::endpoint(path.display().to_string())
    } else {
        Origin::File(std::sync::Arc::new(path.to_path_buf()))
    };
    if !stdin && !special {
        let mut batch = Batch::default();
        let in_place = formats::load_in_place(formats::REGISTRY, &origin, path, |piece| {
            batch.extend(piece.batch);
            Ok::<(), std::convert::Infallible>(())
        });
        if let Ok(formats::InPlace::Loaded(detection)) = in_place {
            return Loaded {
                origin,
                detection,
                batch,
            };
        }
    }
    let read = if stdin {
        read_whole(&mut std::io::stdin().lock(), 0)
    } else {
        std::fs::File::open(path).and_then(|mut file| {
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            read_whole(&mut file, size)
        })
    };
    match read {
        Ok(read) => load_read(origin, read),
        Err(e) => {
            let mut batch = Batch::default();
            batch
                .problems
                .push(Problem::error(&origin, None, e.to_string()));
            Loaded {
                origin,
                detection: formats::Detection {
                    format: None,
                    reason: "unreadable".into(),
                },
                batch,
            }
        }
    }
}

/// A source read whole, its lines no longer than [`MAX_LINE_BYTES`]: the parts between the
/// lines that were longer (skipped), each with where it starts in the source.
#[derive(Debug, Default)]
pub struct WholeRead {
    pub parts: Vec<LineChunk>,
    pub long_lines: Vec<LongLine>,
    /// Reading stopped here, with [`MAX_DECOMPRESSED_BYTES`] held: the rest was not read.
    pub cut_at: Option<u64>,
}

impl WholeRead {
    /// The source's bytes, when nothing was skipped or cut (they are then one part).
    pub fn into_whole(self) -> Option<Vec<u8>> {
        if !self.long_lines.is_empty() || self.cut_at.is_some() || self.parts.len() > 1 {
            return None;
        }
        Some(
            self.parts
                .into_iter()
                .next()
                .map_or_else(Vec::new, |p| p.bytes),
        )
    }
}

/// Bytes read per step by [`read_whole`], and the step read while dropping a long line.
const READ_STEP: u64 = 1 << 20;

/// Reads `reader` to its end a step at a time, `size` being what it is expected to hold (0 when
/// unknown). A line that reaches [`MAX_LINE_BYTES`] is dropped as it is read, up to its newline,
/// so it is never held whole; reading stops once [`MAX_DECOMPRESSED_BYTES`] are held.
pub fn read_whole(reader: &mut dyn Read, size: u64) -> std::io::Result<WholeRead> {
    let mut read = WholeRead::default();
    let mut part = LineChunk {
        offset: 0,
        line: 0,
        bytes: Vec::with_capacity(size.min(MAX_DECOMPRESSED_BYTES) as usize),
    };
    // Where the part's last line starts (after its last newline).
    let mut line_start = 0usize;
    let mut held = 0u64;
    loop {
        let before = part.bytes.len();
        let got = (&mut *reader)
            .take(READ_STEP)
            .read_to_end(&mut part.bytes)?;
        if got == 0 {
            break;
        }
        if let Some(last) = memchr::memrchr(b'\n', &part.bytes[before..]) {
            line_start = before + last + 1;
        }
        if held + part.bytes.len() as u64 > MAX_DECOMPRESSED_BYTES {
            part.bytes.truncate(line_start);
            read.cut_at = Some(part.offset + line_start as u64);
            break;
        }
        if ((part.bytes.len() - line_start) as u64) < MAX_LINE_BYTES {
            continue;
        }
        let line = part.line + memchr::memchr_iter(b'\n', &part.bytes[..line_start]).count() as u64;
        let start = part.offset + line_start as u64;
        part.bytes.truncate(line_start);
        held += part.bytes.len() as u64;
        // The line's first bytes are held already; the rest is read and dropped.
        let (rest, mut long) = drop_line(reader, line + 1)?;
        long.bytes += (before + got - line_start) as u64;
        read.long_lines.push(long);
        let next = start + long.bytes + 1;
        let expected = size.saturating_sub(next).min(MAX_DECOMPRESSED_BYTES - held);
        let previous = std::mem::replace(
            &mut part,
            LineChunk {
                offset: next,
                line: line + 1,
                bytes: Vec::with_capacity(expected as usize),
            },
        );
        if !previous.bytes.is_empty() {
            // Gives back the room the long line's first bytes took.
            let mut previous = previous;
            previous.bytes.shrink_to_fit();
            read.parts.push(previous);
        }
        if !long.ended {
            return Ok(read);
        }
        part.bytes.extend_from_slice(&rest);
        line_start = memchr::memrchr(b'\n', &part.bytes).map_or(0, |last| last + 1);
    }
    if !part.bytes.is_empty() {
        read.parts.push(part);
    }
    Ok(read)
}

/// Reads on to the end of the long line `line`, holding one step at a time; returns the bytes
/// read after its newline and the line, counting only the bytes read here.
fn drop_line(reader: &mut dyn Read, line: u64) -> std::io::Result<(Vec<u8>, LongLine)> {
    let mut step = Vec::with_capacity(READ_STEP as usize);
    let mut long = LongLine {
        line,
        bytes: 0,
        ended: false,
    };
    loop {
        step.clear();
        if (&mut *reader).take(READ_STEP).read_to_end(&mut step)? == 0 {
            return Ok((Vec::new(), long));
        }
        match memchr::memchr(b'\n', &step) {
            Some(newline) => {
                long.bytes += newline as u64;
                long.ended = true;
                return Ok((step.split_off(newline + 1), long));
            }
            None => long.bytes += step.len() as u64,
        }
    }
}

/// Parses what [`read_whole`] read: the source's bytes as they are when nothing was skipped,
/// else each part at its place in the source, in the format the first recognised part has.
fn load_read(origin: Origin, read: WholeRead) -> Loaded {
    let mut problems: Vec<Problem> = read
        .long_lines
        .iter()
        .map(|long| long_line_problem(&origin, long))
        .collect();
    if let Some(at) = read.cut_at {
        problems.push(Problem::error(
            &origin,
            None,
            format!(
                "not read past byte {at}: a source read whole may hold {} MiB at most",
                MAX_DECOMPRESSED_BYTES >> 20
            ),
        ));
    }
    if read.long_lines.is_empty() && read.parts.len() <= 1 {
        let bytes = read
            .parts
            .into_iter()
            .next()
            .map_or_else(Vec::new, |p| p.bytes);
        let mut loaded = formats::load_bytes(origin, &bytes);
        loaded.batch.problems.extend(problems);
        return loaded;
    }
    let extension = formats::extension_of(&origin);
    let mut detection = formats::Detection {
        format: None,
        reason: "no format matched".into(),
    };
    let mut found: Option<&'static dyn formats::Format> = None;
    let mut batch = Batch::default();
    let mut unrecognised = None;
    for part in read
        .parts
        .iter()
        .filter(|p| !p.bytes.trim_ascii().is_empty())
    {
        let mut input = formats::Input::new(&origin, &part.bytes, extension.clone());
        input.base_offset = part.offset;
        input.base_line = part.line;
        let format = match found {
            Some(format) => format,
            None => match formats::detect(formats::REGISTRY, &input) {
                Some((format, reason)) => {
                    detection = formats::Detection {
                        format: Some(format.name()),
                        reason,
                    };
                    found = Some(format);
                    format
                }
                None => {
                    unrecognised.get_or_insert_with(|| {
                        formats::unrecognised(&origin, &part.bytes, extension.as_deref())
                    });
                    continue;
                }
            },
        };
        batch.extend(formats::parse(format, &input));
    }
    if found.is_none() {
        problems.extend(unrecognised);
    }
    batch.problems.extend(problems);
    Loaded {
        origin,
        detection,
        batch,
    }
}

/// Loads every source (files or directories, recursively). Unreadable paths become problems.
pub fn load_sources(sources: &[PathBuf]) -> Vec<Loaded> {
    let mut out = Vec::new();
    for source in sources {
        visit(source, &mut |found| match found {
            Found::File(file) => out.push(load_file(file)),
            Found::Record(loaded) => out.push(*loaded),
        });
    }
    out
}

/// What a walk of one source hands its visitor, in order.
pub enum Found<'a> {
    /// A file to load.
    File(&'a Path),
    /// A load record with no file to read: notes about skipped entries, or why the source
    /// could not be walked. Boxed: a batch is far bigger than a path.
    Record(Box<Loaded>),
}

/// Walks `source` and hands each file to load, then the notes, to `visit` (for callers that
/// load some files their own way, like the headless loader's big files in pieces).
pub fn visit(source: &Path, visit: &mut dyn FnMut(Found)) {
    match walk(source) {
        Ok(found) => {
            for file in &found.files {
                visit(Found::File(file));
            }
            if !found.notes.is_empty() {
                visit(Found::Record(Box::new(notes_only(source, found.notes))));
            }
        }
        Err(error) => {
            let origin = Origin::File(std::sync::Arc::new(source.to_path_buf()));
            let mut batch = Batch::default();
            batch
                .problems
                .push(Problem::error(&origin, None, error.to_string()));
            visit(Found::Record(Box::new(Loaded {
                origin,
                detection: formats::Detection {
                    format: None,
                    reason: "not found".into(),
                },
                batch,
            })));
        }
    }
}

/// A load record that carries only notes about skipped entries of `source`.
pub fn notes_only(source: &Path, notes: Vec<Problem>) -> Loaded {
    Loaded {
        origin: Origin::File(std::sync::Arc::new(source.to_path_buf())),
        detection: formats::Detection {
            format: None,
            reason: "skipped entries".into(),
        },
        batch: Batch {
            problems: notes,
            ..Default::default()
        },
    }
}
