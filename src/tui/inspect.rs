//! The detail pane's content for one span: facts, payloads, attributes and events, as styled
//! lines wrapped to the pane. Built when the selection, mode or width changes — not per frame.

use ratatui::text::{Line, Span};

use super::format::{bytes, duration_ms, tokens};
use super::payload::payload_lines;
use super::theme::{Role, Theme};
use super::wrap::wrap_all;
use crate::formats;
use crate::model::{AttrValue, Payload, PayloadState, Span as TraceSpan};
use crate::redact::{self, MASK, Reveal};
use crate::store::Invocation;

/// A span's payload texts, read once when the span is selected.
#[derive(Debug, Clone)]
pub struct LoadedPayloads {
    pub input: Result<Option<String>, String>,
    pub output: Result<Option<String>, String>,
}

impl LoadedPayloads {
    pub fn load(span: &TraceSpan) -> Self {
        let load = |p: &Payload| {
            if matches!(p.state, PayloadState::NotCaptured | PayloadState::Empty) {
                Ok(None)
            } else {
                formats::load_payload(p)
            }
        };
        LoadedPayloads {
            input: load(&span.input),
            output: load(&span.output),
        }
    }
}

pub struct Built {
    pub lines: Vec<Line<'static>>,
    pub payload_start: usize,
}

/// Attribute keys whose string values are payload content (hidden while redacted). Counts,
/// ids, names, types and models stay visible.
fn is_payload_key(key: &str) -> bool {
    const CONTENT: &[&str] = &[
        "input",
        "output",
        "content",
        "contents",
        "message",
        "messages",
        "prompt",
        "prompts",
        "completion",
        "completions",
        "arguments",
        "args",
        "argument",
        "result",
        "results",
        "query",
        "document",
        "documents",
        "text",
        "body",
        "payload",
        "value",
        "values",
        "response",
        "instructions",
        "parts",
    ];
    const FACT: &[&str] = &[
        "tokens", "token", "count", "model", "type", "id", "name", "role", "reason", "reasons",
        "size", "length", "index", "status", "code", "provider", "system", "kind",
    ];
    let lower = key.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let last = words.last().copied().unwrap_or("");
    words.iter().any(|w| CONTENT.contains(w)) && !FACT.contains(&last)
}

/// One attribute value as shown under the mode (always sanitized, secrets masked).
pub fn attr_text(key: &str, value: &AttrValue, mode: Reveal) -> String {
    if redact::is_secret_key(key) {
        return MASK.to_owned();
    }
    let text = match value {
        AttrValue::Payload(p) => format!("<payload, {}, {}>", bytes(p.bytes), p.state.label()),
        AttrValue::Str(s) if mode == Reveal::Redacted && is_payload_key(key) => {
            format!("string ({} chars)", s.chars().count())
        }
        AttrValue::List(_) | AttrValue::Map(_)
            if mode == Reveal::Redacted && is_payload_key(key) =>
        {
            "structured value (redacted)".to_owned()
        }
        other => redact::mask_secrets_in_text(&other.display_short()),
    };
    redact::sanitize_line(&text)
}

fn fact(theme: &Theme, label: &str, value: Vec<Span<'static>>) -> Line<'static> {
    let mut spans = vec![Span::styled(format!("{label:<10}"), theme.style(Role::Dim))];
    spans.extend(value);
    Line::from(spans)
}

fn plain(text: &str, theme: &Theme) -> Span<'static> {
    Span::styled(redact::sanitize_line(text), theme.style(Role::Text))
}

fn section(title: String, theme: &Theme) -> Line<'static> {
    Line::styled(format!("── {title} ──"), theme.style(Role::Title))
}

/// Builds the detail lines for span `index` of `inv`.
pub fn span_lines(
    inv: &Invocation,
    index: usize,
    payloads: &LoadedPayloads,
    mode: Reveal,
    theme: &Theme,
    width: u16,
) -> Built {
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
    payload_section(
        "input",
        &span.input,
        &payloads.input,
        mode,
        theme,
        &mut rest,
    );
    payload_section(
        "output",
        &span.output,
        &payloads.output,
        mode,
        theme,
        &mut rest,
    );
    rest.push(Line::raw(""));
    attributes(span, mode, theme, &mut rest);
    events(span, mode, theme, &mut rest);
    out.extend(wrap_all(rest, width));
    Built {
        lines: out,
        payload_start,
    }
}

fn facts(
    inv: &Invocation,
    index: usize,
    span: &TraceSpan,
    mode: Reveal,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let health = inv.health_of(index);
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("{} {} ", span.kind.glyph(), span.kind),
            theme.kind(span.kind),
        ),
        Span::styled(
            redact::sanitize_line(&span.name),
            theme
                .name(health)
                .add_modifier(ratatui::style::Modifier::BOLD),
        ),
    ])];
    let mut status = vec![Span::styled(
        format!("{} {}", health.glyph(), health.as_str()),
        theme.health(health),
    )];
    if health != crate::model::Health::Ok && !span.status.is_error() {
        status.push(plain(" (a descendant failed)", theme));
    }
    lines.push(fact(theme, "status", status));
    if let Some(error) = &span.error {
        let mut text = String::new();
        if let Some(t) = &error.error_type {
            text.push_str(t);
        }
        if let Some(m) = &error.message {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&redact::mask_secrets_in_text(m));
        }
        lines.push(fact(
            theme,
            "error",
            vec![Span::styled(
                redact::sanitize_line(&text),
                theme.style(Role::StatusError),
            )],
        ));
    }
    let offset = span
        .start_unix_nano
        .saturating_sub(inv.summary().start_unix_nano) as f64
        / 1e6;
    lines.push(fact(
        theme,
        "time",
        vec![plain(
            &format!(
                "+{} · took {}",
                duration_ms(offset),
                duration_ms(span.duration_ms())
            ),
            theme,
        )],
    ));
    if let Some(llm) = &span.llm {
        if let Some(model) = span.model() {
            let provider = llm
                .provider
                .as_deref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default();
            lines.push(fact(
                theme,
                "model",
                vec![plain(&format!("{model}{provider}"), theme)],
            ));
        }
        let mut t = Vec::new();
        if let Some(n) = llm.input_tokens {
            t.push(format!("in {}", tokens(n)));
        }
        if let Some(n) = llm.output_tokens {
            t.push(format!("out {}", tokens(n)));
        }
        if let Some(n) = llm.cache_read_tokens {
            t.push(format!("cache {}", tokens(n)));
        }
        if !t.is_empty() {
            lines.push(fact(theme, "tokens", vec![plain(&t.join(" · "), theme)]));
        }
        if !llm.finish_reasons.is_empty() {
            lines.push(fact(
                theme,
                "finish",
                vec![plain(&llm.finish_reasons.join(", "), theme)],
            ));
        }
        for call in &llm.requested_tool_calls {
            let id = call
                .id
                .as_deref()
                .map(|i| format!(" ({i})"))
                .unwrap_or_default();
            lines.push(fact(
                theme,
                "requests",
                vec![Span::styled(
                    redact::sanitize_line(&format!("⚒ {}{id}", call.name)),
                    theme.style(Role::SpanTool),
                )],
            ));
        }
    }
    if let Some(tool) = &span.tool {
        if let Some(name) = &tool.name {
            lines.push(fact(
                theme,
                "tool",
                vec![Span::styled(
                    redact::sanitize_line(name),
                    theme.style(Role::SpanTool),
                )],
            ));
        }
        if let Some(id) = &tool.call_id {
            lines.push(fact(theme, "call id", vec![plain(id, theme)]));
        }
        if let Some(by) = &tool.requested_by {
            let name = inv
                .span_by_id(by)
                .and_then(|i| inv.spans.get(i))
                .map(|s| s.name.as_str())
                .unwrap_or(by);
            lines.push(fact(
                theme,
                "asked by",
                vec![
                    Span::styled(
                        format!("◆ {}", redact::sanitize_line(name)),
                        theme.style(Role::SpanLlm),
                    ),
                    Span::styled("  [o] go there", theme.style(Role::HintText)),
                ],
            ));
        }
    }
    if let Some(r) = &span.retrieval {
        if let Some(q) = &r.query {
            let shown = match mode {
                Reveal::Redacted => format!("string ({} chars)", q.chars().count()),
                Reveal::Revealed => redact::mask_secrets_in_text(q),
            };
            lines.push(fact(theme, "query", vec![plain(&shown, theme)]));
        }
        if let Some(n) = r.document_count {
            lines.push(fact(theme, "documents", vec![plain(&n.to_string(), theme)]));
        }
    }
    let id = &span.identity;
    let mut ident = Vec::new();
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            ident.push(format!("{k}={v}"));
        }
    };
    add("node", id.node_name.clone());
    add("attempt", id.attempt_index.map(|a| a.to_string()));
    add("fan-out", id.fan_out_index.map(|a| a.to_string()));
    add("branch", id.branch_name.clone());
    add("namespace", id.namespace.clone());
    add("invocation", id.invocation_id.clone());
    add("correlation", id.correlation_id.clone());
    if !ident.is_empty() {
        lines.push(fact(
            theme,
            "identity",
            vec![plain(&ident.join(" · "), theme)],
        ));
    }
    let parent = span
        .parent_span_id
        .as_deref()
        .map(|p| format!(" · parent {p}"))
        .unwrap_or_default();
    lines.push(fact(
        theme,
        "span id",
        vec![plain(&format!("{}{parent}", span.span_id), theme)],
    ));
    if let Some(service) = &span.service {
        lines.push(fact(theme, "service", vec![plain(service, theme)]));
    }
    let place = match (&span.origin, span.line) {
        (Some(o), Some(l)) => format!("{o}:{l} · {}", span.format),
        (Some(o), None) => format!("{o} · {}", span.format),
        _ => span.format.to_owned(),
    };
    lines.push(fact(theme, "source", vec![plain(&place, theme)]));
    lines
}

fn payload_section(
    label: &str,
    payload: &Payload,
    loaded: &Result<Option<String>, String>,
    mode: Reveal,
    theme: &Theme,
    out: &mut Vec<Line<'static>>,
) {
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
    match loaded {
        Ok(Some(text)) => out.extend(payload_lines(text, mode, theme)),
        Ok(None) => out.push(Line::styled(
            "(no text recorded)",
            theme.style(Role::Missing),
        )),
        Err(e) => out.push(Line::styled(
            format!("could not load: {}", redact::sanitize_line(e)),
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
            Span::styled(redact::sanitize_line(key), theme.style(Role::JsonKey)),
            Span::styled(" = ", theme.style(Role::Dim)),
            Span::styled(attr_text(key, value, mode), theme.style(Role::Text)),
        ]));
    }
    out.push(Line::raw(""));
}

fn events(span: &TraceSpan, mode: Reveal, theme: &Theme, out: &mut Vec<Line<'static>>) {
    if span.events.is_empty() {
        return;
    }
    out.push(section(format!("events ({})", span.events.len()), theme));
    for event in &span.events {
        let at = event.time_unix_nano.saturating_sub(span.start_unix_nano) as f64 / 1e6;
        out.push(Line::from(vec![
            Span::styled(format!("+{} ", duration_ms(at)), theme.style(Role::Dim)),
            Span::styled(redact::sanitize_line(&event.name), theme.style(Role::Title)),
        ]));
        for (key, value) in &event.attributes {
            out.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(redact::sanitize_line(key), theme.style(Role::JsonKey)),
                Span::styled(" = ", theme.style(Role::Dim)),
                Span::styled(attr_text(key, value, mode), theme.style(Role::Text)),
            ]));
        }
    }
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
