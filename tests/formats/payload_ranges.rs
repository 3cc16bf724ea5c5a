//! Payloads are byte ranges: every OTLP payload of the fixture corpus (JSON documents, JSON
//! lines, protobuf, gRPC bodies, gzip) read back through its range equals the value a full
//! in-memory parse of the same file gives.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use toolcap::formats::{self, otlp};
use toolcap::model::{AttrValue, Id, Origin, Payload, PayloadBody, PayloadRoles, Span};
use toolcap::sources::files;

/// Every trace file under tests/fixtures, sorted.
fn fixture_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![PathBuf::from("tests/fixtures")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if files::is_candidate(&path) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn otlp_files() -> Vec<PathBuf> {
    fixture_files()
        .into_iter()
        .filter(|p| {
            let loaded = files::load_file(p);
            matches!(loaded.detection.format, Some("otlp-json" | "otlp-protobuf"))
        })
        .collect()
}

/// Every payload a span holds, labelled by where it sits (held as a value, or written into a
/// packed attribute list).
fn payloads(span: &Span) -> Vec<(String, Payload)> {
    let mut out = vec![
        ("input".to_owned(), span.input().into_owned()),
        ("output".to_owned(), span.output().into_owned()),
    ];
    for (key, value) in &span.attributes {
        if let AttrValue::Payload(p) = &*value {
            out.push((format!("attr {key}"), (**p).clone()));
        }
    }
    for (index, event) in span.events().iter().enumerate() {
        for (key, value) in &event.attributes {
            if let AttrValue::Payload(p) = &*value {
                out.push((format!("event {index} {key}"), (**p).clone()));
            }
        }
    }
    out
}

/// The spans of a file parsed whole in memory, payloads inline.
fn parsed_in_memory(path: &Path, format: &'static str) -> Vec<Span> {
    let raw = std::fs::read(path).unwrap();
    let bytes = formats::maybe_gunzip(&raw).unwrap().unwrap_or(raw);
    let origin = Origin::endpoint("memory");
    let mut spans = Vec::new();
    if format == "otlp-protobuf" {
        // Framed files (the Collector's length-prefixed protobuf) are not one request.
        if let Ok(request) = otlp::decode_request_protobuf(&bytes) {
            spans.extend(otlp::batch_from_request(&request, &origin, format, None).spans);
        }
        return spans;
    }
    let documents: Vec<&[u8]> = match serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        Ok(_) => vec![&bytes[..]],
        Err(_) => bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
            .collect(),
    };
    for document in documents {
        if let Ok((request, _)) = otlp::decode_request_json(document) {
            spans.extend(otlp::batch_from_request(&request, &origin, format, None).spans);
        }
    }
    spans
}

#[test]
fn every_otlp_payload_reads_back_from_its_range_as_a_full_parse_gives_it() {
    let files = otlp_files();
    let mut by_kind: HashMap<String, usize> = HashMap::new();
    let mut ranges = 0;
    for path in &files {
        let loaded = files::load_file(path);
        let format = loaded.detection.format.unwrap();
        let expected: HashMap<(Id, Id), Span> = parsed_in_memory(path, format)
            .into_iter()
            .map(|s| ((s.trace_id.id(), s.span_id.id()), s))
            .collect();
        if expected.is_empty() {
            // A framing the reference parse here does not read (zstd-framed Collector files):
            // their payloads still go through ranges, checked by the format's own tests.
            continue;
        }
        for span in &loaded.batch.spans {
            let key = (span.trace_id.id(), span.span_id.id());
            let Some(full) = expected.get(&key) else {
                panic!(
                    "{}: span {key:?} missing from the full parse",
                    path.display()
                );
            };
            let theirs = payloads(full);
            let ours = payloads(span);
            assert_eq!(ours.len(), theirs.len(), "{} {key:?}", path.display());
            for ((label, payload), (_, inline)) in ours.iter().zip(&theirs) {
                let read = formats::load_payload(payload).unwrap();
                let want = formats::load_payload(inline).unwrap();
                assert_eq!(read, want, "{} {key:?} {label}", path.display());
                assert_eq!(
                    payload.state,
                    inline.state,
                    "{} {key:?} {label}",
                    path.display()
                );
                assert_eq!(
                    payload.bytes,
                    inline.bytes,
                    "{} {key:?} {label}",
                    path.display()
                );
                if let PayloadBody::Range(range) = &payload.body {
                    ranges += 1;
                    let kind = format!("{format}{}", if range.gzip { "+gzip" } else { "" });
                    *by_kind.entry(kind).or_default() += 1;
                }
                assert!(
                    !matches!(payload.body, PayloadBody::InRecord { .. }),
                    "{} {key:?} {label}: OTLP payloads are ranges, not re-parsed records",
                    path.display()
                );
            }
        }
    }
    // The corpus covers each encoding with real range-held payloads.
    for kind in ["otlp-json", "otlp-protobuf", "otlp-protobuf+gzip"] {
        assert!(
            by_kind.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} payload held by range: {by_kind:?}"
        );
    }
    assert!(ranges > 100, "{ranges} ranges");
}

/// A copy of a trace file in `dir`, and a span of it whose input is held by range (read once).
fn copy_with_a_range_held_input(dir: &Path) -> (PathBuf, Span) {
    let path = dir.join("traces.jsonl");
    std::fs::copy(
        "tests/fixtures/corpus/otlp-python-sdk/otlp-json/traces.jsonl",
        &path,
    )
    .unwrap();
    let span = files::load_file(&path)
        .batch
        .spans
        .into_iter()
        .find(|s| matches!(s.input().body, PayloadBody::Range(_)))
        .expect("a span with a range-held input");
    assert!(formats::load_payload(&span.input()).unwrap().is_some());
    (path, span)
}

#[test]
fn a_range_that_no_longer_matches_the_file_is_an_error_not_a_wrong_value() {
    let dir = tempfile::tempdir().unwrap();
    let (path, span) = copy_with_a_range_held_input(dir.path());
    // Rewritten with every byte shifted by one: the range now starts inside another token.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.insert(0, b' ');
    std::fs::write(&path, &bytes).unwrap();
    let error = formats::load_payload(&span.input())
        .unwrap_err()
        .to_string();
    assert!(error.contains("changed on disk"), "{error}");
}

/// Every fixture file of every format, loaded as a file (payloads left on disk) and loaded from
/// memory (payloads inline): each payload read back through its body equals the in-memory one.
/// The JSON record formats hold theirs as byte ranges; message logs (whose model-call input is
/// a prompt assembled from several messages, not one value of the file) re-read their record.
#[test]
fn every_formats_payloads_read_back_as_a_full_parse_gives_them() {
    const RECORD_FORMATS: &[&str] = &[
        "openai-agents",
        "openarmature-events",
        "arksim-simulation",
        "arksim-evaluation",
        "arksim-scenarios",
        "a2a-task",
    ];
    let mut bodies: HashMap<(&'static str, &'static str), usize> = HashMap::new();
    let mut compared = 0;
    for path in &fixture_files() {
        let from_file = files::load_file(path);
        let Some(format) = from_file.detection.format else {
            continue;
        };
        let raw = std::fs::read(path).unwrap();
        let in_memory = formats::load_bytes(Origin::endpoint("memory"), &raw);
        if in_memory.detection.format != Some(format) {
            // Detected by its file name only (a `.pb` body): nothing to compare against.
            continue;
        }
        let (ours, theirs) = (&from_file.batch.spans, &in_memory.batch.spans);
        assert_eq!(ours.len(), theirs.len(), "{}", path.display());
        for (span, full) in ours.iter().zip(theirs) {
            assert_eq!(span.span_id, full.span_id, "{}", path.display());
            let (mine, inline) = (payloads(span), payloads(full));
            assert_eq!(
                mine.len(),
                inline.len(),
                "{} {}",
                path.display(),
                span.span_id
            );
            for ((label, payload), (_, want)) in mine.iter().zip(&inline) {
                let context = format!("{} span {} {label}", path.display(), span.span_id);
                assert_eq!(
                    formats::load_payload(payload).unwrap(),
                    formats::load_payload(want).unwrap(),
                    "{context}"
                );
                assert_eq!(payload.state, want.state, "{context}");
                assert_eq!(payload.bytes, want.bytes, "{context}");
                let body = match &payload.body {
                    PayloadBody::Absent => "absent",
                    PayloadBody::Inline(_) => "inline",
                    PayloadBody::InRecord { .. } => "record",
                    PayloadBody::Range(_) => "range",
                };
                *bodies.entry((format, body)).or_default() += 1;
                compared += 1;
                if RECORD_FORMATS.contains(&format) {
                    assert_ne!(
                        body, "record",
                        "{context}: a record format re-parses its record"
                    );
                }
            }
        }
    }
    for format in ["openai-agents", "openarmature-events", "arksim-evaluation"] {
        assert!(
            bodies.get(&(format, "range")).copied().unwrap_or(0) > 0,
            "no {format} payload held by range: {bodies:?}"
        );
    }
    assert!(compared > 1000, "{compared} payloads compared");
}

/// Reads keep the last file open; a file put in place of it (a new file renamed over the path)
/// must be read, not the one kept open.
#[test]
fn a_file_replaced_under_its_path_is_read_anew() {
    let dir = tempfile::tempdir().unwrap();
    let (path, span) = copy_with_a_range_held_input(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.insert(0, b' ');
    let replacement = dir.path().join("replacement.jsonl");
    std::fs::write(&replacement, &bytes).unwrap();
    std::fs::rename(&replacement, &path).unwrap();
    let error = formats::load_payload(&span.input())
        .unwrap_err()
        .to_string();
    assert!(error.contains("changed on disk"), "{error}");
    std::fs::remove_file(&path).unwrap();
    let error = formats::load_payload(&span.input())
        .unwrap_err()
        .to_string();
    assert!(error.contains("No such file"), "{error}");
}

/// A span's input or output taken from an attribute is kept once. A payload attribute left in
/// its file is written into the packed list and marked there; a text attribute is marked with
/// the payload's range; a payload held in memory is one allocation with two owners. Never a
/// copy beside the attribute.
#[test]
fn an_input_or_output_from_an_attribute_is_kept_once_with_it() {
    let (mut packed, mut marked, mut shared) = (0, 0, 0);
    for path in otlp_files() {
        let loaded = files::load_file(&path);
        let format = loaded.detection.format.unwrap();
        // Read from a file, payloads are ranges; parsed in memory (as from the network), inline.
        let in_memory = parsed_in_memory(&path, format);
        for span in loaded.batch.spans.iter().chain(&in_memory) {
            let slots = [
                (span.input_slot(), span.input(), PayloadRoles::INPUT),
                (span.output_slot(), span.output(), PayloadRoles::OUTPUT),
            ];
            for (slot, payload, role) in slots {
                let Some(field) = payload.field.as_deref() else {
                    continue;
                };
                let Some(attribute) = span.attr(field) else {
                    continue;
                };
                let place = format!("{}: span {} {field}", path.display(), span.span_id);
                let in_attributes = span.attributes.payload_in_role(role).is_some();
                match (&*attribute, slot.holder()) {
                    (AttrValue::Payload(attribute), Some(held)) => {
                        assert!(std::sync::Arc::ptr_eq(held, attribute), "{place}: a copy");
                        assert!(!in_attributes, "{place}");
                        shared += 1;
                    }
                    (AttrValue::Payload(attribute), None) => {
                        assert!(in_attributes, "{place}");
                        assert!(matches!(payload.body, PayloadBody::Range(_)), "{place}");
                        assert_eq!(*payload, **attribute, "{place}");
                        packed += 1;
                    }
                    (AttrValue::Str(text), None) => {
                        assert!(in_attributes, "{place}");
                        assert!(matches!(payload.body, PayloadBody::Range(_)), "{place}");
                        let loaded = formats::load_payload(&payload).unwrap();
                        assert_eq!(loaded.as_deref(), Some(&**text), "{place}");
                        marked += 1;
                    }
                    (other, held) => {
                        assert!(held.is_some() && !in_attributes, "{place}: {other:?}");
                    }
                }
            }
        }
    }
    assert!(
        packed > 20,
        "only {packed} payloads were kept in their attribute lists"
    );
    assert!(
        marked > 20,
        "only {marked} payloads were kept as marks on their texts"
    );
    assert!(
        shared > 20,
        "only {shared} held payloads were shared with their attributes"
    );
}
