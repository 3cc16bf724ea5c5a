//! Triage notes: a label and a free-text note per run, kept in a JSON-lines sidecar beside the
//! traces (`.toolcap/notes.jsonl`), never in the traces themselves.
//!
//! The file is append-only: each note is one line, written by one `write` of the whole line on a
//! file opened with `O_APPEND`, then synced, so writers running at once (two TUIs, a TUI and
//! `annotate`) interleave whole lines and lose nothing. The latest line for a run wins; a line
//! with an empty label and an empty note clears the run's note. History stays in the file.
//!
//! ```text
//! {"v":1,"run":"4bf9…","case":{"id":"capital-1","index":2},"label":"flaky","note":"…","author":"ann","time":"2026-12-07T01:25:00Z"}
//! ```
//!
//! The file is user-editable, so reading trusts nothing: a line longer than
//! [`MAX_LINE_BYTES`], a line that does not parse, a label that is not a plain word, and a last
//! line without its newline (a writer killed mid-append) are each skipped with a problem that
//! names the file and the line; every other line still counts.

use std::collections::BTreeMap;
use std::io::{BufRead, Read as _, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::NotesError;
use crate::model::Problem;
use crate::system;

/// The directory beside the traces that holds the sidecar. Its name starts with a dot, so
/// neither the directory walk nor the watcher reads it as traces.
pub const NOTES_DIR: &str = ".toolcap";
/// The sidecar's file name inside [`NOTES_DIR`].
pub const NOTES_FILE: &str = "notes.jsonl";
/// The version every line carries; lines of another version are skipped with a problem.
pub const NOTES_VERSION: u32 = 1;
/// The labels offered when the config file names none.
pub const DEFAULT_LABELS: [&str; 5] = ["tool-bug", "model-error", "gold-wrong", "flaky", "known"];
/// Where the author's name comes from first, before `$USER`.
pub const AUTHOR_ENV: &str = "TOOLCAP_AUTHOR";
/// The longest line read or written: a note is typed by a person, so a longer line is damage.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// The longest note text, in characters.
pub const MAX_NOTE_CHARS: usize = 4_000;
/// The longest label, in characters.
pub const MAX_LABEL_CHARS: usize = 40;
/// The longest author name, in characters.
const MAX_AUTHOR_CHARS: usize = 100;

/// The evaluation case a noted run is, as `dump --json` writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteCase {
    pub id: String,
    pub index: u64,
}

/// One line of the sidecar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub v: u32,
    /// The run's id (`dump --json`'s `id`: an OTLP trace id, another format's run id).
    pub run: String,
    pub case: Option<NoteCase>,
    /// One of the configured labels, or empty.
    pub label: String,
    /// Free text, shown through the masking pass like every other text.
    pub note: String,
    pub author: String,
    /// When it was written, RFC 3339 in UTC.
    pub time: String,
}

impl Note {
    /// A note for `run` by the author the environment names, stamped now.
    pub fn new(run: &str, case: Option<NoteCase>, label: &str, note: &str) -> Note {
        Note {
            v: NOTES_VERSION,
            run: run.to_owned(),
            case,
            label: label.to_owned(),
            note: note.to_owned(),
            author: author_from_env(),
            time: now_rfc3339(),
        }
    }

    /// Whether this line takes the run's note away (empty label and empty note).
    pub fn clears(&self) -> bool {
        self.label.is_empty() && self.note.is_empty()
    }

    /// Why this note cannot be written or read, if it cannot.
    pub fn check(&self) -> Result<(), NotesError> {
        if self.v != NOTES_VERSION {
            return Err(NotesError::Version { version: self.v });
        }
        if self.run.trim().is_empty() {
            return Err(NotesError::NoRun);
        }
        check_label(&self.label)?;
        let chars = self.note.chars().count();
        if chars > MAX_NOTE_CHARS {
            return Err(NotesError::NoteTooLong {
                chars,
                max: MAX_NOTE_CHARS,
            });
        }
        if self.author.chars().count() > MAX_AUTHOR_CHARS {
            return Err(NotesError::AuthorTooLong {
                max: MAX_AUTHOR_CHARS,
            });
        }
        time::OffsetDateTime::parse(&self.time, &time::format_description::well_known::Rfc3339)
            .map_err(|_| NotesError::BadTime)?;
        Ok(())
    }
}

/// Whether `label` can be a label: empty (no label), or a plain word of lower-case letters,
/// digits, `-`, `_` and `.`, at most [`MAX_LABEL_CHARS`] long. Labels are shown as they are,
/// so nothing else (no escape, no space, no secret-shaped text) may be one.
pub fn check_label(label: &str) -> Result<(), NotesError> {
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c);
    if label.chars().count() > MAX_LABEL_CHARS || !label.chars().all(plain) {
        return Err(NotesError::BadLabel {
            label: label.chars().take(MAX_LABEL_CHARS).collect(),
        });
    }
    Ok(())
}

/// The author of notes written now: `$TOOLCAP_AUTHOR`, else `$USER`, else `unknown`.
pub fn author_from_env() -> String {
    author_from(|name| std::env::var(name).ok())
}

/// [`author_from_env`] over the variables `var` gives.
fn author_from(var: impl Fn(&str) -> Option<String>) -> String {
    [AUTHOR_ENV, "USER"]
        .iter()
        .filter_map(|name| var(name))
        .map(|name| {
            name.trim()
                .chars()
                .take(MAX_AUTHOR_CHARS)
                .collect::<String>()
        })
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Now, as RFC 3339 in UTC to the second (`2026-12-07T01:25:00Z`).
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let now = now.replace_nanosecond(0).unwrap_or(now);
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

/// Where the notes of `source` live: `SOURCE/.toolcap/notes.jsonl` for a directory, the same
/// beside the file for a file; `None` for what is not a local path (standard input, a URL).
pub fn sidecar_for(source: &Path) -> Option<PathBuf> {
    let text = source.to_string_lossy();
    if text == "-"
        || text.contains("://")
        || source.starts_with("/dev")
        || source.starts_with("/proc")
    {
        return None;
    }
    let dir = if source.is_dir() {
        source.to_path_buf()
    } else {
        match source.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        }
    };
    Some(dir.join(NOTES_DIR).join(NOTES_FILE))
}

/// The notes in force: the latest line of each run, with the problems met reading them.
#[derive(Debug, Clone, Default)]
pub struct Notes {
    by_run: BTreeMap<String, Note>,
    /// Lines skipped, each with the file and line.
    pub problems: Vec<Problem>,
    /// Lines that counted (history included), for tests and the status.
    pub lines: usize,
}

/// No notes: what views without a sidecar see.
pub static NO_NOTES: Notes = Notes {
    by_run: BTreeMap::new(),
    problems: Vec::new(),
    lines: 0,
};

impl Notes {
    /// The note of run `run`, if it has one.
    pub fn of_run(&self, run: &str) -> Option<&Note> {
        self.by_run.get(run)
    }

    /// Every run's note, in run id order.
    pub fn iter(&self) -> impl Iterator<Item = &Note> {
        self.by_run.values()
    }

    pub fn len(&self) -> usize {
        self.by_run.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_run.is_empty()
    }

    /// Takes `note` in as the latest for its run.
    pub fn apply(&mut self, note: Note) {
        if note.clears() {
            self.by_run.remove(&note.run);
        } else {
            self.by_run.insert(note.run.clone(), note);
        }
    }

    /// Reads the sidecar at `path`; a file that does not exist is no notes, not a problem.
    pub fn read(path: &Path) -> Notes {
        let shown = path.display().to_string();
        let file = match system::read_without_following().open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Notes::default(),
            Err(e) => {
                let why = NotesError::Unreadable {
                    path: path.to_path_buf(),
                    source: e,
                };
                return Notes {
                    problems: vec![Problem::warning(&shown, None, why.to_string())],
                    ..Notes::default()
                };
            }
        };
        match file.metadata() {
            Ok(meta) if meta.is_file() => {}
            _ => {
                return Notes {
                    problems: vec![Problem::warning(
                        &shown,
                        None,
                        NotesError::NotAFile {
                            path: path.to_path_buf(),
                        }
                        .to_string(),
                    )],
                    ..Notes::default()
                };
            }
        }
        Notes::parse(std::io::BufReader::new(file), &shown)
    }

    /// Reads notes from `reader`, naming `source` in problems.
    pub fn parse(mut reader: impl BufRead, source: &str) -> Notes {
        let mut notes = Notes::default();
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            number += 1;
            let read = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line);
            match read {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    notes.problems.push(Problem::warning(
                        source,
                        Some(number),
                        format!("notes not read past here: {e}"),
                    ));
                    break;
                }
            }
            if line.last() != Some(&b'\n') {
                if line.len() > MAX_LINE_BYTES {
                    // Too long: skipped up to its newline, the lines after it still read.
                    let skipped = skip_line(&mut reader) + line.len();
                    notes.problems.push(Problem::warning(
                        source,
                        Some(number),
                        NotesError::LineTooLong {
                            bytes: skipped,
                            max: MAX_LINE_BYTES,
                        }
                        .to_string(),
                    ));
                    continue;
                }
                // The end of the file without a newline: a writer stopped mid-line.
                notes.problems.push(Problem::warning(
                    source,
                    Some(number),
                    "an unfinished last note (its writer stopped mid-line) is skipped",
                ));
                break;
            }
            let text = line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            let parsed = serde_json::from_slice::<Note>(text)
                .map_err(|e| NotesError::BadLine(e.to_string()))
                .and_then(|note| note.check().map(|()| note));
            match parsed {
                Ok(note) => {
                    notes.lines += 1;
                    notes.apply(note);
                }
                Err(e) => notes.problems.push(Problem::warning(
                    source,
                    Some(number),
                    format!("note skipped: {e}"),
                )),
            }
        }
        notes
    }
}

/// Reads past the rest of a line; returns the bytes passed over.
fn skip_line(reader: &mut impl BufRead) -> usize {
    let mut skipped = 0;
    loop {
        let (done, used) = match reader.fill_buf() {
            Ok([]) | Err(_) => return skipped,
            Ok(buf) => match memchr::memchr(b'\n', buf) {
                Some(at) => (true, at + 1),
                None => (false, buf.len()),
            },
        };
        reader.consume(used);
        skipped += used;
        if done {
            return skipped;
        }
    }
}

/// Appends `note` to the sidecar at `path`, creating it (and its directory) owner-only, never
/// through a symbolic link; returns once the line is on disk.
///
/// The line is written with one `write` on a file opened for appending, so lines of writers
/// running at once never interleave. A file whose last line was cut short (its writer killed)
/// gets a newline first, so the cut line stays one bad line and this note stays whole.
pub fn append(path: &Path, note: &Note) -> Result<(), NotesError> {
    append_with(path, note, |file, line| file.write_all(line))
}

/// [`append`] that writes the first half of the line, syncs it, calls `pause`, then writes the
/// rest: a test kills the process during `pause` to leave a note cut short, as a writer killed
/// mid-append (or a full disk) would.
#[doc(hidden)]
pub fn append_pausing_midway(
    path: &Path,
    note: &Note,
    pause: impl FnOnce(),
) -> Result<(), NotesError> {
    append_with(path, note, |file, line| {
        let (first, rest) = line.split_at(line.len() / 2);
        file.write_all(first)?;
        file.sync_all()?;
        pause();
        file.write_all(rest)
    })
}

fn append_with(
    path: &Path,
    note: &Note,
    write: impl FnOnce(&mut std::fs::File, &[u8]) -> std::io::Result<()>,
) -> Result<(), NotesError> {
    note.check()?;
    let mut line = serde_json::to_vec(note).map_err(|e| NotesError::BadLine(e.to_string()))?;
    line.push(b'\n');
    if line.len() > MAX_LINE_BYTES {
        return Err(NotesError::LineTooLong {
            bytes: line.len(),
            max: MAX_LINE_BYTES,
        });
    }
    let io = |source| NotesError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        make_notes_dir(dir)?;
    }
    let mut file = system::owner_only_file()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| match system::is_refused_link(&e) {
            true => NotesError::Link {
                path: path.to_path_buf(),
            },
            false => io(e),
        })?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(NotesError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    if meta.len() > 0 && !ends_with_newline(&file, meta.len()) {
        line.insert(0, b'\n');
    }
    write(&mut file, &line).map_err(io)?;
    file.sync_all().map_err(io)
}

/// Whether the byte at `len - 1` of `file` is a newline.
fn ends_with_newline(file: &std::fs::File, len: u64) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt as _;
        let mut last = [0u8];
        file.read_at(&mut last, len - 1).is_ok_and(|n| n == 1) && last[0] == b'\n'
    }
    #[cfg(not(unix))]
    {
        let _ = (file, len);
        true
    }
}

/// Creates the notes directory owner-only when missing; refuses one that is a symbolic link.
fn make_notes_dir(dir: &Path) -> Result<(), NotesError> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => Err(NotesError::Link {
            path: dir.to_path_buf(),
        }),
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(NotesError::NotAFile {
            path: dir.to_path_buf(),
        }),
        Err(_) => {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt as _;
                builder.mode(0o700);
            }
            builder
                .create(dir)
                .map_err(|source| NotesError::Unreadable {
                    path: dir.to_path_buf(),
                    source,
                })
        }
    }
}

#[cfg(test)]
mod tests;
