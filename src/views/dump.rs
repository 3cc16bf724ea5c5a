//! `toolcap-tui dump`: the headless view. Text trees or one JSON document, built from the same
//! store the TUI reads, so anything the TUI shows can be asserted in a test.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::cli::DumpArgs;
use crate::formats::{self, Loaded};
use crate::model::{Payload, PayloadState, Severity, Span};
use crate::redact::{self, PayloadValue, Reveal};
use crate::sources::files;
use crate::sources::remote::{self, RemoteOptions};
use crate::store::{Invocation, Store};

/// Loads every source into a fresh store; returns it with the per-source load records.
pub fn load_store(sources: &[std::path::PathBuf]) -> (Store, Vec<SourceReport>) {
    load_store_with(sources, &RemoteOptions::default())
}

/// [`load_store`], reaching remote sources with `remote`'s token and headers. A remote source
/// is read as a snapshot: what it holds now, in order with the files around it.
pub fn load_store_with(
    sources: &[std::path::PathBuf],
    remote: &RemoteOptions,
) -> (Store, Vec<SourceReport>) {
    let mut store = Store::new();
    let mut reports = Vec::new();
    let mut take = |loaded: Loaded| {
        reports.push(SourceReport::of(&loaded));
        store.ingest(loaded.batch);
    };
    for source in sources {
        match source.to_str().filter(|s| remote::is_remote(s)) {
            Some(url) => remote::snapshot(url, remote)
                .into_iter()
                .for_each(&mut take),
            None => files::load_sources(std::slice::from_ref(source))
                .into_iter()
                .for_each(&mut take),
        }
    }
    (store, reports)
}

/// What `--explain` says about one source.
#[derive(Debug, Clone)]
pub struct SourceReport {
    pub source: String,
    pub format: Option<&'static str>,
    pub reason: String,
    pub spans: usize,
    pub warnings: Vec<String>,
}

impl SourceReport {
    fn of(loaded: &Loaded) -> Self {
        SourceReport {
            source: loaded.origin.to_string(),
            format: loaded.detection.format,
            reason: loaded.detection.reason.clone(),
            spans: loaded.batch.spans.len(),
            warnings: loaded
                .batch
                .problems
                .iter()
                .map(|p| match p.line {
                    Some(line) => format!("line {line}: {}", p.message),
                    None => p.message.clone(),
                })
                .collect(),
        }
    }
}

pub fn run(args: &DumpArgs) -> i32 {
    let remote = match args.remote.options() {
        Ok(remote) => remote,
        Err(why) => {
            eprintln!("toolcap-tui dump: {why}");
            return 2;
        }
    };
    let (store, reports) = load_store_with(&args.sources, &remote);
    let mode = Reveal::from_flag(args.reveal);
    let out = if args.json {
        let mut doc = to_json(&store, mode);
        if args.explain {
            doc["sources"] = explain_json(&reports);
        }
        serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
    } else {
        let mut text = String::new();
        if args.explain {
            text.push_str(&explain_text(&reports));
        }
        text.push_str(&to_text(&store, mode));
        text
    };
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`dump | head`) is not an error worth a panic.
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    if store.is_empty() {
        // Say why on stderr too: the output may be a pipe into a JSON tool.
        for problem in store
            .problems()
            .iter()
            .filter(|p| p.severity == Severity::Error)
        {
            eprintln!(
                "toolcap-tui dump: {}",
                redact::sanitize_line(&problem.to_string())
            );
        }
        2
    } else {
        0
    }
}

fn explain_json(reports: &[SourceReport]) -> Value {
    Value::Array(
        reports
            .iter()
            .map(|r| {
                json!({
                    "source": r.source, "format": r.format, "reason": r.reason,
                    "spans": r.spans, "warnings": r.warnings,
                })
            })
            .collect(),
    )
}

fn explain_text(reports: &[SourceReport]) -> String {
    let mut out = String::from("sources:\n");
    for r in reports {
        let _ = writeln!(
            out,
            "  {} — {} ({}), {} spans",
            redact::sanitize_line(&r.source),
            r.format.unwrap_or("unrecognised"),
            redact::sanitize_line(&r.reason),
            r.spans
        );
        for w in &r.warnings {
            let _ = writeln!(out, "    ! {}", redact::sanitize_line(w));
        }
    }
    out.push('\n');
    out
}

/// The `dump --json` document (schema in README.md).
pub fn to_json(store: &Store, mode: Reveal) -> Value {
    let invocations: Vec<Value> = store
        .oldest_first()
        .into_iter()
        .map(|inv| invocation_json(inv, mode))
        .collect();
    let problems: Vec<Value> = store
        .problems()
        .iter()
        .map(|p| {
            json!({
                "source": p.source, "line": p.line, "message": p.message,
                "severity": match p.severity { Severity::Error => "error", Severity::Warning => "warning" },
            })
        })
        .collect();
    let stats = store.stats();
    json!({
        "invocations": invocations,
        "problems": problems,
        "stats": {
            "spans_seen": stats.spans_seen, "spans_kept": stats.spans_kept,
            "duplicate_spans": stats.duplicate_spans,
        },
    })
}

fn invocation_json(inv: &Invocation, mode: Reveal) -> Value {
    let summary = inv.summary();
    let counts = &summary.counts;
    let tree = inv.tree();
    let spans: Vec<Value> = tree
        .rows
        .iter()
        .map(|row| {
            let span = &inv.spans[row.span];
            let llm = span.llm.as_ref();
            json!({
                "span_id": span.span_id,
                "parent_span_id": span.parent_span_id,
                "depth": row.depth,
                "orphan": row.orphan,
                "name": span.name,
                "kind": span.kind.as_str(),
                "status": span.status.as_str(),
                "health": inv.health_of(row.span).as_str(),
                "error_type": span.error_type(),
                "error_message": span.error_message(),
                "start_unix_nano": span.start_unix_nano,
                "duration_ms": round3(span.duration_ms()),
                "tool_name": span.tool_name(),
                "tool_call_id": span.tool_call_id(),
                "requested_by": span.tool.as_ref().and_then(|t| t.requested_by.as_deref()),
                "model": span.model(),
                "provider": llm.and_then(|l| l.provider.as_deref()),
                "input_tokens": llm.and_then(|l| l.input_tokens),
                "output_tokens": llm.and_then(|l| l.output_tokens),
                "requested_tool_calls": llm.map(|l| l.requested_tool_calls.iter()
                    .map(|c| json!({"id": c.id, "name": c.name})).collect::<Vec<_>>()),
                "attempt_index": span.identity.attempt_index,
                "input": payload_json(&span.input, mode),
                "output": payload_json(&span.output, mode),
            })
        })
        .collect();
    let mut doc = json!({
        "id": inv.id,
        "name": summary.name,
        "status": summary.health.as_str(),
        "format": summary.formats.first().copied().unwrap_or("unknown"),
        "formats": summary.formats,
        "start_unix_nano": summary.start_unix_nano,
        "duration_ms": round3(summary.duration_ms()),
        "counts": {
            "spans": counts.spans, "llm": counts.llm, "tool": counts.tool,
            "embedding": counts.embedding, "rerank": counts.rerank, "retrieval": counts.retrieval,
            "agent": counts.agent, "node": counts.node, "other": counts.other,
            "errors": counts.errors,
        },
        "tokens": {"input": summary.input_tokens, "output": summary.output_tokens},
        "tool_calls": summary.tool_calls.iter().map(|c| json!({
            "name": c.name, "call_id": c.call_id,
            "status": if c.failed { "error" } else { "ok" }, "span_id": c.span_id,
        })).collect::<Vec<_>>(),
        "spans": spans,
    });
    if let Some(eval) = &inv.eval {
        doc["eval"] = json!({
            "passed": eval.passed, "score": eval.score, "label": eval.label, "reason": eval.reason,
        });
    }
    doc
}

fn round3(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

fn state_name(state: PayloadState) -> &'static str {
    match state {
        PayloadState::NotCaptured => "not_captured",
        PayloadState::Empty => "empty",
        PayloadState::Present => "present",
        PayloadState::Truncated { .. } => "truncated",
    }
}

/// A payload in `dump --json`: size and state always; the value only when revealed.
pub fn payload_json(payload: &Payload, mode: Reveal) -> Value {
    let mut out = json!({
        "redacted": mode == Reveal::Redacted,
        "bytes": payload.bytes,
        "state": state_name(payload.state),
    });
    if let PayloadState::Truncated { total_bytes } = payload.state {
        out["total_bytes"] = json!(total_bytes);
    }
    if !payload.is_captured() {
        return out;
    }
    match formats::load_payload(payload) {
        Ok(Some(text)) => {
            let parsed = redact::parse_payload(&text);
            match redact::present(&parsed, mode) {
                PayloadValue::Json(v) if mode == Reveal::Redacted => out["shape"] = v,
                PayloadValue::Text(t) if mode == Reveal::Redacted => out["shape"] = json!(t),
                PayloadValue::Json(v) => out["value"] = v,
                PayloadValue::Text(t) => out["value"] = json!(t),
            }
        }
        Ok(None) => {}
        Err(e) => out["error"] = json!(e),
    }
    out
}

/// Text trees, one per invocation, oldest first.
pub fn to_text(store: &Store, mode: Reveal) -> String {
    let mut out = String::new();
    for inv in store.oldest_first() {
        write_invocation(&mut out, inv, mode);
        out.push('\n');
    }
    let problems = store.problems();
    if !problems.is_empty() {
        let _ = writeln!(out, "problems ({}):", problems.len());
        for p in problems {
            let _ = writeln!(out, "  {}", redact::sanitize_line(&p.to_string()));
        }
    }
    if store.is_empty() {
        out.push_str("no invocations loaded\n");
    }
    out
}

fn write_invocation(out: &mut String, inv: &Invocation, mode: Reveal) {
    let s = inv.summary();
    let _ = write!(
        out,
        "{} {} [{}] {:.1} ms · {} spans · {} tool calls",
        s.health.glyph(),
        redact::sanitize_line(&s.name),
        s.health.as_str(),
        s.duration_ms(),
        s.counts.spans,
        s.tool_calls.len(),
    );
    if s.failed_tool_calls > 0 {
        let _ = write!(out, " ({} failed)", s.failed_tool_calls);
    }
    if s.input_tokens + s.output_tokens > 0 {
        let _ = write!(out, " · tokens {}→{}", s.input_tokens, s.output_tokens);
    }
    let _ = writeln!(
        out,
        " · {} · {}",
        redact::sanitize_line(&inv.id),
        s.formats.join("+")
    );
    if let Some(eval) = &inv.eval {
        let _ = writeln!(
            out,
            "  eval: {} {}{}",
            if eval.passed { "PASS" } else { "FAIL" },
            redact::sanitize_line(&eval.label),
            if eval.reason.is_empty() {
                String::new()
            } else {
                format!(" — {}", redact::sanitize_line(&eval.reason))
            }
        );
    }
    for row in &inv.tree().rows {
        let span = &inv.spans[row.span];
        let _ = write!(out, "  {}", "  ".repeat(row.depth.min(64)));
        write_span_line(out, span, inv.health_of(row.span), row.orphan);
        if mode == Reveal::Revealed {
            write_revealed_payloads(out, span, row.depth);
        }
    }
}

fn write_span_line(out: &mut String, span: &Span, health: crate::model::Health, orphan: bool) {
    let status = match health {
        crate::model::Health::Error => "error",
        crate::model::Health::Degraded => "degraded",
        crate::model::Health::Ok => "ok",
    };
    let _ = write!(
        out,
        "{} {} [{}] {:.1} ms",
        span.kind.glyph(),
        redact::sanitize_line(&span.name),
        status,
        span.duration_ms()
    );
    if let Some(tool) = span.tool_name() {
        let _ = write!(out, " tool={}", redact::sanitize_line(tool));
    }
    if let Some(id) = span.tool_call_id() {
        let _ = write!(out, " call_id={}", redact::sanitize_line(id));
    }
    if let Some(model) = span.model() {
        let _ = write!(out, " model={}", redact::sanitize_line(model));
    }
    if let Some(attempt) = span.identity.attempt_index {
        let _ = write!(out, " attempt={attempt}");
    }
    if orphan {
        out.push_str(" (orphan: parent missing)");
    }
    if span.status.is_error() {
        let kind = span.error_type().unwrap_or("error");
        let message = span.error_message().unwrap_or("");
        let _ = write!(
            out,
            " ✗ {}: {}",
            redact::sanitize_line(kind),
            redact::sanitize_line(message)
        );
    }
    out.push('\n');
}

fn write_revealed_payloads(out: &mut String, span: &Span, depth: usize) {
    for (label, payload) in [("in", &span.input), ("out", &span.output)] {
        if !payload.is_captured() {
            continue;
        }
        let shown = match formats::load_payload(payload) {
            Ok(Some(text)) => {
                match redact::present(&redact::parse_payload(&text), Reveal::Revealed) {
                    PayloadValue::Json(v) => v.to_string(),
                    PayloadValue::Text(t) => t,
                }
            }
            Ok(None) => continue,
            Err(e) => format!("<{e}>"),
        };
        let mut line = redact::sanitize_line(&shown);
        if line.chars().count() > 240 {
            line = line.chars().take(240).collect::<String>() + "…";
        }
        let _ = writeln!(out, "  {}    {label}: {line}", "  ".repeat(depth.min(64)));
    }
}
