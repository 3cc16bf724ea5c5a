//! An invocation's verdict, split into the facets that can make it fail.
//!
//! - **span**: the agent's own spans — `error` when the root failed, `degraded` when any span
//!   failed (the store's health roll-up). Spans synthesized from evaluator records are not agent
//!   spans: their failure is the evaluator facet, not this one.
//! - **eval**: an evaluator's verdict carried by the trace (an arksim turn label, any
//!   [`EvalVerdict`] a format attaches): failed when the evaluator said so, or when its score is
//!   under the threshold it reported.
//! - **gold**: the gold comparison, supplied by the caller (the TUI's score cache, `check`), since
//!   computing it needs payloads and a gold file this module does not own.
//!
//! An invocation is *failing* when any facet fails. [`Facets::stops`] lists where the failure
//! queue lands in it, in reading (tree) order.

use thin_vec::ThinVec;

use crate::model::{EvalVerdict, Health, Span};
use crate::store::Invocation;

/// The outcome of comparing an invocation with its gold, as far as the caller knows it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum GoldOutcome {
    /// No gold applies, or it has not been computed (yet).
    #[default]
    Unknown,
    Matches {
        score: f64,
    },
    Differs {
        score: f64,
    },
}

impl GoldOutcome {
    /// From a `(score, passed)` pair as the TUI's gold cache and `check` produce it.
    pub fn from_score(scored: Option<(f64, bool)>) -> Self {
        match scored {
            None => GoldOutcome::Unknown,
            Some((score, true)) => GoldOutcome::Matches { score },
            Some((score, false)) => GoldOutcome::Differs { score },
        }
    }
}

/// One reason an invocation can fail, with the glyph the list and reports show for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Facet {
    /// The run's root span failed.
    SpanError,
    /// Some span below the root failed.
    SpanDegraded,
    /// The evaluator judged the run failed.
    EvalFailed,
    /// The actual trajectory differs from the gold.
    GoldMismatch,
}

impl Facet {
    pub fn glyph(self) -> char {
        match self {
            Facet::SpanError => '✗',
            Facet::SpanDegraded => '◐',
            Facet::EvalFailed => '⚑',
            Facet::GoldMismatch => '≠',
        }
    }

    /// The name `is:` queries and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Facet::SpanError => "error",
            Facet::SpanDegraded => "degraded",
            Facet::EvalFailed => "eval-failed",
            Facet::GoldMismatch => "gold-mismatch",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Facet::SpanError => "the run's root span failed",
            Facet::SpanDegraded => "a span failed",
            Facet::EvalFailed => "the evaluator judged it failed",
            Facet::GoldMismatch => "the trajectory differs from the gold",
        }
    }
}

/// The evaluator's verdict as the triage views quote it (verbatim, unsanitized: every view
/// sanitizes what it prints).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EvalFacet {
    pub failed: bool,
    pub label: String,
    pub score: Option<f64>,
    pub threshold: Option<f64>,
    pub reason: String,
    /// See [`EvalVerdict::reason_quotes_output`].
    pub reason_quotes_output: bool,
}

impl EvalFacet {
    /// Whether the evaluator failed the run: a failed verdict, or a score under its threshold.
    pub fn failed(verdict: &EvalVerdict) -> bool {
        let under_threshold = matches!(
            (verdict.score, verdict.threshold),
            (Some(score), Some(threshold)) if score < threshold
        );
        !verdict.passed || under_threshold
    }

    pub fn of(verdict: &EvalVerdict) -> Self {
        EvalFacet {
            failed: EvalFacet::failed(verdict),
            label: verdict.label.clone(),
            score: verdict.score,
            threshold: verdict.threshold,
            reason: verdict.reason.clone(),
            reason_quotes_output: verdict.reason_quotes_output,
        }
    }

    /// The reason as views start from under `mode` (see [`EvalVerdict::shown_reason`]).
    pub fn shown_reason(&self, mode: crate::redact::Reveal) -> std::borrow::Cow<'_, str> {
        crate::model::shown_reason(&self.reason, self.reason_quotes_output, mode)
    }
}

/// All facets of one invocation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facets {
    /// The span roll-up (agent spans only).
    pub health: Health,
    /// Agent spans whose own status is error, as span indices in tree (reading) order: `u32`,
    /// as the tree holds them, and thin, since the TUI keeps the facets of every failing run
    /// (see [`Facets::failed_spans`]).
    failed_spans: ThinVec<u32>,
    /// The run's root span (the queue's landing place for verdict-only failures).
    root: Option<u32>,
    /// Boxed: most runs have no verdict, and the TUI keeps the facets of every failing run.
    pub eval: Option<Box<EvalFacet>>,
    pub gold: GoldOutcome,
}

impl Facets {
    /// Computes the facets of `inv`; `gold` is what the caller knows of its gold comparison.
    pub fn of(inv: &Invocation, gold: GoldOutcome) -> Self {
        let tree = inv.tree();
        let failed_spans = tree
            .rows
            .iter()
            .map(|row| row.span())
            .filter(|&i| {
                inv.spans
                    .get(i)
                    .is_some_and(|s| s.status.is_error() && !s.is_evaluator())
            })
            // Lossless: tree rows hold span indices as `u32`.
            .map(|i| i as u32)
            .collect();
        let root = tree
            .rows
            .iter()
            .find(|r| r.depth() == 0 && inv.spans[r.span()].parent_span_id.is_none())
            .or(tree.rows.first())
            .map(|r| r.span() as u32);
        Facets {
            health: inv.summary().health,
            failed_spans,
            root,
            eval: inv.eval().map(|verdict| Box::new(EvalFacet::of(verdict))),
            gold,
        }
    }

    /// Whether the facets of `inv` would be [`Facets::failing`], from its roll-up alone.
    pub fn would_fail(inv: &Invocation, gold: GoldOutcome) -> bool {
        inv.summary().health != Health::Ok
            || inv.eval().is_some_and(EvalFacet::failed)
            || matches!(gold, GoldOutcome::Differs { .. })
    }

    /// Agent spans whose own status is error, as span indices in tree (reading) order.
    pub fn failed_spans(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.failed_spans.iter().map(|&i| i as usize)
    }
    /// The run's root span (the queue's landing place for verdict-only failures).
    pub fn root(&self) -> Option<usize> {
        self.root.map(|i| i as usize)
    }

    pub fn span_failed(&self) -> bool {
        self.health != Health::Ok
    }
    pub fn eval_failed(&self) -> bool {
        self.eval.as_ref().is_some_and(|e| e.failed)
    }
    pub fn gold_mismatch(&self) -> bool {
        matches!(self.gold, GoldOutcome::Differs { .. })
    }
    pub fn failing(&self) -> bool {
        self.span_failed() || self.eval_failed() || self.gold_mismatch()
    }

    /// The failing facets, in a fixed order (span, eval, gold).
    pub fn list(&self) -> Vec<Facet> {
        let mut out = Vec::new();
        match self.health {
            Health::Error => out.push(Facet::SpanError),
            Health::Degraded => out.push(Facet::SpanDegraded),
            Health::Ok => {}
        }
        if self.eval_failed() {
            out.push(Facet::EvalFailed);
        }
        if self.gold_mismatch() {
            out.push(Facet::GoldMismatch);
        }
        out
    }

    /// The failing facets' glyphs (`✗⚑`), or `✓` when nothing fails.
    pub fn glyphs(&self) -> String {
        let list = self.list();
        if list.is_empty() {
            return "✓".into();
        }
        list.into_iter().map(Facet::glyph).collect()
    }

    pub fn label(&self) -> Option<&str> {
        self.eval.as_ref().map(|e| e.label.as_str())
    }
    pub fn score(&self) -> Option<f64> {
        self.eval.as_ref().and_then(|e| e.score)
    }
    pub fn reason(&self) -> Option<&str> {
        self.eval.as_ref().map(|e| e.reason.as_str())
    }

    /// Where the failure queue stops in this invocation, as span indices in reading order:
    /// the root when a verdict (evaluator or gold) failed — its detail opens on the verdict —
    /// then every failed agent span. None when the invocation is not failing.
    pub fn stops(&self) -> impl Iterator<Item = usize> + '_ {
        let verdict_failed = self.eval_failed() || self.gold_mismatch();
        let root = self
            .root()
            .filter(|_| verdict_failed || (self.failing() && self.failed_spans.is_empty()));
        // The failed spans are tree rows, each span once: only the root can repeat among them.
        let failed = self.failed_spans();
        root.into_iter()
            .chain(failed.filter(move |&span| Some(span) != root))
    }
}

/// Whether a span was synthesized from an evaluator's record (kept for the span's own
/// colouring; see [`crate::model::EVALUATOR_ATTR`]).
pub fn is_evaluator_span(span: &Span) -> bool {
    span.is_evaluator()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AttrValue, Batch, EVALUATOR_ATTR, SpanKind, SpanStatus};
    use crate::store::Store;

    fn span(id: &str, parent: Option<&str>, start: u64) -> Span {
        Span {
            trace_id: "t".into(),
            span_id: id.into(),
            parent_span_id: parent.map(Into::into),
            name: id.into(),
            kind: SpanKind::Other,
            start_unix_nano: start,
            end_unix_nano: start + 1,
            provenance: crate::model::Provenance::shared(None, None, "test".into()),
            ..Default::default()
        }
    }

    fn verdict(passed: bool, score: Option<f64>, threshold: Option<f64>) -> EvalVerdict {
        EvalVerdict {
            passed,
            score,
            threshold,
            label: if passed {
                "no failure"
            } else {
                "disobey user request"
            }
            .into(),
            reason: "the agent called get_weather".into(),
            reason_quotes_output: false,
            scorers: Vec::new(),
            target: None,
            limit: None,
        }
    }

    fn store_with(spans: Vec<Span>, eval: Option<EvalVerdict>) -> Store {
        let mut store = Store::new();
        store.ingest(Batch {
            spans,
            evals: eval.map(|e| ("t".to_owned(), e)).into_iter().collect(),
            ..Default::default()
        });
        store
    }

    #[test]
    fn an_evaluator_failure_alone_makes_the_run_failing_and_stops_at_the_root() {
        let store = store_with(
            vec![span("root", None, 1), span("tool", Some("root"), 2)],
            Some(verdict(false, Some(5.0), None)),
        );
        let inv = store.get("t").unwrap();
        let facets = Facets::of(inv, GoldOutcome::Unknown);
        assert!(!facets.span_failed());
        assert!(facets.eval_failed());
        assert!(!facets.gold_mismatch());
        assert!(facets.failing());
        assert_eq!(facets.glyphs(), "⚑");
        assert_eq!(facets.label(), Some("disobey user request"));
        assert_eq!(facets.score(), Some(5.0));
        assert_eq!(facets.reason(), Some("the agent called get_weather"));
        assert_eq!(
            facets.stops().collect::<Vec<_>>(),
            [inv.span_by_id("root").unwrap()]
        );
    }

    #[test]
    fn failed_spans_are_stops_in_reading_order_after_the_root() {
        let mut early = span("b", Some("root"), 2);
        early.status = SpanStatus::Error;
        let mut late = span("a", Some("root"), 3);
        late.status = SpanStatus::Error;
        let store = store_with(
            vec![late, span("root", None, 1), early],
            Some(verdict(false, None, None)),
        );
        let inv = store.get("t").unwrap();
        let facets = Facets::of(inv, GoldOutcome::Unknown);
        assert_eq!(facets.list(), [Facet::SpanDegraded, Facet::EvalFailed]);
        assert_eq!(facets.glyphs(), "◐⚑");
        let id = |i: usize| inv.spans[i].span_id.to_string();
        let stops: Vec<String> = facets.stops().map(id).collect();
        assert_eq!(stops, ["root", "b", "a"]);
    }

    #[test]
    fn span_failures_without_a_verdict_do_not_stop_at_a_healthy_root() {
        let mut tool = span("tool", Some("root"), 2);
        tool.status = SpanStatus::Error;
        let store = store_with(vec![span("root", None, 1), tool], None);
        let inv = store.get("t").unwrap();
        let facets = Facets::of(inv, GoldOutcome::Unknown);
        assert!(facets.span_failed() && !facets.eval_failed());
        assert_eq!(
            facets.stops().collect::<Vec<_>>(),
            [inv.span_by_id("tool").unwrap()]
        );
    }

    #[test]
    fn a_score_under_its_threshold_fails_even_when_marked_passed() {
        let under = EvalFacet::of(&verdict(true, Some(0.4), Some(0.5)));
        assert!(under.failed);
        let at = EvalFacet::of(&verdict(true, Some(0.5), Some(0.5)));
        assert!(!at.failed);
        let no_threshold = EvalFacet::of(&verdict(true, Some(0.0), None));
        assert!(!no_threshold.failed);
    }

    #[test]
    fn gold_mismatch_is_a_facet_of_its_own() {
        let store = store_with(vec![span("root", None, 1)], None);
        let inv = store.get("t").unwrap();
        let matches = Facets::of(inv, GoldOutcome::from_score(Some((1.0, true))));
        assert!(!matches.failing());
        assert_eq!(matches.glyphs(), "✓");
        assert_eq!(matches.stops().count(), 0);
        let differs = Facets::of(inv, GoldOutcome::from_score(Some((0.5, false))));
        assert!(differs.gold_mismatch() && differs.failing());
        assert_eq!(differs.glyphs(), "≠");
        assert_eq!(
            differs.stops().collect::<Vec<_>>(),
            [inv.span_by_id("root").unwrap()]
        );
        let unknown = Facets::of(inv, GoldOutcome::from_score(None));
        assert!(!unknown.failing());
    }

    #[test]
    fn a_failed_evaluator_span_is_the_eval_facet_not_a_span_failure() {
        let mut judge = span("judge", Some("root"), 2);
        judge.status = SpanStatus::Error;
        judge
            .attributes
            .push((EVALUATOR_ATTR.into(), AttrValue::Bool(true)));
        let store = store_with(
            vec![span("root", None, 1), judge],
            Some(verdict(false, None, None)),
        );
        let inv = store.get("t").unwrap();
        let facets = Facets::of(inv, GoldOutcome::Unknown);
        assert!(!facets.span_failed(), "{:?}", facets.health);
        assert_eq!(facets.failed_spans().len(), 0);
        assert!(facets.eval_failed());
        let judge = inv.span_by_id("judge").unwrap();
        assert!(is_evaluator_span(&inv.spans[judge]));
        assert_eq!(inv.health_of(judge), Health::Error);
    }
}
