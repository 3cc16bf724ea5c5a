//! The one evaluator: a parsed [`Query`] against one store [`Invocation`].

use std::sync::LazyLock;

use fuzzy_matcher::FuzzyMatcher;
use fuzzy_matcher::skim::SkimMatcherV2;

use crate::model::{Health, Span, SpanKind};
use crate::notes::{NO_NOTES, Notes};
use crate::redact::Reveal;
use crate::store::Invocation;
use crate::store::search_index::{Field, Fields, holds_in_order};
use crate::triage::{EvalFacet, Facets, GoldOutcome};

use super::Query;
use super::parse::{Expr, IsFacet, Metric, Term};
use super::texts::{
    attr_equals, conversation_ids, invocation_names, invocation_texts, shown_contains,
    span_has_text, span_names,
};

/// Where `is:gold-mismatch` learns a run's gold outcome: comparing with a gold needs payloads
/// and gold files the query does not own, so the caller (the TUI's score cache, `check`) says.
pub trait GoldOutcomes: Sync {
    fn gold(&self, inv: &Invocation) -> GoldOutcome;
}

/// No gold comparison known: `is:gold-mismatch` matches nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoGold;

impl GoldOutcomes for NoGold {
    fn gold(&self, _inv: &Invocation) -> GoldOutcome {
        GoldOutcome::Unknown
    }
}

impl<F: Fn(&Invocation) -> GoldOutcome + Sync> GoldOutcomes for F {
    fn gold(&self, inv: &Invocation) -> GoldOutcome {
        self(inv)
    }
}

/// Whether the run has `facet`, from its roll-up, evaluator verdict and gold outcome alone
/// (no span is looked at).
fn has_facet(inv: &Invocation, gold: GoldOutcome, facet: IsFacet) -> bool {
    let health = inv.summary().health;
    let eval_failed = inv.eval().is_some_and(EvalFacet::failed);
    let gold_mismatch = matches!(gold, GoldOutcome::Differs { .. });
    let failing = Facets::would_fail(inv, gold);
    match facet {
        IsFacet::Failing => failing,
        IsFacet::Error => health == Health::Error,
        IsFacet::Degraded => health == Health::Degraded,
        IsFacet::EvalFailed => eval_failed,
        IsFacet::GoldMismatch => gold_mismatch,
        IsFacet::Ok => !failing,
        IsFacet::Limited => inv.eval().is_some_and(|eval| eval.limit.is_some()),
        // Answered from the notes in `eval_term`, which has them.
        IsFacet::Noted | IsFacet::Unnoted => false,
    }
}

/// What an evaluation may look at besides the run itself.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// Payload text is searched only when revealed, and only as the revealed view shows it
    /// (secrets masked).
    pub reveal: Reveal,
    pub gold: &'a dyn GoldOutcomes,
    /// The runs' triage notes, for `label:`, `is:noted` and `is:unnoted`.
    pub notes: &'a Notes,
}

impl Default for Context<'_> {
    fn default() -> Self {
        Context {
            reveal: Reveal::Redacted,
            gold: &NoGold,
            notes: &NO_NOTES,
        }
    }
}

/// A matching run and the spans (indices into [`Invocation::spans`], ascending) that made its
/// span terms hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Match {
    pub spans: Vec<usize>,
}

pub(super) static MATCHER: LazyLock<SkimMatcherV2> =
    LazyLock::new(|| SkimMatcherV2::default().ignore_case());

impl Query {
    /// Whether `inv` matches, and which of its spans did.
    pub fn matches(&self, inv: &Invocation, ctx: &Context) -> Option<Match> {
        let Some(expr) = &self.expr else {
            return Some(Match::default());
        };
        let outcome = eval(expr, inv, ctx);
        outcome.holds.then_some(Match {
            spans: outcome.spans,
        })
    }
}

struct Outcome {
    holds: bool,
    spans: Vec<usize>,
}

fn eval(expr: &Expr, inv: &Invocation, ctx: &Context) -> Outcome {
    match expr {
        Expr::Term(term) => eval_term(term, inv, ctx),
        Expr::Not(inner) => Outcome {
            holds: !eval(inner, inv, ctx).holds,
            spans: Vec::new(),
        },
        Expr::And(items) => {
            let mut spans = Vec::new();
            for item in items {
                let o = eval(item, inv, ctx);
                if !o.holds {
                    return Outcome {
                        holds: false,
                        spans: Vec::new(),
                    };
                }
                spans = union(spans, o.spans);
            }
            Outcome { holds: true, spans }
        }
        Expr::Or(items) => {
            let mut holds = false;
            let mut spans = Vec::new();
            for item in items {
                let o = eval(item, inv, ctx);
                if o.holds {
                    holds = true;
                    spans = union(spans, o.spans);
                }
            }
            Outcome { holds, spans }
        }
    }
}

fn only(field: Field) -> Fields {
    Fields::none().with(field)
}

fn union(a: Vec<usize>, b: Vec<usize>) -> Vec<usize> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Spans passing `test`, which looks for `needle` in text of `fields`: only the spans the run's
/// search index names as candidates are tested (all of them when it cannot say).
fn spans_by_text(
    inv: &Invocation,
    needle: &str,
    fields: Fields,
    test: impl Fn(&Span) -> bool,
) -> Vec<usize> {
    match inv
        .search_index()
        .candidates(needle, fields, inv.spans.len())
    {
        Some(candidates) => candidates
            .into_iter()
            .filter(|&i| inv.spans.get(i).is_some_and(&test))
            .collect(),
        None => spans_where(inv, test),
    }
}

fn spans_where(inv: &Invocation, test: impl Fn(&Span) -> bool) -> Vec<usize> {
    inv.spans
        .iter()
        .enumerate()
        .filter(|(_, s)| test(s))
        .map(|(i, _)| i)
        .collect()
}

/// The first line of `text`: what the summary groups evaluator reasons by, and `reason:` matches.
pub fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

/// Case-insensitive substring; `needle` is already lower-case.
pub(super) fn contains_ci(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    if needle.is_ascii() {
        // ASCII needle: candidates are the places its first byte occurs in either case, found
        // with memchr; UTF-8 continuation bytes never equal an ASCII byte, so a byte-wise
        // comparison is exact for any haystack.
        let (h, n) = (haystack.as_bytes(), needle.as_bytes());
        let Some(last_start) = h.len().checked_sub(n.len()) else {
            return false;
        };
        let first = n[0];
        return memchr::memchr2_iter(
            first.to_ascii_lowercase(),
            first.to_ascii_uppercase(),
            &h[..=last_start],
        )
        .any(|i| h[i..i + n.len()].eq_ignore_ascii_case(n));
    }
    haystack.to_lowercase().contains(needle)
}

fn starts_with_ci(haystack: &str, prefix: &str) -> bool {
    haystack
        .get(..prefix.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(prefix))
}

pub(super) fn fuzzy(haystack: &str, pattern: &str) -> bool {
    // The skim matcher matches exactly when the pattern's characters occur in order (its
    // `cheap_matches`); the rest of its work is scoring, which a filter does not use. For ASCII
    // text that condition is checked here directly, far cheaper than asking the scorer.
    if haystack.is_ascii() && pattern.is_ascii() {
        return holds_in_order(haystack.as_bytes(), pattern.as_bytes());
    }
    MATCHER.fuzzy_match(haystack, pattern).is_some()
}

fn eval_term(term: &Term, inv: &Invocation, ctx: &Context) -> Outcome {
    let span_level = |spans: Vec<usize>| Outcome {
        holds: !spans.is_empty(),
        spans,
    };
    let inv_level = |holds: bool| Outcome {
        holds,
        spans: Vec::new(),
    };
    let mixed = |inv_hit: bool, spans: Vec<usize>| Outcome {
        holds: inv_hit || !spans.is_empty(),
        spans,
    };
    match term {
        Term::Text(text) => {
            let inv_hit =
                invocation_texts(inv, ctx.reveal).any(|t| shown_contains(&t, text, ctx.reveal));
            let test = |s: &Span| span_has_text(s, text, ctx.reveal);
            // Revealed payloads are searched too, and the index never holds payloads.
            let spans = match ctx.reveal {
                Reveal::Redacted => spans_by_text(inv, text, Fields::all(), test),
                Reveal::Revealed => spans_where(inv, test),
            };
            mixed(inv_hit, spans)
        }
        Term::Fuzzy(word) => {
            let inv_hit = invocation_names(inv).any(|t| fuzzy(t, word));
            let names = Fields::none()
                .with(Field::Name)
                .with(Field::Tool)
                .with(Field::Model)
                .with(Field::Service)
                .with(Field::Value);
            let test = |s: &Span| span_names(s).any(|t| fuzzy(t, word));
            // A name, tool, model or service found in the index decides by itself; other
            // candidates (an agent name among attribute values) are tested on the span.
            let decisive = Fields::none()
                .with(Field::Name)
                .with(Field::Tool)
                .with(Field::Model)
                .with(Field::Service);
            let spans =
                match inv
                    .search_index()
                    .in_order_split(word, names, decisive, inv.spans.len())
                {
                    Some(split) => {
                        let mut spans = split.decided;
                        spans.extend(
                            split
                                .undecided
                                .into_iter()
                                .filter(|&i| inv.spans.get(i).is_some_and(test)),
                        );
                        spans.sort_unstable();
                        spans
                    }
                    None => spans_where(inv, test),
                };
            mixed(inv_hit, spans)
        }
        Term::Is(IsFacet::Noted) => inv_level(ctx.notes.of_run(&inv.id.text()).is_some()),
        Term::Is(IsFacet::Unnoted) => inv_level(ctx.notes.of_run(&inv.id.text()).is_none()),
        Term::Label(label) => inv_level(
            ctx.notes
                .of_run(&inv.id.text())
                .is_some_and(|note| note.label.eq_ignore_ascii_case(label)),
        ),
        Term::Is(facet) => {
            let gold = ctx.gold.gold(inv);
            let holds = has_facet(inv, gold, *facet);
            // Failed agent spans are what `is:` points at inside a matching run.
            let mut spans = match facet {
                IsFacet::Failing | IsFacet::Error | IsFacet::Degraded if holds => {
                    Facets::of(inv, gold).failed_spans().collect()
                }
                _ => Vec::new(),
            };
            spans.sort_unstable();
            Outcome { holds, spans }
        }
        Term::Kind(kind) => span_level(spans_where(inv, |s| s.kind == *kind)),
        Term::Tool(v) => span_level(spans_by_text(inv, v, only(Field::Tool), |s| {
            s.tool_name().is_some_and(|t| contains_ci(t, v))
        })),
        Term::Model(v) => span_level(spans_by_text(inv, v, only(Field::Model), |s| {
            s.llm().is_some_and(|l| {
                l.model.is_some_and(|m| contains_ci(m, v))
                    || l.response_model.is_some_and(|m| contains_ci(m, v))
            })
        })),
        Term::Provider(v) => span_level(spans_by_text(inv, v, only(Field::Provider), |s| {
            s.llm()
                .as_ref()
                .and_then(|l| l.provider)
                .is_some_and(|p| contains_ci(p, v))
        })),
        Term::Service(v) => span_level(spans_by_text(inv, v, only(Field::Service), |s| {
            s.service().is_some_and(|x| contains_ci(x, v))
        })),
        Term::Name(v) => {
            let inv_hit = invocation_names(inv).any(|t| contains_ci(t, v));
            mixed(
                inv_hit,
                spans_by_text(inv, v, only(Field::Name), |s| contains_ci(&s.name, v)),
            )
        }
        Term::Format(v) => span_level(spans_where(inv, |s| contains_ci(s.format().as_str(), v))),
        Term::Source(v) => span_level(spans_where(inv, |s| {
            s.origin().is_some_and(|o| contains_ci(&o.to_string(), v))
        })),
        Term::Id(v) => {
            let inv_hit = starts_with_ci(&inv.id.text(), v);
            mixed(
                inv_hit,
                spans_where(inv, |s| {
                    starts_with_ci(&s.span_id.text(), v)
                        || starts_with_ci(&s.trace_id.text(), v)
                        || s.tool_call_id().is_some_and(|c| starts_with_ci(c, v))
                }),
            )
        }
        Term::Attr { key, value } => span_level(spans_where(inv, |s| {
            s.attributes.iter().any(|(k, val)| {
                k.eq_ignore_ascii_case(key)
                    && value.as_deref().is_none_or(|want| {
                        // A payload is read only when a revealed search may match it.
                        (ctx.reveal == Reveal::Revealed || !val.is_payload())
                            && attr_equals(k, &val, want, ctx.reveal)
                    })
            })
        })),
        Term::Conv(v) => inv_level(conversation_ids(inv).any(|c| starts_with_ci(c, v))),
        Term::Case(v) => inv_level(inv.case().is_some_and(|case| starts_with_ci(&case.id, v))),
        Term::CaseId(v) => inv_level(inv.case().is_some_and(|case| case.id.to_lowercase() == *v)),
        Term::Task(v) => inv_level(
            inv.case()
                .and_then(|case| case.task.as_deref())
                .is_some_and(|task| task.to_lowercase() == *v),
        ),
        Term::Eval(v) => inv_level(inv.eval().is_some_and(|e| e.label.to_lowercase() == *v)),
        Term::Reason(v) => inv_level(
            inv.eval()
                .is_some_and(|e| first_line(&e.shown_reason(ctx.reveal)).to_lowercase() == *v),
        ),
        Term::Error(v) => span_level(spans_where(inv, |s| {
            s.status.is_error()
                && !s.is_evaluator()
                && s.error_type().unwrap_or("").to_lowercase() == *v
        })),
        Term::ToolFailed { tool, error_type } => span_level(spans_where(inv, |s| {
            s.kind == SpanKind::Tool
                && s.status.is_error()
                && s.tool_name().unwrap_or(s.name.as_str()).to_lowercase() == *tool
                && error_type
                    .as_ref()
                    .is_none_or(|t| s.error_type().unwrap_or("").to_lowercase() == *t)
        })),
        Term::Epoch(n) => inv_level(inv.case().is_some_and(|case| case.index == *n)),
        Term::Scorer { name, value } => {
            let scorers = inv
                .eval()
                .map(|eval| eval.scorers.as_slice())
                .unwrap_or(&[]);
            inv_level(scorers.iter().any(|scorer| {
                scorer.name.eq_ignore_ascii_case(name)
                    && match value {
                        Some(value) => scorer.value_text().eq_ignore_ascii_case(value),
                        None => scorer.fails_by_default(),
                    }
            }))
        }
        Term::Compare { metric, op, value } => {
            let summary = inv.summary();
            let total = match metric {
                Metric::Duration => summary.duration_ms(),
                Metric::Tokens => summary.tokens() as f64,
                Metric::Score => match inv.eval().and_then(|e| e.score) {
                    Some(score) => score,
                    // A run without a score has nothing to compare: it never matches.
                    None => return inv_level(false),
                },
                Metric::Spans => summary.counts.spans as f64,
                Metric::Tools => summary.tool_calls.len() as f64,
            };
            let holds = op.holds(total, *value);
            let spans = match metric {
                Metric::Duration if holds => {
                    spans_where(inv, |s| op.holds(s.duration_ms(), *value))
                }
                Metric::Tokens if holds => spans_where(inv, |s| {
                    s.llm().is_some_and(|l| {
                        let tokens = l
                            .input_tokens
                            .get()
                            .unwrap_or(0)
                            .saturating_add(l.output_tokens.get().unwrap_or(0));
                        op.holds(tokens as f64, *value)
                    })
                }),
                _ => Vec::new(),
            };
            Outcome { holds, spans }
        }
    }
}
