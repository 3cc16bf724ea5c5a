//! `x`: the comparison as Markdown (`compare --md`), always redacted as the main view's `x`
//! is, written as a new owner-only file in the working directory through the writer every
//! export uses (never through a symlink, never over a file already there).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::state::CompareState;
use crate::redact::Reveal;
use crate::views::compare::{compare, markdown};
use crate::views::out_file;

/// Writes the comparison into the state's export directory, named by the time now.
pub fn export(state: &mut CompareState) {
    let dir = state.export_dir.clone();
    export_into(state, &dir, time::OffsetDateTime::now_utc());
}

/// Writes the comparison, redacted, as a new file in `dir` named by the UTC time `at`
/// (`toolcap-compare-20261206T021500Z.md`, then `-2`, `-3` … when the name is taken), and
/// says where in the status line.
pub fn export_into(state: &mut CompareState, dir: &Path, at: time::OffsetDateTime) {
    state.message = Some(match write_new(state, dir, at) {
        Ok((path, bytes)) => format!(
            "comparison (redacted): {} newly failing of {} cases → {} ({bytes} bytes)",
            state.comparison.newly_failing_in_b(),
            state.rows.len() - state.class_rows.len(),
            path.display()
        ),
        Err(why) => format!("comparison not written: {why}"),
    });
}

fn write_new(
    state: &CompareState,
    dir: &Path,
    at: time::OffsetDateTime,
) -> std::io::Result<(PathBuf, usize)> {
    // The screen's comparison is held revealed; the file gets the redacted one, as
    // `compare --md` writes it without `--reveal`.
    let redacted = compare(
        state.stores[0],
        state.stores[1],
        &state.rule,
        Reveal::Redacted,
    );
    let text = markdown(&redacted, &state.sources[0], &state.sources[1]);
    let stem = format!("toolcap-compare-{}", out_file::utc_stamp(at));
    let mut files = out_file::create_numbered(dir, &stem, &["md"])?;
    let (path, mut file) = files
        .pop()
        .ok_or_else(|| std::io::Error::other("one file asked for"))?;
    file.write_all(text.as_bytes())?;
    Ok((path, text.len()))
}
