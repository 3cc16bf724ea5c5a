//! `phoenix+http://HOST:PORT/PROJECT` against a real Arize Phoenix (`arize-phoenix` in `.venv`,
//! installed by `.ci/run`): SQLite in a temp dir, telemetry off, 127.0.0.1 on free ports. The
//! OpenTelemetry Python SDK sends two agent runs and Phoenix's client annotates one as
//! incorrect (tests/python/phoenix_feed.py); `dump --json` must show exactly the spans sent,
//! with their OpenInference kinds and errors, and the annotation as the run's failed verdict;
//! in the TUI (the real binary in tmux), `n` from the list reaches the annotated failure.
//! Without `.venv/bin/phoenix` this test fails: a skipped test would prove nothing.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::tmux::{Tmux, shell_quote};

fn venv(tool: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".venv/bin")
        .join(tool);
    assert!(
        path.exists(),
        "{} is missing: run .ci/run (it installs arize-phoenix into .venv)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Phoenix(Child);

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// True once `GET /healthz` answers 200.
fn healthy(port: u16) -> bool {
    use std::io::Write as _;
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request =
        format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

fn start_phoenix(dir: &Path) -> (Phoenix, u16) {
    let (port, grpc) = (free_port(), free_port());
    let child = Command::new(venv("phoenix"))
        .arg("serve")
        .env("PHOENIX_PORT", port.to_string())
        .env("PHOENIX_HOST", "127.0.0.1")
        .env("PHOENIX_GRPC_PORT", grpc.to_string())
        .env("PHOENIX_WORKING_DIR", dir)
        .env("PHOENIX_TELEMETRY_ENABLED", "false")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start phoenix");
    let mut phoenix = Phoenix(child);
    // Phoenix runs its migrations first (tens of seconds on a busy machine).
    let deadline = Instant::now() + Duration::from_secs(300);
    while !healthy(port) {
        if let Some(status) = phoenix.0.try_wait().unwrap() {
            panic!("phoenix exited early: {status}");
        }
        assert!(Instant::now() < deadline, "phoenix did not become healthy");
        std::thread::sleep(Duration::from_millis(250));
    }
    (phoenix, port)
}

#[test]
fn a_real_phoenix_project_reads_as_the_spans_and_verdicts_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (_phoenix, port) = start_phoenix(dir.path());
    let feed = Command::new(venv("python"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/phoenix_feed.py"))
        .args([&port.to_string(), "agents"])
        .output()
        .unwrap();
    assert!(
        feed.status.success(),
        "{}",
        String::from_utf8_lossy(&feed.stderr)
    );
    let sent: Value = serde_json::from_slice(&feed.stdout).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args([
            "dump",
            "--json",
            &format!("phoenix+http://127.0.0.1:{port}/agents"),
        ])
        .env_remove("TOOLCAP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["problems"], serde_json::json!([]));

    let key = |trace: &Value, span: &Value| {
        (
            trace.as_str().unwrap().to_owned(),
            span["span_id"].as_str().unwrap().to_owned(),
            span["name"].as_str().unwrap().to_owned(),
            span["kind"].as_str().unwrap().to_owned(),
            span["status"].as_str().unwrap().to_owned(),
        )
    };
    let expected: BTreeSet<_> = sent["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| key(&s["trace_id"], s))
        .collect();
    let invocations = doc["invocations"].as_array().unwrap();
    let dumped: BTreeSet<_> = invocations
        .iter()
        .flat_map(|i| {
            i["spans"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| key(&i["id"], s))
        })
        .collect();
    assert_eq!(dumped, expected);

    let annotated_trace = sent["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["span_id"] == sent["annotated_root"])
        .map(|s| s["trace_id"].as_str().unwrap().to_owned())
        .unwrap();
    for invocation in invocations {
        if invocation["id"] == annotated_trace.as_str() {
            let eval = &invocation["eval"];
            assert_eq!(eval["passed"], false, "{eval}");
            assert_eq!(eval["label"], "correctness=incorrect (LLM)");
            assert_eq!(eval["reason"], "called lookup for the wrong city");
            assert_eq!(invocation["status"], "degraded");
        } else {
            assert!(invocation.get("eval").is_none(), "{invocation}");
            assert_eq!(invocation["status"], "ok");
        }
    }

    // The TUI on the same project: the failure queue holds the annotated run, and `n` from
    // the list lands on its verdict.
    let command = format!(
        "env TERM=xterm-256color TOOLCAP_TUI_CONFIG=/nonexistent/toolcap.toml XDG_STATE_HOME={} {} {}",
        shell_quote(&dir.path().display().to_string()),
        shell_quote(env!("CARGO_BIN_EXE_toolcap-tui")),
        shell_quote(&format!("phoenix+http://127.0.0.1:{port}/agents")),
    );
    let tmux = Tmux::start(&command);
    tmux.wait_for("both runs listed", |s| s.contains("Invocations (2)"));
    // The annotated run has two stops in the queue: its verdict and its failed `lookup` call.
    // `n` walks them (wrapping around); within two presses it shows the verdict.
    tmux.send(&["n"]);
    let first = tmux.wait_for("the first failure", |s| s.contains("failure "));
    let verdict = if first.contains("── verdict") {
        first
    } else {
        tmux.send(&["n"]);
        tmux.wait_for("the annotated verdict", |s| s.contains("── verdict"))
    };
    assert!(
        verdict.contains("of 2"),
        "two stops in the queue:\n{verdict}"
    );
    assert!(
        verdict.contains("correctness=incorrect") && verdict.contains("wrong city"),
        "the verdict names the annotation and its reason:\n{verdict}"
    );
    tmux.send(&["q"]);
}
