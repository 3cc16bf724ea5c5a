//! Helpers shared by the receiver tests: a spawned `toolcap-tui serve`, raw HTTP/1.1 requests
//! over a plain TCP socket, and an independent reader of spool files (plain serde_json, not the
//! receiver's own code), reusable for comparing with `dump --json`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "body is not JSON ({err}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// Sends one request with `Connection: close` and reads the whole response.
pub fn raw_http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<RawResponse> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    // The server may answer (413, 401) before reading everything; a reset then is fine.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> std::io::Result<RawResponse> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().ok_or_else(|| bad("no status line"))?;
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        body = dechunk(&body).ok_or_else(|| bad("bad chunked body"))?;
    }
    Ok(RawResponse {
        status,
        headers,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

/// An open `GET /api/v1/stream` response, read record by record (the stream never ends by
/// itself). Asks with HTTP/1.0 so the body is close-delimited rather than chunked.
pub struct StreamReader {
    pub head: String,
    reader: BufReader<TcpStream>,
    sse: bool,
}

impl StreamReader {
    pub fn open_with_headers(addr: &str, path: &str, headers: &[(&str, &str)]) -> StreamReader {
        let mut stream = TcpStream::connect(addr).expect("connect to stream");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("read stream headers");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let sse = head
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream");
        StreamReader { head, reader, sse }
    }

    /// Records until the server ends the response.
    pub fn remaining_records(&mut self) -> Vec<String> {
        let mut rest = String::new();
        self.reader
            .read_to_string(&mut rest)
            .expect("read the rest of the stream");
        rest.lines()
            .filter_map(|line| {
                if self.sse {
                    line.strip_prefix("data: ").map(str::to_string)
                } else {
                    Some(line.to_string())
                }
            })
            .collect()
    }

    /// The next record: an NDJSON line, or the data of an SSE event.
    pub fn next_record(&mut self) -> String {
        loop {
            let mut line = String::new();
            let read = self
                .reader
                .read_line(&mut line)
                .expect("read stream record");
            assert!(read > 0, "stream ended");
            assert!(line.ends_with('\n'), "stream ended inside a record");
            let line = line.trim_end_matches('\n');
            if !self.sse {
                return line.to_string();
            }
            if let Some(data) = line.strip_prefix("data: ") {
                return data.to_string();
            }
            assert!(line.is_empty(), "unexpected SSE line {line:?}");
        }
    }
}

/// Spool segment files in `dir`, in name order (= write order).
pub fn spool_segments(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("spool dir")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("spool-") && n.ends_with(".otlp.jsonl"))
        })
        .collect();
    paths.sort();
    paths
}

/// Every complete line of every spool segment, in order.
pub fn spool_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for path in spool_segments(dir) {
        let text = std::fs::read_to_string(&path).expect("read segment");
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{} ends with a torn line",
            path.display()
        );
        lines.extend(text.lines().map(str::to_string));
    }
    lines
}

/// (trace id, span id) of every span in OTLP/JSON request lines.
pub fn span_ids(lines: &[String]) -> BTreeSet<(String, String)> {
    let mut ids = BTreeSet::new();
    for line in lines {
        let request: serde_json::Value = serde_json::from_str(line).expect("spool line is JSON");
        for resource in request["resourceSpans"].as_array().into_iter().flatten() {
            for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                for span in scope["spans"].as_array().into_iter().flatten() {
                    ids.insert((
                        span["traceId"].as_str().expect("hex traceId").to_string(),
                        span["spanId"].as_str().expect("hex spanId").to_string(),
                    ));
                }
            }
        }
    }
    ids
}

/// A `toolcap-tui serve` child process on ephemeral ports; killed when dropped.
pub struct Serve {
    pub child: Child,
    pub http: String,
    pub grpc: String,
    pub dir: PathBuf,
    /// `Authorization` header value when serve was started with `--token`.
    pub authorization: Option<String>,
    /// `Authorization` header value the feed needs (the given token, or the one serve made up).
    pub feed_authorization: String,
    /// Where serve said its token file is, if it wrote or was given one.
    pub token_file: Option<PathBuf>,
}

impl Serve {
    pub fn start(dir: &Path, extra_args: &[&str]) -> Serve {
        Self::start_with(dir, extra_args, |_| {})
    }

    /// [`Serve::start`] with a chance to adjust the command (stderr, resource limits).
    pub fn start_with(
        dir: &Path,
        extra_args: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Serve {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"));
        command.arg("serve");
        // A restart that must keep its address passes its own --http.
        if !extra_args.contains(&"--http") {
            command.args(["--http", "127.0.0.1:0"]);
        }
        command
            .args(["--grpc", "127.0.0.1:0", "--out"])
            .arg(dir)
            .args(extra_args)
            .env_remove("TOOLCAP_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        configure(&mut command);
        let mut child = command.spawn().expect("spawn toolcap-tui serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut reader = BufReader::new(stdout);
        let (mut http, mut grpc) = (String::new(), String::new());
        let mut token_file = None;
        // `attach ...` is the last line serve prints at start.
        loop {
            let mut line = String::new();
            let read = reader.read_line(&mut line).expect("read serve stdout");
            assert!(read > 0, "serve exited before printing its addresses");
            if let Some(addr) = line.trim().strip_prefix("http ") {
                http = addr.to_string();
            } else if let Some(addr) = line.trim().strip_prefix("grpc ") {
                grpc = addr.to_string();
            } else if let Some(path) = line.trim().strip_prefix("token ") {
                token_file = Some(PathBuf::from(path));
            } else if line.starts_with("attach ") {
                break;
            }
        }
        assert!(
            !http.is_empty() && !grpc.is_empty(),
            "serve printed both addresses"
        );
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        let authorization = extra_args
            .windows(2)
            .find(|pair| pair[0] == "--token")
            .map(|pair| format!("Bearer {}", pair[1]));
        let feed_authorization = match (&authorization, &token_file) {
            (Some(given), _) => given.clone(),
            (None, Some(path)) => {
                let token = std::fs::read_to_string(path).expect("read serve's token file");
                format!("Bearer {}", token.trim())
            }
            (None, None) => panic!("serve printed no token file and was given no token"),
        };
        Serve {
            child,
            http,
            grpc,
            dir: dir.to_path_buf(),
            authorization,
            feed_authorization,
            token_file,
        }
    }

    /// Opens the feed at `path` with the token it needs.
    pub fn stream(&self, path: &str, accept: &str) -> StreamReader {
        StreamReader::open_with_headers(
            &self.http,
            path,
            &[
                ("Accept", accept),
                ("Authorization", &self.feed_authorization),
            ],
        )
    }

    /// Reads `count` records from the feed at `path`.
    pub fn read_stream(&self, path: &str, accept: &str, count: usize) -> (String, Vec<String>) {
        let mut reader = self.stream(path, accept);
        let records = (0..count).map(|_| reader.next_record()).collect();
        (reader.head, records)
    }

    pub fn health(&self) -> serde_json::Value {
        let headers = [("Authorization", self.feed_authorization.as_str())];
        let response =
            raw_http(&self.http, "GET", "/api/v1/health", &headers, b"").expect("health");
        assert_eq!(response.status, 200);
        response.json()
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "serve did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Peak resident set size of the child, in KiB (Linux `VmHWM`).
    pub fn peak_rss_kib(&self) -> u64 {
        self.proc_status_kib("VmHWM:")
    }

    /// Current resident set size of the child, in KiB (Linux `VmRSS`).
    pub fn rss_kib(&self) -> u64 {
        self.proc_status_kib("VmRSS:")
    }

    fn proc_status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect(field)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An OTLP/JSON request with `spans` spans in one trace; ids derived from `trace` and index.
pub fn json_request(trace: u128, spans: u64) -> serde_json::Value {
    let trace_id = format!("{trace:032x}");
    let list: Vec<serde_json::Value> = (0..spans)
        .map(|index| {
            serde_json::json!({
                "traceId": trace_id,
                "spanId": format!("{:016x}", index + 1),
                "parentSpanId": if index == 0 { String::new() } else { format!("{:016x}", 1) },
                "name": format!("execute_tool tool_{index}"),
                "kind": 1,
                "startTimeUnixNano": "1768471200000000000",
                "endTimeUnixNano": "1768471200100000000",
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}}
                ],
                "status": {}
            })
        })
        .collect();
    serde_json::json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "receiver-test"}}]},
        "scopeSpans": [{"scope": {"name": "receiver-test"}, "spans": list}]
    }]})
}

/// A running `--listen` whose spool is made under `spool_parent`, and its ingest channel.
pub async fn listen_on_loopback(
    spool_bytes: u64,
    grpc: bool,
    spool_parent: &Path,
) -> (
    toolcap::sources::listen::ListenHandle,
    tokio::sync::mpsc::Receiver<toolcap::sources::IngestEvent>,
) {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let handle = toolcap::sources::listen::spawn_listen(
        toolcap::sources::listen::ListenConfig {
            http: "127.0.0.1:0".into(),
            grpc: grpc.then(|| "127.0.0.1:0".into()),
            token: None,
            spool_bytes,
            spool_parent: Some(spool_parent.to_path_buf()),
        },
        tx,
    )
    .await
    .expect("receiver binds a free loopback port");
    (handle, rx)
}
