//! The detail pane's content for one span: facts, payloads, attributes and events, as styled
//! lines wrapped to the pane. Built when the selection, mode or width changes — not per frame.

use std::sync::Arc;

use ratatui::text::{Line, Span};

use super::chat::{ChatLayout, chat_lines};
use super::facts::{facts, provenance};
use super::format::{bytes, duration_ms};
use super::payload::payload_lines;
use super::theme::{Role, Theme};
use super::wrap::wrap_all;
use crate::formats;
use crate::model::{AttrValue, AttrView, Payload, PayloadState, Span as TraceSpan, SpanKind};
use crate::redact::{self, MASK, Reveal};
use crate::store::Invocation;
use toolcap_formats::messages::{Side, read_messages};

/// A span's payload texts, read once when the span is selected.
#[derive(Debug, Clone)]
pub struct LoadedPayloads {
    pub input: Result<Option<String>, Arc<toolcap_formats::Error>>,
    pub output: Result<Option<String>, Arc<toolcap_formats::Error>>,
    /// The exception event's stack trace when it is a payload kept out of memory (an
    /// Inspect sample error's traceback), read with the others, off the render path.
    pub stack_trace: Option<String>,
    /// The references they were loaded from: a re-read file gives new ones.
    loaded_from: (Payload, Payload),
}

impl LoadedPayloads {
    pub fn load(span: &TraceSpan) -> Self {
        let load = |p: &Payload| {
            if matches!(p.state, PayloadState::NotCaptured | PayloadState::Empty) {
                Ok(None)
            } else {
                formats::load_payload(p).map_err(Arc::new)
            }
        };
        // Read back once each: a payload kept in the attribute list is decoded on every read.
        let (input, output) = (span.input().into_owned(), span.output().into_owned());
        let stack_trace = stack_trace_of(span).and_then(|value| match &*value {
            AttrValue::Payload(payload) => load(payload).ok().flatten(),
            _ => None,
        });
        LoadedPayloads {
            input: load(&input),
            output: load(&output),
            stack_trace,
            loaded_from: (input, output),
        }
    }

    /// Whether these texts still belong to `span` (its payload references are unchanged).
    pub fn is_current_for(&self, span: &TraceSpan) -> bool {
        self.loaded_from.0 == *span.input() && self.loaded_from.1 == *span.output()
    }

    /// The input and output references the texts were loaded from (the span's, while
    /// [`LoadedPayloads::is_current_for`] it).
    pub fn references(&self) -> (&Payload, &Payload) {
        (&self.loaded_from.0, &self.loaded_from.1)
    }
}

pub struct Built {
    pub lines: Vec<Line<'static>>,
    pub payload_start: usize,
}

/// One attribute value as shown under the mode (always sanitized, secrets masked).
pub fn attr_text(key: &str, value: &AttrValue, mode: Reveal) -> String {
    if redact::is_secret_key(key) {
        return MASK.to_owned();
    }
    let hidden = mode == Reveal::Redacted && redact::hides_value(key, value);
    let text = match value {
        AttrValue::Payload(p) => format!("<payload, {}, {}>", bytes(p.bytes), p.state.label()),
        AttrValue::Str(s) if hidden => format!("string ({} chars)", s.chars().count()),
        _ if hidden => "structured value (redacted)".to_owned(),
        other => redact::mask_text(&other.display_short(), mode).into_owned(),
    };
    redact::sanitize_line(&text)
}

fn section(title: String, theme: &Theme) -> Line<'static> {
    Line::styled(format!("── {title} ──"), theme.style(Role::Title))
}

/// Builds the detail lines for span `index` of `inv`, with `payloads` loaded for that span.
/// How payloads are shown: the reveal mode, and whether chat messages read as a conversation
/// (`chat`) or as their JSON (`None`).
#[derive(Debug, Clone, Copy)]
pub struct PayloadView {
    pub mode: Reveal,
    pub chat: Option<ChatLayout>,
}

pub fn span_lines(
    inv: &Invocation,
    index: usize,
    payloads: &LoadedPayloads,
    view: PayloadView,
    theme: &Theme,
    width: u16,
) -> Built {
    let mode = view.mode;
    let Some(span) = inv.spans.get(index) else {
        return Built {
            lines: Vec::new(),
            payload_start: 0,
        };
    };
    let mut lines = facts(inv, index, span, mode, theme);
    lines.push(Line::raw(""));
    let mut out = wrap_all(lines, width);
    let payload_start = out.len();
    let mut rest = Vec::new();
    // The references `payloads` was loaded from, not the span's read back again: a payload
    // kept in the attribute list is decoded on every read.
    let (input, output) = payloads.references();
    // Only a model call's payloads are messages: a tool's result is not the model's answer.
    let chat = view.chat.filter(|_| span.kind == SpanKind::Llm);
    let sides = [
        ("input", input, &payloads.input, Side::Input),
        ("output", output, &payloads.output, Side::Output),
    ];
    for (label, payload, loaded, side) in sides {
        let shown = PayloadShown {
            mode,
            chat: chat.map(|layout| (layout, side, width)),
        };
        payload_section(label, payload, loaded, shown, theme, &mut rest);
    }
    rest.extend(provenance(span, mode, theme));
    rest.push(Line::raw(""));
    attributes(span, mode, theme, &mut rest);
    events(span, payloads, mode, theme, &mut rest);
    out.extend(wrap_all(rest, width));
    Built {
        lines: out,
        payload_start,
    }
}

/// One payload's way of being shown: as chat (its layout, its side of the call, the pane's
/// width) when it holds messages, else as JSON or text.
#[derive(Clone, Copy)]
struct PayloadShown {
    mode: Reveal,
    chat: Option<(ChatLayout, Side, u16)>,
}

fn payload_section(
    label: &str,
    payload: &Payload,
    loaded: &Result<Option<String>, Arc<toolcap_formats::Error>>,
    shown: PayloadShown,
    theme: &Theme,
    out: &mut Vec<Line<'static>>,
) {
    let mode = shown.mode;
    let field = payload
        .field
        .as_deref()
        .map(|f| format!(" · {}", redact::sanitize_line(f)))
        .unwrap_or_default();
    let mode_tag = match mode {
        Reveal::Redacted => "redacted",
        Reveal::Revealed => "revealed",
    };
    match payload.state {
        PayloadState::NotCaptured => {
            out.push(section(format!("{label}{field}"), theme));
            out.push(Line::styled(
                "not captured (the exporter did not record it)",
                theme.style(Role::Missing),
            ));
            return;
        }
        PayloadState::Empty => {
            out.push(section(format!("{label}{field} · empty"), theme));
            out.push(Line::styled(
                "empty (recorded with no content)",
                theme.style(Role::Missing),
            ));
            return;
        }
        PayloadState::Present => out.push(section(
            format!("{label}{field} · {} · {mode_tag}", bytes(payload.bytes)),
            theme,
        )),
        PayloadState::Truncated { total_bytes } => {
            out.push(section(format!("{label}{field} · {mode_tag}"), theme));
            out.push(Line::styled(
                format!(
                    "TRUNCATED by the exporter: {} of {} kept",
                    bytes(payload.bytes),
                    bytes(total_bytes)
                ),
                theme.style(Role::Truncated),
            ));
        }
    }
    let messages = match (loaded, shown.chat) {
        (Ok(Some(text)), Some((layout, side, width))) => {
            read_messages(text, side).map(|m| (m, layout, width))
        }
        _ => None,
    };
    match loaded {
        Ok(Some(_)) if let Some((messages, layout, width)) = messages => {
            out.push(Line::styled(
                match messages.len() {
                    1 => "1 message · J shows the raw JSON".to_owned(),
                    n => format!("{n} messages · J shows the raw JSON"),
                },
                theme.style(Role::Dim),
            ));
            out.extend(chat_lines(&messages, mode, layout, theme, width));
        }
        Ok(Some(text)) => out.extend(payload_lines(text, mode, theme)),
        Ok(None) => out.push(Line::styled(
            "(no text recorded)",
            theme.style(Role::Missing),
        )),
        Err(e) => out.push(Line::styled(
            format!("could not load: {}", redact::sanitize_line(&e.to_string())),
            theme.style(Role::StatusError),
        )),
    }
    out.push(Line::raw(""));
}

fn attributes(span: &TraceSpan, mode: Reveal, theme: &Theme, out: &mut Vec<Line<'static>>) {
    if span.attributes.is_empty() {
        return;
    }
    out.push(section(
        format!("attributes ({})", span.attributes.len()),
        theme,
    ));
    for (key, value) in &span.attributes {
        out.push(Line::from(vec![
            Span::styled(redact::shown_line(key, mode), theme.style(Role::JsonKey)),
            Span::styled(" = ", theme.style(Role::Dim)),
            Span::styled(attr_text(key, &value, mode), theme.style(Role::Text)),
        ]));
    }
    out.push(Line::raw(""));
}

fn events(
    span: &TraceSpan,
    payloads: &LoadedPayloads,
    mode: Reveal,
    theme: &Theme,
    out: &mut Vec<Line<'static>>,
) {
    if span.events().is_empty() {
        return;
    }
    out.push(section(format!("events ({})", span.events().len()), theme));
    for event in span.events() {
        let at = event.time_unix_nano.saturating_sub(span.start_unix_nano) as f64 / 1e6;
        out.push(Line::from(vec![
            Span::styled(format!("+{} ", duration_ms(at)), theme.style(Role::Dim)),
            Span::styled(
                redact::shown_line(&event.name, mode),
                theme.style(Role::Title),
            ),
        ]));
        for (key, value) in &event.attributes {
            if key == STACK_TRACE
                && let Some(trace) = shown_trace(&value, payloads, mode)
            {
                out.push(Line::from(vec![
                    Span::raw("  "),
                    Span::styled(key.to_string(), theme.style(Role::JsonKey)),
                    Span::styled(" =", theme.style(Role::Dim)),
                ]));
                out.extend(trace_lines(trace, mode, theme));
                continue;
            }
            out.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(redact::shown_line(key, mode), theme.style(Role::JsonKey)),
                Span::styled(" = ", theme.style(Role::Dim)),
                Span::styled(attr_text(key, &value, mode), theme.style(Role::Text)),
            ]));
        }
    }
}

/// A stack trace as the mode shows it: a plain text when its key shows it, one kept as a payload
/// (loaded with `payloads`) once revealed.
fn shown_trace<'a>(
    value: &'a AttrView<'a>,
    payloads: &'a LoadedPayloads,
    mode: Reveal,
) -> Option<&'a str> {
    let hidden = mode == Reveal::Redacted && redact::hides_value(STACK_TRACE, value);
    match value.text() {
        Some(text) => (!hidden).then_some(text),
        None if mode == Reveal::Revealed => payloads.stack_trace.as_deref(),
        None => None,
    }
}

/// The last lines of the span's exception stack trace, for the verdict of a run that failed
/// with one (the frames nearest the error); `None` when it has none or the mode hides it.
pub fn stack_trace_tail(
    span: &TraceSpan,
    payloads: &LoadedPayloads,
    mode: Reveal,
    theme: &Theme,
) -> Option<Vec<Line<'static>>> {
    let value = stack_trace_of(span)?;
    let trace = shown_trace(&value, payloads, mode)?;
    let lines = trace_text_lines(trace, mode);
    let skipped = lines.len().saturating_sub(TRACE_TAIL_LINES);
    let mut out = vec![Line::styled(
        match skipped {
            0 => "traceback (also under events below)".to_owned(),
            _ => format!(
                "traceback, its last {} of {} lines (the first under events below)",
                lines.len() - skipped,
                lines.len()
            ),
        },
        theme.style(Role::Dim),
    )];
    out.extend(
        lines
            .into_iter()
            .skip(skipped)
            .map(|line| Line::styled(format!("  {line}"), theme.style(Role::Text))),
    );
    Some(out)
}

/// The stack trace of the span's `exception` event, as its attribute holds it.
fn stack_trace_of(span: &TraceSpan) -> Option<AttrView<'_>> {
    span.events()
        .iter()
        .filter(|event| event.name == "exception")
        .flat_map(|event| event.attributes.iter())
        .find(|(key, _)| *key == STACK_TRACE)
        .map(|(_, value)| value)
}

/// A stack trace's lines, masked whole first (a secret may span lines), each made safe for the
/// terminal.
fn trace_text_lines(trace: &str, mode: Reveal) -> Vec<String> {
    redact::mask_text(trace, mode)
        .lines()
        .map(redact::sanitize_line)
        .collect()
}

/// The lines of a stack trace the verdict shows: where the error was raised.
const TRACE_TAIL_LINES: usize = 6;

/// The OpenTelemetry key of an exception event's stack trace.
const STACK_TRACE: &str = "exception.stacktrace";

/// The most lines of a stack trace the detail shows; the rest is counted.
const TRACE_LINES: usize = 80;

/// A stack trace one screen line per line, indented under its key.
fn trace_lines(trace: &str, mode: Reveal, theme: &Theme) -> Vec<Line<'static>> {
    let lines = trace_text_lines(trace, mode);
    let total = lines.len();
    let mut out: Vec<Line<'static>> = lines
        .into_iter()
        .take(TRACE_LINES)
        .map(|line| Line::styled(format!("    {line}"), theme.style(Role::Text)))
        .collect();
    if total > TRACE_LINES {
        out.push(Line::styled(
            format!("    … {} more lines", total - TRACE_LINES),
            theme.style(Role::Dim),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_like_attributes_hide_values_while_redacted() {
        let v = AttrValue::Str("Paris".into());
        assert_eq!(
            attr_text("gen_ai.tool.call.arguments", &v, Reveal::Redacted),
            "string (5 chars)"
        );
        assert_eq!(
            attr_text("gen_ai.tool.call.arguments", &v, Reveal::Revealed),
            "Paris"
        );
        assert_eq!(
            attr_text("gen_ai.request.model", &v, Reveal::Redacted),
            "Paris"
        );
        assert_eq!(
            attr_text(
                "gen_ai.usage.input_tokens",
                &AttrValue::Int(3),
                Reveal::Redacted
            ),
            "3"
        );
        assert_eq!(attr_text("api_key", &v, Reveal::Revealed), MASK);
    }
}
