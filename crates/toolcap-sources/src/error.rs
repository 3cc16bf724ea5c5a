//! What reading sources can fail at: files and directories, the watcher, the embedded receiver,
//! and remote backends (a `serve` feed, Jaeger, Phoenix). Each message is the one shown as the
//! source's problem; a URL's problem already names the URL where the message does not.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use hyper::StatusCode;

use crate::sources::attach::MAX_FEED_LINE_BYTES;
use crate::sources::remote::{MAX_RESPONSE_BYTES, TOTAL_TIMEOUT_ENV};

/// An error of the sources crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // Files and the watcher.
    #[error("{}: {source}", path.display())]
    Unreadable { path: PathBuf, source: io::Error },
    /// A path whose reading could hang or never end (a device, a file of `/proc`).
    #[error("{}: {reason}: not read", path.display())]
    NotReadSafely { path: PathBuf, reason: String },
    #[error("current directory: {0}")]
    CurrentDirectory(io::Error),
    #[error("file watcher: {0}")]
    Watcher(notify::Error),
    #[error("{}: cannot watch: {source}", path.display())]
    CannotWatch {
        path: PathBuf,
        source: notify::Error,
    },
    #[error("cannot start the watch thread: {0}")]
    WatchThread(io::Error),
    /// A document still being written: the last of its length-prefixed messages is cut short.
    #[error("its last length-prefixed message is incomplete")]
    IncompleteMessage,
    /// A zip still being written: its central directory (written last) is missing.
    #[error("a zip without its central directory (still being written)")]
    IncompleteZip,
    #[error("invalid JSON: {0}")]
    InvalidJson(serde_json::Error),
    #[error(transparent)]
    Formats(#[from] toolcap_formats::Error),
    #[error(transparent)]
    Receiver(#[from] toolcap_receiver::Error),

    // Remote sources: options.
    #[error("{name}={text:?}: expected a number of seconds above 0")]
    BadTimeout { name: &'static str, text: String },
    #[error("--header {raw:?}: expected 'Name: value'")]
    HeaderWithoutColon { raw: String },
    #[error("--header {raw:?}: {name:?} is not a header name")]
    BadHeaderName { raw: String, name: String },
    #[error("--header {raw:?}: the value has characters a header cannot carry")]
    BadHeaderValue { raw: String },
    #[error("--cacert {}: {source}", path.display())]
    CaCertUnreadable {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("--cacert {}: no PEM certificate in it", path.display())]
    CaCertEmpty { path: PathBuf },
    #[error("--cacert {}: {source}", path.display())]
    CaCertRefused {
        path: PathBuf,
        source: rustls::Error,
    },

    // Remote sources: asking and answering.
    #[error("invalid URL {target}: {source}")]
    InvalidUrl {
        target: String,
        source: hyper::http::uri::InvalidUri,
    },
    #[error("cannot build a request for {target}: {source}")]
    RequestNotBuilt {
        target: String,
        source: hyper::http::Error,
    },
    /// No connection; `causes` is the client error's chain of causes, innermost last.
    #[error("cannot reach {base}: {causes}")]
    Unreachable { base: String, causes: String },
    /// Nothing arrived from `base` for the idle limit.
    #[error("{base}: no data for {} s", idle.as_secs_f64())]
    Idle { base: String, idle: Duration },
    /// The whole read took longer than the total limit.
    #[error("gave up after {} s (--remote-timeout or {TOTAL_TIMEOUT_ENV} sets how long)", total.as_secs_f64())]
    TimedOut { total: Duration },
    /// An answer other than 200; `hint` says what to do about it, or is empty.
    #[error("answered {status} for {path}{hint}")]
    Status {
        path: String,
        status: StatusCode,
        hint: &'static str,
    },
    /// The answer (`what`: "answer" or "feed") stopped before its end.
    #[error("{base}: the {what} broke off: {source}")]
    BrokeOff {
        base: String,
        what: &'static str,
        source: hyper::Error,
    },
    #[error("{base}: the answer is longer than {} MiB; not read", MAX_RESPONSE_BYTES >> 20)]
    AnswerTooLong { base: String },

    // A `serve` feed.
    #[error("{url}/api/v1/health is not JSON ({source}); is it a toolcap-tui serve?")]
    HealthNotJson {
        url: String,
        source: serde_json::Error,
    },
    #[error("{url}/api/v1/health has no request count; is it a toolcap-tui serve?")]
    HealthWithoutCount { url: String },
    #[error("{url}: the feed ended after {taken} of {requests} requests")]
    FeedEnded {
        url: String,
        taken: u64,
        requests: u64,
    },
    #[error("{url}: a feed line is longer than {MAX_FEED_LINE_BYTES} bytes")]
    FeedLineTooLong { url: String },

    // Jaeger; `url` is the source as given.
    #[error("{url}: not a jaeger+http(s):// URL")]
    NotJaegerUrl { url: String },
    #[error("{url}: expected jaeger+http:// or jaeger+https://")]
    JaegerNotHttp { url: String },
    #[error("{url}: since={value} is not a duration like 30m, 1h, 2d")]
    BadSince { url: String, value: String },
    #[error("{url}: limit={value} is not a number")]
    BadLimit { url: String, value: String },
    #[error("{url}: unknown parameter {name:?} (service, since, limit)")]
    UnknownParameter { url: String, name: String },
    #[error("{url}: needs ?service=NAME (Jaeger searches one service)")]
    NoService { url: String },
    #[error("not a Jaeger api/v3 answer: {0}")]
    NotJaegerAnswer(serde_json::Error),
    /// The error a Jaeger answer carries, with its HTTP code when it gives one.
    #[error("Jaeger error {code}: {message}")]
    Jaeger { code: i64, message: String },
    #[error("Jaeger error: {message}")]
    JaegerUncoded { message: String },
    /// A non-200 answer without an error body of its own.
    #[error("answered HTTP {status} for {path}")]
    HttpStatus { status: u16, path: String },

    // Phoenix; `url` is the source as given, `path` a listing's path.
    #[error("{url}: expected phoenix+http:// or phoenix+https://")]
    PhoenixNotHttp { url: String },
    #[error("{url}: expected phoenix+http://HOST:PORT[/PROJECT]")]
    PhoenixNotAProject { url: String },
    #[error("{path}: more than {limit_mib} MiB of pages; stopped")]
    ListingTooLarge { path: String, limit_mib: usize },
    #[error("{path}: not a Phoenix listing: {source}")]
    NotPhoenixListing {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: more than {pages} pages; stopped")]
    TooManyPages { path: String, pages: usize },
}

#[cfg(test)]
mod tests {
    use crate::sources::{files, jaeger::JaegerSource, remote};

    #[test]
    fn a_missing_path_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.jsonl");
        let error = files::walk(&path).err().unwrap();
        assert!(
            error
                .to_string()
                .starts_with(&format!("{}: ", path.display())),
            "{error}"
        );
    }

    #[test]
    fn a_header_without_a_colon_is_quoted() {
        let error = remote::parse_header("Authorization Bearer x").unwrap_err();
        assert_eq!(
            error.to_string(),
            "--header \"Authorization Bearer x\": expected 'Name: value'"
        );
    }

    #[test]
    fn a_jaeger_url_without_a_service_says_how_to_give_one() {
        let error = JaegerSource::parse("jaeger+http://localhost:16686").unwrap_err();
        assert_eq!(
            error.to_string(),
            "jaeger+http://localhost:16686: needs ?service=NAME (Jaeger searches one service)"
        );
    }
}
