//! Two runs of the same evaluation compared case by case: which cases newly fail, which were
//! fixed, which still fail or pass, and which ran on one side only.
//!
//! Cases are paired by their key, never by trace or conversation id (a rerun has fresh ones):
//! the case a format names ([`crate::model::Case`], e.g. an arksim turn's scenario and turn
//! index), else the run's name and its place among the runs of that name in start order.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::Case;
use crate::redact::{self, Reveal};
use crate::store::{Invocation, Store};
use crate::triage::Facets;
use crate::views::dump::Selection;

/// How one side's runs were keyed, said in the comparison's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Keying {
    /// Every run names its case.
    Case,
    /// No run names its case: name and occurrence.
    NameAndOccurrence,
    /// Some runs name their case, the others are keyed by name and occurrence.
    Mixed,
}

/// A run's key: its case, or its name and occurrence.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    id: String,
    index: u64,
    /// True for a key made from the run's name (never equal to a case's key).
    by_name: bool,
}

/// One side's verdict on a case.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// The run's id (`dump --json`'s `id`).
    pub id: String,
    pub failing: bool,
    /// The failing facets, span first, then evaluator, then gold (`dump --json`'s `facets`).
    pub facets: Vec<&'static str>,
    /// The evaluator's label and reason, when it judged the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eval: Option<EvalSide>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EvalSide {
    pub label: String,
    pub reason: String,
    pub score: Option<f64>,
}

/// A case and what each side made of it.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub case: CaseOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<Side>,
    /// For a case failing on both sides: whether its failing facets changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason_changed: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseOut {
    pub id: String,
    pub index: u64,
    /// `case` when the format named it, `name` when made from the run's name.
    pub key: &'static str,
}

/// The comparison: one list per class, in case order.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// How each side's runs were paired.
    pub keyed_by: KeyedBy,
    pub newly_failing: Vec<Entry>,
    pub fixed: Vec<Entry>,
    pub still_failing: Vec<Entry>,
    pub still_passing: Vec<Entry>,
    pub only_in_a: Vec<Entry>,
    pub only_in_b: Vec<Entry>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct KeyedBy {
    pub a: Keying,
    pub b: Keying,
}

impl Comparison {
    /// Cases failing in B (newly, still, or run in B only).
    pub fn failing_in_b(&self) -> usize {
        self.newly_failing.len()
            + self.still_failing.len()
            + self.only_in_b.iter().filter(|e| is_failing(&e.b)).count()
    }
}

fn is_failing(side: &Option<Side>) -> bool {
    side.as_ref().is_some_and(|side| side.failing)
}

/// Compares the runs of `a` with those of `b`, texts shown as `mode` shows them.
pub fn compare(a: &Store, b: &Store, mode: Reveal) -> Comparison {
    let (runs_a, keying_a) = keyed(a, mode);
    let (mut runs_b, keying_b) = keyed(b, mode);
    let mut comparison = Comparison {
        keyed_by: KeyedBy {
            a: keying_a,
            b: keying_b,
        },
        newly_failing: Vec::new(),
        fixed: Vec::new(),
        still_failing: Vec::new(),
        still_passing: Vec::new(),
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
    };
    for (key, side_a) in runs_a {
        let case = case_out(&key, mode);
        let Some(side_b) = runs_b.remove(&key) else {
            comparison.only_in_a.push(Entry {
                case,
                a: Some(side_a),
                b: None,
                reason_changed: None,
            });
            continue;
        };
        let class = match (side_a.failing, side_b.failing) {
            (false, true) => &mut comparison.newly_failing,
            (true, false) => &mut comparison.fixed,
            (true, true) => &mut comparison.still_failing,
            (false, false) => &mut comparison.still_passing,
        };
        let reason_changed = (side_a.failing && side_b.failing).then(|| {
            side_a.facets != side_b.facets
                || side_a.eval.as_ref().map(|e| (&e.label, &e.reason))
                    != side_b.eval.as_ref().map(|e| (&e.label, &e.reason))
        });
        class.push(Entry {
            case,
            a: Some(side_a),
            b: Some(side_b),
            reason_changed,
        });
    }
    for (key, side_b) in runs_b {
        comparison.only_in_b.push(Entry {
            case: case_out(&key, mode),
            a: None,
            b: Some(side_b),
            reason_changed: None,
        });
    }
    comparison
}

fn case_out(key: &Key, mode: Reveal) -> CaseOut {
    CaseOut {
        id: redact::shown_data(&key.id, mode).into_owned(),
        index: key.index,
        key: if key.by_name { "name" } else { "case" },
    }
}

/// Every run of `store` by its key, and how they were keyed. Two runs with one case key (a
/// case run twice on one side, e.g. epochs) keep the first in start order; the later ones get
/// the next free index of that case, so none is lost.
fn keyed(store: &Store, mode: Reveal) -> (BTreeMap<Key, Side>, Keying) {
    let selection = Selection::all(store);
    let mut runs: Vec<&Invocation> = store.invocations().collect();
    runs.sort_by(|x, y| {
        (x.summary().start_unix_nano, &x.id).cmp(&(y.summary().start_unix_nano, &y.id))
    });
    let mut keyed = BTreeMap::new();
    let mut occurrences: BTreeMap<String, u64> = BTreeMap::new();
    let (mut by_case, mut by_name) = (0usize, 0usize);
    for inv in runs {
        let mut key = match inv.case() {
            Some(Case { id, index }) => {
                by_case += 1;
                Key {
                    id: id.clone(),
                    index: *index,
                    by_name: false,
                }
            }
            None => {
                by_name += 1;
                let name = inv.summary().name.to_string();
                let seen = occurrences.entry(name.clone()).or_default();
                *seen += 1;
                Key {
                    id: name,
                    index: *seen - 1,
                    by_name: true,
                }
            }
        };
        while keyed.contains_key(&key) {
            key.index += 1;
        }
        keyed.insert(key, side(inv, &selection, mode));
    }
    let keying = match (by_case, by_name) {
        (_, 0) => Keying::Case,
        (0, _) => Keying::NameAndOccurrence,
        _ => Keying::Mixed,
    };
    (keyed, keying)
}

fn side(inv: &Invocation, selection: &Selection, mode: Reveal) -> Side {
    let facets = Facets::of(inv, selection.gold(&inv.id.text()));
    Side {
        id: redact::shown_data(&inv.id.text(), mode).into_owned(),
        failing: facets.failing(),
        facets: facets.list().into_iter().map(|f| f.name()).collect(),
        eval: inv.eval().map(|eval| EvalSide {
            label: redact::shown_data(&eval.label, mode).into_owned(),
            reason: redact::shown_data(&eval.reason, mode).into_owned(),
            score: eval.score,
        }),
    }
}

/// The comparison as plain text: counts per class, then each case that changed.
pub fn text(comparison: &Comparison, a: &str, b: &str) -> String {
    let mut out = String::new();
    let keying = |k: Keying| match k {
        Keying::Case => "case",
        Keying::NameAndOccurrence => "name and occurrence",
        Keying::Mixed => "case where named, else name and occurrence",
    };
    out.push_str(&format!(
        "A {a} (keyed by {}) → B {b} (keyed by {})\n",
        keying(comparison.keyed_by.a),
        keying(comparison.keyed_by.b)
    ));
    let classes = [
        ("newly failing", &comparison.newly_failing),
        ("fixed", &comparison.fixed),
        ("still failing", &comparison.still_failing),
        ("still passing", &comparison.still_passing),
        ("only in A", &comparison.only_in_a),
        ("only in B", &comparison.only_in_b),
    ];
    for (name, entries) in classes {
        out.push_str(&format!("{name}: {}\n", entries.len()));
    }
    for (name, entries) in &classes[..3] {
        for entry in entries.iter() {
            let facets = |side: &Option<Side>| {
                side.as_ref()
                    .map(|s| s.facets.join(","))
                    .filter(|f| !f.is_empty())
                    .unwrap_or_else(|| "passing".into())
            };
            out.push_str(&format!(
                "  {name}  {} #{}  A: {}  B: {}\n",
                redact::sanitize_line(&entry.case.id),
                entry.case.index,
                facets(&entry.a),
                facets(&entry.b)
            ));
        }
    }
    out
}
