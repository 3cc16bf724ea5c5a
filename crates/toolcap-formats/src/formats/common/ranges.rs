//! Payloads of the JSON record formats (openai-agents, OpenArmature events, arksim, A2A) as byte
//! ranges. Their parsers say where a payload sits as a JSON pointer into its record; while the
//! record's bytes are still in memory, right after the parse, each pointer is followed once to
//! the raw value's position, so showing the payload later reads and decodes exactly that value
//! — no record around it is read or parsed again (OTLP records its ranges while it parses).
//!
//! All pointers into one record are followed together, one level at a time, so a single-document
//! file with thousands of payloads is scanned about once per nesting level, not once per payload.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::formats::Input;
use crate::model::{
    AttrValue, Batch, Origin, Payload, PayloadBody, PayloadRange, RawEncoding, RecordRef, Span,
};

/// Where a payload sits in a span.
#[derive(Clone, Copy)]
enum Slot {
    Input,
    Output,
    Attr(usize),
    EventAttr(usize, usize),
}

fn payload_mut(span: &mut Span, slot: Slot) -> Option<&mut Payload> {
    fn attr(value: &mut AttrValue) -> Option<&mut Payload> {
        match value {
            AttrValue::Payload(p) => Some(std::sync::Arc::make_mut(p)),
            _ => None,
        }
    }
    match slot {
        Slot::Input => Some(span.input_slot_mut().to_change()),
        Slot::Output => Some(span.output_slot_mut().to_change()),
        Slot::Attr(i) => span
            .attributes
            .open_mut()
            .get_mut(i)
            .and_then(|(_, v)| attr(v)),
        Slot::EventAttr(e, i) => span
            .extras
            .events
            .get_mut(e)
            .and_then(|ev| ev.attributes.open_mut().get_mut(i))
            .and_then(|(_, v)| attr(v)),
    }
}

/// Every payload of a span with its slot; an iterator, because this runs for every span of
/// every load and most spans have no record-held payload at all. Spans are not packed yet
/// (they are once parsed), so a slot is a position in the list.
fn slots(span: &Span) -> impl Iterator<Item = (Slot, &Payload)> {
    fn held(value: &AttrValue) -> Option<&Payload> {
        match value {
            AttrValue::Payload(p) => Some(p),
            _ => None,
        }
    }
    let attributes = (span.attributes.as_open().unwrap_or_default().iter())
        .enumerate()
        .filter_map(|(i, (_, value))| Some((Slot::Attr(i), held(value)?)));
    let events = span.events().iter().enumerate().flat_map(|(e, event)| {
        (event.attributes.as_open().unwrap_or_default().iter())
            .enumerate()
            .filter_map(move |(i, (_, value))| Some((Slot::EventAttr(e, i), held(value)?)))
    });
    [
        (Slot::Input, span.input_slot().as_set()),
        (Slot::Output, span.output_slot().as_set()),
    ]
    .into_iter()
    .chain(attributes)
    .chain(events)
}

/// A payload to resolve: its span and slot, and its pointer's reference tokens.
struct Wanted {
    span: usize,
    slot: Slot,
    tokens: Vec<String>,
}

/// Turns every record-held payload of `batch` whose locator is a JSON pointer into the byte
/// range of its value. Payloads whose value cannot be found stay as they were (re-read from
/// their record), so nothing is lost if a pointer and the bytes disagree.
pub fn resolve_record_payloads(batch: &mut Batch, input: &Input) {
    let Origin::File(path) = input.origin else {
        return;
    };
    let mut by_record: HashMap<(u64, u64), (Arc<RecordRef>, Vec<Wanted>)> = HashMap::new();
    for (index, span) in batch.spans.iter().enumerate() {
        for (slot, payload) in slots(span) {
            let PayloadBody::InRecord { record, locator } = &payload.body else {
                continue;
            };
            if record.gzip || record.path != *path {
                continue;
            }
            let Some(tokens) = pointer_tokens(locator) else {
                continue;
            };
            by_record
                .entry((record.offset, record.len))
                .or_insert_with(|| (record.clone(), Vec::new()))
                .1
                .push(Wanted {
                    span: index,
                    slot,
                    tokens,
                });
        }
    }
    for (record, wanted) in by_record.into_values() {
        let Some(document) = record_bytes(input, &record) else {
            continue;
        };
        let Ok(root) = serde_json::from_slice::<&RawValue>(document) else {
            continue;
        };
        let mut found = vec![None; wanted.len()];
        let pending: Vec<(usize, &[String])> = wanted
            .iter()
            .enumerate()
            .map(|(i, w)| (i, w.tokens.as_slice()))
            .collect();
        locate(root, pending, &mut found);
        for (w, raw) in wanted.iter().zip(found) {
            let Some(raw) = raw else { continue };
            // The value is a slice of the input: its place in the file follows from the pointers.
            let start = raw.get().as_ptr() as usize - input.bytes.as_ptr() as usize;
            let (Ok(len), Some(offset)) = (
                u32::try_from(raw.get().len()),
                input.base_offset.checked_add(start as u64),
            ) else {
                continue;
            };
            let encoding = if raw.get().starts_with('"') {
                RawEncoding::JsonString
            } else {
                RawEncoding::JsonValue
            };
            if let Some(payload) = batch
                .spans
                .get_mut(w.span)
                .and_then(|s| payload_mut(s, w.slot))
            {
                payload.body = PayloadBody::Range(PayloadRange {
                    path: record.path.clone(),
                    offset,
                    len,
                    encoding,
                    gzip: false,
                });
            }
        }
    }
}

/// The record's bytes without surrounding blanks, as [`super::jsonrec::load_pointer`] parses it.
fn record_bytes<'a>(input: &Input<'a>, record: &RecordRef) -> Option<&'a [u8]> {
    let start = usize::try_from(record.offset.checked_sub(input.base_offset)?).ok()?;
    let end = start.checked_add(usize::try_from(record.len).ok()?)?;
    Some(input.bytes.get(start..end)?.trim_ascii())
}

/// A JSON pointer's reference tokens (`~1` is `/`, `~0` is `~`); `None` when it is not one.
fn pointer_tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// Follows every pending pointer from `value`, parsing each container on the way once.
fn locate<'a>(
    value: &'a RawValue,
    pending: Vec<(usize, &[String])>,
    found: &mut [Option<&'a RawValue>],
) {
    let mut deeper: BTreeMap<&str, Vec<(usize, &[String])>> = BTreeMap::new();
    for (index, tokens) in pending {
        match tokens.split_first() {
            None => found[index] = Some(value),
            Some((first, rest)) => deeper
                .entry(first.as_str())
                .or_default()
                .push((index, rest)),
        }
    }
    if deeper.is_empty() {
        return;
    }
    let text = value.get();
    if text.starts_with('{') {
        // Later duplicates win, as when the record is parsed into a `serde_json::Value`.
        let Ok(members) = serde_json::from_str::<HashMap<Cow<str>, &RawValue>>(text) else {
            return;
        };
        for (key, pending) in deeper {
            if let Some(child) = members.get(key) {
                locate(child, pending, found);
            }
        }
    } else if text.starts_with('[') {
        let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) else {
            return;
        };
        for (key, pending) in deeper {
            // RFC 6901 indices: digits, no leading zero (as `Value::pointer` reads them).
            let index = (key == "0" || !key.starts_with('0'))
                .then(|| key.parse::<usize>().ok())
                .flatten();
            if let Some(child) = index.and_then(|i| items.get(i)) {
                locate(child, pending, found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(document: &str, pointer: &str) -> Option<String> {
        let root = serde_json::from_str::<&RawValue>(document).ok()?;
        let mut found = vec![None];
        let tokens = pointer_tokens(pointer)?;
        locate(root, vec![(0, tokens.as_slice())], &mut found);
        found[0].map(|raw| raw.get().to_owned())
    }

    #[test]
    fn follows_pointers_as_serde_json_does() {
        let doc = r#"{"a": {"b/c": [10, {"d~e": "x\"y"}], "b": 1}, "a": {"b": 2}, "n": null}"#;
        let value: serde_json::Value = serde_json::from_str(doc).unwrap();
        for pointer in [
            "", "/a", "/a/b", "/n", "/a/b~1c", "/missing", "/a/b/0", "/n/x",
        ] {
            let ours = find(doc, pointer)
                .map(|raw| serde_json::from_str::<serde_json::Value>(&raw).unwrap());
            assert_eq!(ours.as_ref(), value.pointer(pointer), "{pointer}");
        }
        let nested = r#"{"a": {"b/c": [10, {"d~e": "x\"y"}]}, "l": [0, 1, 2]}"#;
        assert_eq!(find(nested, "/a/b~1c/1/d~0e").as_deref(), Some(r#""x\"y""#));
        assert_eq!(find(nested, "/l/2").as_deref(), Some("2"));
        assert_eq!(find(nested, "/l/02"), None);
        assert_eq!(find(nested, "/l/9"), None);
        assert_eq!(pointer_tokens("no-slash"), None);
    }
}
