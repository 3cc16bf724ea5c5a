//! The search index only narrows, on random runs: every query — quoted text, each field, fuzzy
//! words, combinations — matches the same runs and spans with the index as without it. Texts
//! come from a small pool in random case (so they repeat within and across runs, as in real
//! traces), with non-ASCII, empty and too-long ones among them; runs arrive in two batches, so
//! the second is indexed into a vocabulary queries have already searched.

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

use super::*;
use crate::model::{ArcStr, AttrValue, Batch, ErrorInfo, LlmFacts, Span, SpanEvent, ToolFacts};
use crate::store::Store;

const WORDS: [&str; 14] = [
    "search_flights",
    "chat",
    "GPT-4o",
    "openai",
    "acme",
    "timed out",
    "réfund",
    "京都",
    "ord-4040",
    "a",
    "",
    "get weather",
    "agent_7",
    "srch",
];
/// Agent names (which fuzzy words match), plain values, and a key whose values the redacted
/// view hides (never searched redacted, so never indexed).
const KEYS: [&str; 5] = [
    "gen_ai.agent.name",
    "agent.name",
    "note",
    "gen_ai.request.model",
    "gen_ai.input.messages",
];

/// One or two pool words (joined so a needle may cross them), in random case; sometimes a
/// value too long to index.
fn text() -> impl Strategy<Value = String> {
    let word = (0..WORDS.len(), any::<u64>()).prop_map(|(w, case)| {
        WORDS[w]
            .chars()
            .enumerate()
            .map(|(i, c)| match case >> (i % 64) & 1 {
                1 => c.to_ascii_uppercase(),
                _ => c,
            })
            .collect::<String>()
    });
    prop_oneof![
        6 => word.clone(),
        3 => (word.clone(), word, prop::sample::select(vec![" ", "_", ""]))
            .prop_map(|(a, b, sep)| format!("{a}{sep}{b}")),
        1 => Just(format!("acme {}", "x".repeat(600))),
    ]
}

fn value() -> impl Strategy<Value = AttrValue> {
    prop_oneof![
        6 => text().prop_map(|t| AttrValue::Str(t.as_str().into())),
        1 => (0i64..300).prop_map(AttrValue::Int),
        1 => any::<bool>().prop_map(AttrValue::Bool),
        1 => Just(AttrValue::Null),
    ]
}

fn attributes() -> impl Strategy<Value = Vec<(usize, AttrValue)>> {
    prop::collection::vec((0..KEYS.len(), value()), 0..4)
}

#[derive(Debug, Clone)]
struct SpanPlan {
    name: String,
    tool: Option<String>,
    models: (Option<String>, Option<String>),
    provider: Option<String>,
    service: Option<String>,
    error: Option<(Option<String>, Option<String>, bool)>,
    attributes: Vec<(usize, AttrValue)>,
    events: Vec<(String, Vec<(usize, AttrValue)>)>,
}

fn span_plan() -> impl Strategy<Value = SpanPlan> {
    let facts = (
        text(),
        prop::option::of(text()),
        (prop::option::of(text()), prop::option::of(text())),
        prop::option::of(text()),
        prop::option::of(text()),
    );
    let error = prop::option::weighted(
        0.3,
        (
            prop::option::of(text()),
            prop::option::of(text()),
            prop::bool::weighted(0.2),
        ),
    );
    let events = prop::collection::vec((text(), attributes()), 0..2);
    (facts, error, attributes(), events).prop_map(
        |((name, tool, models, provider, service), error, attributes, events)| SpanPlan {
            name,
            tool,
            models,
            provider,
            service,
            error,
            attributes,
            events,
        },
    )
}

fn keyed(attributes: &[(usize, AttrValue)]) -> Vec<(ArcStr, AttrValue)> {
    attributes
        .iter()
        .map(|(k, v)| (ArcStr::from(KEYS[*k]), v.clone()))
        .collect()
}

/// Span `at` of run `run`: the first span of a run is its root, the others its children.
fn span_of(plan: &SpanPlan, run: usize, at: usize) -> Span {
    let mut span = Span {
        trace_id: format!("t{run}").into(),
        span_id: format!("s{at}").into(),
        parent_span_id: (at > 0).then(|| "s0".into()),
        name: plan.name.as_str().into(),
        start_unix_nano: 1_000 + at as u64,
        end_unix_nano: 2_000,
        provenance: crate::model::Provenance::shared(
            None,
            plan.service.as_deref().map(ArcStr::from).as_ref(),
            "test".into(),
        ),
        attributes: keyed(&plan.attributes).into(),
        ..Span::default()
    };
    span.set_tool(plan.tool.as_ref().map(|name| {
        Box::new(ToolFacts {
            name: Some(name.as_str().into()),
            ..ToolFacts::default()
        })
    }));
    let (model, response_model) = plan.models.clone();
    if model.is_some() || response_model.is_some() || plan.provider.is_some() {
        span.set_llm(Some(Box::new(LlmFacts {
            model: model.as_deref().map(ArcStr::from),
            response_model: response_model.as_deref().map(ArcStr::from),
            provider: plan.provider.as_deref().map(ArcStr::from),
            ..LlmFacts::default()
        })));
    }
    span.set_error(
        plan.error
            .as_ref()
            .map(|(error_type, message, is_result)| ErrorInfo {
                error_type: error_type.as_deref().map(Into::into),
                message: message.as_deref().map(Into::into),
                message_is_result: *is_result,
            }),
    );
    span.set_events(
        plan.events
            .iter()
            .map(|(name, attributes)| SpanEvent {
                time_unix_nano: 1_500,
                name: name.as_str().into(),
                attributes: attributes
                    .iter()
                    .map(|(k, v)| (KEYS[*k].into(), v.clone()))
                    .collect(),
            })
            .collect(),
    );
    span
}

/// Queries of every kind the index answers, from `needle` and `other`.
fn queries(needle: &str, other: &str) -> Vec<String> {
    let quoted = needle.replace('"', "");
    let word: String = needle.chars().filter(|c| c.is_alphanumeric()).collect();
    let mut all: Vec<String> = ["", "tool:", "name:", "model:", "service:", "provider:"]
        .iter()
        .map(|field| format!("{field}\"{quoted}\""))
        .collect();
    if !word.is_empty() {
        all.push(word.clone());
        all.push(format!("{word} OR \"{}\"", other.replace('"', "")));
        all.push(format!("-{word} \"{}\"", other.replace('"', "")));
    }
    all
}

/// A needle cut from `text` (lower-cased, as a user types it), or the text itself.
fn cut(text: &str, from: usize, len: usize) -> String {
    let chars: Vec<char> = text.to_lowercase().chars().collect();
    let from = from % (chars.len() + 1);
    chars[from..(from + len).min(chars.len())].iter().collect()
}

/// Runs `check` on every query made from `needles` (each with the next as its other text).
fn each_query(needles: &[String], mut check: impl FnMut(&Query, &str)) {
    for (i, needle) in needles.iter().enumerate() {
        let other = &needles[(i + 1) % needles.len()];
        for text in queries(needle, other) {
            if let Ok(query) = Query::parse(&text) {
                check(&query, &text);
            }
        }
    }
}

fn assert_index_only_narrows(store: &Store, needles: &[String]) {
    let ctx = Context::default();
    each_query(needles, |query, text| {
        for inv in store.invocations() {
            assert_eq!(
                query.matches(inv, &ctx),
                query.matches(&inv.without_search_index(), &ctx),
                "{text:?} on run {}",
                inv.id
            );
        }
    });
}

/// A store that keeps no index (`dump`, `check`) matches what the indexed one does, and its
/// runs hold no index at all.
fn assert_unindexed_store_matches(indexed: &Store, unindexed: &Store, needles: &[String]) {
    let ctx = Context::default();
    for inv in unindexed.invocations() {
        let index = inv.search_index();
        assert!(
            index.heap_bytes() == 0 && index.shared_heap().is_none(),
            "run {} has an index",
            inv.id
        );
    }
    each_query(needles, |query, text| {
        for inv in indexed.invocations() {
            let plain = unindexed.get(&inv.id).expect("same runs");
            assert_eq!(
                query.matches(inv, &ctx),
                query.matches(plain, &ctx),
                "{text:?} on run {}",
                inv.id
            );
        }
    });
}

fn config() -> Config {
    Config {
        cases: 128,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn indexed_queries_match_what_a_scan_of_every_span_matches(
        runs in prop::collection::vec(prop::collection::vec(span_plan(), 1..5), 1..4),
        late in prop::collection::vec(span_plan(), 0..4),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), 0usize..40, 1usize..6), 6),
        typed in prop::collection::vec(text(), 2),
    ) {
        let spans: Vec<Vec<Span>> = runs
            .iter()
            .enumerate()
            .map(|(r, plans)| plans.iter().enumerate().map(|(s, p)| span_of(p, r, s)).collect())
            .collect();
        // Needles cut from the spans' own texts, so most queries match something.
        let texts: Vec<String> = runs
            .iter()
            .flatten()
            .chain(&late)
            .flat_map(|p| {
                let values = p.attributes.iter().filter_map(|(_, v)| match v {
                    AttrValue::Str(s) => Some(s.to_string()),
                    _ => None,
                });
                std::iter::once(p.name.clone())
                    .chain(p.tool.clone())
                    .chain(p.models.0.clone())
                    .chain(p.provider.clone())
                    .chain(p.service.clone())
                    .chain(values)
            })
            .collect();
        let mut needles: Vec<String> = cuts
            .iter()
            .map(|(pick, from, len)| cut(&texts[pick.index(texts.len())], *from, *len))
            .collect();
        needles.extend(typed.iter().map(|t| t.to_lowercase()));

        let mut store = Store::new();
        let mut unindexed = Store::unindexed();
        store.ingest(Batch { spans: spans.concat(), ..Batch::default() });
        unindexed.ingest(Batch { spans: spans.concat(), ..Batch::default() });
        assert_index_only_narrows(&store, &needles);
        assert_unindexed_store_matches(&store, &unindexed, &needles);
        // Late spans join the first run (its index grows) with texts the queries above may
        // not have seen.
        let grown = spans[0].len();
        let late: Vec<Span> = late.iter().enumerate().map(|(s, p)| span_of(p, 0, grown + s)).collect();
        store.ingest(Batch { spans: late.clone(), ..Batch::default() });
        unindexed.ingest(Batch { spans: late, ..Batch::default() });
        assert_index_only_narrows(&store, &needles);
        assert_unindexed_store_matches(&store, &unindexed, &needles);
    }
}
