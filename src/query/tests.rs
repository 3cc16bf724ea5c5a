//! Table-driven tests of the grammar (every field, operator, quoting, negation, error position)
//! and of the evaluator on a small hand-built store.

use super::*;
use crate::model::{
    ArcStr, AttrValue, Batch, ErrorInfo, EvalVerdict, LlmFacts, Payload, Span, SpanKind,
    SpanStatus, ToolFacts,
};
use crate::redact::Reveal;
use crate::store::Store;

fn term(t: Term) -> Expr {
    Expr::Term(t)
}
fn fuzzy(w: &str) -> Expr {
    term(Term::Fuzzy(w.into()))
}
fn text(w: &str) -> Expr {
    term(Term::Text(w.into()))
}
fn not(e: Expr) -> Expr {
    Expr::Not(Box::new(e))
}
fn cmp(metric: Metric, op: CmpOp, value: f64) -> Expr {
    term(Term::Compare { metric, op, value })
}

#[test]
fn grammar_parses_every_field_operator_and_form() {
    use Term::*;
    let cases: Vec<(&str, Expr)> = vec![
        // Bare words are fuzzy and lower-cased; spaces AND them.
        ("Search", fuzzy("search")),
        ("a b", Expr::And(vec![fuzzy("a"), fuzzy("b")])),
        // Quoting.
        ("\"Non-Fatal\"", text("non-fatal")),
        ("\"two words\"", text("two words")),
        (r#""say \"hi\"""#, text("say \"hi\"")),
        (r#""back\\slash""#, text("back\\slash")),
        // Negation.
        ("-foo", not(fuzzy("foo"))),
        ("-\"x y\"", not(text("x y"))),
        ("--foo", not(not(fuzzy("foo")))),
        ("-(a | b)", not(Expr::Or(vec![fuzzy("a"), fuzzy("b")]))),
        ("gpt-4o", fuzzy("gpt-4o")),
        // Alternatives and grouping; AND binds tighter than OR.
        ("a OR b", Expr::Or(vec![fuzzy("a"), fuzzy("b")])),
        ("a|b", Expr::Or(vec![fuzzy("a"), fuzzy("b")])),
        (
            "a or b",
            Expr::And(vec![fuzzy("a"), fuzzy("or"), fuzzy("b")]),
        ),
        (
            "a b OR c",
            Expr::Or(vec![Expr::And(vec![fuzzy("a"), fuzzy("b")]), fuzzy("c")]),
        ),
        (
            "a (b OR c)",
            Expr::And(vec![fuzzy("a"), Expr::Or(vec![fuzzy("b"), fuzzy("c")])]),
        ),
        ("((a))", fuzzy("a")),
        // Every field.
        ("is:failing", term(Is(IsFacet::Failing))),
        ("is:error", term(Is(IsFacet::Error))),
        ("is:degraded", term(Is(IsFacet::Degraded))),
        ("is:eval-failed", term(Is(IsFacet::EvalFailed))),
        ("is:gold-mismatch", term(Is(IsFacet::GoldMismatch))),
        ("IS:OK", term(Is(IsFacet::Ok))),
        ("kind:llm", term(Kind(SpanKind::Llm))),
        ("kind:Tool", term(Kind(SpanKind::Tool))),
        ("kind:retrieval", term(Kind(SpanKind::Retrieval))),
        ("tool:Search_Orders", term(Tool("search_orders".into()))),
        ("model:gpt-4o", term(Model("gpt-4o".into()))),
        ("provider:openai", term(Provider("openai".into()))),
        ("service:checkout", term(Service("checkout".into()))),
        ("name:plan", term(Name("plan".into()))),
        ("name:\"plan step\"", term(Name("plan step".into()))),
        ("format:otlp-json", term(Format("otlp-json".into()))),
        ("source:runs/a.jsonl", term(Source("runs/a.jsonl".into()))),
        ("id:4bf9", term(Id("4bf9".into()))),
        ("conv:c-42", term(Conv("c-42".into()))),
        (
            "attr:gen_ai.system",
            term(Attr {
                key: "gen_ai.system".into(),
                value: None,
            }),
        ),
        (
            "attr:http.status_code=500",
            term(Attr {
                key: "http.status_code".into(),
                value: Some("500".into()),
            }),
        ),
        (
            "attr:order=\"ORD 1\"",
            term(Attr {
                key: "order".into(),
                value: Some("ord 1".into()),
            }),
        ),
        // Every comparison operator and unit.
        ("dur>2s", cmp(Metric::Duration, CmpOp::Gt, 2000.0)),
        ("dur>=150ms", cmp(Metric::Duration, CmpOp::Ge, 150.0)),
        ("dur<1.5m", cmp(Metric::Duration, CmpOp::Lt, 90_000.0)),
        ("dur<=250", cmp(Metric::Duration, CmpOp::Le, 250.0)),
        ("dur>1h", cmp(Metric::Duration, CmpOp::Gt, 3_600_000.0)),
        ("dur>500us", cmp(Metric::Duration, CmpOp::Gt, 0.5)),
        ("tokens>=1000", cmp(Metric::Tokens, CmpOp::Ge, 1000.0)),
        ("tokens>2k", cmp(Metric::Tokens, CmpOp::Gt, 2000.0)),
        ("score<0.8", cmp(Metric::Score, CmpOp::Lt, 0.8)),
        ("score=1", cmp(Metric::Score, CmpOp::Eq, 1.0)),
        ("spans>100", cmp(Metric::Spans, CmpOp::Gt, 100.0)),
        ("tools>3", cmp(Metric::Tools, CmpOp::Gt, 3.0)),
        // Mixed.
        (
            "is:failing -tool:search (model:gpt OR dur>2s)",
            Expr::And(vec![
                term(Is(IsFacet::Failing)),
                not(term(Tool("search".into()))),
                Expr::Or(vec![
                    term(Model("gpt".into())),
                    cmp(Metric::Duration, CmpOp::Gt, 2000.0),
                ]),
            ]),
        ),
    ];
    for (query, expected) in cases {
        let parsed = Query::parse(query).unwrap_or_else(|e| panic!("{query:?}: {e}"));
        assert_eq!(parsed.expr(), Some(&expected), "query {query:?}");
    }
}

#[test]
fn blank_queries_match_everything() {
    for q in ["", "   ", "\t"] {
        assert!(Query::parse(q).unwrap().is_empty(), "{q:?}");
    }
}

#[test]
fn bad_queries_report_the_char_position() {
    // (query, position of the error, a word of the message)
    let cases: &[(&str, usize, &str)] = &[
        ("\"open", 0, "unclosed quote"),
        ("ab \"open", 3, "unclosed quote"),
        ("(a b", 0, "unclosed parenthesis"),
        ("a (b (c)", 2, "unclosed parenthesis"),
        ("a b)", 3, "unmatched"),
        ("()", 0, "empty parentheses"),
        ("OR a", 0, "OR needs"),
        ("a OR", 2, "OR needs"),
        ("a | | b", 4, "OR needs"),
        ("(a |)", 3, "OR needs"),
        ("- a", 0, "must be followed"),
        ("a -", 2, "must be followed"),
        ("\"\"", 0, "empty quotes"),
        ("is:broken", 3, "unknown `is:` value"),
        ("kind:robot", 5, "unknown kind"),
        ("colour:red", 0, "unknown field"),
        ("x é:y", 2, "unknown field"),
        ("tool:", 5, "needs a value"),
        ("é tool:", 7, "needs a value"),
        ("attr:=v", 5, "needs a key"),
        ("dur>", 4, "expected a number"),
        ("dur>fast", 4, "not a number"),
        ("dur>2parsecs", 5, "unknown duration unit"),
        ("tokens>5x", 8, "unexpected"),
        ("score<0.5s", 9, "unexpected"),
        ("spans:3", 5, "compare spans"),
        ("ab\"cd\"", 2, "quote may start"),
    ];
    for &(query, position, word) in cases {
        match Query::parse(query) {
            Ok(q) => panic!("{query:?} parsed as {:?}", q.expr()),
            Err(e) => {
                assert_eq!(e.position, position, "{query:?}: {e}");
                assert!(e.message.contains(word), "{query:?}: {e}");
            }
        }
    }
}

#[test]
fn hostile_queries_error_instead_of_panicking() {
    let deep = "(".repeat(10_000);
    assert!(Query::parse(&deep).is_err());
    let negs = "-".repeat(10_000) + "a";
    assert!(Query::parse(&negs).is_err());
    let long = "a ".repeat(5_000);
    assert!(Query::parse(&long).is_err());
    for q in [
        "\u{0}", "\"\\", "a:\"", "dur>>1", "dur>.", ")(", "é\"", "-|", "id:\"\"",
    ] {
        let _ = Query::parse(q);
    }
}

#[test]
fn narrowing_is_recognised_only_when_safe() {
    let n = |new: &str, old: &str| {
        Query::parse(new)
            .unwrap()
            .narrows(&Query::parse(old).unwrap())
    };
    assert!(n("sea", ""));
    assert!(n("sear", "sea"));
    assert!(n("sea is:error", "sea"));
    assert!(n("\"non-fatal\"", "\"non-f\""));
    assert!(n("tool:search_o", "tool:search"));
    assert!(n("id:4bf92", "id:4bf"));
    assert!(!n("se", "sea"));
    assert!(!n("-sear", "-sea"));
    assert!(!n("a OR b", "a"));
    assert!(!n("", "a"));
    // More cases, each (new, old, narrows): conservative wherever a subset is not certain.
    for (new, old, expected) in [
        ("(a OR b) c", "a OR b", true),
        ("a OR b c", "a OR b", false),
        ("sea rch", "sea", true),
        ("rch sea", "sea", true),
        ("is:error tool:refund", "tool:refund", true),
        ("tool:refund", "tool:refund is:error", false),
        ("dur>3s", "dur>2s", false),
        ("-sea x", "-sea", true),
        ("name:\"plan trip\"", "name:plan", true),
        ("model:gpt", "model:gpt-4o", false),
        ("conv:abc", "conv:ab", true),
        ("conv:abc", "conv:bc", false),
        ("kind:tool", "kind:llm", false),
    ] {
        assert_eq!(n(new, old), expected, "{new:?} after {old:?}");
    }
}

// ---- evaluator ----

fn span(trace: &str, id: &str, parent: Option<&str>, name: &str, kind: SpanKind) -> Span {
    Span {
        trace_id: trace.into(),
        span_id: id.into(),
        parent_span_id: parent.map(Into::into),
        name: name.into(),
        kind,
        start_unix_nano: 1_000_000_000,
        end_unix_nano: 1_500_000_000,
        format: "otlp-json",
        ..Default::default()
    }
}

/// Two runs: `t1` (ok, gpt-4o planner, one search tool, 3 s long) and `t2` (degraded: a failed
/// refund tool whose error says "(non-fatal)", argument ORD-4040 only in the payload).
fn sample_store() -> Store {
    let mut root1 = span("t1", "a1", None, "plan trip", SpanKind::Agent);
    root1.end_unix_nano = 4_000_000_000;
    root1.service = Some(ArcStr::from("travel-svc"));
    root1.attributes = vec![
        (
            ArcStr::from("gen_ai.conversation.id"),
            AttrValue::Str("conv-7".into()),
        ),
        (ArcStr::from("api_key"), AttrValue::Str("hunter2".into())),
    ];
    let mut llm1 = span("t1", "b1", Some("a1"), "chat", SpanKind::Llm);
    llm1.llm = Some(Box::new(LlmFacts {
        provider: Some("openai".into()),
        model: Some("gpt-4o".into()),
        input_tokens: Some(800),
        output_tokens: Some(400),
        ..Default::default()
    }));
    let mut tool1 = span("t1", "c1", Some("a1"), "execute_tool", SpanKind::Tool);
    tool1.tool = Some(Box::new(ToolFacts {
        name: Some("search_flights".into()),
        call_id: Some("call_xyz".into()),
        requested_by: None,
    }));
    tool1.attributes = vec![(ArcStr::from("http.status_code"), AttrValue::Int(200))];

    let root2 = span("t2", "a2", None, "support run", SpanKind::Agent);
    let mut tool2 = span("t2", "c2", Some("a2"), "execute_tool", SpanKind::Tool);
    tool2.status = SpanStatus::Error;
    tool2.error = Some(Box::new(ErrorInfo {
        error_type: Some("RefundError".into()),
        message: Some("refund backend timeout (non-fatal)".into()),
        ..Default::default()
    }));
    tool2.tool = Some(Box::new(ToolFacts {
        name: Some("refund".into()),
        call_id: Some("call_r1".into()),
        requested_by: None,
    }));
    tool2.input = Payload::inline("gen_ai.tool.call.arguments", r#"{"order":"ORD-4040"}"#).into();
    tool2.format = "openai-agents";

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
    ];
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
fn text_hidden_by_the_masking_pass_is_not_matched() {
    let mut failing = span("m", "m1", None, "notify", SpanKind::Tool);
    failing.status = SpanStatus::Error;
    failing.error = Some(Box::new(ErrorInfo {
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
