//! Reading a log source as JSON (one document, or JSONL as an array of lines) and the
//! detection entry point shared by the message-log formats.

use serde_json::Value;

use super::dialect::Dialect;
use crate::formats::Input;
use crate::model::{Batch, Origin, Problem};

/// How many JSONL lines detection looks at.
const DETECT_LINES: usize = 64;

/// A whole source as JSON: one document, or JSONL read as an array of its lines.
pub struct Doc {
    pub root: Value,
    /// For JSONL: the 1-based file line of each element of `root`.
    pub item_lines: Option<Vec<u64>>,
}

impl Doc {
    /// The file line of top-level item `index`, when the source is JSONL.
    pub fn line_of(&self, index: usize) -> Option<u64> {
        self.item_lines.as_ref()?.get(index).copied()
    }
}

/// JSON lines: the input's own test, or — when the first line is broken, so that test fails —
/// no whole document but several lines that start like objects, at least one of them whole.
fn is_jsonl(input: &Input) -> bool {
    if input.looks_like_jsonl() {
        return true;
    }
    if input.head_json().is_some() {
        return false;
    }
    let objects: Vec<&[u8]> = input
        .bytes
        .split(|b| *b == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|l| !l.is_empty())
        .take(DETECT_LINES)
        .filter(|l| l.starts_with(b"{"))
        .collect();
    objects.len() >= 2
        && objects
            .iter()
            .any(|l| serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok())
}

/// Reads the input as one JSON document, or as JSONL when it is not one. Bad JSONL lines
/// become problems with their line number; the good lines around them still load.
pub fn read_doc(input: &Input) -> (Option<Doc>, Vec<Problem>) {
    let mut problems = Vec::new();
    if !is_jsonl(input) {
        match serde_json::from_slice::<Value>(input.bytes) {
            Ok(root) => {
                return (
                    Some(Doc {
                        root,
                        item_lines: None,
                    }),
                    problems,
                );
            }
            Err(e) => {
                problems.push(Problem::error(
                    input.origin,
                    Some(input.base_line + e.line() as u64),
                    format!("not valid JSON: {e}"),
                ));
                return (None, problems);
            }
        }
    }
    let mut items = Vec::new();
    let mut lines = Vec::new();
    for (index, raw) in input.bytes.split(|b| *b == b'\n').enumerate() {
        let raw = raw.trim_ascii();
        if raw.is_empty() {
            continue;
        }
        let line = input.base_line + index as u64 + 1;
        match serde_json::from_slice::<Value>(raw) {
            Ok(value) => {
                items.push(value);
                lines.push(line);
            }
            Err(e) => problems.push(Problem::error(
                input.origin,
                Some(line),
                format!(
                    "line is not valid JSON, skipped: {} (column {})",
                    json_error_text(&e),
                    e.column()
                ),
            )),
        }
    }
    (
        Some(Doc {
            root: Value::Array(items),
            item_lines: Some(lines),
        }),
        problems,
    )
}

/// serde_json's message without its own "at line L column C" (the caller knows the line).
fn json_error_text(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

/// What detection looks at: the whole document, or for JSONL an array of its first lines.
pub fn detection_sample<'i>(input: &'i Input<'_>) -> Option<std::borrow::Cow<'i, Value>> {
    if is_jsonl(input) {
        let items: Vec<Value> = input
            .bytes
            .split(|b| *b == b'\n')
            .map(<[u8]>::trim_ascii)
            .filter(|l| !l.is_empty())
            .take(DETECT_LINES)
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect();
        return Some(std::borrow::Cow::Owned(Value::Array(items)));
    }
    input.head_json().map(std::borrow::Cow::Borrowed)
}

/// True for files that are gold trajectories, not traces: the stem is `gold` or ends in
/// `.gold`, `-gold` or `_gold` (toolscore golds share the custom trace shape).
pub fn is_gold_name(origin: &Origin) -> bool {
    let Origin::File(path) = origin else {
        return false;
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let stem = name.split_once('.').map_or(name, |(stem, _)| stem);
    let full_stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    [stem, full_stem].iter().any(|s| {
        *s == "gold" || s.ends_with(".gold") || s.ends_with("-gold") || s.ends_with("_gold")
    })
}

/// Detection for one dialect: `Some(reason)` when the sample is that dialect. Gold-named files
/// are refused by the formats whose shape a gold file shares. The dialect is decided once per
/// input, however many of the formats ask.
pub fn detect_dialect(input: &Input, dialect: Dialect) -> Option<String> {
    if matches!(dialect, Dialect::ToolscoreCustom | Dialect::LangChain)
        && is_gold_name(input.origin)
    {
        return None;
    }
    let (found, reason) = input
        .message_log_dialect
        .get_or_init(|| super::dialect::detect(&*detection_sample(input)?))
        .as_ref()?;
    (*found == dialect).then(|| reason.clone())
}

/// Reads the document for `parse`, or returns a batch holding only the read problems.
pub fn read_or_fail(input: &Input) -> Result<(Doc, Vec<Problem>), Box<Batch>> {
    match read_doc(input) {
        (Some(doc), problems) => Ok((doc, problems)),
        (None, problems) => Err(Box::new(Batch {
            problems,
            ..Default::default()
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gold_names_are_recognised() {
        let gold = |name: &str| is_gold_name(&Origin::File(std::sync::Arc::new(name.into())));
        assert!(gold("case/gold.json"));
        assert!(gold("x.gold.json"));
        assert!(gold("run-gold.json"));
        assert!(gold("run_gold.jsonl.gz"));
        assert!(!gold("golden.json"));
        assert!(!gold("trace.json"));
        assert!(!gold("marigold.json"));
    }
}
