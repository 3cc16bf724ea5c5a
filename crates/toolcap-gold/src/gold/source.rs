//! Where gold trajectories come from: toolscore gold files (a list, or `{"calls": [...]}`), a
//! map of invocation id to such lists, arksim `tool_calls` assertions, and `NAME.gold.json`
//! sidecars beside trace files. Items that cannot be used are reported, never dropped silently.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Error;
use crate::model::{GoldCall, GoldSpec, Problem};

/// Gold files larger than this are refused (a gold is hand-written; this bounds memory).
pub const MAX_GOLD_BYTES: u64 = 64 << 20;

/// A `--gold` file: one trajectory for every invocation, or one per invocation id.
#[derive(Debug, Clone, PartialEq)]
pub enum GoldFile {
    Shared(GoldSpec),
    PerInvocation(Vec<(String, GoldSpec)>),
}

impl GoldFile {
    /// The gold for one invocation, if this file has one.
    pub fn for_invocation(&self, id: &str) -> Option<&GoldSpec> {
        match self {
            GoldFile::Shared(spec) => Some(spec),
            GoldFile::PerInvocation(map) => map.iter().find(|(k, _)| k == id).map(|(_, s)| s),
        }
    }
}

fn call_list(value: &Value) -> Option<&Vec<Value>> {
    match value {
        Value::Array(items) => Some(items),
        Value::Object(map) => map.get("calls").and_then(Value::as_array),
        _ => None,
    }
}

/// Parses a toolscore gold document (`[...]` or `{"calls": [...]}`).
pub fn parse_toolscore_gold(
    value: &Value,
    source: &str,
) -> Result<(GoldSpec, Vec<Problem>), Error> {
    let items = call_list(value).ok_or(Error::NotACallList)?;
    let mut problems = Vec::new();
    let mut calls = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        match parse_gold_item(item) {
            Ok(call) => calls.push(call),
            Err(why) => problems.push(Problem::warning(
                source,
                None,
                format!("gold item {index} skipped: {why}"),
            )),
        }
    }
    Ok((
        GoldSpec {
            calls,
            source: source.to_string(),
            ..GoldSpec::default()
        },
        problems,
    ))
}

fn parse_gold_item(item: &Value) -> Result<GoldCall, Error> {
    let Value::Object(map) = item else {
        return Err(Error::CallNotAnObject {
            shape: super::compare::describe_shape(item),
        });
    };
    let tool = match map.get("tool") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        Some(Value::String(_)) => return Err(Error::EmptyTool),
        Some(other) => {
            return Err(Error::ToolNotAString {
                shape: super::compare::describe_shape(other),
            });
        }
        None if map.contains_key("name") => return Err(Error::NameWithoutTool),
        None => return Err(Error::NoTool),
    };
    let args = match map.get("args") {
        None | Some(Value::Null) => None,
        Some(Value::Object(args)) => Some(args.clone()),
        Some(other) => {
            return Err(Error::ArgsNotAnObject {
                tool,
                shape: super::compare::describe_shape(other),
            });
        }
    };
    Ok(GoldCall {
        tool,
        args,
        description: map
            .get("description")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .map(str::to_string),
        side_effects: map
            .get("side_effects")
            .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
            .cloned(),
        arg_match_mode: None,
    })
}

/// Parses a `--gold` document: a toolscore gold, or an object mapping invocation ids to golds.
pub fn parse_gold_document(value: &Value, source: &str) -> Result<(GoldFile, Vec<Problem>), Error> {
    if call_list(value).is_some() {
        let (spec, problems) = parse_toolscore_gold(value, source)?;
        return Ok((GoldFile::Shared(spec), problems));
    }
    let Value::Object(map) = value else {
        return Err(Error::NotAGold);
    };
    let mut problems = Vec::new();
    let mut per_invocation = Vec::with_capacity(map.len());
    for (id, entry) in map {
        let label = format!("{source} [{id}]");
        match parse_toolscore_gold(entry, &label) {
            Ok((spec, more)) => {
                per_invocation.push((id.clone(), spec));
                problems.extend(more);
            }
            Err(why) => problems.push(Problem::error(
                source,
                None,
                format!("invocation {id}: {why}"),
            )),
        }
    }
    if per_invocation.is_empty() && !map.is_empty() {
        return Err(Error::NoUsableEntry);
    }
    Ok((GoldFile::PerInvocation(per_invocation), problems))
}

fn read_json(path: &Path) -> Result<Value, Error> {
    let unreadable = |source| Error::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if meta.len() > MAX_GOLD_BYTES {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            bytes: meta.len(),
            limit: MAX_GOLD_BYTES,
        });
    }
    let bytes = std::fs::read(path).map_err(unreadable)?;
    serde_json::from_slice(&bytes).map_err(|source| Error::NotJson {
        path: path.to_path_buf(),
        source,
    })
}

/// Loads a `--gold FILE`.
pub fn load_gold_file(path: &Path) -> Result<(GoldFile, Vec<Problem>), Error> {
    let value = read_json(path)?;
    let source = path.display().to_string();
    parse_gold_document(&value, &source).map_err(|e| e.in_place(source))
}

/// Whether a `--gold` file is an arksim `scenarios.json`: its assertions are then read the way
/// the trace loader reads them (each scenario's gold judged over its whole conversation), not
/// as a map of invocation ids.
pub fn is_arksim_scenarios(path: &Path) -> bool {
    read_json(path).is_ok_and(|v| v.get("scenarios").is_some_and(Value::is_array))
}

/// Sidecar names for a trace file: `NAME.gold.json` where NAME is the file name without its
/// extension, or without everything after its first dot (`run.otlp.json` → `run.gold.json`).
pub fn sidecar_candidates(trace: &Path) -> Vec<PathBuf> {
    let Some(name) = trace.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    if name.ends_with(".gold.json") {
        return Vec::new();
    }
    let dir = trace.parent().unwrap_or_else(|| Path::new(""));
    let mut out = Vec::new();
    for stem in [
        name.rsplit_once('.').map(|(s, _)| s),
        name.split_once('.').map(|(s, _)| s),
    ]
    .into_iter()
    .flatten()
    .chain(std::iter::once(name))
    {
        let candidate = dir.join(format!("{stem}.gold.json"));
        if !out.contains(&candidate) {
            out.push(candidate);
        }
    }
    out
}

/// The file every trace of a directory shares when it has no `NAME.gold.json` of its own.
pub const SHARED_GOLD_NAME: &str = "gold.json";

/// The sidecar gold of a trace file, if one exists: its `NAME.gold.json`, else a `gold.json`
/// beside it (toolscore's usual layout: `toolscore eval gold.json trace.json`). `check` and
/// the TUI both find golds through this one function. A `gold.json` that is not a toolscore
/// gold (a map of invocation ids, say) is not a sidecar and is left alone.
pub fn load_sidecar(trace: &Path) -> Option<Result<(GoldSpec, Vec<Problem>), Error>> {
    let read = |path: &Path| {
        let source = path.display().to_string();
        read_json(path)
            .and_then(|v| parse_toolscore_gold(&v, &source).map_err(|e| e.in_place(source)))
    };
    if let Some(path) = sidecar_candidates(trace).into_iter().find(|p| p.is_file()) {
        return Some(read(&path));
    }
    let name = trace.file_name()?.to_str()?;
    if name == SHARED_GOLD_NAME || name.ends_with(".gold.json") {
        return None;
    }
    let shared = trace
        .parent()
        .unwrap_or_else(|| Path::new(""))
        .join(SHARED_GOLD_NAME);
    shared
        .is_file()
        .then(|| read(&shared))
        .filter(Result::is_ok)
}

/// Converts one arksim assertion (`{"type": "tool_calls", "match_mode", "expected": [...]}`).
/// `arg_match_mode: ignore` (the default) becomes "don't check arguments".
pub fn parse_arksim_assertion(
    value: &Value,
    source: &str,
) -> Result<(GoldSpec, Vec<Problem>), Error> {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "tool_calls" {
        return Err(Error::NotToolCalls { kind: kind.into() });
    }
    let match_mode = value
        .get("match_mode")
        .and_then(Value::as_str)
        .unwrap_or("unordered");
    if !matches!(match_mode, "strict" | "unordered" | "contains" | "within") {
        return Err(Error::UnknownMatchMode {
            mode: match_mode.into(),
        });
    }
    let expected = value
        .get("expected")
        .and_then(Value::as_array)
        .ok_or(Error::NoExpectedList)?;
    let mut problems = Vec::new();
    let mut calls = Vec::with_capacity(expected.len());
    for (index, item) in expected.iter().enumerate() {
        let Some(name) = item
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            problems.push(Problem::warning(
                source,
                None,
                format!("expected call {index} skipped: it has no \"name\""),
            ));
            continue;
        };
        let mode = item
            .get("arg_match_mode")
            .and_then(Value::as_str)
            .unwrap_or("ignore");
        if !matches!(mode, "ignore" | "exact" | "partial") {
            problems.push(Problem::warning(
                source,
                None,
                format!("expected call {index} ({name}): unknown arg_match_mode {mode:?}, read as partial"),
            ));
        }
        let arguments = match item.get("arguments") {
            Some(Value::Object(args)) => args.clone(),
            None | Some(Value::Null) => Default::default(),
            Some(other) => {
                problems.push(Problem::warning(
                    source,
                    None,
                    format!(
                        "expected call {index} ({name}): arguments are not an object ({}), read as {{}}",
                        super::compare::describe_shape(other)
                    ),
                ));
                Default::default()
            }
        };
        calls.push(GoldCall {
            tool: name.to_string(),
            args: (mode != "ignore").then_some(arguments),
            arg_match_mode: Some(mode.to_string()),
            ..GoldCall::default()
        });
    }
    Ok((
        GoldSpec {
            calls,
            match_mode: Some(match_mode.to_string()),
            arg_match_mode: None,
            source: source.to_string(),
        },
        problems,
    ))
}

/// Every `tool_calls` assertion of an arksim `scenarios.json`, keyed by scenario id.
pub fn parse_arksim_scenarios(
    value: &Value,
    source: &str,
) -> (Vec<(String, GoldSpec)>, Vec<Problem>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let scenarios = value
        .get("scenarios")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for scenario in scenarios {
        let Some(id) = scenario.get("scenario_id").and_then(Value::as_str) else {
            problems.push(Problem::warning(
                source,
                None,
                "scenario without scenario_id skipped",
            ));
            continue;
        };
        let assertions = scenario
            .get("assertions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for assertion in assertions {
            if assertion.get("type").and_then(Value::as_str) != Some("tool_calls") {
                continue;
            }
            let label = format!("{source} [{id}]");
            match parse_arksim_assertion(assertion, &label) {
                Ok((spec, more)) => {
                    out.push((id.to_string(), spec));
                    problems.extend(more);
                }
                Err(why) => problems.push(Problem::warning(&label, None, why.to_string())),
            }
        }
    }
    (out, problems)
}

#[cfg(test)]
mod sidecar_tests {
    use super::*;

    #[test]
    fn gold_json_beside_a_trace_is_its_gold_unless_it_has_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let trace = dir.path().join("run.json");
        std::fs::write(&trace, "[]").expect("trace");
        assert!(load_sidecar(&trace).is_none());
        std::fs::write(dir.path().join("gold.json"), r#"[{"tool": "a"}]"#).expect("gold");
        let (spec, _) = load_sidecar(&trace).expect("found").expect("parses");
        assert_eq!(spec.calls[0].tool, "a");
        assert!(spec.source.ends_with("gold.json"));
        std::fs::write(dir.path().join("run.gold.json"), r#"[{"tool": "b"}]"#).expect("own");
        let (spec, _) = load_sidecar(&trace).expect("found").expect("parses");
        assert_eq!(spec.calls[0].tool, "b", "NAME.gold.json wins");
        // A map of invocation ids is a --gold document, not a sidecar.
        std::fs::remove_file(dir.path().join("run.gold.json")).expect("rm");
        std::fs::write(
            dir.path().join("gold.json"),
            r#"{"inv-1": [{"tool": "a"}]}"#,
        )
        .expect("map");
        assert!(load_sidecar(&trace).is_none());
    }
}
