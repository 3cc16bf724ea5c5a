//! What every remote source shares: which SOURCE strings are remote, the one HTTP(S) client
//! (rustls with the `ring` provider; trusted roots are the platform's, or `SSL_CERT_FILE` /
//! `SSL_CERT_DIR` when set, plus `--cacert`), the credentials and headers sent with every
//! request, and reading a remote source once as a snapshot (`dump`, `check`: replay what is
//! there, then exit).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::{HeaderMap, Request, StatusCode, Uri, header};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;

use crate::Error;
use crate::formats::{self, Detection, Loaded};
use crate::model::{Batch, Origin, Problem};

/// The HTTP(S) client of every remote source.
pub type HttpClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// The largest response body a request reads (a whole page of spans, or one trace); more is
/// refused rather than buffered, so a hostile server cannot make a poll hold gigabytes. The
/// same bound as a feed line ([`super::attach::MAX_FEED_LINE_BYTES`]).
pub const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// Time without a byte from the server before a request is given up.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Time a snapshot (`dump`, `check`, `report`) may take in all.
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(120);

/// Sets the time a snapshot may take in all, in seconds.
pub const TOTAL_TIMEOUT_ENV: &str = "TOOLCAP_REMOTE_TIMEOUT";

/// Sets the time without a byte before a request is given up, in seconds (tests shorten it).
pub const IDLE_TIMEOUT_ENV: &str = "TOOLCAP_REMOTE_IDLE_TIMEOUT";

/// How long a remote source may keep a command waiting: a server that never answers, or drips
/// its answer, must not hang `dump` or `check`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RemoteTimeouts {
    /// No byte for this long (no answer yet, or nothing more of it) ends the request.
    pub idle: Duration,
    /// A snapshot gives up after this long in all.
    pub total: Duration,
}

impl Default for RemoteTimeouts {
    fn default() -> Self {
        RemoteTimeouts {
            idle: DEFAULT_IDLE_TIMEOUT,
            total: DEFAULT_TOTAL_TIMEOUT,
        }
    }
}

impl RemoteTimeouts {
    /// The defaults, or the seconds [`TOTAL_TIMEOUT_ENV`] and [`IDLE_TIMEOUT_ENV`] give.
    pub fn from_env() -> Result<Self, Error> {
        let seconds = |name: &'static str| -> Result<Option<Duration>, Error> {
            let Ok(text) = std::env::var(name) else {
                return Ok(None);
            };
            match text.trim().parse::<f64>() {
                Ok(secs) if secs > 0.0 && secs < 1e9 => Ok(Some(Duration::from_secs_f64(secs))),
                _ => Err(Error::BadTimeout { name, text }),
            }
        };
        let defaults = RemoteTimeouts::default();
        Ok(RemoteTimeouts {
            idle: seconds(IDLE_TIMEOUT_ENV)?.unwrap_or(defaults.idle),
            total: seconds(TOTAL_TIMEOUT_ENV)?.unwrap_or(defaults.total),
        })
    }
}

/// Waits for `step` at most `idle`; the error names the server that went quiet.
pub async fn within_idle<T>(
    idle: Duration,
    base: &str,
    step: impl std::future::Future<Output = T>,
) -> Result<T, Error> {
    tokio::time::timeout(idle, step)
        .await
        .map_err(|_| Error::Idle {
            base: base.to_owned(),
            idle,
        })
}

/// True when SOURCE is an `http(s)://` URL (a `serve` feed).
pub fn is_remote(source: &str) -> bool {
    source.starts_with("http://") || source.starts_with("https://")
}

/// True when SOURCE names any remote source rather than a path (a `serve` feed, `jaeger+…`).
pub fn is_remote_source(source: &str) -> bool {
    is_remote(source)
        || source.starts_with(super::jaeger::SCHEME_PREFIX)
        || source.starts_with(super::phoenix::SCHEME_PREFIX)
}

/// Credentials and extra headers sent with every request of a remote source.
#[derive(Debug, Clone, Default)]
pub struct RemoteOptions {
    /// Sent as `Authorization: Bearer TOKEN`.
    pub token: Option<String>,
    /// `--header 'K: V'`, validated.
    pub headers: HeaderMap,
    /// `--cacert FILE`: PEM certificates trusted beside the platform's roots (a self-signed
    /// or private-CA server).
    pub ca_cert: Option<std::path::PathBuf>,
    /// Idle and total time limits (defaults, or the environment's when built from arguments).
    pub timeouts: RemoteTimeouts,
    /// `--token-file FILE`: where the token came from, read again when it is refused.
    pub token_file: Option<std::path::PathBuf>,
}

impl RemoteOptions {
    /// Builds the options from `--token` and `--header 'K: V'` arguments.
    pub fn from_args(token: Option<String>, headers: &[String]) -> Result<Self, Error> {
        let mut map = HeaderMap::new();
        for raw in headers {
            let (name, value) = parse_header(raw)?;
            map.append(name, value);
        }
        Ok(RemoteOptions {
            token: token.filter(|t| !t.is_empty()),
            headers: map,
            ca_cert: None,
            timeouts: RemoteTimeouts::from_env()?,
            token_file: None,
        })
    }

    /// Adds the token and headers to a request.
    pub fn apply(
        &self,
        mut request: hyper::http::request::Builder,
    ) -> hyper::http::request::Builder {
        if let Some(token) = &self.token
            && !self.headers.contains_key(header::AUTHORIZATION)
        {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request
    }
}

/// Parses `Name: value` (the form curl takes).
pub fn parse_header(raw: &str) -> Result<(header::HeaderName, header::HeaderValue), Error> {
    let Some((name, value)) = raw.split_once(':') else {
        return Err(Error::HeaderWithoutColon { raw: raw.into() });
    };
    let name = header::HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
        Error::BadHeaderName {
            raw: raw.into(),
            name: name.trim().into(),
        }
    })?;
    let value = header::HeaderValue::from_str(value.trim())
        .map_err(|_| Error::BadHeaderValue { raw: raw.into() })?;
    Ok((name, value))
}

/// The client for `http://` and `https://` URLs. `Err` only when `--cacert` cannot be read;
/// without any usable root, https fails later with an unknown-issuer error naming the cause.
pub fn client(connect_timeout: Duration, options: &RemoteOptions) -> Result<HttpClient, Error> {
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(connect_timeout));
    http.set_keepalive(Some(Duration::from_secs(30)));
    http.set_nodelay(true);
    http.enforce_http(false);
    let tls = rustls::ClientConfig::builder()
        .with_root_certificates(trusted_roots(options)?)
        .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build(https))
}

fn trusted_roots(options: &RemoteOptions) -> Result<rustls::RootCertStore, Error> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    // Unreadable platform certificates are skipped: one bad file must not disable https.
    let (_added, _ignored) =
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(path) = &options.ca_cert {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .and_then(|iter| iter.collect())
            .map_err(|source| Error::CaCertUnreadable {
                path: path.clone(),
                source,
            })?;
        if certs.is_empty() {
            return Err(Error::CaCertEmpty { path: path.clone() });
        }
        for cert in certs {
            roots.add(cert).map_err(|source| Error::CaCertRefused {
                path: path.clone(),
                source,
            })?;
        }
    }
    Ok(roots)
}

/// An answer that is not 200, said in one line with the status (`401 Unauthorized`).
/// The problem's source already names the URL.
fn status_problem(path: &str, status: StatusCode, hint: &'static str) -> Error {
    Error::Status {
        path: path.to_owned(),
        status,
        hint,
    }
}

/// Why a 401 came, worded so the masking pass leaves it whole: a "token" followed by `:` or
/// `=` and a word reads as a secret and would be masked.
pub fn unauthorized_hint(options: &RemoteOptions) -> &'static str {
    if options.token.is_some() || options.headers.contains_key(header::AUTHORIZATION) {
        ": the token was refused"
    } else {
        ": it needs a token (pass --token-file DIR/serve.token, --token or TOOLCAP_TOKEN)"
    }
}

/// GETs a path and reads the whole body (bounded by [`MAX_RESPONSE_BYTES`]); `Err` only when
/// no answer came.
pub async fn get_answer(
    client: &HttpClient,
    base: &str,
    path_and_query: &str,
    accept: &str,
    options: &RemoteOptions,
) -> Result<(u16, Bytes), Error> {
    let target = format!("{}{path_and_query}", base.trim_end_matches('/'));
    let request = get_request(&target, accept, options)?;
    let idle = options.timeouts.idle;
    let response = within_idle(idle, base, client.request(request))
        .await?
        .map_err(|e| no_answer(base, &e))?;
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED {
        let path = path_and_query.split('?').next().unwrap_or(path_and_query);
        return Err(status_problem(path, status, unauthorized_hint(options)));
    }
    let body = read_body(response.into_body(), base, idle).await?;
    Ok((status.as_u16(), body))
}

/// Reads a whole answer, at most [`MAX_RESPONSE_BYTES`], each piece within `idle`.
async fn read_body(
    mut body: hyper::body::Incoming,
    base: &str,
    idle: Duration,
) -> Result<Bytes, Error> {
    let mut read: Vec<u8> = Vec::new();
    while let Some(frame) = within_idle(idle, base, body.frame()).await? {
        let frame = frame.map_err(|source| Error::BrokeOff {
            base: base.to_owned(),
            what: "answer",
            source,
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if read.len() + data.len() > MAX_RESPONSE_BYTES {
            return Err(Error::AnswerTooLong {
                base: base.to_owned(),
            });
        }
        read.extend_from_slice(&data);
    }
    Ok(Bytes::from(read))
}

/// [`get_answer`], with anything but 200 as the error.
pub async fn get_body(
    client: &HttpClient,
    base: &str,
    path_and_query: &str,
    accept: &str,
    options: &RemoteOptions,
) -> Result<Bytes, Error> {
    match get_answer(client, base, path_and_query, accept, options).await? {
        (200, body) => Ok(body),
        (status, _) => {
            let path = path_and_query.split('?').next().unwrap_or(path_and_query);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            Err(status_problem(path, status, ""))
        }
    }
}

/// A GET of `target` with the source's credentials and headers.
fn get_request(
    target: &str,
    accept: &str,
    options: &RemoteOptions,
) -> Result<Request<Empty<Bytes>>, Error> {
    let uri: Uri = target.parse().map_err(|source| Error::InvalidUrl {
        target: target.to_owned(),
        source,
    })?;
    options
        .apply(Request::get(uri).header(header::ACCEPT, accept))
        .body(Empty::new())
        .map_err(|source| Error::RequestNotBuilt {
            target: target.to_owned(),
            source,
        })
}

/// No answer came from `base`: the error names it and the client error's causes.
fn no_answer(base: &str, error: &dyn std::error::Error) -> Error {
    Error::Unreachable {
        base: base.to_owned(),
        causes: error_chain(error),
    }
}

/// The innermost causes of a client error (hyper's own message is only "client error (Connect)").
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        parts.push(cause.to_string());
        source = cause.source();
    }
    parts.dedup();
    parts.join(": ")
}

/// Reads a remote source once: everything it holds now, then stops. Blocking; must not be
/// called from inside a tokio runtime.
pub fn snapshot(url: &str, options: &RemoteOptions) -> Vec<Loaded> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return vec![failed(url, format!("cannot start the async runtime: {e}"))],
    };
    let total = options.timeouts.total;
    let result = runtime.block_on(async {
        let client = client(Duration::from_secs(10), options)?;
        let read = async {
            if url.starts_with(super::jaeger::SCHEME_PREFIX) {
                super::jaeger::snapshot(&client, url, options).await
            } else if url.starts_with(super::phoenix::SCHEME_PREFIX) {
                super::phoenix::snapshot(&client, url, options).await
            } else {
                serve_feed_snapshot(&client, url, options).await
            }
        };
        tokio::time::timeout(total, read)
            .await
            .unwrap_or_else(|_| Err(Error::TimedOut { total }))
    });
    match result {
        Ok(loaded) => loaded,
        Err(error) => vec![failed(url, error.to_string())],
    }
}

/// A `serve` feed: its health says how many requests it has acknowledged; the feed replays
/// exactly that many lines.
async fn serve_feed_snapshot(
    client: &HttpClient,
    url: &str,
    options: &RemoteOptions,
) -> Result<Vec<Loaded>, Error> {
    let health = get_body(client, url, "/api/v1/health", "application/json", options).await?;
    let health: serde_json::Value =
        serde_json::from_slice(&health).map_err(|source| Error::HealthNotJson {
            url: url.to_owned(),
            source,
        })?;
    let requests = health["requests"]
        .as_u64()
        .ok_or_else(|| Error::HealthWithoutCount {
            url: url.to_owned(),
        })?;
    let target = format!("{}/api/v1/stream?skip=0", url.trim_end_matches('/'));
    let request = get_request(&target, "application/x-ndjson", options)?;
    let idle = options.timeouts.idle;
    let response = within_idle(idle, url, client.request(request))
        .await?
        .map_err(|e| no_answer(url, &e))?;
    if response.status() != StatusCode::OK {
        let hint = if response.status() == StatusCode::UNAUTHORIZED {
            unauthorized_hint(options)
        } else {
            ""
        };
        return Err(status_problem("/api/v1/stream", response.status(), hint));
    }
    let origin = Origin::endpoint(url.to_owned());
    let mut out = Vec::new();
    let mut body = response.into_body();
    let mut pending: Vec<u8> = Vec::new();
    let mut taken = 0u64;
    while taken < requests {
        let Some(frame) = within_idle(idle, url, body.frame()).await? else {
            return Err(Error::FeedEnded {
                url: url.to_owned(),
                taken,
                requests,
            });
        };
        let frame = frame.map_err(|source| Error::BrokeOff {
            base: url.to_owned(),
            what: "feed",
            source,
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        while taken < requests {
            let Some(end) = memchr::memchr(b'\n', &pending) else {
                break;
            };
            let line: Vec<u8> = pending.drain(..=end).collect();
            if line.trim_ascii().is_empty() {
                continue;
            }
            taken += 1;
            out.push(formats::load_bytes(origin.clone(), &line));
        }
        if pending.len() > super::attach::MAX_FEED_LINE_BYTES {
            return Err(Error::FeedLineTooLong {
                url: url.to_owned(),
            });
        }
    }
    Ok(out)
}

/// A remote source that yielded nothing, with the reason as its problem.
pub fn failed(url: &str, message: String) -> Loaded {
    let origin = Origin::endpoint(url.to_owned());
    let mut batch = Batch::default();
    batch.problems.push(Problem::error(&origin, None, message));
    Loaded {
        origin,
        detection: Detection {
            format: None,
            reason: "remote source could not be read".into(),
        },
        batch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_like_curl_and_bad_ones_are_refused() {
        let options = RemoteOptions::from_args(
            Some("t0k".into()),
            &["X-Team: agents".into(), "x-empty:".into()],
        )
        .unwrap();
        assert_eq!(options.headers["x-team"], "agents");
        assert_eq!(options.headers["x-empty"], "");
        assert!(RemoteOptions::from_args(None, &["no colon".into()]).is_err());
        assert!(RemoteOptions::from_args(None, &["bad name: v".into()]).is_err());
        assert!(RemoteOptions::from_args(None, &["K: a\nb".into()]).is_err());
        let request = options
            .apply(Request::get("http://127.0.0.1/"))
            .body(())
            .unwrap();
        assert_eq!(request.headers()[header::AUTHORIZATION], "Bearer t0k");
        assert_eq!(request.headers()["x-team"], "agents");
    }

    #[test]
    fn an_explicit_authorization_header_wins_over_the_token() {
        let options =
            RemoteOptions::from_args(Some("t0k".into()), &["Authorization: Basic eDp5".into()])
                .unwrap();
        let request = options
            .apply(Request::get("http://127.0.0.1/"))
            .body(())
            .unwrap();
        let values: Vec<_> = request
            .headers()
            .get_all(header::AUTHORIZATION)
            .iter()
            .collect();
        assert_eq!(values, ["Basic eDp5"]);
    }
}
