//! `jaeger+http://…?service=S&since=…` read through Jaeger's api/v3, against a local server
//! (127.0.0.1) answering as Jaeger's api/v3 documentation and `query_service.proto` define:
//! `GET /api/v3/traces` (search; here answered in two pages, one `{"result": TracesData}`
//! after another) and `GET /api/v3/traces/{id}`, errors as `{"error": {"httpCode",
//! "message"}}`. No Jaeger binary can be installed here, so these answers are written from the
//! documentation. The spans are those of tests/fixtures/corpus/otel-collector/plain.otlp.jsonl,
//! and `dump --json` of the Jaeger source must equal `dump --json` of that file.

use std::collections::{BTreeMap, HashMap};
use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

const PLAIN: &str = "tests/fixtures/corpus/otel-collector/plain.otlp.jsonl";
const SERVICE: &str = "collector-fixture";

#[derive(Default)]
struct Jaeger {
    /// Full `TracesData` per hex trace id.
    traces: BTreeMap<String, Value>,
    /// Trace ids that answer with an error body.
    failing: Vec<String>,
    /// The query string of every search.
    searches: Mutex<Vec<HashMap<String, String>>>,
}

/// Groups the fixture's spans by trace, each trace one TracesData with the spans' resource.
fn traces_of_fixture() -> BTreeMap<String, Value> {
    let mut traces: BTreeMap<String, Vec<(Value, Value, Value)>> = BTreeMap::new();
    for line in std::fs::read_to_string(PLAIN).unwrap().lines() {
        let request: Value = serde_json::from_str(line).unwrap();
        for resource in request["resourceSpans"].as_array().unwrap() {
            for scope in resource["scopeSpans"].as_array().unwrap() {
                for span in scope["spans"].as_array().unwrap() {
                    let id = span["traceId"].as_str().unwrap().to_owned();
                    traces.entry(id).or_default().push((
                        resource["resource"].clone(),
                        scope["scope"].clone(),
                        span.clone(),
                    ));
                }
            }
        }
    }
    traces
        .into_iter()
        .map(|(id, spans)| {
            let resource_spans: Vec<Value> = spans
                .into_iter()
                .map(|(resource, scope, span)| {
                    json!({"resource": resource, "scopeSpans": [{"scope": scope, "spans": [span]}]})
                })
                .collect();
            (id, json!({"resourceSpans": resource_spans}))
        })
        .collect()
}

/// The first span of a trace only: a search page need not hold whole traces.
fn first_span(trace: &Value) -> Value {
    json!({"resourceSpans": [trace["resourceSpans"][0].clone()]})
}

async fn search(
    State(jaeger): State<Arc<Jaeger>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    jaeger.searches.lock().unwrap().push(query.clone());
    if query.get("query.service_name").map(String::as_str) != Some(SERVICE) {
        let error = json!({"error": {"httpCode": 404, "message": "trace not found"}});
        return (StatusCode::NOT_FOUND, error.to_string()).into_response();
    }
    let traces: Vec<&Value> = jaeger.traces.values().collect();
    let page_one = json!({"result": {"resourceSpans": [
        first_span(traces[0])["resourceSpans"][0].clone(),
        first_span(traces[1])["resourceSpans"][0].clone(),
    ]}});
    let page_two = json!({"result": first_span(traces[2])});
    format!("{page_one}\n{page_two}\n").into_response()
}

async fn one_trace(State(jaeger): State<Arc<Jaeger>>, Path(id): Path<String>) -> Response {
    if jaeger.failing.contains(&id) {
        let error = json!({"error": {"httpCode": 500, "message": "storage unavailable"}});
        return (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response();
    }
    match jaeger.traces.get(&id) {
        Some(trace) => json!({"result": trace}).to_string().into_response(),
        None => {
            let error = json!({"error": {"httpCode": 404, "message": "trace not found"}});
            (StatusCode::NOT_FOUND, error.to_string()).into_response()
        }
    }
}

/// Starts the server on 127.0.0.1; returns its address (the runtime must outlive the test).
fn start(runtime: &tokio::runtime::Runtime, jaeger: Arc<Jaeger>) -> String {
    runtime.block_on(async {
        let app = Router::new()
            .route("/api/v3/traces", get(search))
            .route("/api/v3/traces/{id}", get(one_trace))
            .with_state(jaeger);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    })
}

fn dump(source: &str) -> (Option<i32>, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json", source])
        .env_remove("TOOLCAP_TOKEN")
        .output()
        .unwrap();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code(),
        doc,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn search_and_traces_load_as_the_equivalent_otlp_file() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let jaeger = Arc::new(Jaeger {
        traces: traces_of_fixture(),
        ..Jaeger::default()
    });
    assert_eq!(jaeger.traces.len(), 3);
    let addr = start(&runtime, jaeger.clone());

    let (code, from_jaeger, stderr) =
        dump(&format!("jaeger+http://{addr}?service={SERVICE}&since=2h"));
    assert_eq!(code, Some(0), "{stderr}");
    let (_, from_file, _) = dump(PLAIN);
    assert_eq!(from_jaeger["problems"], json!([]));
    assert_eq!(from_jaeger["invocations"], from_file["invocations"]);
    assert_eq!(from_jaeger["invocations"].as_array().unwrap().len(), 3);

    let searches = jaeger.searches.lock().unwrap();
    assert_eq!(searches.len(), 1);
    let search = &searches[0];
    let bound = |key: &str| {
        time::OffsetDateTime::parse(&search[key], &time::format_description::well_known::Rfc3339)
            .unwrap_or_else(|e| panic!("{key}={}: {e}", search[key]))
    };
    let window = bound("query.start_time_max") - bound("query.start_time_min");
    assert_eq!(window.whole_hours(), 2);
    assert!(search.contains_key("query.search_depth"));
}

#[test]
fn an_error_answer_is_a_problem_naming_it_and_the_other_traces_load() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let traces = traces_of_fixture();
    let failing = traces.keys().nth(1).unwrap().clone();
    let addr = start(
        &runtime,
        Arc::new(Jaeger {
            traces,
            failing: vec![failing.clone()],
            ..Jaeger::default()
        }),
    );
    let (code, doc, _) = dump(&format!("jaeger+http://{addr}?service={SERVICE}"));
    assert_eq!(code, Some(0));
    let ids: Vec<&str> = doc["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(!ids.contains(&failing.as_str()));
    let problems = doc["problems"].to_string();
    assert!(
        problems.contains(&format!(
            "trace {failing}: Jaeger error 500: storage unavailable"
        )),
        "{problems}"
    );

    // A search that fails as a whole: nothing loads, exit 2, the reason on stderr.
    let (code, _, stderr) = dump(&format!(
        "jaeger+http://{addr}?service={SERVICE}&since=later"
    ));
    assert_eq!(code, Some(2));
    assert!(stderr.contains("since=later"), "{stderr}");
}
