//! Table-driven tests of the grammar: every field, operator, quoting, negation, error position,
//! and when a query narrows the one before it. The evaluator's are in `eval_tests.rs`.

use super::*;
use crate::model::SpanKind;

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
        (
            "scorer:Includes",
            term(Scorer {
                name: "includes".into(),
                value: None,
            }),
        ),
        (
            "scorer:includes=C",
            term(Scorer {
                name: "includes".into(),
                value: Some("c".into()),
            }),
        ),
        ("eval:\"Disobey User\"", term(Eval("disobey user".into()))),
        ("eval:\"\"", term(Eval(String::new()))),
        ("reason:\"[Tool] x\"", term(Reason("[tool] x".into()))),
        ("case-id:Geo-01", term(CaseId("geo-01".into()))),
        ("task:Geo_Tools", term(Task("geo_tools".into()))),
        ("error:Timeout", term(Error("timeout".into()))),
        (
            "tool-failed:Lookup",
            term(ToolFailed {
                tool: "lookup".into(),
                error_type: None,
            }),
        ),
        (
            "tool-failed:\"lookup=Timed Out\"",
            term(ToolFailed {
                tool: "lookup".into(),
                error_type: Some("timed out".into()),
            }),
        ),
        (
            "tool-failed:lookup=",
            term(ToolFailed {
                tool: "lookup".into(),
                error_type: Some(String::new()),
            }),
        ),
        ("is:failing", term(Is(IsFacet::Failing))),
        ("is:error", term(Is(IsFacet::Error))),
        ("is:degraded", term(Is(IsFacet::Degraded))),
        ("is:eval-failed", term(Is(IsFacet::EvalFailed))),
        ("is:limited", term(Is(IsFacet::Limited))),
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
        ("scorer:=C", 7, "needs a name"),
        ("tool-failed:=Timeout", 12, "needs a tool name"),
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
