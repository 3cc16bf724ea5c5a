//! One query language for the list search, find-in-trace, `dump --filter` and the report.
//!
//! ```text
//! query    := alt ( ("OR" | "|") alt )*        alternatives
//! alt      := unary+                           terms separated by spaces are ANDed
//! unary    := "-" unary | "(" query ")" | term
//! term     := "exact text"                     case-insensitive substring (see below)
//!           | field ":" value                  value may be quoted: name:"a b"
//!           | metric op number[unit]           dur>2s tokens>=1k score<0.8 spans>100 tools>3
//!           | word                             fuzzy over names, tools, model, service
//! field    := is | kind | tool | model | provider | service | name | format | source | id
//!           | attr (attr:KEY or attr:KEY=VALUE) | conv | case | epoch
//!           | scorer (scorer:NAME: that scorer failed the run; scorer:NAME=VALUE)
//!           | label (label:NAME: the run's triage note carries that label)
//!           | eval | reason | case-id | error (whole values: evaluator label, the reason's
//!             first line, case id, a failed agent span's error type)
//!           | tool-failed (tool-failed:NAME or NAME=TYPE: a call of that tool failed)
//! op       := > | >= | < | <= | =
//! ```
//!
//! Matching is case-insensitive. `"exact text"` looks in span, tool, agent and invocation
//! names, model, provider, service, error types and messages, evaluator labels and reasons,
//! attribute and event values, and payload text only while payloads are revealed (a redacted
//! payload is never searched, so a match cannot leak it; secrets masked on screen are masked
//! before matching too). Bare words never look at ids; `id:` does, by prefix.
//!
//! Invocation terms (`is:`, `conv:`, comparisons) hold or fail for the run as a whole; span
//! terms hold when some span in the run matches. A run matches when the whole expression holds;
//! the spans that made span terms hold are returned so views can highlight them. Comparisons
//! use the run's totals (`dur` its duration, `tokens` its input+output tokens) and also mark
//! the spans whose own value satisfies them.

mod eval;
#[cfg(test)]
mod eval_tests;
mod highlight;
#[cfg(test)]
mod index_tests;
mod parse;
#[cfg(test)]
mod tests;
mod texts;
pub mod worker;

pub use eval::{Context, GoldOutcomes, Match, NoGold, first_line};
pub use parse::{CmpOp, Expr, FIELDS, IsFacet, METRICS, Metric, Term};

pub use crate::error::QueryError;

/// A parsed query. The empty query matches every invocation and no span.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    text: String,
    expr: Option<Expr>,
}

impl Query {
    pub fn parse(text: &str) -> Result<Query, QueryError> {
        Ok(Query {
            text: text.to_owned(),
            expr: parse::parse(text)?,
        })
    }

    /// The query that matches everything.
    pub fn all() -> Query {
        Query {
            text: String::new(),
            expr: None,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.expr.is_none()
    }

    pub fn expr(&self) -> Option<&Expr> {
        self.expr.as_ref()
    }

    /// Whether `is:` terms could depend on a gold comparison (so callers compute gold outcomes
    /// only when a query needs them).
    pub fn needs_gold(&self) -> bool {
        fn walk(e: &Expr) -> bool {
            match e {
                Expr::And(items) | Expr::Or(items) => items.iter().any(walk),
                Expr::Not(inner) => walk(inner),
                Expr::Term(Term::Is(f)) => {
                    matches!(f, IsFacet::Failing | IsFacet::GoldMismatch | IsFacet::Ok)
                }
                Expr::Term(_) => false,
            }
        }
        self.expr.as_ref().is_some_and(walk)
    }

    /// True when every run this query matches is also matched by `previous`, so a search
    /// can narrow the previous result set instead of scanning everything: the new query is
    /// the old one with more ANDed terms (typing extends the last word or adds a term).
    pub fn narrows(&self, previous: &Query) -> bool {
        let Some(old) = &previous.expr else {
            return true;
        };
        let Some(new) = &self.expr else {
            return false;
        };
        let conjuncts = |e: &Expr| -> Vec<Expr> {
            match e {
                Expr::And(items) => items.clone(),
                other => vec![other.clone()],
            }
        };
        let new_terms = conjuncts(new);
        conjuncts(old)
            .iter()
            .all(|o| new_terms.iter().any(|n| n == o || term_narrows(n, o)))
    }
}

/// A single term that can only match a subset of what `old` matches.
fn term_narrows(new: &Expr, old: &Expr) -> bool {
    match (new, old) {
        // A longer substring implies the shorter one.
        (Expr::Term(Term::Text(n)), Expr::Term(Term::Text(o))) => n.contains(o.as_str()),
        // A fuzzy pattern extended at its end still contains the old one as a subsequence.
        (Expr::Term(Term::Fuzzy(n)), Expr::Term(Term::Fuzzy(o))) => n.starts_with(o.as_str()),
        (Expr::Term(a), Expr::Term(b)) => match (a, b) {
            (Term::Tool(n), Term::Tool(o))
            | (Term::Model(n), Term::Model(o))
            | (Term::Provider(n), Term::Provider(o))
            | (Term::Service(n), Term::Service(o))
            | (Term::Name(n), Term::Name(o))
            | (Term::Format(n), Term::Format(o))
            | (Term::Source(n), Term::Source(o)) => n.contains(o.as_str()),
            (Term::Id(n), Term::Id(o))
            | (Term::Conv(n), Term::Conv(o))
            | (Term::Case(n), Term::Case(o)) => n.starts_with(o.as_str()),
            _ => false,
        },
        _ => false,
    }
}
