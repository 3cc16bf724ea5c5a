//! `dump --json` on the bundled samples validates against docs/dump.schema.json.
//!
//! The schema uses a small JSON Schema subset (type, enum, required, properties, items,
//! minimum, local `$ref`), checked by the validator below; a full validator crate would add a
//! large dependency tree for one test. The schema itself was also checked with Python's
//! `jsonschema` 4.26 against the same output.

use std::process::Command;

use serde_json::Value;

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        other => panic!("schema uses unsupported type {other}"),
    }
}

fn validate(root: &Value, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix("#/")
            .expect("local refs only")
            .split('/')
            .fold(root, |node, part| &node[part]);
        assert!(!target.is_null(), "dangling $ref {reference}");
        return validate(root, target, value, at, errors);
    }
    if let Some(types) = schema.get("type") {
        let ok = match types {
            Value::String(t) => type_matches(t, value),
            Value::Array(ts) => ts.iter().any(|t| type_matches(t.as_str().unwrap(), value)),
            _ => panic!("bad type at {at}"),
        };
        if !ok {
            errors.push(format!("{at}: {value} is not {types}"));
            return;
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        errors.push(format!("{at}: {value} not in {options:?}"));
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) && n < min
    {
        errors.push(format!("{at}: {n} < {min}"));
    }
    if let Some(object) = value.as_object() {
        for key in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !object.contains_key(key.as_str().unwrap()) {
                errors.push(format!("{at}: missing {key}"));
            }
        }
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (key, sub) in properties {
                if let Some(child) = object.get(key) {
                    validate(root, sub, child, &format!("{at}.{key}"), errors);
                }
            }
            // Every key written is documented: an object the schema describes key by key holds
            // no other (a map, such as attributes, is described without `properties`).
            for key in object.keys().filter(|key| !properties.contains_key(*key)) {
                errors.push(format!("{at}: {key} is not in the schema"));
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (i, item) in array.iter().enumerate() {
            validate(root, items, item, &format!("{at}[{i}]"), errors);
        }
    }
}

fn dump_json(args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("dump")
        .arg("--json")
        .args(args)
        .arg("assets/sample-traces")
        .arg("tests/fixtures/inspect-ai/A")
        .arg("tests/fixtures/inspect-ai/limit")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn schema() -> Value {
    serde_json::from_str(&std::fs::read_to_string("docs/dump.schema.json").unwrap()).unwrap()
}

#[test]
fn dump_json_on_the_samples_matches_the_schema() {
    let schema = schema();
    for args in [&[][..], &["--reveal"][..], &["--explain"][..]] {
        let doc = dump_json(args);
        let mut errors = Vec::new();
        validate(&schema, &schema, &doc, "$", &mut errors);
        assert!(errors.is_empty(), "{args:?}: {errors:#?}");
        // The OTLP samples hold 9 invocations: genai-python-sdk.otlp.jsonl has 5 traces (the
        // .pb.gz repeats its third, same trace id), openarmature 3, openinference 1.
        let otlp = doc["invocations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["format"].as_str().unwrap().starts_with("otlp"))
            .count();
        assert_eq!(otlp, 9);
    }
}

#[test]
fn report_json_with_its_summary_matches_the_schema() {
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["report", "--json"])
        .args([
            "assets/sample-traces",
            "tests/fixtures/corpus/arksim/run-direct",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        doc["summary"]["tables"]["tools"].is_array(),
        "{}",
        doc["summary"]
    );
    let schema = schema();
    let mut errors = Vec::new();
    validate(&schema, &schema, &doc, "$", &mut errors);
    assert!(errors.is_empty(), "{errors:#?}");
    // The validator does look at the summary.
    let mut broken = doc.clone();
    broken["summary"]["tables"]["facets"][0]["runs"] = Value::from("many");
    let mut errors = Vec::new();
    validate(&schema, &schema, &broken, "$", &mut errors);
    assert_eq!(errors.len(), 1, "{errors:#?}");
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let schema = schema();
    let mut doc = dump_json(&[]);
    doc["invocations"][0]["status"] = Value::from("fine");
    doc["invocations"][0]["spans"][0]
        .as_object_mut()
        .unwrap()
        .remove("kind");
    doc["problems"] = Value::from(5);
    let mut errors = Vec::new();
    validate(&schema, &schema, &doc, "$", &mut errors);
    assert_eq!(errors.len(), 3, "{errors:#?}");
}

#[test]
fn problems_of_every_severity_match_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        "tests/fixtures/corpus/toolscore/v01_custom_exact_with_timing/trace.json",
        dir.path().join("trace.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join("run.log"), "INFO started\n").unwrap();
    std::fs::write(dir.path().join("cut.json"), "[{\"tool\": ").unwrap();
    std::fs::write(
        dir.path().join("partial.json"),
        r#"{"calls": [{"tool": "a"}, {"args": {}}]}"#,
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let schema = schema();
    let mut errors = Vec::new();
    validate(&schema, &schema, &doc, "$", &mut errors);
    assert!(errors.is_empty(), "{errors:#?}");
    let mut seen: Vec<&str> = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["severity"].as_str().unwrap())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen, ["error", "note", "warning"]);
    let mut bad = doc.clone();
    bad["problems"][0]["severity"] = Value::from("fatal");
    let mut errors = Vec::new();
    validate(&schema, &schema, &bad, "$", &mut errors);
    assert_eq!(errors.len(), 1, "{errors:#?}");
}

#[test]
fn a_runs_note_matches_the_schema_and_a_note_missing_its_label_does_not() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        "tests/fixtures/corpus/toolscore/v01_custom_exact_with_timing/trace.json",
        dir.path().join("trace.json"),
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
            .args(args)
            .arg(dir.path())
            .output()
            .unwrap()
    };
    let before: Value = serde_json::from_slice(&run(&["dump", "--json"]).stdout).unwrap();
    let id = before["invocations"][0]["id"].as_str().unwrap().to_owned();
    let annotated = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args([
            "annotate", "--id", &id, "--label", "known", "--note", "seen",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(annotated.status.code(), Some(0), "{annotated:?}");
    let doc: Value = serde_json::from_slice(&run(&["dump", "--json"]).stdout).unwrap();
    let note = &doc["invocations"][0]["note"];
    assert_eq!(note["label"], "known");
    assert_eq!(note["note"], "seen");
    let schema = schema();
    let mut errors = Vec::new();
    validate(&schema, &schema, &doc, "$", &mut errors);
    assert!(errors.is_empty(), "{errors:#?}");
    let mut bad = doc.clone();
    bad["invocations"][0]["note"]
        .as_object_mut()
        .unwrap()
        .remove("label");
    let mut errors = Vec::new();
    validate(&schema, &schema, &bad, "$", &mut errors);
    assert_eq!(errors.len(), 1, "{errors:#?}");
}
