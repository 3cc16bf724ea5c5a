//! The status bar (redaction mode, counts, sources, messages, search prompt) and the footer
//! (the focused pane's key hints, from the keymap table the help also uses).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::UnicodeWidthStr;

use crate::redact::{self, Reveal};
use crate::sources::SourceStatus;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::app::triage::current_stop;
use crate::tui::keymap::Scope;
use crate::tui::overlays::{self, global_key, search};
use crate::tui::theme::Role;
use crate::views::ProblemCounts;

pub fn render_status(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.config.theme;
    let (label, role) = match app.reveal {
        Reveal::Redacted => (" REDACTED ", Role::ModeRedacted),
        Reveal::Revealed => (" REVEALED · secrets masked ", Role::ModeRevealed),
    };
    let mut spans = vec![Span::styled(label, theme.style(role)), Span::raw(" ")];
    if let Some(prompt) = search::prompt_spans(app) {
        spans.extend(prompt);
    } else {
        let stats = app.store.stats();
        let mut text = format!(
            "{} invocations · {} spans",
            app.store.len(),
            stats.spans_kept
        );
        if stats.invocations_evicted > 0 {
            text.push_str(&format!(
                " · kept {} of {} runs, evicted {}",
                app.store.len(),
                stats.invocations_seen,
                stats.invocations_evicted
            ));
        }
        spans.push(Span::styled(text, theme.style(Role::Text)));
        spans.extend(triage_spans(app));
        let tally = ProblemCounts::of(app.store.problems());
        let problems_key = global_key(&app.config.keymap, Action::ToggleProblems);
        let counted = problems_text(&tally, problems_key.as_deref());
        // Notes (an Inspect log's coverage, files skipped as not traces) are no failure, but
        // the list that holds them is named; its key once.
        let notes_key = problems_key.as_deref().filter(|_| counted.is_none());
        if let Some(text) = counted {
            let role = if tally.errors > 0 {
                Role::StatusError
            } else {
                Role::StatusDegraded
            };
            spans.push(Span::styled(text, theme.style(role)));
        }
        if let Some(text) = notes_text(&tally, notes_key) {
            spans.push(Span::styled(text, theme.style(Role::Dim)));
        }
        // The message answers the last key: before the (long) source list, so it is not cut.
        // When the counts leave it no room, it stands alone after the mode until the next key
        // (where a report went matters more than counts shown again a key later).
        if let Some(message) = &app.message {
            let message = redact::shown_line(message, app.reveal);
            let used: usize = spans.iter().map(|span| span.content.width()).sum();
            let text = if used + 3 + message.width() > area.width as usize {
                spans.truncate(2);
                message
            } else {
                format!(" · {message}")
            };
            spans.push(Span::styled(text, theme.style(Role::Message)));
        }
        for source in app.sources.iter().filter(|s| !s.is_finished_read()) {
            spans.push(Span::styled(
                format!(" · {}", redact::sanitize_line(&source_text(source))),
                theme.style(Role::Dim),
            ));
        }
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// `N of M runs failing`, and `failure k of T` while the selection is one of the queue's stops
/// (a failing run's root, then each failed span in it: T counts places, not runs).
fn triage_spans(app: &App) -> Vec<Span<'static>> {
    let theme = &app.config.theme;
    let listed = app.list.len();
    let failing = app.triage.failing;
    let mut out = vec![Span::styled(
        format!(" · {failing} of {listed} runs failing"),
        theme.style(if failing > 0 {
            Role::StatusError
        } else {
            Role::StatusOk
        }),
    )];
    if let Some(k) = current_stop(app) {
        out.push(Span::styled(
            format!(" · failure {} of {}", k + 1, app.triage.stops.len()),
            theme.style(Role::Message),
        ));
    }
    if !app.mouse_capture {
        let text = match global_key(&app.config.keymap, Action::ToggleMouseCapture) {
            Some(key) => format!(" · mouse off ({key})"),
            None => " · mouse off".into(),
        };
        out.push(Span::styled(text, theme.style(Role::Dim)));
    }
    out
}

fn source_text(status: &SourceStatus) -> String {
    let mb = |bytes: u64| bytes as f64 / 1e6;
    match status {
        SourceStatus::Reading {
            path,
            read,
            total,
            bytes_per_sec,
        } => format!(
            "reading {} {:.1}/{:.1} MB · {:.1} MB/s",
            path.file_name()
                .unwrap_or(path.as_os_str())
                .to_string_lossy(),
            mb(*read),
            mb(*total),
            mb(*bytes_per_sec)
        ),
        SourceStatus::Watching {
            root,
            files,
            loaded,
            total,
        } if loaded < total => {
            format!("loading {} ({loaded}/{total})", root.display())
        }
        SourceStatus::Watching { root, files, .. } => {
            format!("watching {} ({files} files)", root.display())
        }
        SourceStatus::Listening {
            http,
            requests,
            rejected,
            ..
        } => {
            format!("listening {http} ({requests} req, {rejected} rejected)")
        }
        SourceStatus::Attached {
            url,
            connected: true,
            ..
        } => format!("attached {url}"),
        SourceStatus::Attached {
            url,
            retry_in_ms,
            unauthorized: true,
            ..
        } => match retry_in_ms {
            Some(ms) => format!(
                "{url} 401 unauthorized: wrong or missing token, retry in {}s",
                ms / 1000
            ),
            None => format!("{url} 401 unauthorized: wrong or missing token"),
        },
        SourceStatus::Attached {
            url, retry_in_ms, ..
        } => match retry_in_ms {
            Some(ms) => format!("{url} disconnected, retry in {}s", ms / 1000),
            None => format!("{url} disconnected"),
        },
    }
}

/// Global actions shown before the focused pane's own keys: the triage loop's, then how to
/// find everything else.
const FOOTER_FIRST: &[Action] = &[
    Action::NextFailure,
    Action::NextFailingInvocation,
    Action::ToggleHelp,
    Action::StartSearch,
    Action::ToggleReveal,
];

/// Global actions worth a footer slot after the focused pane's own keys, while room is left.
const FOOTER_LATER: &[Action] = &[
    Action::ToggleTranscript,
    Action::ToggleSummary,
    Action::ToggleDiff,
    Action::Export,
    Action::Copy,
    Action::Annotate,
    Action::FocusNext,
    Action::Quit,
];

/// The footer's hints for the current focus, most needed first: the triage keys, help, search
/// and reveal, the pane's own bindings, then a few more global ones; the diff overlay's own
/// while it is open (the help and problems overlays carry theirs in the title, and the search
/// prompt in the status bar). The footer shows as many as fit.
pub fn footer_hints(app: &App) -> Vec<(String, &'static str)> {
    if let Some(overlay) = &app.overlay
        && let Some(items) = overlay.footer()
    {
        return overlays::footer_hints(&app.config.keymap, overlay.kind().keys(), items);
    }
    let keymap = &app.config.keymap;
    let scope = if app.payload_fullscreen {
        Scope::Payload
    } else {
        app.focus.scope()
    };
    let global = keymap.hints(Scope::Global);
    let hint_text = |h: &crate::tui::keymap::Hint| {
        (
            h.keys.first().cloned().unwrap_or_default(),
            footer_label(h.action),
        )
    };
    let globals = |wanted: &[Action]| -> Vec<(String, &'static str)> {
        wanted
            .iter()
            .filter_map(|action| global.iter().find(|h| h.action == *action))
            .map(hint_text)
            .collect()
    };
    let mut out = globals(FOOTER_FIRST);
    let (presets, own): (Vec<_>, Vec<_>) = keymap
        .hints(scope)
        .into_iter()
        .partition(|h| matches!(h.action, Action::Preset(_)));
    out.extend(own.iter().map(hint_text));
    // The presets share one hint (`1-3 presets`); the help names each.
    let preset_keys: Vec<String> = presets
        .iter()
        .filter_map(|h| h.keys.first().cloned())
        .collect();
    match preset_keys.as_slice() {
        [] => {}
        [only] => out.push((only.clone(), "preset")),
        [first, .., last] => out.push((format!("{first}-{last}"), "presets")),
    }
    out.extend(globals(FOOTER_LATER));
    out
}

/// An action as the footer names it: a word or two, so more keys fit (the help says more).
fn footer_label(action: Action) -> &'static str {
    match action {
        Action::NextFailure => "next failure",
        Action::NextFailingInvocation => "failing run",
        Action::ToggleHelp => "help",
        Action::StartSearch => "search",
        Action::ToggleReveal => "reveal",
        Action::Expand => "open",
        Action::ToggleFold => "fold",
        Action::Collapse => "back",
        Action::CycleSort => "sort",
        Action::ToggleDiff => "gold diff",
        Action::Export => "export",
        Action::Copy => "copy",
        Action::Annotate => "note",
        Action::FocusNext => "next pane",
        Action::Quit => "quit",
        Action::JumpToRequester => "requester",
        Action::TogglePayloadFullscreen => "full screen",
        Action::ToggleRawPayload => "chat/JSON",
        Action::ToggleTranscript => "transcript",
        Action::ToggleSummary => "summary",
        Action::ExpandAll => "expand all",
        Action::CollapseAll => "collapse all",
        Action::ToggleFindOnly => "only found",
        other => other.description().unwrap_or(""),
    }
}

/// The hints that fit in `width` cells, whole, in order.
pub fn render_footer(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.config.theme;
    let mut spans = Vec::new();
    let mut used = 0;
    for (key, description) in footer_hints(app) {
        let text = format!(" {description}  ");
        let cells = key.width() + text.trim_end().width();
        if used + cells > area.width as usize {
            break;
        }
        used += key.width() + text.width();
        spans.push(Span::styled(key, theme.style(Role::HintKey)));
        spans.push(Span::styled(text, theme.style(Role::HintText)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// ` · 2 errors, 1 warning (p)` with the key that opens the list, if bound; `None` when there
/// is nothing to count.
fn problems_text(counts: &ProblemCounts, key: Option<&str>) -> Option<String> {
    let key = key.map(|k| format!(" ({k})")).unwrap_or_default();
    counts.counted().map(|counted| format!(" · {counted}{key}"))
}

/// ` · 3 notes (p)`; `None` without notes.
fn notes_text(counts: &ProblemCounts, key: Option<&str>) -> Option<String> {
    let key = key.map(|k| format!(" ({k})")).unwrap_or_default();
    counts
        .notes_counted()
        .map(|notes| format!(" · {notes}{key}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_counted_apart_from_problems_with_the_key_once() {
        let tally = |errors, notes| ProblemCounts {
            errors,
            warnings: 0,
            notes,
        };
        assert_eq!(notes_text(&tally(0, 0), Some("p")), None);
        assert_eq!(
            notes_text(&tally(0, 1), Some("p")).as_deref(),
            Some(" · 1 note (p)")
        );
        assert_eq!(
            notes_text(&tally(0, 3), None).as_deref(),
            Some(" · 3 notes")
        );
        assert_eq!(
            problems_text(&tally(2, 3), Some("p")).as_deref(),
            Some(" · 2 errors (p)")
        );
        let both = ProblemCounts {
            errors: 1,
            warnings: 2,
            notes: 0,
        };
        assert_eq!(
            problems_text(&both, None).as_deref(),
            Some(" · 1 error, 2 warnings")
        );
        assert_eq!(both.words(), "1 error, 2 warnings");
        assert_eq!(tally(0, 3).words(), "none");
    }

    #[test]
    fn a_refused_feed_is_named_401_in_the_status_bar() {
        let attached = |unauthorized| SourceStatus::Attached {
            url: "http://127.0.0.1:4318".into(),
            connected: false,
            retry_in_ms: Some(5000),
            unauthorized,
        };
        assert_eq!(
            redact::sanitize_line(&source_text(&attached(true))),
            "http://127.0.0.1:4318 401 unauthorized: wrong or missing token, retry in 5s"
        );
        assert_eq!(
            source_text(&attached(false)),
            "http://127.0.0.1:4318 disconnected, retry in 5s"
        );
    }
}
