//! Inspect AI logs written now by the real library (`inspect-ai` 0.3.285 in `.venv`, which
//! `.ci/run` installs), held against what Inspect itself reads from them with
//! `read_eval_log` (`tests/python/inspect_truth.py`): every sample's verdict, tool calls, tool
//! errors and timing, in both log formats. The model is Inspect's `mockllm/model` scripted by
//! `tests/fixtures/inspect-ai/gen_inspect_logs.py`, so no network is needed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::inspect_logs::dump;
use crate::inspect_real::{check_against_inspect, inspect_truth, root, venv_python};

/// Runs the generator `script` (a path under the checkout) with `args` in `.venv`, writing
/// its logs to `out`, and returns them sorted by name.
fn write_logs(script: &str, args: &[&str], out: &Path) -> Vec<PathBuf> {
    let status = Command::new(venv_python())
        .arg(root().join(script))
        .args(args)
        .arg(out)
        .env("INSPECT_LOG_LEVEL", "warning")
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    logs.sort();
    logs
}

/// The four logs (runs A and B, each as `.eval` and `.json`), generated once per test binary.
fn generated() -> &'static (tempfile::TempDir, Vec<PathBuf>) {
    static LOGS: OnceLock<(tempfile::TempDir, Vec<PathBuf>)> = OnceLock::new();
    LOGS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut logs = Vec::new();
        for variant in ["A", "B"] {
            let files = write_logs(
                "tests/fixtures/inspect-ai/gen_inspect_logs.py",
                &["--variant", variant, "--out"],
                &dir.path().join(variant),
            );
            assert_eq!(
                files.len(),
                2,
                "{variant}: one .eval and one .json: {files:?}"
            );
            logs.extend(files);
        }
        (dir, logs)
    })
}

#[test]
fn logs_inspect_writes_now_load_as_inspect_reads_them() {
    let (_, logs) = generated();
    let truths = inspect_truth(logs);
    assert_eq!(truths.len(), 4);
    let mut checked = 0;
    for (log, truth) in logs.iter().zip(&truths) {
        assert_eq!(truth["status"], "success", "{}", log.display());
        checked += check_against_inspect(&dump(log), truth);
    }
    assert_eq!(checked, 32, "8 samples in each of four logs");
}

/// A sample stopped by its message limit, written now by the real library in both formats: the
/// run says the limit in Inspect's words, and everything else as Inspect reads it.
#[test]
fn a_sample_stopped_by_its_limit_says_so_as_inspect_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let logs: Vec<PathBuf> = ["json", "eval"]
        .into_iter()
        .flat_map(|format| {
            write_logs(
                "tests/fixtures/inspect-ai/limit/gen_limit.py",
                &["--format", format],
                &dir.path().join(format),
            )
        })
        .collect();
    assert_eq!(logs.len(), 2, "{logs:?}");
    let truths = inspect_truth(&logs);
    for (log, truth) in logs.iter().zip(&truths) {
        assert_eq!(truth["samples"][0]["limit"], "message", "{}", log.display());
        assert_eq!(check_against_inspect(&dump(log), truth), 1);
        let run = &dump(log)["invocations"][0];
        assert_eq!(
            run["eval"]["limit"],
            "Message limit exceeded. count: 5; limit: 4"
        );
        assert_eq!(run["eval"]["passed"], false, "includes gave I");
    }
}

/// What a run says, without what differs between two executions of it (ids, times).
fn meaning(document: &Value) -> Vec<Value> {
    let mut runs: Vec<Value> = document["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            let spans: Vec<Value> = run["spans"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    serde_json::json!([
                        s["depth"],
                        s["kind"],
                        s["name"],
                        s["status"],
                        s["error_type"],
                        s["tool_call_id"],
                        s["input"]["value"],
                        s["output"]["value"]
                    ])
                })
                .collect();
            serde_json::json!({
                "case": run["case"], "eval": run["eval"], "facets": run["facets"],
                "failing": run["failing"], "tokens": run["tokens"], "name": run["name"],
                "tool_calls": run["tool_calls"].as_array().unwrap().iter()
                    .map(|c| serde_json::json!([c["name"], c["call_id"], c["status"]]))
                    .collect::<Vec<_>>(),
                "spans": spans,
            })
        })
        .collect();
    runs.sort_by_key(|run| run["case"].to_string());
    runs
}

#[test]
fn the_eval_and_json_forms_of_one_run_dump_alike() {
    let (_, logs) = generated();
    for pair in logs.chunks(2) {
        let [eval, json] = pair else { unreachable!() };
        assert_eq!(eval.extension().unwrap(), "eval");
        assert_eq!(json.extension().unwrap(), "json");
        let (eval, json) = (meaning(&dump(eval)), meaning(&dump(json)));
        assert_eq!(eval.len(), 8);
        for (e, j) in eval.iter().zip(&json) {
            assert_eq!(e, j, "the two forms of one run differ");
        }
    }
}
