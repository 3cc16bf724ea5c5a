//! The facts block at the top of the detail pane: kind, status, error, timing, model and
//! tokens, tool call and who requested it, retrieval, identity and source.

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use super::format::{duration_ms, tokens};
use super::theme::{Role, Theme};
use crate::model::{Health, Span as TraceSpan};
use crate::redact::{self, Reveal};
use crate::store::Invocation;

fn fact(theme: &Theme, label: &str, value: Vec<Span<'static>>) -> Line<'static> {
    let mut spans = vec![Span::styled(format!("{label:<10}"), theme.style(Role::Dim))];
    spans.extend(value);
    Line::from(spans)
}

fn plain(text: &str, theme: &Theme) -> Span<'static> {
    Span::styled(redact::sanitize_line(text), theme.style(Role::Text))
}

pub fn facts(
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
            redact::shown_line(&span.name, mode),
            theme.name(health).add_modifier(Modifier::BOLD),
        ),
    ])];
    let mut status = vec![Span::styled(
        format!("{} {}", health.glyph(), health.as_str()),
        theme.health(health),
    )];
    if health != Health::Ok && !span.status.is_error() {
        status.push(plain(" (a descendant failed)", theme));
    }
    lines.push(fact(theme, "status", status));
    if let Some(error) = span.error() {
        let mut text = String::new();
        if let Some(t) = &error.error_type {
            text.push_str(&redact::mask_text(t, mode));
        }
        if let Some(m) = redact::error_message(error, mode) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&m);
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
    if let Some(llm) = span.llm() {
        if let Some(model) = span.model() {
            let provider = llm.provider.map(|p| format!(" ({p})")).unwrap_or_default();
            lines.push(fact(
                theme,
                "model",
                vec![plain(
                    &redact::mask_text(&format!("{model}{provider}"), mode),
                    theme,
                )],
            ));
        }
        let mut t = Vec::new();
        if let Some(n) = llm.input_tokens.get() {
            t.push(format!("in {}", tokens(n.into())));
        }
        if let Some(n) = llm.output_tokens.get() {
            t.push(format!("out {}", tokens(n.into())));
        }
        if let Some(n) = llm.cache_read_tokens.get() {
            t.push(format!("cache {}", tokens(n.into())));
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
        for call in llm.requested_tool_calls {
            let id = call
                .id
                .as_deref()
                .map(|i| format!(" ({i})"))
                .unwrap_or_default();
            lines.push(fact(
                theme,
                "requests",
                vec![Span::styled(
                    redact::shown_line(&format!("⚒ {}{id}", call.name), mode),
                    theme.style(Role::SpanTool),
                )],
            ));
        }
    }
    if let Some(tool) = span.tool() {
        if let Some(name) = tool.name {
            lines.push(fact(
                theme,
                "tool",
                vec![Span::styled(
                    redact::shown_line(name, mode),
                    theme.style(Role::SpanTool),
                )],
            ));
        }
        if let Some(id) = tool.call_id {
            lines.push(fact(theme, "call id", vec![plain(id, theme)]));
        }
        if let Some(requester) = inv.requester_of(index) {
            let name = inv.spans[requester].name.as_str();
            lines.push(fact(
                theme,
                "asked by",
                vec![
                    Span::styled(
                        format!("◆ {}", redact::shown_line(name, mode)),
                        theme.style(Role::SpanLlm),
                    ),
                    Span::styled("  [o] go there", theme.style(Role::HintText)),
                ],
            ));
        }
    }
    if let Some(r) = span.retrieval() {
        if let Some(q) = &r.query {
            let shown = match mode {
                Reveal::Redacted => format!("string ({} chars)", q.chars().count()),
                Reveal::Revealed => redact::mask_text(q, mode).into_owned(),
            };
            lines.push(fact(theme, "query", vec![plain(&shown, theme)]));
        }
        if let Some(n) = r.document_count {
            lines.push(fact(theme, "documents", vec![plain(&n.to_string(), theme)]));
        }
    }
    lines
}

/// Where a span sits and came from: identity fields, ids, service and source position.
/// Shown after the payloads, which matter more on a narrow screen.
pub fn provenance(span: &TraceSpan, mode: Reveal, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled("── span ──", theme.style(Role::Title))];
    let id = &span.identity();
    let mut ident = Vec::new();
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            ident.push(format!("{k}={v}"));
        }
    };
    add("node", id.node.node_name.as_deref().map(str::to_owned));
    add("attempt", id.node.attempt_index.map(|a| a.to_string()));
    add("fan-out", id.node.fan_out_index.map(|a| a.to_string()));
    add("branch", id.node.branch_name.as_deref().map(str::to_owned));
    add("namespace", id.node.namespace.as_deref().map(str::to_owned));
    add("invocation", id.invocation_id.as_deref().map(str::to_owned));
    add(
        "correlation",
        id.correlation_id.as_deref().map(str::to_owned),
    );
    if !ident.is_empty() {
        lines.push(fact(
            theme,
            "identity",
            vec![plain(&redact::mask_text(&ident.join(" · "), mode), theme)],
        ));
    }
    let parent = span
        .parent_span_id
        .as_ref()
        .map(|p| format!(" · parent {p}"))
        .unwrap_or_default();
    lines.push(fact(
        theme,
        "span id",
        vec![plain(&format!("{}{parent}", span.span_id), theme)],
    ));
    if let Some(service) = span.service() {
        lines.push(fact(
            theme,
            "service",
            vec![plain(&redact::mask_text(service, mode), theme)],
        ));
    }
    let place = match (span.origin(), span.line) {
        (Some(o), Some(l)) => format!("{o}:{l} · {}", span.format()),
        (Some(o), None) => format!("{o} · {}", span.format()),
        _ => span.format().to_string(),
    };
    lines.push(fact(theme, "source", vec![plain(&place, theme)]));
    lines
}
