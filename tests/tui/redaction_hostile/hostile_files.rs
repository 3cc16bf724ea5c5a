//! Real files end to end: secrets planted in hostile fixtures and in every free-text field of
//! the fixture corpus, through the real parsers and `dump`, never reach redacted output.

use super::*;

fn dump_cli(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(args)
        .output()
        .expect("runs");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Secrets planted in real files of several formats, through the real parsers and the CLI.
#[test]
fn hostile_files_leak_nothing_through_dump() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile");
    let mut files: Vec<_> = std::fs::read_dir(&fixtures)
        .expect("hostile fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e != "md"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    const NEVER: &[&str] = &[
        "hunter2",
        "sk-live0secretVALUE",
        "AKIAHOSTILE00000KEY0",
        "jane.roe@example.org",
        "415 555 0100",
        "4111 1111 1111 1111",
        "ZXhwb3NlZDpwYXNz",
        "s3cretDBpass",
        "diagnosed",
    ];
    for file in &files {
        let path = file.to_str().unwrap();
        for args in [vec!["dump", path], vec!["dump", "--json", path]] {
            let out = dump_cli(&args);
            assert!(
                out.contains("before"),
                "{args:?} shows the planted fields: {out}"
            );
            for never in NEVER {
                assert!(!out.contains(never), "{args:?} leaks {never}: {out}");
            }
        }
    }
}

/// Keys whose string values are free text in some format (names, messages, labels); ids,
/// types, roles and timestamps are left alone so every file still parses as its format.
const FREE_TEXT_KEYS: &[&str] = &[
    "name",
    "message",
    "error",
    "description",
    "reason",
    "label",
    "title",
    "status_message",
    "statusMessage",
    "stringValue",
    "tool_name",
    "agent_name",
    "model",
    "text",
    "content",
    "output",
    "result",
];

const PLANT: &str = " pw=hunter2zz jane.roe@example.org sk-abcdefghijklmnopqrstuv";
const PLANTED_NEVER: &[&str] = &["hunter2zz", "jane.roe", "abcdefghijklmnopqrstuv"];

fn plant_everywhere(value: &mut serde_json::Value, key: Option<&str>) -> usize {
    match value {
        serde_json::Value::String(s) if key.is_some_and(|k| FREE_TEXT_KEYS.contains(&k)) => {
            s.push_str(PLANT);
            1
        }
        serde_json::Value::Array(items) => items.iter_mut().map(|v| plant_everywhere(v, key)).sum(),
        serde_json::Value::Object(map) => map
            .iter_mut()
            .map(|(k, v)| plant_everywhere(v, Some(k.as_str())))
            .sum(),
        _ => 0,
    }
}

/// Every JSON and JSON-lines fixture of every format, with secrets and personal data planted
/// in each of its free-text fields, loads and prints (dump text and JSON, redacted) without
/// any of them; and the planted fields do reach the output (as masks).
#[test]
fn the_fixture_corpus_with_planted_secrets_leaks_nothing() {
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files = Vec::new();
    let mut pending = vec![base.join("logs"), base.join("agents"), base.join("corpus")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap().to_string_lossy().to_lowercase();
            if path.is_dir() {
                pending.push(path);
            } else if (name.ends_with(".json") || name.ends_with(".jsonl"))
                && !name.contains("gold")
                && !name.contains("expected")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    let out_dir = tempfile::tempdir().unwrap();
    let mut planted_files = 0;
    let mut masks_shown = 0;
    for (n, file) in files.iter().enumerate() {
        // Binary containers (zstd framing) are not JSON text: skipped here.
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let mut planted = 0;
        let mutated = match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(mut doc) => {
                planted += plant_everywhere(&mut doc, None);
                doc.to_string()
            }
            Err(_) => text
                .lines()
                .map(
                    |line| match serde_json::from_str::<serde_json::Value>(line) {
                        Ok(mut doc) => {
                            planted += plant_everywhere(&mut doc, None);
                            doc.to_string()
                        }
                        Err(_) => line.to_owned(),
                    },
                )
                .collect::<Vec<_>>()
                .join("\n"),
        };
        if planted == 0 {
            continue;
        }
        planted_files += 1;
        // Same name in its own directory: formats that look at names still recognise it.
        let dir = out_dir.path().join(n.to_string());
        std::fs::create_dir(&dir).unwrap();
        let target = dir.join(file.file_name().unwrap());
        std::fs::write(&target, mutated).unwrap();
        let (store, _) = load::load_store(std::slice::from_ref(&target));
        let text = dump::to_text(&store, Reveal::Redacted);
        let json = dump::to_json(&store, Reveal::Redacted).to_string();
        for out in [&text, &json] {
            for never in PLANTED_NEVER {
                assert!(
                    !out.contains(never),
                    "{} leaks {never}:\n{out}",
                    file.display()
                );
            }
        }
        masks_shown += text.matches("pw=••••••").count();
    }
    eprintln!("planted into {planted_files} fixtures; {masks_shown} masked plants shown");
    assert!(
        planted_files >= 40,
        "only {planted_files} fixtures took a plant"
    );
    assert!(
        masks_shown >= planted_files,
        "planted fields rarely shown: {masks_shown}"
    );
}
