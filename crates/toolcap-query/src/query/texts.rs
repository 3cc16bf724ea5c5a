//! What each query term reads of a run or a span, under the reveal mode: names, texts,
//! attribute values and (revealed) payloads — and what it must not read while redacted.

use std::sync::Arc;

use crate::model::{AttrValue, Payload, Span};
use crate::redact::{self, PayloadValue, Reveal};
use crate::store::Invocation;

use super::eval::contains_ci;

/// Keys whose values name the agent; bare words look at them like at span names.
const AGENT_NAME_KEYS: &[&str] = &["gen_ai.agent.name", "agent.name", "openarmature.agent.name"];
/// Keys carrying a conversation id.
const CONVERSATION_KEYS: &[&str] = &[
    "gen_ai.conversation.id",
    "session.id",
    "arksim.conversation_id",
    "conversation.id",
];

/// Names a bare word is matched against at the run level.
pub(super) fn invocation_names(inv: &Invocation) -> impl Iterator<Item = &str> {
    inv.display_name()
        .into_iter()
        .chain(std::iter::once(inv.summary().name.as_str()))
}

/// Run-level text an exact search looks at under `reveal`: names and the evaluator's verdict,
/// its reason as the views show it (a reason quoting the model's output is not searched while
/// redacted, as the output is not).
pub(super) fn invocation_texts(
    inv: &Invocation,
    reveal: Reveal,
) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    let names = invocation_names(inv).map(std::borrow::Cow::Borrowed);
    let verdict = inv.eval().into_iter().flat_map(move |e| {
        [
            std::borrow::Cow::Borrowed(e.label.as_str()),
            e.shown_reason(reveal),
        ]
    });
    names.chain(verdict)
}

/// What a bare word is matched against on a span: its name, tool, agent, model and service.
pub(super) fn span_names(span: &Span) -> impl Iterator<Item = &str> {
    let agent = AGENT_NAME_KEYS.iter().filter_map(|k| span.attr(k)?.text());
    std::iter::once(span.name.as_str())
        .chain(span.tool_name())
        .chain(span.llm().and_then(|l| l.model))
        .chain(span.llm().and_then(|l| l.response_model))
        .chain(span.service().map(|s| s.as_str()))
        .chain(agent)
}

pub(super) fn conversation_ids(inv: &Invocation) -> impl Iterator<Item = &str> {
    // arksim turns are named `<conversation_id>/turn-<n>`.
    let arksim = (inv.id.as_text())
        .and_then(|id| id.rsplit_once("/turn-"))
        .map(|(conv, _)| conv);
    let from_spans = inv
        .spans
        .iter()
        .flat_map(|s| CONVERSATION_KEYS.iter().filter_map(|k| s.attr(k)?.text()));
    arksim.into_iter().chain(from_spans)
}

/// Text of a small attribute value as exact search sees it under `reveal`; `None` for values
/// that must not be searched: payloads, secrets, and while redacted the values the redacted
/// view hides (a short message or argument kept as a plain attribute).
fn searchable_attr_text(key: &str, value: &AttrValue, reveal: Reveal) -> Option<String> {
    let rules = redact::key_rules(key);
    if rules.secret || (reveal == Reveal::Redacted && rules.hides(value)) {
        return None;
    }
    let text = match value {
        AttrValue::Str(s) => s.to_string(),
        AttrValue::Int(i) => i.to_string(),
        AttrValue::Float(f) => f.to_string(),
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::List(_) | AttrValue::Map(_) => value.display_short(),
        AttrValue::Bytes(_) | AttrValue::Payload(_) | AttrValue::Null => return None,
    };
    (!redact::is_secret_value(&text)).then_some(text)
}

/// Whether an attribute's searchable text contains `needle`; a string is looked at before it
/// is copied or checked for secrets, since almost none contain the needle.
fn attr_has_text(key: &str, value: &AttrValue, needle: &str, reveal: Reveal) -> bool {
    if let AttrValue::Str(s) = value
        && !contains_ci(s, needle)
    {
        return false;
    }
    searchable_attr_text(key, value, reveal).is_some_and(|t| shown_contains(&t, needle, reveal))
}

pub(super) fn attr_equals(key: &str, value: &AttrValue, want: &str, reveal: Reveal) -> bool {
    match value {
        AttrValue::Payload(p) => {
            reveal == Reveal::Revealed
                && revealed_payload_text(p).is_some_and(|t| t.trim().eq_ignore_ascii_case(want))
        }
        _ => searchable_attr_text(key, value, reveal).is_some_and(|t| t.eq_ignore_ascii_case(want)),
    }
}

/// A payload's text as the revealed view shows it (secrets masked), or `None` when it has
/// none or cannot be read.
fn revealed_payload_text(payload: &Payload) -> Option<String> {
    if !payload.is_captured() {
        return None;
    }
    let text = crate::formats::load_payload(payload).ok()??;
    Some(
        match redact::present(&redact::parse_payload(&text), Reveal::Revealed) {
            PayloadValue::Json(v) => json_text(&v),
            PayloadValue::Text(t) => t,
        },
    )
}

/// JSON as searchable text: string values unquoted and unescaped, so `"ORD-4040"` is found
/// whether the value sits in a string or was escaped inside one.
fn json_text(value: &serde_json::Value) -> String {
    fn walk(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    out.push_str(k);
                    out.push('\n');
                    walk(v, out);
                }
            }
            other => {
                out.push_str(&other.to_string());
                out.push('\n');
            }
        }
    }
    let mut out = String::new();
    walk(value, &mut out);
    out
}

/// Free text is matched as views show it (the one masking pass in `redact`), so a search
/// can never confirm text the screen hides.
pub(super) fn shown_contains(text: &str, needle: &str, reveal: Reveal) -> bool {
    // Masking only hides text: what the raw text lacks, the shown text lacks too.
    contains_ci(text, needle) && contains_ci(&redact::mask_text(text, reveal), needle)
}

pub(super) fn span_has_text(span: &Span, needle: &str, reveal: Reveal) -> bool {
    let plain = span_names(span)
        .chain(span.llm().and_then(|l| l.provider))
        .chain(span.error_type())
        .any(|t| shown_contains(t, needle, reveal))
        || span
            .error()
            .and_then(|e| redact::error_message(e, reveal))
            .is_some_and(|m| contains_ci(&m, needle));
    if plain {
        return true;
    }
    let attrs = span
        .attributes
        .iter()
        .any(|(k, v)| !v.is_payload() && attr_has_text(k, &v, needle, reveal))
        || span.events().iter().any(|e| {
            shown_contains(&e.name, needle, reveal)
                || e.attributes
                    .iter()
                    .any(|(k, v)| !v.is_payload() && attr_has_text(k, &v, needle, reveal))
        });
    if attrs {
        return true;
    }
    if reveal != Reveal::Revealed {
        return false;
    }
    // Every payload once: an input or output is often one of the attributes too (the same
    // `Arc` while held; once packed, only the attribute holds it).
    let held = [span.input_slot().holder(), span.output_slot().holder()];
    let held_again = |p: &Arc<Payload>| held.iter().flatten().any(|h| Arc::ptr_eq(h, p));
    let payload_attrs = span.attributes.iter().filter_map(|(_, v)| match &*v {
        AttrValue::Payload(p) if !held_again(p) => Some(p.clone()),
        _ => None,
    });
    held.into_iter()
        .flatten()
        .cloned()
        .chain(payload_attrs)
        .any(|p| revealed_payload_text(&p).is_some_and(|t| contains_ci(&t, needle)))
}
