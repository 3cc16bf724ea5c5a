//! Redaction has no side doors: a secret planted in any free-text field the model carries never
//! reaches redacted output (dump text, dump JSON, the TUI's list, tree, detail and problems),
//! and personal data never reaches it while redacted. Secrets stay masked when revealed too.
//!
//! Every format normalizes into the one span model, so planting into every text field of the
//! model covers every field a format can carry text in; `hostile_files` also goes through real
//! parsers end to end.

use std::process::Command;

use proptest::prelude::*;
use toolcap::model::{
    AttrValue, Batch, ErrorInfo, EvalVerdict, LlmFacts, Problem, RequestedToolCall, RetrievalFacts,
    Span, SpanEvent, SpanExtras, SpanKind, SpanStatus, ToolFacts,
};
use toolcap::redact::{self, Reveal};
use toolcap::sources::load;
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;
use toolcap::views::dump;

use crate::support::{press, proptest_config, screen_text};

mod hostile_files;

/// Where a planted value goes.
#[derive(Debug, Clone, Copy)]
enum Field {
    SpanName,
    ToolName,
    Model,
    Provider,
    ErrorType,
    ErrorMessage,
    AttributeKey,
    AttributeValue,
    AttributeListValue,
    EventName,
    EventAttributeKey,
    EventAttribute,
    RequestedToolName,
    Service,
    NodeName,
    RetrievalQuery,
    EvalLabel,
    EvalReason,
    DisplayName,
    ProblemMessage,
}

const FIELDS: [Field; 20] = [
    Field::SpanName,
    Field::ToolName,
    Field::Model,
    Field::Provider,
    Field::ErrorType,
    Field::ErrorMessage,
    Field::AttributeKey,
    Field::AttributeValue,
    Field::AttributeListValue,
    Field::EventName,
    Field::EventAttributeKey,
    Field::EventAttribute,
    Field::RequestedToolName,
    Field::Service,
    Field::NodeName,
    Field::RetrievalQuery,
    Field::EvalLabel,
    Field::EvalReason,
    Field::DisplayName,
    Field::ProblemMessage,
];

/// A planted value: the text put into the field and the part that must never show.
#[derive(Debug, Clone)]
struct Plant {
    text: String,
    must_not_show: String,
    personal: bool,
}

fn body(min: usize, max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[A-Za-z0-9]{{{min},{max}}}")).unwrap()
}

fn luhn_complete(prefix: &[u8]) -> String {
    // Appends the check digit that makes the whole number pass Luhn.
    let sum: u32 = prefix
        .iter()
        .rev()
        .enumerate()
        .map(|(k, &d)| {
            let d = d as u32;
            if k % 2 == 0 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    let check = (10 - sum % 10) % 10;
    prefix
        .iter()
        .map(|d| char::from(b'0' + d))
        .chain(std::iter::once(char::from(b'0' + check as u8)))
        .collect()
}

fn secret() -> impl Strategy<Value = Plant> {
    let secret = |text: String, hidden: String| Plant {
        text,
        must_not_show: hidden,
        personal: false,
    };
    prop_oneof![
        7 => provider_key(),
        10 => other_secret(secret),
    ]
}

/// Provider keys and JWTs: recognised by their shape wherever they start.
fn provider_key() -> impl Strategy<Value = Plant> {
    let secret = |text: String, hidden: String| Plant {
        text,
        must_not_show: hidden,
        personal: false,
    };
    prop_oneof![
        body(24, 40).prop_map(move |b| secret(format!("sk-proj-{b}"), b)),
        body(24, 40).prop_map(move |b| secret(format!("sk-ant-api03-{b}"), b)),
        body(36, 36).prop_map(move |b| secret(format!("ghp_{b}"), b)),
        proptest::string::string_regex("[A-Z0-9]{16}")
            .unwrap()
            .prop_map(move |b| secret(format!("AKIA{b}"), b)),
        body(35, 35).prop_map(move |b| secret(format!("AIza{b}"), b)),
        body(30, 40).prop_map(move |b| secret(format!("hf_{b}"), b)),
        body(20, 30).prop_map(move |b| secret(format!("xoxb-12345-{b}"), b)),
        (body(10, 20), body(10, 20), body(10, 20))
            .prop_map(move |(a, b, c)| secret(format!("eyJ{a}.eyJ{b}.{c}"), format!("{a}.eyJ{b}"))),
    ]
}

/// A provider key glued to the text before it: inside a word, a path, a query or a name.
fn glued_key() -> impl Strategy<Value = Plant> {
    let glue =
        proptest::sample::select(&["tool_", "/v1/", "?key=", "cfg.", "x-", "api=", "bot"][..]);
    (glue, provider_key()).prop_map(|(glue, key)| Plant {
        text: format!("{glue}{}", key.text),
        ..key
    })
}

/// Secrets recognised by the words around them.
fn other_secret(
    secret: impl Fn(String, String) -> Plant + Copy + 'static,
) -> impl Strategy<Value = Plant> {
    prop_oneof![
        body(12, 30).prop_map(move |b| secret(format!("Bearer {b}"), b)),
        body(12, 30).prop_map(move |b| secret(format!("Authorization: Basic {b}=="), b)),
        body(8, 20).prop_map(move |b| secret(format!("pw={b}"), b)),
        body(8, 20).prop_map(move |b| secret(format!("password: {b}"), b)),
        body(8, 20).prop_map(move |b| secret(format!("\"api_key\": \"{b}\""), b)),
        body(8, 20).prop_map(move |b| secret(format!("{{\\\"client_secret\\\":\\\"{b}\\\"}}"), b)),
        body(8, 20).prop_map(move |b| secret(format!("access_token={b}&x=1"), b)),
        body(8, 20).prop_map(move |b| secret(format!("https://admin:{b}@db.example.com/x"), b)),
        body(20, 40).prop_map(move |b| secret(
            format!("-----BEGIN PRIVATE KEY-----\n{b}\n-----END PRIVATE KEY-----"),
            b
        )),
    ]
}

fn personal() -> impl Strategy<Value = Plant> {
    let personal = |text: String, hidden: String| Plant {
        text,
        must_not_show: hidden,
        personal: true,
    };
    prop_oneof![
        (
            proptest::string::string_regex("[a-z]{3,10}\\.[a-z]{3,10}").unwrap(),
            proptest::string::string_regex("[a-z]{3,10}").unwrap()
        )
            .prop_map(move |(local, domain)| {
                let address = format!("{local}@{domain}.com");
                personal(address.clone(), address)
            }),
        (100u32..999, 1000u32..9999).prop_map(move |(a, b)| {
            let number = format!("+1 415 {a} {b}");
            personal(number.clone(), format!("{a} {b}"))
        }),
        (100u32..999, 1000u32..9999).prop_map(move |(a, b)| {
            let number = format!("(212) {a}-{b}");
            personal(number.clone(), format!("{a}-{b}"))
        }),
        proptest::collection::vec(0u8..10, 14).prop_map(move |digits| {
            let mut prefix = vec![4u8];
            prefix.extend(digits);
            let card = luhn_complete(&prefix);
            let grouped: Vec<String> = card
                .as_bytes()
                .chunks(4)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect();
            personal(grouped.join(" "), card[4..12].to_owned())
        }),
    ]
}

const T0: u64 = 1_764_496_800_000_000_000;

/// A small run (root agent → llm → failing tool) with `plant` put into `field`.
fn hostile_batch(field: Field, plant: &str) -> Batch {
    let planted = format!("before {plant} after");
    let at = |f: Field| matches!((f, field), (a, b) if std::mem::discriminant(&a) == std::mem::discriminant(&b));
    let text = |f: Field, normal: &str| {
        if at(f) {
            planted.clone()
        } else {
            normal.to_owned()
        }
    };
    let mut root = Span {
        trace_id: "t1".into(),
        span_id: "root".into(),
        name: text(Field::SpanName, "agent run").into(),
        kind: SpanKind::Agent,
        start_unix_nano: T0,
        end_unix_nano: T0 + 9_000_000,
        provenance: toolcap::model::Provenance::shared(
            None,
            Some(&text(Field::Service, "svc").into()),
            "test".into(),
        ),
        ..Default::default()
    };
    root.identity_mut().node.node_name = Some(text(Field::NodeName, "plan").into());
    root.attributes.push((
        text(Field::AttributeKey, "label").into(),
        AttrValue::Str("kept".into()),
    ));
    root.attributes.push((
        "note".into(),
        AttrValue::Str(text(Field::AttributeValue, "plain value").into()),
    ));
    root.attributes.push((
        "tags".into(),
        AttrValue::List(vec![AttrValue::Str(text(Field::AttributeListValue, "a").into())].into()),
    ));
    root.push_event(SpanEvent {
        time_unix_nano: T0 + 1,
        name: text(Field::EventName, "started").into(),
        attributes: vec![
            (
                "detail".into(),
                AttrValue::Str(text(Field::EventAttribute, "fine").into()),
            ),
            (
                text(Field::EventAttributeKey, "step").into(),
                AttrValue::Str("kept".into()),
            ),
        ]
        .into(),
    });
    let llm = Span {
        trace_id: "t1".into(),
        span_id: "llm".into(),
        parent_span_id: Some("root".into()),
        name: "chat".into(),
        kind: SpanKind::Llm,
        start_unix_nano: T0 + 1_000_000,
        end_unix_nano: T0 + 2_000_000,
        provenance: toolcap::model::Provenance::shared(None, None, "test".into()),
        facts: toolcap::model::KindFacts::from(Box::new(LlmFacts {
            provider: Some(text(Field::Provider, "openai").into()),
            model: Some(text(Field::Model, "gpt-4o").into()),
            requested_tool_calls: vec![RequestedToolCall {
                id: Some("call_1".into()),
                name: text(Field::RequestedToolName, "lookup").into(),
            }]
            .into(),
            ..Default::default()
        })),
        ..Default::default()
    };
    let tool = Span {
        trace_id: "t1".into(),
        span_id: "tool".into(),
        parent_span_id: Some("root".into()),
        name: "execute_tool".into(),
        kind: SpanKind::Tool,
        status: SpanStatus::Error,
        start_unix_nano: T0 + 3_000_000,
        end_unix_nano: T0 + 4_000_000,
        provenance: toolcap::model::Provenance::shared(None, None, "test".into()),
        facts: toolcap::model::KindFacts::from(Box::new(ToolFacts {
            name: Some(text(Field::ToolName, "lookup").into()),
            call_id: Some("call_1".into()),
        })),
        extras: SpanExtras {
            error: Some(ErrorInfo {
                error_type: Some(text(Field::ErrorType, "Timeout").into()),
                message: Some(text(Field::ErrorMessage, "gave up").into()),
                message_is_result: false,
            }),
            ..Default::default()
        }
        .into(),
        ..Default::default()
    };
    let retrieval = Span {
        trace_id: "t1".into(),
        span_id: "search".into(),
        parent_span_id: Some("root".into()),
        name: "search".into(),
        kind: SpanKind::Retrieval,
        start_unix_nano: T0 + 5_000_000,
        end_unix_nano: T0 + 6_000_000,
        provenance: toolcap::model::Provenance::shared(None, None, "test".into()),
        facts: toolcap::model::KindFacts::from(Box::new(RetrievalFacts {
            query: Some(text(Field::RetrievalQuery, "weather").into()),
            document_count: Some(2),
        })),
        ..Default::default()
    };
    let mut batch = Batch {
        spans: vec![root, llm, tool, retrieval],
        ..Default::default()
    };
    batch.evals.push((
        "t1".into(),
        EvalVerdict {
            passed: false,
            score: Some(0.5),
            label: text(Field::EvalLabel, "wrong"),
            reason: text(Field::EvalReason, "missed a call"),
            ..Default::default()
        },
    ));
    if at(Field::DisplayName) {
        batch.invocation_names.push(("t1".into(), planted.clone()));
    }
    batch.problems.push(Problem::warning(
        "hostile.jsonl",
        Some(3),
        text(Field::ProblemMessage, "odd line"),
    ));
    batch
}

/// Everything the TUI draws for the run: list, tree, the detail of every span, problems.
fn tui_screens(store: Store, mode: Reveal) -> String {
    let mut app = App::new(store, config::from_toml("", false), mode);
    app::update(
        &mut app,
        Action::Resize {
            width: 200,
            height: 60,
        },
    );
    let mut out = screen_text(&app);
    press(&mut app, "<tab>");
    for _ in 0..5 {
        press(&mut app, "<tab>");
        out.push_str(&screen_text(&app));
        press(&mut app, "<s-tab><down>");
        out.push_str(&screen_text(&app));
    }
    press(&mut app, "p");
    out.push_str(&screen_text(&app));
    out
}

fn outputs(field: Field, plant: &str, mode: Reveal, with_tui: bool) -> Vec<(&'static str, String)> {
    let mut store = Store::new();
    store.ingest(hostile_batch(field, plant));
    let mut out = vec![
        ("dump text", dump::to_text(&store, mode)),
        (
            "dump json",
            serde_json::to_string(&dump::to_json(&store, mode)).unwrap(),
        ),
    ];
    if with_tui {
        out.push(("tui", tui_screens(store, mode)));
    }
    out
}

fn assert_hidden(field: Field, plant: &Plant, mode: Reveal, with_tui: bool) {
    let views = outputs(field, &plant.text, mode, with_tui);
    for (view, text) in &views {
        assert!(
            !text.contains(&plant.must_not_show),
            "{view} ({mode:?}) shows {:?} planted in {field:?} as {:?}",
            plant.must_not_show,
            plant.text
        );
    }
    // The planted field really is drawn by some view (so the test can fail); a retrieval
    // query is a payload, shown as its size while redacted.
    if with_tui && !(matches!(field, Field::RetrievalQuery) && mode == Reveal::Redacted) {
        assert!(
            views.iter().any(|(_, text)| text.contains("before")),
            "planted field {field:?} never rendered"
        );
    }
}

proptest! {
    #![proptest_config(proptest_config(96))]

    #[test]
    fn planted_secrets_never_show_in_dump(field in proptest::sample::select(&FIELDS[..]), plant in secret()) {
        assert_hidden(field, &plant, Reveal::Redacted, false);
        assert_hidden(field, &plant, Reveal::Revealed, false);
    }

    #[test]
    fn planted_keys_glued_to_text_never_show_in_dump(field in proptest::sample::select(&FIELDS[..]), plant in glued_key()) {
        assert_hidden(field, &plant, Reveal::Redacted, false);
        assert_hidden(field, &plant, Reveal::Revealed, false);
    }

    #[test]
    fn planted_personal_data_never_shows_in_redacted_dump(field in proptest::sample::select(&FIELDS[..]), plant in personal()) {
        assert_hidden(field, &plant, Reveal::Redacted, false);
    }
}

proptest! {
    #![proptest_config(proptest_config(24))]

    #[test]
    fn planted_secrets_and_personal_data_never_show_in_the_tui(field in proptest::sample::select(&FIELDS[..]), plant in prop_oneof![secret(), personal()]) {
        assert_hidden(field, &plant, Reveal::Redacted, true);
        if !plant.personal {
            assert_hidden(field, &plant, Reveal::Revealed, true);
        }
    }
}

/// Every field, deterministically, with one secret and one personal datum, all views.
#[test]
fn every_field_hides_a_planted_secret_and_address_in_every_view() {
    let secret = Plant {
        text: "pw=hunter2-zq8X and sk-abcdefghijklmnopqrstuvwx".into(),
        must_not_show: "hunter2".into(),
        personal: false,
    };
    let key = Plant {
        text: "sk-abcdefghijklmnopqrstuvwx".into(),
        must_not_show: "abcdefghijklmnop".into(),
        personal: false,
    };
    let mail = Plant {
        text: "write to jane.roe@example.org".into(),
        must_not_show: "jane.roe".into(),
        personal: true,
    };
    let glued = Plant {
        text: "tool_sk-proj-M4nB7vC1xZ9lK2jH5gF8dS3aQ6wE0rT and /p?key=AIzaSyD4k9Lm2Nq7Rs1Tv6Wx3Yz8Ab5Cd0Ef2Gh"
            .into(),
        must_not_show: "M4nB7vC1x".into(),
        personal: false,
    };
    let card = Plant {
        text: "card 4111 1111 1111 1111".into(),
        must_not_show: "1111 1111".into(),
        personal: true,
    };
    for field in FIELDS {
        for plant in [&secret, &key, &mail, &glued, &card] {
            assert_hidden(field, plant, Reveal::Redacted, true);
        }
    }
}

/// A failed tool's result text is a payload: redacted, only its error type and size show.
#[test]
fn tool_result_errors_show_only_when_revealed() {
    let mut batch = hostile_batch(Field::SpanName, "x");
    batch.spans[2].set_error(Some(ErrorInfo {
        error_type: Some("isError".into()),
        message: Some("the customer's diagnosis is flu".into()),
        message_is_result: true,
    }));
    let mut store = Store::new();
    store.ingest(batch);
    let redacted = dump::to_text(&store, Reveal::Redacted)
        + &dump::to_json(&store, Reveal::Redacted).to_string();
    assert!(!redacted.contains("diagnosis"), "{redacted}");
    assert!(redacted.contains("isError"));
    assert!(redacted.contains("tool result hidden (31 chars"));
    let revealed = dump::to_text(&store, Reveal::Revealed);
    assert!(revealed.contains("diagnosis"), "{revealed}");
    let tui = tui_screens(store, Reveal::Redacted);
    assert!(
        !tui.contains("diagnosis") && tui.contains("tool result hidden"),
        "{tui}"
    );
}

/// Reports and copies (other modules) print trace text through this one function.
#[test]
fn the_shared_masking_function_masks_what_reports_and_copies_print() {
    let text =
        "tool lookup failed: password=hunter2 for jane@example.org, key sk-abcdefghijklmnopqrstu";
    let redacted = redact::shown_line(text, Reveal::Redacted);
    assert!(
        !redacted.contains("hunter2")
            && !redacted.contains("jane@")
            && !redacted.contains("abcdefghijklmnop")
    );
    let revealed = redact::shown_line(text, Reveal::Revealed);
    assert!(!revealed.contains("hunter2") && !revealed.contains("abcdefghijklmnop"));
    assert!(revealed.contains("jane@example.org"));
    // Even the mode-less sanitizer masks secrets.
    assert!(!redact::sanitize_line(text).contains("hunter2"));
}
