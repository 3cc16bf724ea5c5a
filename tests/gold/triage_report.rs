//! `toolcap-tui report` (issue 9 item 7): the JSON beside the Markdown is exactly
//! `dump --json` for the same filter, the Markdown details each failing invocation, and a
//! secret planted in a payload never appears in a redacted report.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn run(args: &[&str], sources: &[PathBuf]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(args)
        .args(sources)
        .output()
        .expect("run the binary")
}

#[test]
fn the_report_json_is_dump_json_for_the_same_filter_and_the_markdown_names_each_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("triage.md");
    let sources = [
        fixture("tests/fixtures/corpus/arksim/run-direct"),
        fixture("tests/fixtures/arksim-two-turn"),
    ];
    for filter in ["is:failing", "is:eval-failed"] {
        let written = run(
            &["report", "--filter", filter, "--out", out.to_str().unwrap()],
            &sources,
        );
        assert_eq!(written.status.code(), Some(0), "{written:?}");
        let dumped = run(&["dump", "--json", "--filter", filter], &sources);
        let dump: Value = serde_json::from_slice(&dumped.stdout).expect("dump json");
        let mut report: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("triage.json")).unwrap())
                .expect("report json");
        // The report adds the failure summary; the rest is the dump, field for field.
        let summary = report
            .as_object_mut()
            .unwrap()
            .remove("summary")
            .expect("the report's JSON carries the summary");
        assert_eq!(summary["listed"], dump["filter"]["matched"], "{filter}");
        assert_eq!(report, dump, "{filter}");
        let markdown = std::fs::read_to_string(&out).unwrap();
        let ids: Vec<&str> = dump["invocations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert!(!ids.is_empty(), "{filter}");
        for id in &ids {
            assert!(
                markdown.contains(&format!("`{id}`")),
                "{filter}: {id}\n{markdown}"
            );
        }
        assert!(markdown.contains(&format!("{} failing of {} listed", ids.len(), ids.len())));
    }
    let markdown = std::fs::read_to_string(&out).unwrap();
    // The evaluator's reason verbatim, the failed span with its error and source line.
    assert!(markdown.contains("[Trajectory] Unexpected extra tool calls: get_weather."));
    assert!(
        markdown.contains("Error running tool (non-fatal)"),
        "{markdown}"
    );
    assert!(markdown.contains("agent_spans.jsonl:"), "{markdown}");
}

#[test]
fn a_planted_secret_never_reaches_a_redacted_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("all.md");
    let written = run(
        &["report", "--out", out.to_str().unwrap()],
        &[fixture("tests/fixtures/arksim-two-turn")],
    );
    assert_eq!(written.status.code(), Some(0), "{written:?}");
    let markdown = std::fs::read_to_string(&out).unwrap();
    let json = std::fs::read_to_string(dir.path().join("all.json")).unwrap();
    assert!(json.contains("lookup_order"), "the run is in the report");
    for planted in ["sk-PLANTEDSECRETabcdef0123456789", "PLANTED-PII-7731"] {
        assert!(!markdown.contains(planted), "{planted} in markdown");
        assert!(!json.contains(planted), "{planted} in json");
    }
    // Revealed on request, the secret-looking key stays masked.
    let revealed = run(
        &["report", "--reveal", "--out", out.to_str().unwrap()],
        &[fixture("tests/fixtures/arksim-two-turn")],
    );
    assert_eq!(revealed.status.code(), Some(0));
    let json = std::fs::read_to_string(dir.path().join("all.json")).unwrap();
    assert!(
        json.contains("PLANTED-PII-7731"),
        "revealed shows the payload"
    );
    assert!(
        !json.contains("sk-PLANTEDSECRETabcdef0123456789"),
        "secrets stay masked"
    );
}

/// The Markdown outside inline code spans, and the spans' contents, as a CommonMark reader
/// takes them: a run of N backticks opens a span closed by the next run of exactly N (one
/// space is stripped each side when both ends have one); a run never closed is literal.
fn split_code_spans(markdown: &str) -> (String, Vec<String>) {
    let run_at = |i: usize| markdown[i..].bytes().take_while(|&b| b == b'`').count();
    let (mut outside, mut spans) = (String::new(), Vec::new());
    let mut i = 0;
    while i < markdown.len() {
        if !markdown[i..].starts_with('`') {
            let next = markdown[i..].find('`').map_or(markdown.len(), |n| i + n);
            outside.push_str(&markdown[i..next]);
            i = next;
            continue;
        }
        let open = run_at(i);
        let mut j = i + open;
        let close = loop {
            match markdown[j..].find('`') {
                Some(n) if run_at(j + n) == open => break Some(j + n),
                Some(n) => j += n + run_at(j + n),
                None => break None,
            }
        };
        match close {
            Some(close) => {
                let body = &markdown[i + open..close];
                let body = match body.strip_prefix(' ').and_then(|b| b.strip_suffix(' ')) {
                    Some(inner) if !body.trim().is_empty() => inner,
                    _ => body,
                };
                spans.push(body.to_owned());
                i = close + open;
            }
            None => {
                outside.push_str(&markdown[i..i + open]);
                i += open;
            }
        }
    }
    (outside, spans)
}

#[test]
fn trace_text_in_a_report_is_inert_markdown() {
    let markdown = run(
        &["report"],
        &[fixture("tests/fixtures/hostile/report-markdown")],
    );
    assert_eq!(markdown.status.code(), Some(0), "{markdown:?}");
    let markdown = String::from_utf8(markdown.stdout).unwrap();
    let (outside, spans) = split_code_spans(&markdown);
    for active in ["<!--", "<script", "<b>", "](", "![", "javascript:"] {
        assert!(
            !outside.contains(active),
            "{active:?} outside code spans:\n{outside}\n---\n{markdown}"
        );
    }
    // The hostile text is still reported, each piece whole in its own span (backtick runs in it
    // included), so nothing was dropped to make it safe.
    for whole in [
        "<!-- every later run hidden <script>alert(3)</script> ![x](http://evil.example/x.png) \
         [docs](javascript:alert(4)) `` ` ``",
        "lookup<script>alert(1)</script>",
        "failed ![pixel](http://evil.example/t.png) <!-- [click](javascript:alert(document.cookie)) ``` `",
        "disobey <b>user</b> request",
    ] {
        assert!(
            spans.iter().any(|s| s == whole),
            "{whole:?} not one code span in:\n{markdown}"
        );
    }
    assert!(
        spans
            .iter()
            .any(|s| s.starts_with("refund](javascript:alert(1))")),
        "the gold row: {markdown}"
    );
}

#[cfg(unix)]
#[test]
fn report_out_replaces_a_planted_symlink_and_writes_owner_only_files() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let (markdown_target, json_target) = (dir.path().join("victim.md"), dir.path().join("victim"));
    std::fs::write(&markdown_target, "precious markdown").unwrap();
    std::fs::write(&json_target, "precious json").unwrap();
    let out = dir.path().join("triage.md");
    std::os::unix::fs::symlink(&markdown_target, &out).unwrap();
    std::os::unix::fs::symlink(&json_target, dir.path().join("triage.json")).unwrap();
    for reveal in [false, true] {
        let mut args = vec!["report", "--out", out.to_str().unwrap()];
        if reveal {
            args.push("--reveal");
        }
        let written = run(&args, &[fixture("tests/fixtures/arksim-two-turn")]);
        assert_eq!(written.status.code(), Some(0), "{written:?}");
        assert_eq!(
            std::fs::read_to_string(&markdown_target).unwrap(),
            "precious markdown"
        );
        assert_eq!(
            std::fs::read_to_string(&json_target).unwrap(),
            "precious json"
        );
        for path in [out.clone(), dir.path().join("triage.json")] {
            let meta = std::fs::symlink_metadata(&path).unwrap();
            assert!(meta.is_file(), "{} is a file now", path.display());
            assert_eq!(
                meta.permissions().mode() & 0o777,
                0o600,
                "{}",
                path.display()
            );
        }
        let json = std::fs::read_to_string(dir.path().join("triage.json")).unwrap();
        assert_eq!(
            json.contains("PLANTED-PII-7731"),
            reveal,
            "--reveal: {reveal}"
        );
    }
    // Nothing else was left in the directory (no temporary files).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
}

/// A report of sources that did not all load says so at its top and lists what went wrong (file
/// and line, masked as the screen masks it) at its end, with the notes (an Inspect log's
/// coverage); the counts above never read as if everything loaded.
#[test]
fn a_report_says_at_its_top_what_did_not_load_and_lists_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = "2026-12-05T23-42-01-00-00_geo-tools_DV5fX5XLZzgvXkffEiooEW.eval";
    std::fs::copy(
        fixture("tests/fixtures/inspect-ai/B").join(eval),
        dir.path().join(eval),
    )
    .unwrap();
    let secret = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
    let good = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"x","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}"#;
    std::fs::write(
        dir.path().join("bad.otlp.jsonl"),
        format!("{good}\n{{\"resourceSpans\": \"{secret}\"}}\n"),
    )
    .unwrap();
    let sources = [dir.path().to_path_buf()];
    let markdown = String::from_utf8(run(&["report"], &sources).stdout).unwrap();
    let head: Vec<&str> = markdown.lines().take(5).collect();
    assert_eq!(head[2], "- 5 failing of 9 listed (9 loaded)", "{markdown}");
    assert_eq!(
        head[3],
        "- loading: 1 error, 0 warnings (listed under [Problems while loading](#problems-while-loading))"
    );
    let listed = |heading: &str| -> Vec<String> {
        let section = markdown.split(heading).nth(1).unwrap_or_default();
        section
            .lines()
            .skip(2)
            .take_while(|line| line.starts_with("- "))
            .map(str::to_owned)
            .collect()
    };
    let bad = dir.path().join("bad.otlp.jsonl");
    let problems = listed("## Problems while loading (1)");
    assert_eq!(problems.len(), 1, "{markdown}");
    assert!(
        problems[0].starts_with(&format!(
            "- error: `{}:2`: `not an OTLP/JSON request",
            bad.display()
        )),
        "{problems:?}"
    );
    assert!(
        !markdown.contains(secret),
        "the secret in the bad line is masked"
    );
    let notes = listed("## Notes (1)");
    assert_eq!(notes.len(), 1, "{markdown}");
    assert!(
        notes[0].contains("8 samples, 7 scored, 1 errored, 0 neither"),
        "{notes:?}"
    );

    // Everything loaded: no loading line and no problems section.
    std::fs::remove_file(&bad).unwrap();
    let markdown = String::from_utf8(run(&["report"], &sources).stdout).unwrap();
    assert!(!markdown.contains("- loading:"), "{markdown}");
    assert!(
        !markdown.contains("## Problems while loading"),
        "{markdown}"
    );
}
