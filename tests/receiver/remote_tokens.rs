//! Tokens and the remote flags, as a user meets them: a blank token is refused by every command
//! (and never opens `serve`), health is behind the feed's token, a `serve` restarted on the same
//! `--out` keeps its token so an attached client resumes, a 401 is named without the masking
//! pass eating the hint, and every command that reads sources takes the same remote flags.
//! Loopback only.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use toolcap::redact::{Reveal, shown_line};
use toolcap::sources::attach::{AttachOptions, spawn_attach_with};
use toolcap::sources::remote::RemoteOptions;
use toolcap::sources::{IngestEvent, SourceStatus};

use crate::support::{Serve, json_request, raw_http, span_ids, spool_lines};

/// Bounds a wait that should end much sooner; reaching it fails the test as a hang.
const HANG: Duration = Duration::from_secs(120);

fn toolcap(args: &[&str], env_token: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"));
    command.args(args).env_remove("TOOLCAP_TOKEN");
    if let Some(token) = env_token {
        command.env("TOOLCAP_TOKEN", token);
    }
    command
        .stdin(Stdio::null())
        .output()
        .expect("run toolcap-tui")
}

fn post(serve: &Serve, trace: u128) {
    let body = json_request(trace, 2).to_string();
    let response = raw_http(
        &serve.http,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    )
    .expect("post");
    assert_eq!(response.status, 200);
}

fn token_in(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("serve.token"))
        .expect("serve.token")
        .trim()
        .to_owned()
}

#[test]
fn a_blank_token_is_refused_by_every_command_wherever_it_comes_from() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace.jsonl");
    std::fs::write(&trace, format!("{}\n", json_request(1, 2))).unwrap();
    let gold = tmp.path().join("gold.json");
    std::fs::write(&gold, r#"{"calls": []}"#).unwrap();
    // serve's --out cannot be made (its parent is a file): whatever the token check did, it
    // would stop before binding anything.
    let out = trace.join("spool");
    let (trace, gold, out) = (
        trace.to_str().unwrap(),
        gold.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    let commands: [&[&str]; 5] = [
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--grpc",
            "127.0.0.1:0",
            "--out",
            out,
        ],
        &["dump", trace],
        &["check", "--gold", gold, trace],
        &["report", trace],
        &[trace],
    ];
    for command in commands {
        for blank in ["", " ", "\t "] {
            let mut flagged = command.to_vec();
            flagged.extend(["--token", blank]);
            let by_flag = toolcap(&flagged, None);
            let by_env = toolcap(command, Some(blank));
            for (how, run) in [("--token", by_flag), ("TOOLCAP_TOKEN", by_env)] {
                let stderr = String::from_utf8_lossy(&run.stderr);
                assert_eq!(run.status.code(), Some(2), "{command:?} {how} {blank:?}");
                assert!(
                    stderr.contains("empty or blank"),
                    "{command:?} {how} {blank:?}: {stderr}"
                );
                assert!(run.stdout.is_empty(), "{command:?} {how}: nothing bound");
            }
        }
    }
}

#[test]
fn health_needs_the_feed_token_whether_serve_made_it_up_or_was_given_it() {
    let tmp = tempfile::tempdir().unwrap();
    let made_up = Serve::start(&tmp.path().join("made-up"), &[]);
    let given = Serve::start(&tmp.path().join("given"), &["--token", "given-token-3"]);
    for serve in [&made_up, &given] {
        let health = |headers: &[(&str, &str)]| {
            raw_http(&serve.http, "GET", "/api/v1/health", headers, b"")
                .expect("health")
                .status
        };
        assert_eq!(health(&[]), 401, "health without a token");
        assert_eq!(health(&[("Authorization", "Bearer not-it")]), 401);
        assert_eq!(
            health(&[("Authorization", serve.feed_authorization.as_str())]),
            200
        );
    }
    assert_eq!(given.feed_authorization, "Bearer given-token-3");
}

/// What an attached client has handed over so far.
#[derive(Default)]
struct Seen {
    spans: BTreeSet<(String, String)>,
    problems: Vec<String>,
    /// The latest status said the last answer was a 401.
    unauthorized: bool,
}

/// Takes events until `done` holds; `HANG` only bounds a client that never gets there.
async fn until(
    rx: &mut tokio::sync::mpsc::Receiver<IngestEvent>,
    seen: &mut Seen,
    what: &str,
    done: impl Fn(&Seen) -> bool,
) {
    let wait = async {
        while !done(seen) {
            match rx.recv().await.expect("attach ended") {
                IngestEvent::Batch(batch) => {
                    seen.problems
                        .extend(batch.problems.iter().map(|p| p.message.to_string()));
                    for span in batch.spans {
                        seen.spans
                            .insert((span.trace_id.to_string(), span.span_id.to_string()));
                    }
                }
                IngestEvent::Status(SourceStatus::Attached { unauthorized, .. }) => {
                    seen.unauthorized = unauthorized;
                }
                IngestEvent::Status(_) | IngestEvent::Forget(_) => {}
            }
        }
    };
    tokio::time::timeout(HANG, wait)
        .await
        .unwrap_or_else(|_| panic!("waiting for {what}: problems {:?}", seen.problems));
}

fn attach_options(remote: RemoteOptions, spool_parent: &Path) -> AttachOptions {
    AttachOptions {
        remote,
        backoff_min: Duration::from_millis(20),
        backoff_max: Duration::from_millis(200),
        spool_parent: Some(spool_parent.to_path_buf()),
        ..AttachOptions::default()
    }
}

/// Attaches with `remote`, restarts `serve` on the same `--out` and address (after `between`),
/// and checks the client receives what is sent before and after the restart, with no 401.
fn follows_a_restart(remote: impl FnOnce(&Path) -> RemoteOptions, between: impl FnOnce(&Path)) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("spool");
    let serve = Serve::start(&dir, &[]);
    let http = serve.http.clone();
    post(&serve, 1);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let options = attach_options(remote(&dir), tmp.path());
    let task = runtime.block_on(async {
        let task = spawn_attach_with(format!("http://{http}"), tx, options);
        let mut seen = Seen::default();
        let before = span_ids(&spool_lines(&dir));
        until(&mut rx, &mut seen, "the spans sent before", |s| {
            s.spans == before
        })
        .await;
        (task, seen)
    });
    let (task, mut seen) = task;

    assert_eq!(serve.terminate().code(), Some(0));
    between(&dir);
    let serve = Serve::start(&dir, &["--http", &http]);
    assert_eq!(serve.http, http, "restarted on the same address");
    post(&serve, 2);
    let all = span_ids(&spool_lines(&dir));
    runtime.block_on(until(&mut rx, &mut seen, "the spans sent after", |s| {
        s.spans == all
    }));
    assert!(
        !seen.problems.iter().any(|p| p.contains("401")),
        "{:?}",
        seen.problems
    );
    task.abort();
}

#[test]
fn a_restarted_serve_keeps_its_token_and_an_attached_client_resumes() {
    let mut kept = String::new();
    follows_a_restart(
        |dir| {
            kept = token_in(dir);
            // The token alone, as `--token` gives it: nothing to read again.
            RemoteOptions::from_args(Some(token_in(dir)), &[]).unwrap()
        },
        |_| {},
    );
    assert_eq!(kept.len(), 64);
}

#[test]
fn a_client_given_the_token_file_reads_it_again_when_its_token_is_refused() {
    follows_a_restart(
        |dir| {
            let mut remote = RemoteOptions::from_args(Some(token_in(dir)), &[]).unwrap();
            remote.token_file = Some(dir.join("serve.token"));
            remote
        },
        // Without its file the restarted serve makes up a new token.
        |dir| std::fs::remove_file(dir.join("serve.token")).unwrap(),
    );
}

#[test]
fn a_refused_attach_says_401_and_its_hint_survives_the_masking_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let serve = Serve::start(&tmp.path().join("spool"), &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (token, hint) in [
        (Some("not-the-token"), "the token was refused"),
        (None, "pass --token-file DIR/serve.token"),
    ] {
        let remote = RemoteOptions::from_args(token.map(str::to_owned), &[]).unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let options = attach_options(remote, tmp.path());
        runtime.block_on(async {
            let task = spawn_attach_with(format!("http://{}", serve.http), tx, options);
            let mut seen = Seen::default();
            until(&mut rx, &mut seen, "a 401 problem and status", |s| {
                s.unauthorized && !s.problems.is_empty()
            })
            .await;
            let problem = &seen.problems[0];
            assert!(problem.contains("401 Unauthorized"), "{problem}");
            assert!(problem.contains(hint), "{problem}");
            assert_eq!(
                &shown_line(problem, Reveal::Redacted),
                problem,
                "the hint is shown whole"
            );
            task.abort();
        });
    }
}

#[test]
fn every_command_that_reads_sources_takes_the_same_remote_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("spool");
    let serve = Serve::start(&dir, &[]);
    post(&serve, 1);
    let url = format!("http://{}", serve.http);
    let token_file = dir.join("serve.token");
    let token_file = token_file.to_str().unwrap();
    let token = token_in(&dir);
    let header = format!("Authorization: Bearer {token}");
    let gold = tmp.path().join("gold.json");
    std::fs::write(&gold, r#"{"calls": []}"#).unwrap();
    let gold = gold.to_str().unwrap();

    let trace_id = format!("{:032x}", 1);
    // check exits 1: the trace's two tool calls differ from the empty gold.
    let commands: [(&[&str], i32, &str); 3] = [
        (&["dump", "--json"], 0, &trace_id),
        (&["report"], 0, "(1 loaded)"),
        (&["check", "--gold", gold], 1, &trace_id),
    ];
    for (command, success, read) in commands {
        let credentials: [(&[&str], Option<&str>); 4] = [
            (&["--token-file", token_file], None),
            (&["--token", &token], None),
            (&["--header", &header], None),
            // The file named on the command line wins over the environment.
            (&["--token-file", token_file], Some("stale-token")),
        ];
        for (flags, env) in credentials {
            let args: Vec<&str> = command
                .iter()
                .chain(flags)
                .chain([&url.as_str()])
                .copied()
                .collect();
            let run = toolcap(&args, env);
            assert_eq!(
                run.status.code(),
                Some(success),
                "{args:?}: {}",
                String::from_utf8_lossy(&run.stderr)
            );
            let stdout = String::from_utf8_lossy(&run.stdout);
            assert!(stdout.contains(read), "{args:?}: {stdout}");
        }
    }

    // Without a token, report says why nothing loaded, like dump.
    for command in [&["dump"][..], &["report"]] {
        let args: Vec<&str> = command.iter().copied().chain([url.as_str()]).collect();
        let run = toolcap(&args, None);
        assert_eq!(run.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(stderr.contains("401 Unauthorized"), "{args:?}: {stderr}");
        assert!(stderr.contains("--token-file"), "{args:?}: {stderr}");
    }
}
