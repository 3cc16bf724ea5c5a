//! The TUI's triage notes: the notes file it reads and appends to, the prompt `a` opens, and
//! the notes other processes write (another TUI, `annotate`), read again when the file changes.
//!
//! The event loop asks [`reload_if_changed`] on a slow tick: a stat of one file, and a read
//! only when its size or modification time moved. Appends only ever grow the file, so a note
//! written elsewhere is seen at the next tick.

use std::path::PathBuf;
use std::time::SystemTime;

use super::App;
use crate::notes::{Note, NoteCase, Notes};
use crate::redact;
use crate::tui::overlays::Overlay;
use crate::tui::overlays::note::NotePrompt;

/// The notes file of the session, and what it looked like when last read.
#[derive(Debug, Clone)]
pub struct NotesFile {
    pub path: PathBuf,
    seen: Option<(u64, Option<SystemTime>)>,
}

impl NotesFile {
    pub fn new(path: PathBuf) -> Self {
        NotesFile { path, seen: None }
    }

    /// The file's size and modification time now; `None` when it does not exist.
    fn stamp(&self) -> Option<(u64, Option<SystemTime>)> {
        let meta = std::fs::symlink_metadata(&self.path).ok()?;
        Some((meta.len(), meta.modified().ok()))
    }
}

/// Starts reading and writing notes at `path` (read now).
pub fn use_notes_file(app: &mut App, path: PathBuf) {
    app.notes_file = Some(NotesFile::new(path));
    reload_if_changed(app);
}

/// Reads the notes file again when it changed since last read; true when it did.
pub fn reload_if_changed(app: &mut App) -> bool {
    let Some(file) = app.notes_file.as_mut() else {
        return false;
    };
    let stamp = file.stamp();
    if file.seen == Some(stamp.unwrap_or_default()) {
        return false;
    }
    file.seen = Some(stamp.unwrap_or_default());
    let notes = Notes::read(&file.path);
    app.store.set_notes(notes);
    app.version += 1;
    super::refresh(app);
    true
}

/// `a`: opens the note prompt on the selected run, filled with its note if it has one.
pub fn open_prompt(app: &mut App) {
    let Some(inv) = app.invocation() else {
        app.message = Some("no run selected to note".into());
        return;
    };
    if app.notes_file.is_none() {
        app.message =
            Some("no notes file: open a local directory or file, or pass --notes FILE".into());
        return;
    }
    let run = inv.id.to_string();
    let labels = app.config.labels_for_notes();
    let current = app.store.notes().of_run(&run);
    let prompt = NotePrompt {
        case: inv.case().map(|case| NoteCase {
            id: case.id.clone(),
            index: case.index,
        }),
        name: inv.summary().name.to_string(),
        label: match current {
            Some(note) => labels.iter().position(|l| *l == note.label),
            None => Some(0),
        },
        text: current.map(|note| note.note.clone()).unwrap_or_default(),
        labels,
        run,
    };
    app.overlay = Some(Overlay::Note(prompt));
}

/// Enter in the prompt: appends the note, reads the file again (with what others wrote), and
/// says where it went.
pub fn save(app: &mut App, prompt: &NotePrompt) {
    let Some(file) = app.notes_file.as_ref() else {
        return;
    };
    let path = file.path.clone();
    let note = Note::new(
        &prompt.run,
        prompt.case.clone(),
        prompt.label_text(),
        &prompt.text,
    );
    let written = crate::notes::append(&path, &note);
    let shown_path = redact::sanitize_line(&path.display().to_string());
    app.message = Some(match written {
        Ok(()) if note.clears() => format!("note cleared → {shown_path}"),
        Ok(()) if note.label.is_empty() => format!("noted → {shown_path}"),
        Ok(()) => format!("noted [{}] → {shown_path}", note.label),
        Err(why) => format!(
            "note not saved: {}",
            redact::shown_line(&why.to_string(), app.reveal)
        ),
    });
    reload_if_changed(app);
}
