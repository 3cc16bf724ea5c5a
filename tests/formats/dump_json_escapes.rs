//! `dump --json` writes C1 controls, U+2028/U+2029, DEL and invisible characters as `\uXXXX`
//! escapes, as its text output makes them inert: a terminal showing the document obeys a raw
//! `\u{9b}` as it does `ESC [`. The escapes stand for the same characters, so the data is
//! unchanged.

use std::process::Command;

use serde_json::{Value, json};

const HOSTILE: &str = "before\u{85}line\u{9b}2J\u{2028}sep\u{2029}par\u{7f}del\u{202e}rtl";

/// Raw characters that must not reach the document.
fn is_raw_hazard(c: char) -> bool {
    matches!(
        c,
        '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{202e}'
    )
}

fn trace_file(dir: &std::path::Path) -> std::path::PathBuf {
    let attr = |key: &str, value: &str| json!({"key": key, "value": {"stringValue": value}});
    let arguments = json!({ format!("k\u{9b}ey"): format!("v\u{85}al\u{2028}ue") }).to_string();
    let request = json!({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", "svc")]},
        "scopeSpans": [{"scope": {"name": "hostile"}, "spans": [
            {
                "traceId": "0af7651916cd43dd8448eb211c80319c",
                "spanId": "b7ad6b7169203331",
                "name": HOSTILE,
                "kind": 1,
                "startTimeUnixNano": "1764496800000000000",
                "endTimeUnixNano": "1764496801000000000",
                "attributes": [attr("gen_ai.operation.name", "invoke_agent")],
                "status": {"code": 2, "message": HOSTILE}
            },
            {
                "traceId": "0af7651916cd43dd8448eb211c80319c",
                "spanId": "00f067aa0ba902b7",
                "parentSpanId": "b7ad6b7169203331",
                "name": "execute_tool lookup",
                "kind": 1,
                "startTimeUnixNano": "1764496800100000000",
                "endTimeUnixNano": "1764496800200000000",
                "attributes": [
                    attr("gen_ai.operation.name", "execute_tool"),
                    attr("gen_ai.tool.name", HOSTILE),
                    attr("gen_ai.tool.call.arguments", &arguments)
                ]
            }
        ]}]
    }]});
    let path = dir.join("controls.otlp.jsonl");
    std::fs::write(&path, format!("{request}\n")).expect("write the trace");
    path
}

fn dump_json(path: &std::path::Path, reveal: bool) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"));
    command.args(["dump", "--json"]);
    if reveal {
        command.arg("--reveal");
    }
    let out = command.arg(path).output().expect("run dump");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn dump_json_escapes_c1_controls_and_line_separators() {
    let dir = tempfile::tempdir().unwrap();
    let path = trace_file(dir.path());
    for reveal in [false, true] {
        let text = dump_json(&path, reveal);
        let raw: Vec<char> = text.chars().filter(|&c| is_raw_hazard(c)).collect();
        assert!(
            raw.is_empty(),
            "raw {raw:?} in dump --json (reveal {reveal})"
        );
        for escape in [r"\u0085", r"\u009b", r"\u2028", r"\u2029", r"\u007f"] {
            assert!(
                text.contains(escape),
                "no {escape} (reveal {reveal}):\n{text}"
            );
        }
        // The escapes decode to the characters the trace holds.
        let doc: Value = serde_json::from_str(&text).expect("valid JSON");
        let name = doc["invocations"][0]["spans"][0]["name"]
            .as_str()
            .expect("a span name");
        assert!(
            name.contains("\u{85}line\u{9b}2J\u{2028}sep\u{2029}par\u{7f}del"),
            "{name:?}"
        );
        if reveal {
            let value = &doc["invocations"][0]["spans"][1]["input"]["value"];
            assert_eq!(value["k\u{9b}ey"], "v\u{85}al\u{2028}ue", "{value}");
        }
    }
}
