//! A big OTLP JSON-lines file is loaded in pieces by the headless loader (read, parsed on every
//! core and applied in file order): the store it builds is the one a whole-file parse builds,
//! payload ranges included, and every problem is reported once at its line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use toolcap::formats;
use toolcap::model::Origin;
use toolcap::redact::Reveal;
use toolcap::sources::{load, pieces};
use toolcap::store::Store;
use toolcap::views::dump;

const TEMPLATES: &str = "tests/fixtures/corpus/otlp-python-sdk/otlp-json/traces.jsonl";
/// The line that is not JSON, and where it goes.
const BROKEN_LINE: &str = "{\"resourceSpans\": [ this is not JSON";
const LENIENT_EVERY: usize = 400;

/// A line whose span kind is an enum name (protobuf canonical JSON): read leniently, with a
/// note that must be said once per file, not once per piece.
fn lenient_line(n: usize) -> String {
    format!(
        r#"{{"resourceSpans":[{{"resource":{{}},"scopeSpans":[{{"spans":[{{"traceId":"{:032x}","spanId":"{:016x}","name":"lenient","kind":"SPAN_KIND_CLIENT","startTimeUnixNano":"1","endTimeUnixNano":"2"}}]}}]}}]}}"#,
        0xfeed_0000_0000_u64 + n as u64,
        n + 1
    )
}

/// The fixture's requests again and again with fresh trace ids, past `min_bytes`, with
/// lenient lines among them, one broken line in the middle, and no newline after the last.
/// Returns the broken line's number.
fn write_big_file(path: &Path, min_bytes: usize) -> u64 {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let templates: Vec<Value> = std::fs::read_to_string(root.join(TEMPLATES))
        .expect("fixture")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let mut lines = Vec::new();
    let mut written = 0usize;
    let mut round = 0u64;
    while written < min_bytes {
        for template in &templates {
            let mut request = template.clone();
            for resource in request["resourceSpans"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                for scope in resource["scopeSpans"].as_array_mut().into_iter().flatten() {
                    for span in scope["spans"].as_array_mut().into_iter().flatten() {
                        let old = span["traceId"].as_str().unwrap_or_default();
                        let fresh = format!("{round:08x}{}", &old[8.min(old.len())..]);
                        span["traceId"] = Value::String(fresh);
                    }
                }
            }
            let line = request.to_string();
            written += line.len() + 1;
            lines.push(line);
            if lines.len() % LENIENT_EVERY == 0 {
                lines.push(lenient_line(lines.len()));
            }
        }
        round += 1;
    }
    let broken_at = lines.len() / 2;
    lines.insert(broken_at, BROKEN_LINE.to_owned());
    let mut file = std::fs::File::create(path).expect("create");
    file.write_all(lines.join("\n").as_bytes()).expect("write");
    broken_at as u64 + 1
}

fn document(store: &Store) -> (Value, Vec<String>) {
    let mut doc = dump::to_json(store, Reveal::Revealed);
    let mut problems: Vec<String> = doc["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(Value::to_string)
        .collect();
    problems.sort();
    doc["problems"] = Value::Null;
    (doc, problems)
}

#[test]
fn a_big_file_loaded_in_pieces_is_the_file_loaded_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.jsonl");
    let broken_line = write_big_file(&path, 10 << 20);

    let mut in_pieces = Store::new();
    let mut pieces_applied = 0;
    let load = pieces::load_in_pieces(&path, &mut |batch| {
        pieces_applied += 1;
        in_pieces.apply(batch);
    })
    .expect("a big OTLP JSON-lines file is loaded in pieces");
    in_pieces.settle();
    assert!(pieces_applied >= 3, "{pieces_applied} pieces");

    let bytes = std::fs::read(&path).expect("read");
    let loaded = formats::load_bytes(Origin::File(Arc::new(path.clone())), &bytes);
    let spans = loaded.batch.spans.len();
    let mut whole = Store::new();
    whole.apply(loaded.batch);
    whole.settle();

    assert_eq!(load.spans, spans);
    assert_eq!(load.detection.format, Some("otlp-json"));
    let (pieces_doc, pieces_problems) = document(&in_pieces);
    let (whole_doc, whole_problems) = document(&whole);
    assert!(pieces_doc == whole_doc, "the two stores differ");
    assert_eq!(pieces_problems, whole_problems);

    let lenient: Vec<_> = load
        .problems
        .iter()
        .filter(|p| p.message.contains("SPAN_KIND_CLIENT"))
        .collect();
    assert_eq!(lenient.len(), 1, "the leniency note is said once per file");
    let broken: Vec<_> = load
        .problems
        .iter()
        .filter(|p| p.severity == toolcap::model::Severity::Error)
        .collect();
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert_eq!(broken[0].line, Some(broken_line));

    // The headless loader takes the same path and reports the file once.
    let (store, reports) = load::load_store(std::slice::from_ref(&path));
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].spans, spans);
    assert!(document(&store).0 == whole_doc);
}

#[test]
fn small_compressed_and_pretty_files_are_read_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let small = dir.path().join("small.jsonl");
    std::fs::write(&small, lenient_line(1) + "\n").expect("write");
    assert!(pieces::load_in_pieces(&small, &mut |_| {}).is_none());

    // Big, but one pretty-printed document: its lines are not requests.
    let pretty = dir.path().join("pretty.json");
    let mut spans = Vec::new();
    for n in 0..(pieces::PIECEWISE_MIN_BYTES as usize / 150) {
        let line: Value = serde_json::from_str(&lenient_line(n)).expect("JSON");
        spans.push(line["resourceSpans"][0]["scopeSpans"][0]["spans"][0].clone());
    }
    let doc = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
    std::fs::write(&pretty, serde_json::to_vec_pretty(&doc).expect("JSON")).expect("write");
    assert!(std::fs::metadata(&pretty).expect("meta").len() > pieces::PIECEWISE_MIN_BYTES);
    assert!(pieces::load_in_pieces(&pretty, &mut |_| {}).is_none());
}
