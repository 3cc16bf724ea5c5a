//! The evaluator on a small hand-built store: every field, the spans that matched, payloads
//! and hidden values searched only when revealed, and the exact substring and fuzzy tests.

use super::*;
use crate::model::{
    ArcStr, AttrValue, Batch, ErrorInfo, EvalVerdict, LlmFacts, Payload, Span, SpanKind,
    SpanStatus, ToolFacts,
};
use crate::redact::Reveal;
use crate::store::Store;

fn span(trace: &str, id: &str, parent: Option<&str>, name: &str, kind: SpanKind) -> Span {
    Span {
        trace_id: trace.into(),
        span_id: id.into(),
        parent_span_id: parent.map(Into::into),
        name: name.into(),
        kind,
        start_unix_nano: 1_000_000_000,
        end_unix_nano: 1_500_000_000,
        provenance: crate::model::Provenance::shared(None, None, "otlp-json".into()),
        ..Default::default()
    }
}

/// Two runs: `t1` (ok, gpt-4o planner, one search tool, 3 s long) and `t2` (degraded: a failed
/// refund tool whose error says "(non-fatal)", argument ORD-4040 only in the payload).
fn sample_store() -> Store {
    let mut root1 = span("t1", "a1", None, "plan trip", SpanKind::Agent);
    root1.end_unix_nano = 4_000_000_000;
    root1.set_service(Some(ArcStr::from("travel-svc")));
    root1.attributes = vec![
        (
            ArcStr::from("gen_ai.conversation.id"),
            AttrValue::Str("conv-7".into()),
        ),
        (ArcStr::from("api_key"), AttrValue::Str("hunter2".into())),
    ]
    .into();
    let mut llm1 = span("t1", "b1", Some("a1"), "chat", SpanKind::Llm);
    llm1.set_llm(Some(Box::new(LlmFacts {
        provider: Some("openai".into()),
        model: Some("gpt-4o".into()),
        input_tokens: Some(800).into(),
        output_tokens: Some(400).into(),
        ..Default::default()
    })));
    let mut tool1 = span("t1", "c1", Some("a1"), "execute_tool", SpanKind::Tool);
    tool1.set_tool(Some(Box::new(ToolFacts {
        name: Some("search_flights".into()),
        call_id: Some("call_xyz".into()),
    })));
    tool1.attributes = vec![(ArcStr::from("http.status_code"), AttrValue::Int(200))].into();

    let root2 = span("t2", "a2", None, "support run", SpanKind::Agent);
    let mut tool2 = span("t2", "c2", Some("a2"), "execute_tool", SpanKind::Tool);
    tool2.status = SpanStatus::Error;
    tool2.set_error(Some(ErrorInfo {
        error_type: Some("RefundError".into()),
        message: Some("refund backend timeout (non-fatal)".into()),
        ..Default::default()
    }));
    tool2.set_tool(Some(Box::new(ToolFacts {
        name: Some("refund".into()),
        call_id: Some("call_r1".into()),
    })));
    tool2
        .set_input(Payload::inline("gen_ai.tool.call.arguments", r#"{"order":"ORD-4040"}"#).into());
    tool2.set_format("openai-agents".into());

    let mut store = Store::new();
    store.ingest(Batch {
        spans: vec![root1, llm1, tool1, root2, tool2],
        evals: vec![(
            "t2".into(),
            EvalVerdict {
                passed: false,
                score: Some(0.4),
                label: "unhelpful".into(),
                reason: "agent never confirmed the refund".into(),
                ..Default::default()
            },
        )],
        ..Default::default()
    });
    store
}

/// Matching run ids, and for each the matched span ids.
fn run(store: &Store, query: &str, reveal: Reveal) -> Vec<(String, Vec<String>)> {
    let q = Query::parse(query).unwrap_or_else(|e| panic!("{query:?}: {e}"));
    let ctx = Context {
        reveal,
        gold: &NoGold,
        ..Context::default()
    };
    store
        .oldest_first()
        .into_iter()
        .filter_map(|inv| {
            q.matches(inv, &ctx).map(|m| {
                let spans = m
                    .spans
                    .iter()
                    .map(|&i| inv.spans[i].span_id.to_string())
                    .collect();
                (inv.id.to_string(), spans)
            })
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

fn ids(store: &Store, query: &str) -> Vec<String> {
    run(store, query, Reveal::Redacted)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

#[test]
fn evaluator_covers_every_field() {
    let store = sample_store();
    let cases: &[(&str, &[&str])] = &[
        ("", &["t1", "t2"]),
        ("is:failing", &["t2"]),
        ("is:degraded", &["t2"]),
        ("is:error", &[]),
        ("is:eval-failed", &["t2"]),
        ("is:gold-mismatch", &[]),
        ("is:ok", &["t1"]),
        ("kind:llm", &["t1"]),
        ("kind:tool", &["t1", "t2"]),
        ("tool:refund", &["t2"]),
        ("tool:SEARCH", &["t1"]),
        ("model:gpt", &["t1"]),
        ("provider:openai", &["t1"]),
        ("service:travel", &["t1"]),
        ("name:support", &["t2"]),
        ("format:openai-agents", &["t2"]),
        ("id:t2", &["t2"]),
        ("id:call_x", &["t1"]),
        ("attr:http.status_code", &["t1"]),
        ("attr:http.status_code=200", &["t1"]),
        ("attr:http.status_code=500", &[]),
        ("conv:conv-7", &["t1"]),
        ("conv:conv-8", &[]),
        ("dur>2s", &["t1"]),
        ("dur<=500ms", &["t2"]),
        ("tokens>=1000", &["t1"]),
        ("tokens>1200", &[]),
        ("score<0.8", &["t2"]),
        ("score>0.8", &[]),
        ("spans>2", &["t1"]),
        ("spans=2", &["t2"]),
        ("tools>0", &["t1", "t2"]),
        ("tools>1", &[]),
        // Exact text: error messages, evaluator reasons, attribute values.
        ("\"(non-fatal)\"", &["t2"]),
        ("\"NEVER CONFIRMED\"", &["t2"]),
        ("\"200\"", &["t1"]),
        // A secret attribute value is never searched.
        ("\"hunter2\"", &[]),
        // Redacted payloads are never searched.
        ("\"ORD-4040\"", &[]),
        // Bare words are fuzzy over names and never over ids.
        ("srchflt", &["t1"]),
        ("refund", &["t2"]),
        ("call_xyz", &[]),
        // Operators.
        ("-tool:refund", &["t1"]),
        ("tool:refund | model:gpt", &["t1", "t2"]),
        ("kind:tool -(is:failing)", &["t1"]),
        ("kind:tool kind:llm", &["t1"]),
    ];
    for &(query, expected) in cases {
        assert_eq!(ids(&store, query), expected, "query {query:?}");
    }
}

#[test]
fn payload_text_is_searched_only_when_revealed() {
    let store = sample_store();
    assert!(run(&store, "\"ORD-4040\"", Reveal::Redacted).is_empty());
    assert_eq!(
        run(&store, "\"ord-4040\"", Reveal::Revealed),
        vec![("t2".to_string(), vec!["c2".to_string()])]
    );
}

/// A short message or argument is kept as a plain attribute, not a payload; the redacted view
/// hides it all the same, and so does a redacted search (a match would tell what it hides).
#[test]
fn a_short_payload_kept_as_an_attribute_is_searched_only_when_revealed() {
    let mut llm = span("t3", "m3", None, "chat", SpanKind::Llm);
    llm.attributes = vec![
        (
            ArcStr::from("gen_ai.input.messages"),
            AttrValue::Str(r#"[{"role":"user","content":"Q3 revenue"}]"#.into()),
        ),
        (
            ArcStr::from("gen_ai.tool.call.arguments"),
            AttrValue::Map(thin_vec::thin_vec![(
                "city".to_string(),
                AttrValue::Str("Kyoto".into())
            )]),
        ),
        (
            ArcStr::from("gen_ai.prompt"),
            AttrValue::Str("hello there".into()),
        ),
        (
            ArcStr::from("gen_ai.usage.input_tokens"),
            AttrValue::Int(42),
        ),
        (
            ArcStr::from("gen_ai.response.id"),
            AttrValue::Str("resp-9".into()),
        ),
    ]
    .into();
    let mut store = Store::new();
    store.ingest(Batch {
        spans: vec![llm],
        ..Default::default()
    });
    let matched = vec![("t3".to_string(), vec!["m3".to_string()])];
    for query in [
        "\"q3 revenue\"",
        "\"kyoto\"",
        "attr:gen_ai.prompt=\"hello there\"",
    ] {
        assert!(run(&store, query, Reveal::Redacted).is_empty(), "{query}");
        assert_eq!(run(&store, query, Reveal::Revealed), matched, "{query}");
    }
    // What the redacted view shows stays searchable: the key itself, counts and ids.
    assert_eq!(
        run(&store, "attr:gen_ai.input.messages", Reveal::Redacted),
        matched
    );
    assert_eq!(run(&store, "\"resp-9\"", Reveal::Redacted), matched);
    assert_eq!(
        run(
            &store,
            "attr:gen_ai.usage.input_tokens=42",
            Reveal::Redacted
        ),
        matched
    );
}

#[test]
fn evaluator_returns_the_spans_that_matched() {
    let store = sample_store();
    let spans_of = |q: &str| run(&store, q, Reveal::Redacted);
    assert_eq!(
        spans_of("kind:tool"),
        vec![
            ("t1".to_string(), vec!["c1".to_string()]),
            ("t2".to_string(), vec!["c2".to_string()]),
        ]
    );
    // ANDed span terms may be satisfied by different spans: both are returned.
    assert_eq!(
        spans_of("kind:llm tool:search"),
        vec![("t1".to_string(), vec!["b1".to_string(), "c1".to_string()])]
    );
    // Run-level terms hold for the run and add no spans; `is:` points at the failed spans.
    assert_eq!(
        spans_of("is:degraded"),
        vec![("t2".to_string(), vec!["c2".to_string()])]
    );
    assert_eq!(spans_of("conv:conv-7"), vec![("t1".to_string(), vec![])]);
    // Comparisons use the run's total and mark the spans that satisfy them on their own.
    assert_eq!(
        spans_of("dur>2s"),
        vec![("t1".to_string(), vec!["a1".to_string()])]
    );
}

#[test]
fn highlight_marks_substrings_and_fuzzy_characters() {
    let q = Query::parse("\"fatal\" tool:ref -plan").unwrap();
    // "(non-fatal) refund": `fatal` at 5..10, `ref` at 12..15; `-plan` marks nothing.
    assert_eq!(
        q.highlight("(non-fatal) refund plan"),
        vec![5, 6, 7, 8, 9, 12, 13, 14]
    );
    let q = Query::parse("srch").unwrap();
    assert_eq!(q.highlight("search"), vec![0, 3, 4, 5]);
    assert!(Query::all().highlight("anything").is_empty());
}

#[test]
fn gold_mismatch_comes_from_the_callers_gold_outcomes() {
    use crate::store::Invocation;
    use crate::triage::GoldOutcome;
    let store = sample_store();
    let t1_differs = |inv: &Invocation| {
        if inv.id == "t1" {
            GoldOutcome::Differs { score: 0.5 }
        } else {
            GoldOutcome::Unknown
        }
    };
    let ctx = Context {
        reveal: Reveal::Redacted,
        gold: &t1_differs,
        ..Context::default()
    };
    let matching = |q: &str| -> Vec<String> {
        let q = Query::parse(q).unwrap();
        let mut ids: Vec<String> = store
            .invocations()
            .filter(|inv| q.matches(inv, &ctx).is_some())
            .map(|inv| inv.id.to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(matching("is:gold-mismatch"), ["t1"]);
    assert_eq!(matching("is:failing"), ["t1", "t2"]);
    assert!(matching("is:ok").is_empty());
}

#[test]
fn label_and_noted_come_from_the_notes_in_the_context() {
    use crate::notes::{Note, Notes};
    let store = sample_store();
    let mut notes = Notes::default();
    notes.apply(Note::new("t2", None, "tool-bug", "refund backend flaps"));
    let ctx = Context {
        notes: &notes,
        ..Context::default()
    };
    let matching = |q: &str, ctx: &Context| -> Vec<String> {
        let q = Query::parse(q).unwrap();
        let mut ids: Vec<String> = store
            .invocations()
            .filter(|inv| q.matches(inv, ctx).is_some())
            .map(|inv| inv.id.to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(matching("label:tool-bug", &ctx), ["t2"]);
    assert_eq!(matching("label:TOOL-BUG", &ctx), ["t2"], "case-insensitive");
    assert!(matching("label:flaky", &ctx).is_empty());
    assert!(
        matching("label:tool", &ctx).is_empty(),
        "a label matches whole"
    );
    assert_eq!(matching("is:noted", &ctx), ["t2"]);
    assert_eq!(matching("is:unnoted", &ctx), ["t1"]);
    assert_eq!(
        matching("-is:noted is:degraded OR label:tool-bug", &ctx),
        ["t2"]
    );
    // Without notes nothing is noted.
    assert!(matching("is:noted", &Context::default()).is_empty());
    assert_eq!(matching("is:unnoted", &Context::default()), ["t1", "t2"]);
}

#[test]
fn text_hidden_by_the_masking_pass_is_not_matched() {
    let mut failing = span("m", "m1", None, "notify", SpanKind::Tool);
    failing.status = SpanStatus::Error;
    failing.set_error(Some(ErrorInfo {
        error_type: Some("MailError".into()),
        message: Some("bounced for alice@example.com".into()),
        ..Default::default()
    }));
    let mut store = Store::new();
    store.ingest(Batch {
        spans: vec![failing],
        ..Default::default()
    });
    // Redacted views mask the address, so searching for it must not confirm it is there.
    assert!(run(&store, "\"alice@example\"", Reveal::Redacted).is_empty());
    assert_eq!(run(&store, "\"alice@example\"", Reveal::Revealed).len(), 1);
    assert_eq!(run(&store, "\"bounced\"", Reveal::Redacted).len(), 1);
}

#[test]
fn case_insensitive_substring_is_exact_on_any_text() {
    let cases = [
        ("Upstream timed out (NON-FATAL)", "non-fatal", true),
        ("non-fata", "non-fatal", false),
        ("", "a", false),
        ("abc", "", true),
        ("café Ordre ORD-4040", "ord-4040", true),
        ("ÄÖÜ ord", "ord", true),
        ("aaab", "aab", true),
        ("xyz", "xyza", false),
        ("Grüße aus Köln", "köln", true),
    ];
    for (haystack, needle, want) in cases {
        assert_eq!(
            eval::contains_ci(haystack, needle),
            want,
            "{haystack:?} {needle:?}"
        );
        assert_eq!(
            haystack.to_lowercase().contains(needle),
            want,
            "the reference disagrees on {haystack:?} {needle:?}"
        );
    }
}

#[test]
fn fuzzy_words_match_exactly_when_the_skim_matcher_does() {
    use fuzzy_matcher::FuzzyMatcher;
    let skim = fuzzy_matcher::skim::SkimMatcherV2::default().ignore_case();
    let names = [
        "search_flights",
        "execute_tool search_flights",
        "Agent Run 12",
        "chat gpt-4o",
        "",
        "sf",
        "café lookup",
        "retrieve docs",
    ];
    let words = [
        "srchflt", "sf", "SF", "agt12", "gpt4", "a r", "zz", "caf", "", "docsx",
    ];
    for name in names {
        for word in words {
            let word = word.to_lowercase();
            assert_eq!(
                eval::fuzzy(name, &word),
                skim.fuzzy_match(name, &word).is_some(),
                "{name:?} {word:?}"
            );
        }
    }
}

/// The whole-value terms the failure summary's rows use select whole values only: a prefix or
/// a piece of the value does not match, a different case does.
#[test]
fn whole_value_terms_match_whole_values_only() {
    use crate::model::{Batch, Case, ErrorInfo, EvalVerdict, SpanStatus, ToolFacts};
    let mut tool = Span {
        trace_id: "w".into(),
        span_id: "tool".into(),
        parent_span_id: Some("root".into()),
        name: "execute_tool get_weather".into(),
        kind: SpanKind::Tool,
        status: SpanStatus::Error,
        start_unix_nano: 2,
        end_unix_nano: 3,
        provenance: crate::model::Provenance::shared(None, None, "test".into()),
        ..Default::default()
    };
    tool.set_tool(Some(Box::new(ToolFacts {
        name: Some("get_weather".into()),
        ..Default::default()
    })));
    tool.set_error(Some(ErrorInfo {
        error_type: Some("TimeoutError".into()),
        message: None,
        message_is_result: false,
    }));
    let root = Span {
        trace_id: "w".into(),
        span_id: "root".into(),
        name: "run".into(),
        start_unix_nano: 1,
        end_unix_nano: 4,
        provenance: crate::model::Provenance::shared(None, None, "test".into()),
        ..Default::default()
    };
    let mut store = Store::new();
    store.ingest(Batch {
        spans: vec![root, tool],
        evals: vec![(
            "w".into(),
            EvalVerdict {
                passed: false,
                label: "disobey user request".into(),
                reason: "First line\nsecond line".into(),
                ..Default::default()
            },
        )],
        cases: vec![(
            "w".into(),
            Case {
                id: "geo-01".into(),
                index: 0,
                index_is_repeat: false,
                task: None,
            },
        )],
        ..Default::default()
    });
    let inv = store.get("w").unwrap();
    let holds = |q: &str| {
        Query::parse(q)
            .unwrap()
            .matches(inv, &Context::default())
            .is_some()
    };
    for yes in [
        "eval:\"Disobey User Request\"",
        "reason:\"first line\"",
        "case-id:GEO-01",
        "error:timeouterror",
        "tool-failed:get_weather",
        "tool-failed:\"get_weather=TimeoutError\"",
    ] {
        assert!(holds(yes), "{yes}");
    }
    for no in [
        "eval:disobey",
        "reason:first",
        "reason:\"first line second line\"",
        "case-id:geo-0",
        "error:timeout",
        "tool-failed:get",
        "tool-failed:\"get_weather=Timeout\"",
        "tool-failed:get_weather=",
    ] {
        assert!(!holds(no), "{no}");
    }
}
