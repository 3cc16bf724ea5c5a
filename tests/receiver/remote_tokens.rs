//! Tokens and the remote flags, as a user meets them: a blank token is refused by every command
//! (and never opens `serve`), health is behind the feed's token, and every command that reads
//! sources takes the same remote flags. Loopback only.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::{Serve, json_request, raw_http};

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
