//! `toolcap-tui check`: every loaded invocation that has a gold, compared with it.
//! Exit 0 when all of them match, 1 when any differs, 2 on error (usable as a CI gate).
//!
//! Which gold applies, most specific first: an entry for the invocation id in a `--gold` map;
//! the `NAME.gold.json` sidecar of the file the invocation came from; a gold carried by the
//! trace itself (arksim assertions); a plain `--gold` list.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::conversation::{Conversations, conversation_of, conversation_report};
use super::policy::Policy;
use super::report::{CheckOptions, DiffReport};
use super::source::{GoldFile, load_sidecar};
use super::toolscore_reading::{self, ToolscoreReading};
use super::{ActualCall, Args, GoldSpec};
use crate::formats;
use crate::model::{Origin, Problem};
use crate::redact::{self, Reveal};
use crate::store::{Invocation, Store};

mod extras;
pub use extras::{Extras, ReadingCache};

/// The actual trajectory of an invocation, arguments loaded from each tool span's input.
pub fn actual_calls(invocation: &Invocation) -> (Vec<ActualCall>, Vec<String>) {
    let mut notes = Vec::new();
    let calls = invocation
        .summary()
        .tool_calls
        .iter()
        .map(|call| {
            let span = invocation.spans.get(call.span());
            let args = span.and_then(|s| {
                let shape = ScalarArgs::of(s.format().as_str());
                let input = s.input();
                if let Some(text) = input.inline_text() {
                    return Some(args_from_text_shaped(text, shape));
                }
                match formats::load_payload(&input) {
                    Ok(Some(text)) => Some(args_from_text_shaped(&text, shape)),
                    Ok(None) => None,
                    Err(why) => {
                        let name = call.name(&invocation.spans);
                        notes.push(format!("{name}: arguments unreadable: {why}"));
                        None
                    }
                }
            });
            let span_facts = span.map(|s| {
                let duration = (s.end_unix_nano > s.start_unix_nano)
                    .then(|| (s.end_unix_nano - s.start_unix_nano) as f64 / 1e9);
                let is_result =
                    s.error().is_some_and(|e| e.message_is_result) && s.error_message().is_some();
                (
                    duration,
                    s.error_message().or(s.error_type()).map(str::to_string),
                    is_result,
                )
            });
            let (duration_s, error, error_is_result) = span_facts.unwrap_or_default();
            ActualCall {
                name: call.name(&invocation.spans).to_string(),
                args,
                failed: call.failed,
                error,
                error_is_result,
                duration_s,
                cost: span.and_then(span_cost_usd),
                call_id: call.call_id(&invocation.spans).map(str::to_owned),
                span: Some(call.span()),
            }
        })
        .collect();
    (calls, notes)
}

/// A call's cost when its format recorded one (toolscore's custom `cost` becomes `cost_usd`).
fn span_cost_usd(span: &crate::model::Span) -> Option<f64> {
    match *span.attr("cost_usd")? {
        crate::model::AttrValue::Float(f) => Some(f),
        crate::model::AttrValue::Int(i) => Some(i as f64),
        _ => None,
    }
}

/// Arguments as toolscore reads them: an object; a JSON string holding an object is decoded;
/// anything else is wrapped as `{"value": …}`.
pub fn args_from_text(text: &str) -> Args {
    args_from_text_shaped(text, ScalarArgs::Wrap("value"))
}

/// What toolscore's adapter for a format makes of arguments that are not an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScalarArgs {
    /// `{KEY: value}` (LangChain's string `tool_input` uses `input`, OTel and custom `value`).
    Wrap(&'static str),
    /// Text that is not JSON becomes `{"raw": text}` (OpenAI, Gemini); other non-objects `{}`.
    RawText,
    /// Always `{}` (Anthropic's non-object `input`, MCP's undecodable `arguments`).
    Empty,
}

impl ScalarArgs {
    fn of(format: &str) -> Self {
        match format {
            "langchain" => ScalarArgs::Wrap("input"),
            "openai-chat" | "gemini" => ScalarArgs::RawText,
            "anthropic" | "mcp" => ScalarArgs::Empty,
            _ => ScalarArgs::Wrap("value"),
        }
    }
}

fn args_from_text_shaped(text: &str, shape: ScalarArgs) -> Args {
    if text.trim().is_empty() {
        return Args::new();
    }
    let parsed = serde_json::from_str::<Value>(text);
    let not_json = parsed.is_err();
    let value = parsed.unwrap_or_else(|_| Value::String(text.to_string()));
    let value = match value {
        Value::String(inner) => serde_json::from_str(&inner).unwrap_or(Value::String(inner)),
        other => other,
    };
    match (value, shape) {
        (Value::Object(map), _) => map,
        (Value::Null, _) | (_, ScalarArgs::Empty) => Args::new(),
        (other, ScalarArgs::RawText) => {
            let mut map = Args::new();
            if not_json {
                map.insert("raw".into(), other);
            }
            map
        }
        (other, ScalarArgs::Wrap(key)) => {
            let mut map = Args::new();
            map.insert(key.into(), other);
            map
        }
    }
}

pub fn origin_file(invocation: &Invocation) -> Option<&Path> {
    invocation.spans.iter().find_map(|s| match s.origin() {
        Some(Origin::File(path)) => Some(path.as_path()),
        _ => None,
    })
}

/// Sidecar golds (`NAME.gold.json` beside a trace file), read once per trace file.
#[derive(Debug, Default)]
pub struct SidecarCache {
    by_trace: HashMap<PathBuf, Option<Arc<GoldSpec>>>,
}

impl SidecarCache {
    fn for_trace(&mut self, file: &Path, problems: &mut Vec<Problem>) -> Option<Arc<GoldSpec>> {
        // Asked once or twice for every run of a file: no path copy when it is known.
        if let Some(known) = self.by_trace.get(file) {
            return known.clone();
        }
        self.by_trace
            .entry(file.to_path_buf())
            .or_insert_with(|| match load_sidecar(file) {
                None => None,
                Some(Ok((spec, more))) => {
                    problems.extend(more);
                    Some(Arc::new(spec))
                }
                Some(Err(why)) => {
                    problems.push(Problem::error(file.display(), None, why.to_string()));
                    None
                }
            })
            .clone()
    }
}

/// The gold that applies to one invocation, most specific first: an entry for its id in a
/// `--gold` map, a sidecar beside its trace file, a gold its trace carries, a shared `--gold`.
pub fn gold_for(
    invocation: &Invocation,
    gold_file: Option<&GoldFile>,
    sidecars: &mut SidecarCache,
    problems: &mut Vec<Problem>,
) -> Option<Arc<GoldSpec>> {
    let per_id = match gold_file {
        Some(GoldFile::PerInvocation(_)) => {
            gold_file.and_then(|g| g.for_invocation(&invocation.id.text()))
        }
        _ => None,
    };
    let shared = match gold_file {
        Some(GoldFile::Shared(spec)) => Some(spec),
        _ => None,
    };
    per_id
        .map(|spec| Arc::new(spec.clone()))
        .or_else(|| origin_file(invocation).and_then(|file| sidecars.for_trace(file, problems)))
        .or_else(|| invocation.gold().cloned().map(Arc::new))
        .or_else(|| shared.map(|spec| Arc::new(spec.clone())))
}

/// The diff report of one invocation against its gold, if it has one.
pub fn report_for(
    invocation: &Invocation,
    gold_file: Option<&GoldFile>,
    options: CheckOptions,
    sidecars: &mut SidecarCache,
    problems: &mut Vec<Problem>,
) -> Option<DiffReport> {
    let gold = gold_for(invocation, gold_file, sidecars, problems)?;
    let (actual, notes) = actual_calls(invocation);
    let mut report = DiffReport::build(&invocation.id, gold, actual, options);
    report.name = Some(invocation.summary().name.to_string()).filter(|n| !n.is_empty());
    report.notes.extend(notes);
    Some(report)
}

/// The report that judges one invocation, most specific gold first: an entry for its id in a
/// `--gold` map, a sidecar beside its trace file, then — for a turn of a conversation whose
/// scenario asserts its tool calls — that assertion over *all* the conversation's turns
/// (the same report for every turn of it), then a gold the invocation carries, then a shared
/// `--gold`.
pub fn report_in(
    store: &Store,
    conversations: &Conversations,
    invocation: &Invocation,
    gold_file: Option<&GoldFile>,
    options: CheckOptions,
    sidecars: &mut SidecarCache,
    problems: &mut Vec<Problem>,
) -> Option<DiffReport> {
    let own = match gold_file {
        Some(GoldFile::PerInvocation(_)) => gold_file
            .and_then(|g| g.for_invocation(&invocation.id.text()))
            .map(|spec| Arc::new(spec.clone())),
        _ => None,
    }
    .or_else(|| origin_file(invocation).and_then(|file| sidecars.for_trace(file, problems)));
    if own.is_none()
        && let Some(conversation) = conversation_of(invocation)
    {
        let turns = conversations.turns(conversation);
        if let Some(report) = conversation_report(store, conversation, turns, options) {
            return Some(report);
        }
    }
    report_for(invocation, gold_file, options, sidecars, problems)
}

/// Chooses golds and builds a report for every invocation that has one; a whole-conversation
/// gold gives one report for its conversation, not one per turn.
pub fn check_store(
    store: &Store,
    gold_file: Option<&GoldFile>,
    options: CheckOptions,
    problems: &mut Vec<Problem>,
) -> Vec<DiffReport> {
    let mut sidecars = SidecarCache::default();
    // A store where no run is a turn of an arksim conversation builds no conversation index:
    // its runs' reports come from their own golds alone.
    let conversations = store
        .invocations()
        .any(|inv| conversation_of(inv).is_some())
        .then(|| Conversations::of_store(store));
    let mut reported = std::collections::HashSet::new();
    store
        .oldest_first()
        .into_iter()
        .filter_map(|inv| match &conversations {
            Some(conversations) => report_in(
                store,
                conversations,
                inv,
                gold_file,
                options,
                &mut sidecars,
                problems,
            ),
            None => report_for(inv, gold_file, options, &mut sidecars, problems),
        })
        .filter(|report| {
            report
                .conversation
                .as_ref()
                .is_none_or(|scope| reported.insert(scope.conversation_id.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::args_from_text;
    use serde_json::json;

    #[test]
    fn arguments_are_read_like_toolscore() {
        assert_eq!(args_from_text(r#"{"a": 1}"#).get("a"), Some(&json!(1)));
        assert_eq!(args_from_text(r#""{\"a\": 2}""#).get("a"), Some(&json!(2)));
        assert_eq!(args_from_text("[1, 2]").get("value"), Some(&json!([1, 2])));
        assert_eq!(
            args_from_text("plain text").get("value"),
            Some(&json!("plain text"))
        );
        assert!(args_from_text("").is_empty());
        assert!(args_from_text("null").is_empty());
    }
}
