//! `y` copies the focused thing as the screen shows it (redacted unless revealed, secrets
//! masked, escape sequences and line breaks of trace text made inert); `x` exports a triage
//! report, always redacted, and `X` a revealed one (secrets still masked), the one way a
//! revealed payload is written to disk. Copies go to the terminal as OSC 52, so they work
//! inside tmux (`set-clipboard on`) and over SSH; the event loop writes the sequence between
//! frames.

use std::path::Path;

use base64::Engine as _;

use super::{App, Pane};
use crate::redact::{self, Reveal};
use crate::views::dump::{Selection, invocation_json, payload_json};
use crate::views::report;

/// The most text one copy puts on the clipboard: terminals drop (or choke on) much longer
/// OSC 52 sequences, and a longer payload is better exported (`x`).
pub const OSC52_MAX_TEXT: usize = 1 << 20;

/// The OSC 52 sequence that puts `text` on the system clipboard.
pub fn osc52(text: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{encoded}\x07")
}

/// What `y` copies for the focused pane, and a name for it.
pub fn copy_text(app: &App) -> Option<(String, &'static str)> {
    let inv = app.invocation()?;
    let mode = app.reveal;
    match app.focus {
        // Some ids are a source's path, which is trace data like any other.
        Pane::List => Some((redact::shown_line(&inv.id.text(), mode), "trace id")),
        Pane::Tree => {
            let span = &inv.spans[app.selected_span_index()?];
            let doc = invocation_json(inv, mode);
            let value = doc["spans"]
                .as_array()?
                .iter()
                .find(|s| s["span_id"].as_str() == Some(&*span.span_id.text()))?
                .clone();
            Some((inert_json(value)?, "span JSON"))
        }
        _ => {
            let span = &inv.spans[app.selected_span_index()?];
            let payload = match span.output() {
                output if output.is_captured() => output,
                _ => span.input(),
            };
            let shown = payload_json(&payload, mode);
            let value = match mode {
                Reveal::Redacted => shown.get("shape").cloned(),
                Reveal::Revealed => shown.get("value").cloned(),
            }
            .unwrap_or(shown);
            let text = match value {
                serde_json::Value::String(s) => redact::shown(&s, mode),
                other => inert_json(other)?,
            };
            Some((text, "payload"))
        }
    }
}

/// `value` written as pretty JSON with every text in it, keys too, made inert as the screen
/// shows text. Texts are cleaned one by one: masking the written JSON as a whole would take
/// its quotes for part of a `key: value` secret.
fn inert_json(mut value: serde_json::Value) -> Option<String> {
    fn make_inert(value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(text) => *text = redact::sanitize(text),
            Value::Array(items) => items.iter_mut().for_each(make_inert),
            Value::Object(map) => {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(key, mut value)| {
                        make_inert(&mut value);
                        (redact::sanitize(&key), value)
                    })
                    .collect();
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    make_inert(&mut value);
    serde_json::to_string_pretty(&value)
        .ok()
        .map(|json| redact::escape_json_text(&json).into_owned())
}

pub(super) fn copy(app: &mut App) {
    match copy_text(app) {
        Some((text, _)) if text.len() > OSC52_MAX_TEXT => {
            // Tenths of a MiB, rounded up: just above the cap never reads as equal to it.
            let tenths = (text.len() * 10).div_ceil(OSC52_MAX_TEXT);
            app.message = Some(format!(
                "copy too large: {}.{} MiB > 1 MiB; use x to export",
                tenths / 10,
                tenths % 10
            ));
        }
        Some((text, what)) => {
            app.message = Some(format!(
                "copied {what} ({} bytes, {})",
                text.len(),
                match app.reveal {
                    Reveal::Redacted => "redacted",
                    Reveal::Revealed => "revealed, secrets masked",
                }
            ));
            app.clipboard = Some(text);
        }
        None => app.message = Some("nothing to copy here".into()),
    }
}

/// `x` (redacted) and `X` (revealed): the report of the listed runs, as new files in the
/// working directory.
pub(super) fn export(app: &mut App, mode: Reveal) {
    export_into(app, Path::new("."), time::OffsetDateTime::now_utc(), mode);
}

/// Writes the report of the listed runs under `mode` as new files in `dir`, named by the UTC
/// time `at`, and says so in the status bar.
pub fn export_into(app: &mut App, dir: &Path, at: time::OffsetDateTime, mode: Reveal) {
    // The listed runs, chosen as `dump` chooses them (the same filter evaluator, oldest first),
    // so the JSON beside the report is exactly `dump --json [--filter QUERY]`. The list is
    // the one on screen, filtered under the screen's mode whatever the export's.
    let selection = match &app.list_search.query {
        Some(query) => Selection::filtered(&app.store, query, app.reveal),
        None => Selection::all(&app.store),
    };
    let built = report::build(&app.store, &selection, mode);
    let kind = match mode {
        Reveal::Redacted => "report",
        Reveal::Revealed => "REVEALED report (payloads written, secrets masked)",
    };
    app.message = Some(
        match report::write_new(&built, dir, at, &app.store, &selection, mode) {
            Ok((path, bytes)) => format!(
                "{kind}: {} failing of {} listed → {} (+ .json, {bytes} bytes)",
                built.failing,
                built.listed,
                path.display()
            ),
            Err(why) => format!("{kind}: {why}"),
        },
    );
}
