//! `y` copies the focused thing and `x` exports a triage report, both as the screen shows them
//! (redacted unless revealed). Copies go to the terminal as OSC 52, so they work inside tmux
//! (`set-clipboard on`) and over SSH; the event loop writes the sequence between frames.

use base64::Engine as _;

use super::{App, Pane};
use crate::redact::Reveal;
use crate::views::dump::{Selection, invocation_json, payload_json};
use crate::views::report;

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
        Pane::List => Some((inv.id.to_string(), "trace id")),
        Pane::Tree => {
            let span = &inv.spans[app.selected_span_index()?];
            let doc = invocation_json(inv, mode);
            let value = doc["spans"]
                .as_array()?
                .iter()
                .find(|s| s["span_id"].as_str() == Some(&*span.span_id.text()))?
                .clone();
            Some((serde_json::to_string_pretty(&value).ok()?, "span JSON"))
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
                serde_json::Value::String(s) => s,
                other => serde_json::to_string_pretty(&other).ok()?,
            };
            Some((text, "payload"))
        }
    }
}

pub(super) fn copy(app: &mut App) {
    match copy_text(app) {
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

pub(super) fn export(app: &mut App) {
    // The listed runs, chosen as `dump` chooses them (the same filter evaluator, oldest first),
    // so the JSON beside the report is exactly `dump --json [--filter QUERY]`.
    let selection = match &app.list_search.query {
        Some(query) => Selection::filtered(&app.store, query, app.reveal),
        None => Selection::all(&app.store),
    };
    let built = report::build(&app.store, &selection, app.reveal);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let path = std::path::PathBuf::from(format!("toolcap-report-{stamp}.md"));
    app.message = Some(
        match report::write(&built, &path, &app.store, &selection, app.reveal) {
            Ok(bytes) => format!(
                "report: {} failing of {} listed → {} (+ .json, {bytes} bytes)",
                built.failing,
                built.listed,
                path.display()
            ),
            Err(why) => format!("report: {}: {why}", path.display()),
        },
    );
}
