//! Arize Phoenix: `phoenix+http(s)://HOST:6006[/PROJECT]` (project `default` when omitted).
//!
//! Spans come from `GET /v1/projects/{project}/spans/otlpv1` (newest first, cursor paging
//! through `next_cursor`): OTLP spans in Phoenix's JSON (proto field names in snake_case,
//! `null` for absent fields, span kinds by name), turned into spec OTLP/JSON so they go
//! through the one OTLP codec and keep their OpenInference kinds. Span annotations
//! (`GET /v1/projects/{project}/span_annotations?span_ids=…`, LLM / CODE / HUMAN) become the
//! verdicts of the invocations (traces) whose spans they annotate. Checked against Phoenix
//! 20.26.1 from PyPI.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::remote::{self, HttpClient, RemoteOptions};
use crate::Error;
use crate::formats::{self, Loaded};
use crate::model::{Batch, EvalVerdict, Id, Origin};

pub const SCHEME_PREFIX: &str = "phoenix+";
const PAGE_LIMIT: usize = 1000;
/// Span ids per annotation request (they travel in the query string).
const ANNOTATION_CHUNK: usize = 50;
/// Pages read at most per listing: a bound on memory and time for a huge project.
const MAX_PAGES: usize = 10_000;
/// Answer bytes read at most per listing: pages are held until the listing ends, so a server
/// that pages forever must not fill memory.
const MAX_LISTING_BYTES: usize = 4 * remote::MAX_RESPONSE_BYTES;

/// Labels that mean the annotated output failed (compared lower-cased).
const FAILING_LABELS: &[&str] = &[
    "incorrect",
    "fail",
    "failed",
    "failure",
    "wrong",
    "bad",
    "hallucinated",
    "toxic",
    "irrelevant",
    "unhelpful",
    "error",
    "no",
    "false",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhoenixSource {
    pub base: String,
    pub project: String,
}

impl PhoenixSource {
    pub fn parse(source: &str) -> Result<Self, Error> {
        let rest = source
            .strip_prefix(SCHEME_PREFIX)
            .filter(|rest| remote::is_remote(rest))
            .ok_or_else(|| Error::PhoenixNotHttp {
                url: source.to_owned(),
            })?;
        let scheme_end = rest.find("://").map_or(0, |i| i + 3);
        let (host, path) = match rest[scheme_end..].find('/') {
            Some(slash) => rest.split_at(scheme_end + slash),
            None => (rest, ""),
        };
        let project = path.trim_matches('/');
        if project.contains('/') || project.contains('?') {
            return Err(Error::PhoenixNotAProject {
                url: source.to_owned(),
            });
        }
        Ok(PhoenixSource {
            base: host.to_owned(),
            project: if project.is_empty() {
                "default".to_owned()
            } else {
                project.to_owned()
            },
        })
    }
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    data: Vec<Value>,
    #[serde(default)]
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
struct Annotation {
    #[serde(default)]
    span_id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    annotator_kind: String,
    #[serde(default)]
    result: Option<AnnotationResult>,
}

#[derive(Deserialize, Default)]
struct AnnotationResult {
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    explanation: Option<String>,
}

fn encode(value: &str) -> String {
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

/// Reads every page of a cursor-paged listing.
async fn all_pages(
    client: &HttpClient,
    base: &str,
    path: &str,
    options: &RemoteOptions,
) -> Result<Vec<Value>, Error> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut read = 0usize;
    for _ in 0..MAX_PAGES {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut target = format!("{path}{separator}limit={PAGE_LIMIT}");
        if let Some(cursor) = &cursor {
            target.push_str(&format!("&cursor={}", encode(cursor)));
        }
        let body = remote::get_body(client, base, &target, "application/json", options).await?;
        read += body.len();
        if read > MAX_LISTING_BYTES {
            return Err(Error::ListingTooLarge {
                path: path.to_owned(),
                limit_mib: MAX_LISTING_BYTES >> 20,
            });
        }
        let page: Page =
            serde_json::from_slice(&body).map_err(|source| Error::NotPhoenixListing {
                path: path.to_owned(),
                source,
            })?;
        items.extend(page.data);
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Ok(items),
        }
    }
    Err(Error::TooManyPages {
        path: path.to_owned(),
        pages: MAX_PAGES,
    })
}

/// Phoenix's OTLP-shaped span → spec OTLP/JSON: camelCase names, no nulls, kinds as numbers.
fn to_spec_json(value: Value, key: Option<&str>) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let converted = to_spec_json(v, Some(&k));
                    (camel_case(&k), converted)
                })
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .filter(|v| !v.is_null())
                .map(|v| to_spec_json(v, None))
                .collect(),
        ),
        Value::String(kind) if key == Some("kind") => json!(span_kind_number(&kind)),
        other => other,
    }
}

fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn span_kind_number(name: &str) -> u8 {
    match name {
        "SPAN_KIND_INTERNAL" => 1,
        "SPAN_KIND_SERVER" => 2,
        "SPAN_KIND_CLIENT" => 3,
        "SPAN_KIND_PRODUCER" => 4,
        "SPAN_KIND_CONSUMER" => 5,
        _ => 0,
    }
}

/// One invocation's verdict from the annotations on its spans: it fails when any annotation
/// fails (a failing label, or a score under 0.5 without a label), and says which.
fn verdict(annotations: &[&Annotation]) -> EvalVerdict {
    let fails = |a: &Annotation| {
        let result = a.result.as_ref();
        match result.and_then(|r| r.label.as_deref()) {
            Some(label) => FAILING_LABELS.contains(&label.trim().to_lowercase().as_str()),
            None => result.and_then(|r| r.score).is_some_and(|s| s < 0.5),
        }
    };
    let deciding = annotations
        .iter()
        .copied()
        .find(|a| fails(a))
        .or_else(|| annotations.first().copied());
    let result = deciding.and_then(|a| a.result.as_ref());
    let label = deciding.map_or(String::new(), |a| {
        let label = result.and_then(|r| r.label.clone()).unwrap_or_default();
        format!("{}={label} ({})", a.name, a.annotator_kind)
    });
    EvalVerdict {
        passed: !annotations.iter().any(|a| fails(a)),
        score: result.and_then(|r| r.score),
        threshold: None,
        label,
        reason: result
            .and_then(|r| r.explanation.clone())
            .unwrap_or_default(),
        // An annotator's explanation is its own text, not a copy of the model's output.
        reason_quotes_output: false,
        scorers: Vec::new(),
        target: None,
        limit: None,
    }
}

/// Everything the project holds now: its spans (one batch per page of the listing) and the
/// verdicts of its annotations.
pub async fn snapshot(
    client: &HttpClient,
    url: &str,
    options: &RemoteOptions,
) -> Result<Vec<Loaded>, Error> {
    let source = PhoenixSource::parse(url)?;
    let project = encode(&source.project);
    let spans = all_pages(
        client,
        &source.base,
        &format!("/v1/projects/{project}/spans/otlpv1"),
        options,
    )
    .await?;
    let origin = Origin::endpoint(url.to_owned());
    let mut trace_of: HashMap<String, String> = HashMap::new();
    for span in &spans {
        if let (Some(span_id), Some(trace_id)) =
            (span["span_id"].as_str(), span["trace_id"].as_str())
        {
            trace_of.insert(span_id.to_owned(), trace_id.to_owned());
        }
    }
    let spec_spans: Vec<Value> = spans.into_iter().map(|s| to_spec_json(s, None)).collect();
    let mut loaded = Vec::new();
    if !spec_spans.is_empty() {
        let request = json!({"resourceSpans": [{
            "resource": {"attributes": []},
            "scopeSpans": [{"spans": spec_spans}],
        }]});
        loaded.push(formats::load_bytes(
            origin.clone(),
            request.to_string().as_bytes(),
        ));
    }
    let span_ids: Vec<&String> = trace_of.keys().collect();
    let mut annotations: Vec<Annotation> = Vec::new();
    for chunk in span_ids.chunks(ANNOTATION_CHUNK) {
        let query: Vec<String> = chunk
            .iter()
            .map(|id| format!("span_ids={}", encode(id)))
            .collect();
        let path = format!(
            "/v1/projects/{project}/span_annotations?{}",
            query.join("&")
        );
        for item in all_pages(client, &source.base, &path, options).await? {
            if let Ok(annotation) = serde_json::from_value::<Annotation>(item) {
                annotations.push(annotation);
            }
        }
    }
    let mut by_trace: BTreeMap<&str, Vec<&Annotation>> = BTreeMap::new();
    for annotation in &annotations {
        if let Some(trace) = trace_of.get(&annotation.span_id) {
            by_trace.entry(trace).or_default().push(annotation);
        }
    }
    if !by_trace.is_empty() {
        let batch = Batch {
            evals: by_trace
                .into_iter()
                .map(|(trace, list)| (trace.to_owned(), verdict(&list)))
                .collect(),
            ..Batch::default()
        };
        loaded.push(Loaded {
            origin,
            detection: formats::Detection {
                format: Some("otlp-json"),
                reason: "Phoenix span annotations".into(),
            },
            batch,
        });
    }
    Ok(loaded)
}

/// How often the TUI reads the project again.
const POLL_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The TUI: the project now, then every few seconds what is new (spans not seen before, and
/// every verdict again, so a later annotation reaches its run), until `tx` closes.
pub fn spawn_poll(
    url: String,
    options: RemoteOptions,
    tx: tokio::sync::mpsc::Sender<super::IngestEvent>,
) -> tokio::task::JoinHandle<()> {
    use super::{IngestEvent, SourceStatus};
    tokio::spawn(async move {
        let client = match remote::client(std::time::Duration::from_secs(10), &options) {
            Ok(client) => client,
            Err(error) => {
                let failed = remote::failed(&url, error.to_string()).batch;
                let _ = tx.send(IngestEvent::Batch(failed)).await;
                return;
            }
        };
        let mut seen: std::collections::HashSet<(Id, Id)> = Default::default();
        let mut last_problem = None;
        loop {
            let answer = snapshot(&client, &url, &options).await;
            let connected = answer.is_ok();
            let batches = match answer {
                Ok(loaded) => {
                    last_problem = None;
                    loaded
                        .into_iter()
                        .map(|mut loaded| {
                            loaded.batch.spans.retain(|span| {
                                seen.insert((span.trace_id.id(), span.span_id.id()))
                            });
                            loaded.batch
                        })
                        .collect()
                }
                Err(error) => {
                    let message = error.to_string();
                    if last_problem.as_ref() == Some(&message) {
                        Vec::new()
                    } else {
                        last_problem = Some(message.clone());
                        vec![remote::failed(&url, message).batch]
                    }
                }
            };
            for batch in batches {
                if tx.send(IngestEvent::Batch(batch)).await.is_err() {
                    return;
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
    fn sources_name_a_project_or_the_default_one() {
        let parsed = PhoenixSource::parse("phoenix+http://127.0.0.1:6006/agents").unwrap();
        assert_eq!(parsed.base, "http://127.0.0.1:6006");
        assert_eq!(parsed.project, "agents");
        let parsed = PhoenixSource::parse("phoenix+https://h:6006").unwrap();
        assert_eq!(parsed.base, "https://h:6006");
        assert_eq!(parsed.project, "default");
        assert!(PhoenixSource::parse("phoenix+ftp://h").is_err());
        assert!(PhoenixSource::parse("phoenix+http://h/a/b").is_err());
    }

    #[test]
    fn phoenix_spans_become_spec_otlp_json() {
        // As Phoenix 20.26.1 answers (abridged).
        let span = json!({"attributes":[{"key":"openinference.span.kind","value":{"array_value":null,
            "string_value":"TOOL"}}],"kind":"SPAN_KIND_INTERNAL","parent_span_id":null,
            "span_id":"0f6e5fda6917c73b","status":{"code":2,"message":"not found"},
            "trace_id":"962a5c5c364e787fef40089c67381a31","start_time_unix_nano":1796117417237498112u64});
        assert_eq!(
            to_spec_json(span, None),
            json!({"attributes":[{"key":"openinference.span.kind","value":{"stringValue":"TOOL"}}],
                "kind":1,"spanId":"0f6e5fda6917c73b","status":{"code":2,"message":"not found"},
                "traceId":"962a5c5c364e787fef40089c67381a31","startTimeUnixNano":1796117417237498112u64})
        );
    }

    #[test]
    fn any_failing_annotation_fails_the_invocation() {
        let pass = Annotation {
            span_id: "a".into(),
            name: "helpfulness".into(),
            annotator_kind: "HUMAN".into(),
            result: Some(AnnotationResult {
                label: Some("helpful".into()),
                score: Some(1.0),
                explanation: None,
            }),
        };
        let fail = Annotation {
            span_id: "b".into(),
            name: "correctness".into(),
            annotator_kind: "LLM".into(),
            result: Some(AnnotationResult {
                label: Some("Incorrect".into()),
                score: Some(0.0),
                explanation: Some("wrong tool".into()),
            }),
        };
        let v = verdict(&[&pass, &fail]);
        assert!(!v.passed);
        assert_eq!(v.label, "correctness=Incorrect (LLM)");
        assert_eq!(v.reason, "wrong tool");
        assert!(verdict(&[&pass]).passed);
    }
}
