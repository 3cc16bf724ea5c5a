//! Remote sources beyond the TUI: `dump` and `check` read a running `serve` as a snapshot
//! (exactly what it acknowledged), with its token; https through a local TLS terminator with a
//! self-signed certificate (rcgen), for `dump` and for the TUI's attach; receivers refuse to
//! bind a non-loopback address without a token. Loopback only: no address is ever bound
//! beyond 127.0.0.1.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};

use crate::support::{Serve, json_request, raw_http, span_ids, spool_lines};

const TOKEN: &str = "feed-token-7";

fn toolcap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(args)
        .env_remove("TOOLCAP_TOKEN")
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .stdin(Stdio::null())
        .output()
        .expect("run toolcap-tui")
}

/// Posts `requests` JSON requests (trace t has t + 1 spans) and returns what the spool holds.
fn feed_serve(serve: &Serve, requests: u128) -> BTreeSet<(String, String)> {
    let auth = format!("Bearer {TOKEN}");
    for trace in 1..=requests {
        let body = json_request(trace, trace as u64 + 1).to_string();
        let response = raw_http(
            &serve.http,
            "POST",
            "/v1/traces",
            &[
                ("Content-Type", "application/json"),
                ("Authorization", &auth),
            ],
            body.as_bytes(),
        )
        .expect("post");
        assert_eq!(response.status, 200);
    }
    let spooled = span_ids(&spool_lines(&serve.dir));
    assert_eq!(spooled.len() as u128, (2..=requests + 1).sum::<u128>());
    spooled
}

/// (trace id, span id) of every span of a `dump --json` document.
fn dumped_ids(stdout: &[u8]) -> BTreeSet<(String, String)> {
    let doc: serde_json::Value = serde_json::from_slice(stdout).expect("dump --json is JSON");
    let mut ids = BTreeSet::new();
    for invocation in doc["invocations"].as_array().expect("invocations") {
        for span in invocation["spans"].as_array().expect("spans") {
            ids.insert((
                invocation["id"].as_str().unwrap().to_owned(),
                span["span_id"].as_str().unwrap().to_owned(),
            ));
        }
    }
    ids
}

#[test]
fn dump_reads_a_token_protected_serve_once_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    // The token from a file, as it should be given (a --token shows in `ps`).
    let token_file = dir.path().join("ingest.token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let serve = Serve::start(
        &dir.path().join("spool"),
        &["--token-file", token_file.to_str().unwrap()],
    );
    let spooled = feed_serve(&serve, 4);
    let url = format!("http://{}", serve.http);

    let out = toolcap(&["dump", "--json", "--token", TOKEN, &url]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(dumped_ids(&out.stdout), spooled);

    let out = toolcap(&["dump", "--json", &url]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("401 Unauthorized"), "{stderr}");
    assert!(stderr.contains("needs a token"), "{stderr}");

    // The token can also come as a header, and from the environment.
    let header = format!("Authorization: Bearer {TOKEN}");
    let out = toolcap(&["dump", "--json", "--header", &header, &url]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(dumped_ids(&out.stdout), spooled);
    let out = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json", &url])
        .env("TOOLCAP_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(dumped_ids(&out.stdout), spooled);
}

#[test]
fn check_reads_a_remote_source_too() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &["--token", TOKEN]);
    feed_serve(&serve, 1);
    let url = format!("http://{}", serve.http);
    let gold = dir.path().join("gold.json");
    std::fs::write(&gold, r#"{"calls": []}"#).unwrap();
    let out = toolcap(&["check", "--gold", gold.to_str().unwrap(), &url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("401 Unauthorized"));
    let out = toolcap(&[
        "check",
        "--token",
        TOKEN,
        "--gold",
        gold.to_str().unwrap(),
        &url,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The request's two tool calls differ from the empty gold: exit 1, a diff for that trace.
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains(&format!("{:032x}", 1)), "{stdout}");
    assert!(stdout.contains("DIFFERS"), "{stdout}");
}

/// A TLS terminator on 127.0.0.1 in front of `backend`, with a fresh self-signed certificate
/// for 127.0.0.1; returns its address and the certificate's PEM.
async fn tls_terminator(backend: String) -> (String, String) {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert_pem = certified.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let backend = backend.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(&backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    (addr, cert_pem)
}

fn write_pem(dir: &Path, pem: &str) -> String {
    let path = dir.join("ca.pem");
    std::fs::write(&path, pem).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn https_dump_trusts_the_given_certificate_and_only_it() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &["--token", TOKEN]);
    let spooled = feed_serve(&serve, 3);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (addr, pem) = runtime.block_on(tls_terminator(serve.http.clone()));
    let url = format!("https://{addr}");
    let ca = write_pem(dir.path(), &pem);

    let out = toolcap(&["dump", "--json", "--token", TOKEN, "--cacert", &ca, &url]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(dumped_ids(&out.stdout), spooled);

    // SSL_CERT_FILE works as for other TLS tools.
    let out = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json", "--token", TOKEN, &url])
        .env("SSL_CERT_FILE", &ca)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));

    // Without trusting it: refused, and the reason names the certificate.
    let out = toolcap(&["dump", "--json", "--token", TOKEN, &url]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("certificate"), "{stderr}");
}

#[test]
fn the_tui_attach_follows_an_https_feed() {
    use toolcap::sources::IngestEvent;
    use toolcap::sources::attach::{AttachOptions, spawn_attach_with};
    use toolcap::sources::remote::RemoteOptions;

    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &["--token", TOKEN]);
    let spooled = feed_serve(&serve, 2);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (addr, pem) = tls_terminator(serve.http.clone()).await;
        let mut remote = RemoteOptions::from_args(Some(TOKEN.into()), &[]).unwrap();
        remote.ca_cert = Some(write_pem(dir.path(), &pem).into());
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let options = AttachOptions {
            remote,
            ..AttachOptions::default()
        };
        let task = spawn_attach_with(format!("https://{addr}"), tx, options);
        let mut seen = BTreeSet::new();
        while seen.len() < spooled.len() {
            match rx.recv().await.expect("attach ended") {
                IngestEvent::Batch(batch) => {
                    assert!(batch.problems.is_empty(), "{:?}", batch.problems);
                    for span in batch.spans {
                        seen.insert((span.trace_id.to_string(), span.span_id.to_string()));
                    }
                }
                IngestEvent::Status(_) | IngestEvent::Forget(_) => {}
            }
        }
        assert_eq!(seen, spooled);
        task.abort();
    });
}

#[test]
fn receivers_refuse_a_non_loopback_address_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    // Refused before anything is bound.
    let out = toolcap(&["serve", "--http", "0.0.0.0:0", "--out", out_dir]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--http 0.0.0.0:0"), "{stderr}");
    assert!(stderr.contains("--insecure"), "{stderr}");
    let out = toolcap(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--grpc",
        "0.0.0.0:0",
        "--out",
        out_dir,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--grpc 0.0.0.0:0"));
    let out = toolcap(&["--listen=0.0.0.0:0", "--grpc", "127.0.0.1:0", out_dir]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--listen 0.0.0.0:0"));
}
