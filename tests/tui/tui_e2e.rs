//! End to end: the real binary in a real pseudo-terminal (a private tmux server with a fixed
//! window size) over the bundled sample traces. Keys go in with `send-keys`, the screen comes
//! back with `capture-pane`; every wait polls a condition against a deadline.

use std::time::{Duration, Instant};

use crate::tmux::{Tmux, WAIT, shell_quote};

/// An argument value of the failing `get_weather` call in the bundled arksim run: it must not
/// be on screen while redacted, and must be after `r`.
const HIDDEN_ARGUMENT: &str = "Atlantis";

/// Starts the binary on `args` with no user config, its stderr in `dir/stderr.txt`; returns
/// the session and where its exit status will be written.
fn start_app(args: &[&str], dir: &std::path::Path) -> (Tmux, std::path::PathBuf) {
    let binary = env!("CARGO_BIN_EXE_toolcap-tui");
    let exit_path = dir.join("exit-status.txt");
    let args: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
    let command = format!(
        "env TERM=xterm-256color TOOLCAP_TUI_CONFIG=/nonexistent/toolcap.toml XDG_STATE_HOME={} {} {} 2>{}; echo $? >{}",
        shell_quote(&dir.display().to_string()),
        shell_quote(binary),
        args.join(" "),
        shell_quote(&dir.join("stderr.txt").display().to_string()),
        shell_quote(&exit_path.display().to_string())
    );
    (Tmux::start(&command), exit_path)
}

/// The exit status the shell wrote to `exit_path` once the app ended; fails with the screen and
/// `stderr` when it does not end in time.
fn exit_status(tmux: &Tmux, exit_path: &std::path::Path, stderr: impl Fn() -> String) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let written = std::fs::read_to_string(exit_path).unwrap_or_default();
        if written.ends_with('\n') {
            return written.trim().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "the app did not exit; screen:\n{}\nstderr:\n{}",
            tmux.screen(),
            stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The status bar's `failure k of T`, if shown.
fn failure_position(screen: &str) -> Option<(usize, usize)> {
    let at = screen.find("failure ")?;
    let rest = &screen[at + "failure ".len()..];
    let mut words = rest.split_whitespace();
    let k = words.next()?.parse().ok()?;
    (words.next()? == "of").then_some(())?;
    let total = words.next()?.trim_end_matches('·').parse().ok()?;
    Some((k, total))
}

#[test]
fn the_failure_queue_walks_every_failure_of_the_arksim_run_in_one_key_each() {
    let samples = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/triage/arksim-run"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let (tmux, _) = start_app(&[samples], dir.path());
    // The list says what the evaluator said, and the eval-only failure is not a green tick.
    // ("watching" replaces "loading" once every file of the directory is read.)
    let first = tmux.wait_for("the run loaded and cancel_order judged", |s| {
        s.contains("of 7 runs failing")
            && s.contains("watching")
            && s.lines().any(|l| {
                l.contains("cancel_order · turn 0")
                    && l.contains("disobey user request")
                    && l.contains('⚑')
            })
    });
    let cancel = first
        .lines()
        .find(|l| l.contains("cancel_order · turn 0"))
        .unwrap();
    assert!(!cancel.contains('✓'), "{cancel}");

    // Top of the list, then one `n` per failure until the queue wraps.
    tmux.send(&["g"]);
    let mut seen = Vec::new();
    let mut total = None;
    loop {
        tmux.send(&["n"]);
        let k = seen.len() + 1;
        let screen = tmux.wait_for(&format!("failure {k}"), |s| {
            failure_position(s).is_some_and(|(at, _)| at == k || (at == 1 && s.contains("wrapped")))
        });
        let (at, of) = failure_position(&screen).unwrap();
        if at == 1 && k > 1 {
            assert!(screen.contains("wrapped"), "{screen}");
            break;
        }
        total.get_or_insert(of);
        seen.push(screen);
        assert!(k <= 20, "the queue never wrapped");
    }
    let total = total.unwrap();
    assert_eq!(seen.len(), total, "every failure visited once");
    assert!(total >= 7, "{total}");
    // The eval-only failure's verdict block quotes the evaluator's reason.
    assert!(
        seen.iter()
            .any(|s| s.contains("── verdict")
                && s.contains("[Trajectory] Unexpected extra tool calls")),
        "cancel_order's reason was never on screen"
    );
    // Failed tool calls are stops of their own.
    assert!(
        seen.iter().any(|s| s
            .lines()
            .any(|l| l.contains('›') && l.contains("lookup_order") && l.contains('✗'))),
        "no failed lookup_order span was selected"
    );
    tmux.send(&["q"]);
}

#[test]
fn real_binary_shows_samples_reveals_and_quits_cleanly() {
    let binary = env!("CARGO_BIN_EXE_toolcap-tui");
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/sample-traces");
    let stderr_dir = tempfile::tempdir().expect("temp dir");
    let stderr_path = stderr_dir.path().join("stderr.txt");
    let exit_path = stderr_dir.path().join("exit-status.txt");
    // No user config may change keys or colours under the test; stderr is kept for failures.
    // The shell records the exit status itself: tmux does not always reap a pane's process
    // promptly enough to report it.
    let command = format!(
        "env TERM=xterm-256color TOOLCAP_TUI_CONFIG=/nonexistent/toolcap.toml XDG_STATE_HOME={} {} {} 2>{}; echo $? >{}",
        shell_quote(&stderr_dir.path().display().to_string()),
        shell_quote(binary),
        shell_quote(samples),
        shell_quote(&stderr_path.display().to_string()),
        shell_quote(&exit_path.display().to_string())
    );
    let stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let tmux = Tmux::start(&command);
    let redacted = |s: &str| {
        assert!(
            !s.contains(HIDDEN_ARGUMENT),
            "payload value on screen while redacted:\n{s}"
        );
    };

    let first = tmux.wait_for("the sample runs", |s| {
        s.contains("REDACTED") && s.contains("Invocations (35)")
    });
    redacted(&first);
    assert!(
        first.contains('◐') || first.contains('✗'),
        "a failing run is visible:\n{first}"
    );

    tmux.send(&["-l", "/kb_only"]);
    tmux.send(&["Enter"]);
    // The kept filter and its `k of n` (35 sample runs, 2 of them kb_only turns).
    let filtered = tmux.wait_for("the search filter", |s| {
        s.contains("Invocations · filter: kb_only · 2 of 35")
    });
    redacted(&filtered);

    // Into the tree; `n` lands on the failing turn's verdict, the next `n` on its failed call.
    tmux.send(&["Tab", "n"]);
    tmux.wait_for("the verdict of the failing turn", |s| {
        s.contains("── verdict") && s.contains("[Trajectory] Agent called tools")
    });
    tmux.send(&["n"]);
    let failing = tmux.wait_for("the failing tool selected", |s| {
        s.lines()
            .any(|l| l.contains('›') && l.contains("get_weather") && l.contains('✗'))
            && s.contains("── input")
            // A capture can land mid-frame: wait for the whole shape line, not just its header.
            && s.contains("\"city\": \"string (8 chars)\"")
    });
    redacted(&failing);
    assert!(
        failing.contains("\"city\": \"string (8 chars)\""),
        "{failing}"
    );

    tmux.send(&["r"]);
    // The status bar is the last row drawn: once it says REVEALED the whole frame is there.
    let revealed = tmux.wait_for("the revealed argument", |s| s.contains("REVEALED"));
    assert!(revealed.contains(HIDDEN_ARGUMENT), "{revealed}");
    tmux.send(&["r"]);
    redacted(&tmux.wait_for("redacted mode again", |s| s.contains("REDACTED")));

    // Find the LLM spans of the trace and cycle them with n; Esc hands n back to the queue.
    tmux.send(&["-l", "/kind:llm"]);
    tmux.send(&["Enter"]);
    tmux.wait_for("the first find match", |s| {
        s.contains("find: kind:llm · 1 of ")
    });
    tmux.send(&["n"]);
    let second = tmux.wait_for("the second find match", |s| {
        s.contains("find: kind:llm · 2 of ")
    });
    redacted(&second);
    tmux.send(&["Escape"]);
    tmux.wait_for("the find to end", |s| !s.contains("find: kind:llm"));

    tmux.send(&["?"]);
    tmux.wait_for("the help overlay", |s| {
        s.contains("Keys — ") && s.contains("next failure")
    });
    tmux.send(&["Escape"]);
    tmux.wait_for("the help to close", |s| !s.contains("Keys — "));

    tmux.send(&["q"]);
    let status = exit_status(&tmux, &exit_path, stderr);
    assert_eq!(status, "0", "exit status; stderr:\n{}", stderr());
    // The alternate screen is gone: the TUI is no longer on the terminal.
    let after = tmux.screen();
    assert!(!after.contains("Invocations ("), "{after}");
}

/// `--stats`: once the terminal is given back, stderr says where the memory went, as `dump
/// --stats` does, with the views still held.
#[test]
fn stats_on_quitting_say_where_the_memory_went() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/sample-traces");
    let dir = tempfile::tempdir().expect("temp dir");
    let stderr_path = dir.path().join("stderr.txt");
    let stderr = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let (tmux, exit_path) = start_app(&["--stats", samples], dir.path());
    tmux.wait_for("the sample runs", |s| s.contains("Invocations (35)"));
    assert!(
        stderr().is_empty(),
        "nothing on stderr while the screen is shown"
    );
    tmux.send(&["q"]);
    assert_eq!(exit_status(&tmux, &exit_path, stderr), "0");
    let printed = stderr();
    for line in [
        "memory of 35 invocations",
        "span records",
        "total",
        "process resident size at the end",
    ] {
        assert!(printed.contains(line), "no {line:?} in:\n{printed}");
    }
}

/// Sends one HTTP/1.1 request and returns the status code of the answer.
fn post_status(addr: &str, content_type: &str, body: &[u8]) -> u16 {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(addr).expect("the receiver accepts");
    let head = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).unwrap();
    socket.write_all(body).unwrap();
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).unwrap();
    String::from_utf8_lossy(&answer)
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("an HTTP status line")
}

/// The address the embedded receiver bound, as the status bar shows it.
fn listening_address(tmux: &Tmux) -> String {
    let screen = tmux.wait_for("the receiver's address", |s| {
        s.contains("listening 127.0.0.1:")
    });
    let at = screen.find("listening ").unwrap() + "listening ".len();
    screen[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
        .collect()
}

#[test]
fn the_embedded_receivers_log_lines_go_to_the_log_file_never_the_screen() {
    let binary = env!("CARGO_BIN_EXE_toolcap-tui");
    let dir = tempfile::tempdir().expect("temp dir");
    let log_path = dir.path().join("logs").join("toolcap.log");
    let empty = dir.path().join("traces");
    std::fs::create_dir(&empty).unwrap();
    // stderr is the terminal here: anything written to it would land on the screen.
    let command = format!(
        "env TERM=xterm-256color TOOLCAP_TUI_CONFIG=/nonexistent/toolcap.toml {} \
         --listen=127.0.0.1:0 --grpc= --log-file {} {}",
        shell_quote(binary),
        shell_quote(&log_path.display().to_string()),
        shell_quote(&empty.display().to_string()),
    );
    let tmux = Tmux::start(&command);
    let addr = listening_address(&tmux);

    // A body that is not OTLP: refused with 400, and the reason is logged.
    let status = post_status(&addr, "application/json", br#"{"resourceSpans": 5}"#);
    assert_eq!(status, 400);
    let deadline = Instant::now() + WAIT;
    let logged = loop {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(line) = log.lines().find(|l| l.contains("refused with 400")) {
            break line.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no log line for the refused request; log:\n{log}\nscreen:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(logged.contains("WARN"), "{logged}");
    // A good request after it: once the app shows it, it has been drawing since the refusal,
    // and the log line is nowhere on the screen.
    let span = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"after_the_refusal","startTimeUnixNano":"1000","endTimeUnixNano":"2000"}]}]}]}"#;
    assert_eq!(post_status(&addr, "application/json", span.as_bytes()), 200);
    let screen = tmux.wait_for("the good request", |s| s.contains("after_the_refusal"));
    assert!(!screen.contains("refused"), "{screen}");
    assert!(!screen.contains("WARN"), "{screen}");
    tmux.send(&["q"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the log file is the owner's only");
    }
}

/// A burst of live requests is settled at most every 100 ms: the drains that come within that
/// time wait, and the timer settles them once no more data follows. With no key pressed,
/// every run of the burst must reach the list.
#[test]
fn every_run_of_a_live_burst_is_listed_without_a_key() {
    const RUNS: usize = 40;
    let dir = tempfile::tempdir().expect("temp dir");
    // The watched directory apart from the one holding the app's stderr and exit status.
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).expect("traces directory");
    let traces = traces.display().to_string();
    let (tmux, _) = start_app(&["--listen=127.0.0.1:0", "--grpc=", &traces], dir.path());
    let addr = listening_address(&tmux);
    for run in 0..RUNS {
        let span = format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"{run:032x}","spanId":"b7ad6b7169203331","name":"burst_{run}","startTimeUnixNano":"{start}","endTimeUnixNano":"{end}"}}]}}]}}]}}"#,
            run = run + 1,
            start = 1_000 + run,
            end = 2_000 + run,
        );
        assert_eq!(post_status(&addr, "application/json", span.as_bytes()), 200);
    }
    tmux.wait_for("every run of the burst", |s| {
        s.contains(&format!("Invocations ({RUNS})"))
    });
    tmux.send(&["q"]);
}
