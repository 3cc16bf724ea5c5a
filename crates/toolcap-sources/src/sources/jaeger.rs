//! Jaeger (v2 query API, `/api/v3`): `jaeger+http(s)://HOST:16686?service=S&since=1h`.
//!
//! A search (`GET /api/v3/traces?query.service_name=…&query.start_time_min=…&query.start_time_max=…`)
//! names the traces; each is then read whole with `GET /api/v3/traces/{id}`. Both answer
//! `{"result": TracesData}` in OTLP/JSON — several such objects one after another when the
//! gateway streams the answer in pages — so the result goes through the OTLP codec like a
//! trace file. Errors come as `{"error": {"httpCode", "message"}}`. Written from Jaeger's
//! api/v3 documentation and `jaeger-idl` `proto/api_v3/query_service.proto`; no Jaeger binary
//! was available to test against.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::remote::{self, HttpClient, RemoteOptions};
use crate::Error;
use crate::formats::{self, Loaded};
use crate::model::Origin;

pub const SCHEME_PREFIX: &str = "jaeger+";
const DEFAULT_SINCE: Duration = Duration::from_secs(3600);
const DEFAULT_SEARCH_DEPTH: u32 = 100;

/// A parsed `jaeger+…` SOURCE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JaegerSource {
    /// `http(s)://HOST:PORT` of the query service.
    pub base: String,
    pub service: String,
    pub since: Duration,
    pub search_depth: u32,
}

impl JaegerSource {
    pub fn parse(source: &str) -> Result<Self, Error> {
        let url = || source.to_owned();
        let rest = source
            .strip_prefix(SCHEME_PREFIX)
            .ok_or_else(|| Error::NotJaegerUrl { url: url() })?;
        if !remote::is_remote(rest) {
            return Err(Error::JaegerNotHttp { url: url() });
        }
        let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut parsed = JaegerSource {
            base: base.trim_end_matches('/').to_owned(),
            service: String::new(),
            since: DEFAULT_SINCE,
            search_depth: DEFAULT_SEARCH_DEPTH,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match key {
                "service" => parsed.service = value.to_owned(),
                "since" => {
                    parsed.since = parse_duration(value).ok_or_else(|| Error::BadSince {
                        url: url(),
                        value: value.to_owned(),
                    })?
                }
                "limit" => {
                    parsed.search_depth = value.parse().map_err(|_| Error::BadLimit {
                        url: url(),
                        value: value.to_owned(),
                    })?
                }
                other => {
                    return Err(Error::UnknownParameter {
                        url: url(),
                        name: other.to_owned(),
                    });
                }
            }
        }
        if parsed.service.is_empty() {
            return Err(Error::NoService { url: url() });
        }
        Ok(parsed)
    }

    fn search_path(&self, from: time::OffsetDateTime, to: time::OffsetDateTime) -> String {
        format!(
            "/api/v3/traces?query.service_name={}&query.start_time_min={}&query.start_time_max={}&query.search_depth={}",
            percent_encode(&self.service),
            percent_encode(&rfc3339(from)),
            percent_encode(&rfc3339(to)),
            self.search_depth
        )
    }
}

fn rfc3339(at: time::OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `30s`, `15m`, `1h`, `2d`.
fn parse_duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    Some(Duration::from_secs(number.checked_mul(seconds)?))
}

fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorBody>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default, rename = "httpCode")]
    http_code: Option<i64>,
    #[serde(default)]
    message: String,
}

/// One answer: its pages' `result` documents, or the error it carries.
fn pages(body: &[u8]) -> Result<Vec<&RawValue>, Error> {
    let mut out = Vec::new();
    for envelope in serde_json::Deserializer::from_slice(body).into_iter::<Envelope>() {
        let envelope = envelope.map_err(Error::NotJaegerAnswer)?;
        if let Some(error) = envelope.error {
            return Err(error_of(error));
        }
        out.extend(envelope.result);
    }
    Ok(out)
}

fn error_of(error: ErrorBody) -> Error {
    match error.http_code {
        Some(code) => Error::Jaeger {
            code,
            message: error.message,
        },
        None => Error::JaegerUncoded {
            message: error.message,
        },
    }
}

/// Trace ids (hex) named by search pages, in order of first appearance, at most `limit` of
/// them: a search answer naming more than it was asked for is not followed further.
fn trace_ids(pages: &[&RawValue], limit: usize) -> Vec<String> {
    #[derive(Deserialize)]
    struct Data {
        #[serde(default, rename = "resourceSpans")]
        resource_spans: Vec<Resource>,
    }
    #[derive(Deserialize)]
    struct Resource {
        #[serde(default, rename = "scopeSpans")]
        scope_spans: Vec<Scope>,
    }
    #[derive(Deserialize)]
    struct Scope {
        #[serde(default)]
        spans: Vec<SpanId>,
    }
    #[derive(Deserialize)]
    struct SpanId {
        #[serde(default, rename = "traceId")]
        trace_id: String,
    }
    let mut seen = BTreeSet::new();
    let mut ids = Vec::new();
    for page in pages {
        let Ok(data) = serde_json::from_str::<Data>(page.get()) else {
            continue;
        };
        for span in data
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
        {
            let id = span.trace_id.to_ascii_lowercase();
            let is_hex = !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit());
            if is_hex && seen.insert(id.clone()) {
                ids.push(id);
                if ids.len() >= limit {
                    return ids;
                }
            }
        }
    }
    ids
}

/// GETs an api/v3 path; a non-200 answer's `{"error"}` body becomes the message.
async fn get_pages(
    client: &HttpClient,
    source: &JaegerSource,
    path: &str,
    options: &RemoteOptions,
) -> Result<Vec<u8>, (Option<u16>, Error)> {
    match remote::get_answer(client, &source.base, path, "application/json", options).await {
        Ok((200, body)) => Ok(body.to_vec()),
        Ok((status, body)) => {
            let error = match pages(&body) {
                Err(error) => error,
                Ok(_) => Error::HttpStatus {
                    status,
                    path: path.split('?').next().unwrap_or(path).to_owned(),
                },
            };
            Err((Some(status), error))
        }
        Err(message) => Err((None, message)),
    }
}

/// Reads what the search window holds now: every trace it names, each read whole. Traces in
/// `skip` are not read again (polling).
pub async fn read_window(
    client: &HttpClient,
    source: &JaegerSource,
    origin_url: &str,
    from: time::OffsetDateTime,
    to: time::OffsetDateTime,
    skip: &BTreeSet<String>,
    options: &RemoteOptions,
) -> Result<(Vec<Loaded>, Vec<String>), Error> {
    let search = match get_pages(client, source, &source.search_path(from, to), options).await {
        Ok(body) => body,
        // api/v3 answers 404 "trace not found" for a search with no match.
        Err((Some(404), _)) => return Ok((Vec::new(), Vec::new())),
        Err((_, message)) => return Err(message),
    };
    let found = pages(&search)?;
    let origin = Origin::endpoint(origin_url.to_owned());
    let mut loaded = Vec::new();
    let mut read = Vec::new();
    for id in trace_ids(&found, source.search_depth as usize)
        .into_iter()
        .filter(|id| !skip.contains(id))
    {
        let path = format!("/api/v3/traces/{id}");
        match get_pages(client, source, &path, options).await {
            Ok(body) => match pages(&body) {
                Ok(trace_pages) => {
                    for page in trace_pages {
                        loaded.push(formats::load_bytes(origin.clone(), page.get().as_bytes()));
                    }
                    read.push(id);
                }
                Err(message) => {
                    loaded.push(remote::failed(origin_url, format!("trace {id}: {message}")))
                }
            },
            Err((_, message)) => {
                loaded.push(remote::failed(origin_url, format!("trace {id}: {message}")));
            }
        }
    }
    Ok((loaded, read))
}

/// `dump`/`check`: the traces of the last `since`, once.
pub async fn snapshot(
    client: &HttpClient,
    url: &str,
    options: &RemoteOptions,
) -> Result<Vec<Loaded>, Error> {
    let source = JaegerSource::parse(url)?;
    let now = time::OffsetDateTime::now_utc();
    let from = now - source.since;
    read_window(client, &source, url, from, now, &BTreeSet::new(), options)
        .await
        .map(|(loaded, _)| loaded)
}

/// How often the TUI asks for new traces, and how far back each poll looks again (a trace
/// is listed once its spans are stored, which can lag its start).
const POLL_EVERY: Duration = Duration::from_secs(5);
const POLL_OVERLAP: Duration = Duration::from_secs(300);

/// The TUI: the traces of the last `since`, then new traces as they appear, until `tx` closes.
/// A trace already read is not read again, so spans added to it later are not seen.
pub fn spawn_poll(
    url: String,
    options: RemoteOptions,
    tx: tokio::sync::mpsc::Sender<super::IngestEvent>,
) -> tokio::task::JoinHandle<()> {
    use super::{IngestEvent, SourceStatus};
    tokio::spawn(async move {
        let origin_failure =
            |error: Error| IngestEvent::Batch(remote::failed(&url, error.to_string()).batch);
        let source = match JaegerSource::parse(&url) {
            Ok(source) => source,
            Err(message) => {
                let _ = tx.send(origin_failure(message)).await;
                return;
            }
        };
        let client = match remote::client(Duration::from_secs(10), &options) {
            Ok(client) => client,
            Err(message) => {
                let _ = tx.send(origin_failure(message)).await;
                return;
            }
        };
        let mut seen = BTreeSet::new();
        let mut from = time::OffsetDateTime::now_utc() - source.since;
        let mut last_problem = None;
        loop {
            let now = time::OffsetDateTime::now_utc();
            let answer = read_window(&client, &source, &url, from, now, &seen, &options).await;
            let connected = answer.is_ok();
            match answer {
                Ok((loaded, read)) => {
                    seen.extend(read);
                    from = now - POLL_OVERLAP;
                    last_problem = None;
                    for loaded in loaded {
                        if tx.send(IngestEvent::Batch(loaded.batch)).await.is_err() {
                            return;
                        }
                    }
                }
                Err(error) => {
                    let message = error.to_string();
                    if last_problem.as_ref() != Some(&message) {
                        last_problem = Some(message);
                        if tx.send(origin_failure(error)).await.is_err() {
                            return;
                        }
                    }
                }
            }
            let status = IngestEvent::Status(SourceStatus::Attached {
                url: url.clone(),
                connected,
                retry_in_ms: (!connected).then_some(POLL_EVERY.as_millis() as u64),
                unauthorized: false,
            });
            if tx.send(status).await.is_err() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(POLL_EVERY) => {}
                _ = tx.closed() => return,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_with_defaults_and_refuse_what_they_cannot_search() {
        let source =
            JaegerSource::parse("jaeger+http://127.0.0.1:16686?service=agent&since=30m").unwrap();
        assert_eq!(source.base, "http://127.0.0.1:16686");
        assert_eq!(source.service, "agent");
        assert_eq!(source.since, Duration::from_secs(1800));
        assert_eq!(
            JaegerSource::parse("jaeger+https://h:16686/?service=a")
                .unwrap()
                .since,
            DEFAULT_SINCE
        );
        assert!(
            JaegerSource::parse("jaeger+http://h:16686")
                .unwrap_err()
                .to_string()
                .contains("service")
        );
        assert!(JaegerSource::parse("jaeger+http://h?service=a&since=soon").is_err());
        assert!(JaegerSource::parse("jaeger+ftp://h?service=a").is_err());
    }

    #[test]
    fn pages_follow_one_another_and_an_error_body_wins() {
        let body = br#"{"result":{"resourceSpans":[]}}
{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AB"}]}]}]}}"#;
        let found = pages(body).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(trace_ids(&found, 10), ["ab"]);
        let error = br#"{"error":{"httpCode":500,"message":"storage down"}}"#;
        assert_eq!(
            pages(error).unwrap_err().to_string(),
            "Jaeger error 500: storage down"
        );
    }
}
