//! Two runs of the same evaluation compared case by case: which cases newly fail, which were
//! fixed, which still fail or pass, and which ran on one side only.
//!
//! Cases are paired by their key, never by trace or conversation id (a rerun has fresh ones):
//! the case a format names ([`crate::model::Case`], e.g. an arksim turn's scenario and turn
//! index), else the first of the [`EXAMPLE_ATTRIBUTES`] on the run's spans, else the run's name;
//! without an index of its own, a key's index is its place among the runs of that key in start
//! order.
//!
//! Where a key's index counts repeats of one case (Inspect's epochs, the runs of one dataset
//! example), the runs of one id on one side are that case's repeats: when they disagree, the
//! case is flaky on that side ([`Repeats`], [`Comparison::flaky`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::model::{Case, Id};
use crate::redact::{self, Reveal};
use crate::store::{Invocation, Store};
use crate::triage::{Facet, Facets};
use crate::views::ProblemCounts;
use crate::views::dump::Selection;

/// Where a run's case key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRule {
    /// The case the format names ([`crate::model::Case`]); for a run whose format names none,
    /// the first of the [`EXAMPLE_ATTRIBUTES`] on its spans.
    Case,
    /// The text of this attribute on the run's first span (in tree order) that has it; the
    /// index counts the runs with the same text in start order (epochs, repeats).
    Attribute(String),
}

/// The attributes that name the dataset example (the case) a run is, for runs whose format
/// names no case: on each span in tree order, the first of these it carries keys the run.
/// Phoenix's dataset example, Langfuse's experiment item (the dataset item's id, as its SDKs
/// write it), then generic names. The runs of one example in one run are its repeats.
pub const EXAMPLE_ATTRIBUTES: [&str; 4] = [
    "dataset.example.id",
    "langfuse.experiment.item.id",
    "case.id",
    "example.id",
];

/// How one side's runs were keyed, said in the comparison's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Keying {
    /// Every run names its case.
    Case,
    /// Every run is keyed by an attribute's text (the one asked for, or an example attribute).
    Attribute,
    /// No run names its case or carries the attribute: name and occurrence.
    NameAndOccurrence,
    /// Runs keyed in more than one of those ways.
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

/// How many of one side's runs were keyed each way.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyKinds {
    pub case: usize,
    pub attribute: usize,
    pub name: usize,
}

impl KeyKinds {
    fn keying(self) -> Keying {
        match (self.case, self.attribute, self.name) {
            (_, 0, 0) => Keying::Case,
            (0, _, 0) => Keying::Attribute,
            (0, 0, _) => Keying::NameAndOccurrence,
            _ => Keying::Mixed,
        }
    }
}

/// One side's verdict on a case.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// The run's id (`dump --json`'s `id`).
    pub id: String,
    /// The run's id as the store knows it, for views that look the run up again (the TUI's
    /// detail); `id` is the text as shown, masked under the mode.
    #[serde(skip)]
    pub run: Id,
    pub failing: bool,
    /// True when the case's runs on this side (its epochs, repeats) disagree: some pass, some
    /// fail.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
    /// Whether the run's key index counts repeats of its case (epochs), which makes the runs of
    /// its id on this side comparable with one another.
    #[serde(skip)]
    pub index_is_repeat: bool,
    /// The failing facets, span first, then evaluator, then gold (`dump --json`'s `facets`).
    pub facets: Vec<&'static str>,
    /// The evaluator's label and reason, when it judged the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eval: Option<EvalSide>,
    /// The run's triage note; on a case still failing in B whose B run has none, A's note
    /// carried over (`carried`): the same failure, most likely, already triaged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<SideNote>,
}

/// A triage note as `compare` shows it: the text and the author masked under the mode.
#[derive(Debug, Clone, Serialize)]
pub struct SideNote {
    pub label: String,
    pub note: String,
    pub author: String,
    pub time: String,
    /// True on B's side when the note is A's, carried to a case still failing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub carried: bool,
}

impl SideNote {
    fn of(note: &crate::notes::Note, mode: Reveal) -> Self {
        SideNote {
            label: note.label.clone(),
            note: redact::shown_data(&note.note, mode).into_owned(),
            author: redact::shown_data(&note.author, mode).into_owned(),
            time: redact::shown_data(&note.time, mode).into_owned(),
            carried: false,
        }
    }

    /// The note on one line for text and Markdown cells: `[label] text` (text unmasked here:
    /// it was masked when the comparison was made).
    pub fn words(&self) -> String {
        let mut out = String::new();
        if !self.label.is_empty() {
            out.push_str(&format!("[{}]", self.label));
        }
        if !self.note.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&self.note);
        }
        if self.carried {
            out.push_str(" (from A)");
        }
        out
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct EvalSide {
    pub label: String,
    pub reason: String,
    pub score: Option<f64>,
    /// The scorers that failed the run under the `--scorer` rule, as the label names them
    /// (`includes=I`), masked under the mode: what a narrow view shows of a failed label.
    #[serde(skip)]
    pub failing_scorers: Vec<String>,
}

/// A case and what each side made of it.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub case: CaseOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<Side>,
    /// For a case run on both sides: what differs between them, `dump --json`'s facet names
    /// failing on one side only, then `eval.label` and `eval.score` when the evaluator's label
    /// or score changed. Absent when nothing did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<&'static str>,
    /// For a case failing on both sides: whether its failing facets changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason_changed: Option<bool>,
    /// A's and B's runs of the case's id where its index counts repeats, as places in
    /// [`Comparison::repeats`]; also for a side the case's index did not run on.
    #[serde(skip)]
    pub repeats: [Option<usize>; 2],
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseOut {
    pub id: String,
    pub index: u64,
    /// `case` when the format or an attribute named it, `name` when made from the run's name.
    pub key: &'static str,
}

/// The comparison: one list per class, in case order.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// How each side's runs were paired.
    pub keyed_by: KeyedBy,
    /// Each side as a whole.
    pub summary: Summaries,
    pub newly_failing: Vec<Entry>,
    pub fixed: Vec<Entry>,
    pub still_failing: Vec<Entry>,
    pub still_passing: Vec<Entry>,
    pub only_in_a: Vec<Entry>,
    pub only_in_b: Vec<Entry>,
    /// The case ids flaky on either side, in id order, with both sides' runs of them.
    pub flaky: Vec<FlakyCase>,
    /// Each side's runs of every id whose index counts repeats, A's then B's, in id order;
    /// [`Entry::repeats`] points here.
    #[serde(skip)]
    pub repeats: [Vec<Repeats>; 2],
}

#[derive(Debug, Clone, Serialize)]
pub struct KeyedBy {
    pub a: Keying,
    pub b: Keying,
    /// The attributes that keyed each side's runs, in the order first used; absent when no run
    /// was keyed by one.
    #[serde(skip_serializing_if = "KeyAttributes::is_empty")]
    pub attributes: KeyAttributes,
    /// How many runs of each side were keyed each way, A's then B's.
    #[serde(skip)]
    pub kinds: [KeyKinds; 2],
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct KeyAttributes {
    pub a: Vec<String>,
    pub b: Vec<String>,
}

impl KeyAttributes {
    fn is_empty(&self) -> bool {
        self.a.is_empty() && self.b.is_empty()
    }
}

impl KeyedBy {
    /// How side `side` (0 for A, 1 for B) was keyed, in words: each way its runs were keyed,
    /// in the order the rule tries them.
    pub fn words(&self, side: usize) -> String {
        let kinds = self.kinds[side];
        let attributes = [&self.attributes.a, &self.attributes.b][side];
        let attribute = || {
            let names: Vec<String> = attributes
                .iter()
                .map(|name| redact::sanitize_line(name))
                .collect();
            match names.len() {
                1 => format!("attribute {}", names[0]),
                _ => format!("attributes {}", names.join(", ")),
            }
        };
        match kinds.keying() {
            Keying::Case => "case".to_owned(),
            Keying::Attribute => attribute(),
            Keying::NameAndOccurrence => "name and occurrence".to_owned(),
            Keying::Mixed => {
                let mut ways = Vec::new();
                if kinds.case > 0 {
                    ways.push("case where named".to_owned());
                }
                if kinds.attribute > 0 {
                    ways.push(format!("{} where set", attribute()));
                }
                if kinds.name > 0 {
                    ways.push("name and occurrence".to_owned());
                }
                ways.join(", else ")
            }
        }
    }
}

/// One side's runs of a case id whose index counts repeats (epochs), in index order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repeats {
    pub passed: usize,
    pub failed: usize,
    /// One glyph per run in index order: `✓` passing, `✗` failing.
    pub strip: String,
    /// Each run's index and whether it fails, in the strip's order.
    #[serde(skip)]
    pub runs: Vec<(u64, bool)>,
}

impl Repeats {
    fn of(runs: Vec<(u64, bool)>) -> Repeats {
        let failed = runs.iter().filter(|(_, failing)| *failing).count();
        Repeats {
            passed: runs.len() - failed,
            failed,
            strip: runs.iter().map(|&(_, failing)| glyph(failing)).collect(),
            runs,
        }
    }

    /// Some runs pass and some fail.
    pub fn flaky(&self) -> bool {
        self.passed > 0 && self.failed > 0
    }

    /// `2 of 3 pass`.
    pub fn counts_words(&self) -> String {
        format!("{} of {} pass", self.passed, self.passed + self.failed)
    }
}

/// A run's verdict as a strip shows it: `✓` passing, `✗` failing.
pub fn glyph(failing: bool) -> char {
    if failing { '✗' } else { '✓' }
}

/// A case id flaky on at least one side, and both sides' runs of it (`None` where it did not
/// run, or where its index does not count repeats).
#[derive(Debug, Clone, Serialize)]
pub struct FlakyCase {
    pub id: String,
    pub a: Option<Repeats>,
    pub b: Option<Repeats>,
}

impl Comparison {
    /// Every class by its name in words, newly failing first.
    pub fn classes(&self) -> [(&'static str, &Vec<Entry>); 6] {
        [
            ("newly failing", &self.newly_failing),
            ("fixed", &self.fixed),
            ("still failing", &self.still_failing),
            ("still passing", &self.still_passing),
            ("only in A", &self.only_in_a),
            ("only in B", &self.only_in_b),
        ]
    }

    /// Cases failing in B that did not fail in A: newly failing, or run in B only.
    pub fn newly_failing_in_b(&self) -> usize {
        let only_in_b = self.only_in_b.iter();
        self.newly_failing.len()
            + only_in_b
                .filter(|e| e.b.as_ref().is_some_and(|b| b.failing))
                .count()
    }

    /// A's and B's runs of the entry's case id, where its index counts repeats.
    pub fn repeats_of(&self, entry: &Entry) -> [Option<&Repeats>; 2] {
        let runs = |side: usize| self.repeats[side].get(entry.repeats[side]?);
        [runs(0), runs(1)]
    }

    /// Cases failing in B (newly, still, or run in B only).
    pub fn failing_in_b(&self) -> usize {
        self.newly_failing_in_b() + self.still_failing.len()
    }
}

/// Compares the runs of `a` with those of `b`, paired by `rule`, texts shown as `mode` shows
/// them.
pub fn compare(a: &Store, b: &Store, rule: &KeyRule, mode: Reveal) -> Comparison {
    // Runs of several Inspect tasks: a sample id is unique only within its task, so the case
    // is named by both (`task · id`) on both sides.
    let tasks: BTreeSet<&str> = [a, b]
        .into_iter()
        .flat_map(Store::invocations)
        .filter_map(|inv| inv.case()?.task.as_deref())
        .collect();
    let by_task = tasks.len() > 1;
    let side_a = keyed(a, rule, by_task, mode);
    let side_b = keyed(b, rule, by_task, mode);
    let (runs_a, mut runs_b) = (side_a.runs, side_b.runs);
    let summary = Summaries {
        a: side_a.summary,
        b: side_b.summary,
    };
    let flaky = flaky_cases([&side_a.repeats, &side_b.repeats], mode);
    let (ids_a, repeats_a): (Vec<String>, Vec<Repeats>) = side_a.repeats.into_iter().unzip();
    let (ids_b, repeats_b): (Vec<String>, Vec<Repeats>) = side_b.repeats.into_iter().unzip();
    // Where the runs of a key's id are in a side's list (in id order), for keys that name a case.
    let place = |ids: &[String], key: &Key| {
        (!key.by_name)
            .then(|| ids.binary_search_by(|id| id.as_str().cmp(&key.id)).ok())
            .flatten()
    };
    let mut comparison = Comparison {
        keyed_by: KeyedBy {
            a: side_a.kinds.keying(),
            b: side_b.kinds.keying(),
            attributes: KeyAttributes {
                a: side_a.attributes,
                b: side_b.attributes,
            },
            kinds: [side_a.kinds, side_b.kinds],
        },
        summary,
        newly_failing: Vec::new(),
        fixed: Vec::new(),
        still_failing: Vec::new(),
        still_passing: Vec::new(),
        only_in_a: Vec::new(),
        only_in_b: Vec::new(),
        flaky,
        repeats: [repeats_a, repeats_b],
    };
    for (key, side_a) in runs_a {
        let case = case_out(&key, mode);
        let repeats = [place(&ids_a, &key), place(&ids_b, &key)];
        let Some(side_b) = runs_b.remove(&key) else {
            comparison.only_in_a.push(Entry {
                case,
                a: Some(side_a),
                b: None,
                changed: Vec::new(),
                reason_changed: None,
                repeats,
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
        let changed = what_changed(&side_a, &side_b);
        let mut side_b = side_b;
        if side_a.failing && side_b.failing && side_b.note.is_none() {
            side_b.note = side_a.note.clone().map(|note| SideNote {
                carried: true,
                ..note
            });
        }
        class.push(Entry {
            case,
            changed,
            a: Some(side_a),
            b: Some(side_b),
            reason_changed,
            repeats,
        });
    }
    for (key, side_b) in runs_b {
        comparison.only_in_b.push(Entry {
            case: case_out(&key, mode),
            a: None,
            b: Some(side_b),
            changed: Vec::new(),
            reason_changed: None,
            repeats: [place(&ids_a, &key), place(&ids_b, &key)],
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

/// The ids whose index counts repeats, with the runs of each, in id order.
type RepeatsById = Vec<(String, Repeats)>;

/// The flaky ids of either side, in id order, with both sides' runs of each.
fn flaky_cases(repeats: [&RepeatsById; 2], mode: Reveal) -> Vec<FlakyCase> {
    let mut ids: BTreeMap<&str, [Option<&Repeats>; 2]> = BTreeMap::new();
    for (side, list) in repeats.into_iter().enumerate() {
        for (id, runs) in list {
            ids.entry(id.as_str()).or_default()[side] = Some(runs);
        }
    }
    ids.into_iter()
        .filter(|(_, sides)| sides.iter().flatten().any(|runs| runs.flaky()))
        .map(|(id, [a, b])| FlakyCase {
            id: redact::shown_data(id, mode).into_owned(),
            a: a.cloned(),
            b: b.cloned(),
        })
        .collect()
}

/// One side's runs by key, how they were keyed, and the runs of each id whose index counts
/// repeats.
struct KeyedSide {
    runs: BTreeMap<Key, Side>,
    kinds: KeyKinds,
    attributes: Vec<String>,
    summary: Summary,
    repeats: RepeatsById,
}

/// What names a run's case, before its index is settled.
struct Named<'a> {
    id: String,
    /// `None` counts the runs of the id in start order.
    index: Option<u64>,
    index_is_repeat: bool,
    /// The attribute the id was read from.
    attribute: Option<&'a str>,
}

/// How `rule` names the case `inv` runs, if it does; `by_task`, with its Inspect task.
fn named<'a>(inv: &Invocation, rule: &'a KeyRule, by_task: bool) -> Option<Named<'a>> {
    match rule {
        KeyRule::Case => match inv.case() {
            Some(case) => Some(Named {
                id: match &case.task {
                    Some(task) if by_task => Case::id_in_task(task, &case.id),
                    _ => case.id.clone(),
                },
                index: Some(case.index),
                index_is_repeat: case.index_is_repeat,
                attribute: None,
            }),
            None => example_attribute(inv).map(|(name, text)| Named {
                id: text,
                index: None,
                index_is_repeat: true,
                attribute: Some(name),
            }),
        },
        KeyRule::Attribute(name) => attribute_text(inv, name).map(|text| Named {
            id: text,
            index: None,
            index_is_repeat: true,
            attribute: Some(name),
        }),
    }
}

/// Every run of `store` by its key, and how they were keyed. Two runs with one case key (a
/// case run twice on one side, e.g. epochs) keep the first in start order; the later ones get
/// the next free index of that case, so none is lost.
fn keyed(store: &Store, rule: &KeyRule, by_task: bool, mode: Reveal) -> KeyedSide {
    let selection = Selection::all(store);
    let mut runs: Vec<&Invocation> = store.invocations().collect();
    runs.sort_by(|x, y| {
        (x.summary().start_unix_nano, &x.id).cmp(&(y.summary().start_unix_nano, &y.id))
    });
    let mut keyed = BTreeMap::new();
    let mut summary = Summary {
        problems: ProblemCounts::of(store.problems()),
        ..Summary::default()
    };
    let (mut durations, mut tokens, mut scores) = (Vec::new(), Vec::new(), Vec::new());
    let mut occurrences: BTreeMap<(bool, String), u64> = BTreeMap::new();
    let mut kinds = KeyKinds::default();
    let mut attributes: Vec<String> = Vec::new();
    for inv in runs {
        let (id, index, by_name_key, index_is_repeat) = match named(inv, rule, by_task) {
            Some(named) => {
                match named.attribute {
                    Some(name) => {
                        kinds.attribute += 1;
                        if !attributes.iter().any(|known| known == name) {
                            attributes.push(name.to_owned());
                        }
                    }
                    None => kinds.case += 1,
                }
                (named.id, named.index, false, named.index_is_repeat)
            }
            None => {
                kinds.name += 1;
                (inv.summary().name.to_string(), None, true, false)
            }
        };
        // Without an index of its own, a key's index is its occurrence in start order.
        let seen = occurrences.entry((by_name_key, id.clone())).or_default();
        *seen += 1;
        let mut key = Key {
            id,
            index: index.unwrap_or(*seen - 1),
            by_name: by_name_key,
        };
        while keyed.contains_key(&key) {
            key.index += 1;
        }
        let mut side = side(inv, &selection, mode);
        side.index_is_repeat = index_is_repeat;
        summary.add(inv, &key.id, &side, mode);
        if let Some(score) = side.eval.as_ref().and_then(|eval| eval.score) {
            scores.push(score);
        }
        durations.push(inv.summary().duration_ms());
        tokens.push(inv.summary().tokens() as f64);
        keyed.insert(key, side);
    }
    summary.mean_score =
        (!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64);
    summary.duration_ms = Spread::of(durations);
    summary.tokens = Spread::of(tokens);
    summary.pass_rate = match summary.runs {
        0 => None,
        runs => Some((runs - summary.failing) as f64 / runs as f64),
    };
    let repeats = repeats_of(&mut keyed);
    KeyedSide {
        runs: keyed,
        kinds,
        attributes,
        summary,
        repeats,
    }
}

/// The runs of each id whose index counts repeats, in index order, and each such run's side
/// told whether they disagree. The keys are in id order, then index order,
/// so one pass meets each id's runs together.
fn repeats_of(keyed: &mut BTreeMap<Key, Side>) -> RepeatsById {
    let mut out = Vec::new();
    let mut group: Vec<(u64, &mut Side)> = Vec::new();
    let mut group_id: Option<&str> = None;
    for (key, side) in keyed.iter_mut() {
        if key.by_name || !side.index_is_repeat {
            continue;
        }
        if group_id != Some(key.id.as_str()) {
            close_group(group_id, &mut group, &mut out);
            group_id = Some(&key.id);
        }
        group.push((key.index, side));
    }
    close_group(group_id, &mut group, &mut out);
    out
}

/// Adds the runs of `id` in `group` to `out` and tells each of their sides whether they
/// disagree.
fn close_group(id: Option<&str>, group: &mut Vec<(u64, &mut Side)>, out: &mut RepeatsById) {
    let Some(id) = id.filter(|_| !group.is_empty()) else {
        return;
    };
    let runs = Repeats::of(
        group
            .iter()
            .map(|(index, side)| (*index, side.failing))
            .collect(),
    );
    let flaky = runs.flaky();
    for (_, side) in group.drain(..) {
        side.flaky = flaky;
    }
    out.push((id.to_owned(), runs));
}

/// Both sides as wholes.
#[derive(Debug, Serialize)]
pub struct Summaries {
    pub a: Summary,
    pub b: Summary,
}

/// One side as a whole: how many runs, how many fail and why, which tools fail, how long and
/// how many tokens runs take.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub runs: usize,
    pub failing: usize,
    /// Passing runs of all runs; `None` without runs.
    pub pass_rate: Option<f64>,
    /// Runs an evaluator judged: coverage, since a run no evaluator judged passes unless a span
    /// or a gold fails it.
    pub evaluated: usize,
    /// Runs whose root span failed.
    pub errored: usize,
    /// Mean of the evaluator's scores over the runs that have one.
    pub mean_score: Option<f64>,
    /// Runs by evaluator label.
    pub eval_labels: BTreeMap<String, usize>,
    /// Runs and failing runs by case id (an arksim scenario, an attribute's text, a run name).
    pub by_case: BTreeMap<String, CaseCounts>,
    /// Tool calls and failed calls by tool name.
    pub tools: BTreeMap<String, ToolCounts>,
    pub duration_ms: Spread,
    pub tokens: Spread,
    /// Errors and warnings met while loading the side.
    pub problems: ProblemCounts,
}

impl Summaries {
    /// Whether either side met errors or warnings while loading.
    pub fn any_problems(&self) -> bool {
        !self.a.problems.is_clean() || !self.b.problems.is_clean()
    }
}

#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct CaseCounts {
    pub runs: usize,
    pub failing: usize,
}

#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct ToolCounts {
    pub calls: usize,
    pub failed: usize,
}

/// Median and 90th percentile (nearest rank) of a figure over runs.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct Spread {
    pub median: Option<f64>,
    pub p90: Option<f64>,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Spread {
        values.retain(|v| v.is_finite());
        values.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            let n = values.len();
            (n > 0).then(|| values[((p * n as f64).ceil() as usize).clamp(1, n) - 1])
        };
        Spread {
            median: rank(0.5),
            p90: rank(0.9),
        }
    }
}

impl Summary {
    fn add(&mut self, inv: &Invocation, case_id: &str, side: &Side, mode: Reveal) {
        self.runs += 1;
        self.failing += usize::from(side.failing);
        let case = self
            .by_case
            .entry(redact::shown_data(case_id, mode).into_owned())
            .or_default();
        case.runs += 1;
        case.failing += usize::from(side.failing);
        self.errored += usize::from(side.facets.contains(&"error"));
        if let Some(eval) = &side.eval {
            self.evaluated += 1;
            *self.eval_labels.entry(eval.label.clone()).or_default() += 1;
        }
        for call in &inv.summary().tool_calls {
            let name = inv.spans[call.span()].tool_name().unwrap_or("(unnamed)");
            let counts = self
                .tools
                .entry(redact::shown_data(name, mode).into_owned())
                .or_default();
            counts.calls += 1;
            counts.failed += usize::from(call.failed);
        }
    }
}

/// The text of attribute `name` on the run's first span, in tree order, that has it.
fn attribute_text(inv: &Invocation, name: &str) -> Option<String> {
    let tree = inv.tree();
    tree.rows
        .iter()
        .map(|row| &inv.spans[row.span()])
        .find_map(|span| span.attr(name).map(|value| value.display_short()))
}

/// The first of the [`EXAMPLE_ATTRIBUTES`] on the run's spans in tree order (on one span, in
/// the list's order), and its text.
fn example_attribute(inv: &Invocation) -> Option<(&'static str, String)> {
    let tree = inv.tree();
    tree.rows
        .iter()
        .map(|row| &inv.spans[row.span()])
        .find_map(|span| {
            EXAMPLE_ATTRIBUTES
                .iter()
                .find_map(|&name| span.attr(name).map(|value| (name, value.display_short())))
        })
}

/// One run's verdict. A case fails by the list's rule (root span failed, evaluator failed it,
/// gold differs), with one exception: a span failing below the root of a run an evaluator
/// judged (a tool error the agent recovered from) is shown among the facets but leaves the
/// verdict to the evaluator, as the evaluation harness decides what a case is.
fn side(inv: &Invocation, selection: &Selection, mode: Reveal) -> Side {
    let facets = Facets::of(inv, selection.gold(&inv.id.text()));
    let judged = inv.eval().is_some();
    let failing = facets
        .list()
        .into_iter()
        .any(|facet| facet != Facet::SpanDegraded || !judged);
    Side {
        id: redact::shown_data(&inv.id.text(), mode).into_owned(),
        run: inv.id.clone(),
        failing,
        flaky: false,
        index_is_repeat: false,
        facets: facets.list().into_iter().map(|f| f.name()).collect(),
        eval: inv.eval().map(|eval| EvalSide {
            label: redact::shown_data(&eval.label, mode).into_owned(),
            reason: redact::shown_data(&eval.shown_reason(mode), mode).into_owned(),
            score: eval.score,
            failing_scorers: selection
                .scorer_rule()
                .failing(eval)
                .map(|scorer| redact::shown_data(&scorer.label(), mode).into_owned())
                .collect(),
        }),
        note: selection
            .notes()
            .of_run(&inv.id.text())
            .map(|note| SideNote::of(note, mode)),
    }
}

/// A side's pass rate with its counts and coverage.
fn rate(s: &Summary) -> String {
    let percent = s
        .pass_rate
        .map_or("-".to_owned(), |rate| format!("{:.1}%", rate * 100.0));
    format!(
        "{percent} ({} of {} runs pass; {} evaluated, {} errored)",
        s.runs - s.failing,
        s.runs,
        s.evaluated,
        s.errored
    )
}

/// Tools whose failures differ between the sides, by name: (name, A's counts, B's counts).
pub fn tool_deltas(comparison: &Comparison) -> Vec<(&str, ToolCounts, ToolCounts)> {
    let (a, b) = (&comparison.summary.a.tools, &comparison.summary.b.tools);
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (ca, cb) = (
                a.get(name).copied().unwrap_or_default(),
                b.get(name).copied().unwrap_or_default(),
            );
            (ca.failed != cb.failed || (ca.failed > 0 && ca.calls != cb.calls)).then_some((
                name.as_str(),
                ca,
                cb,
            ))
        })
        .collect()
}

/// What differs between a case's two runs: the facets failing on one side only, then the
/// evaluator's label and score.
fn what_changed(a: &Side, b: &Side) -> Vec<&'static str> {
    let mut changed: Vec<&'static str> = a
        .facets
        .iter()
        .filter(|facet| !b.facets.contains(facet))
        .chain(b.facets.iter().filter(|facet| !a.facets.contains(facet)))
        .copied()
        .collect();
    let (eval_a, eval_b) = (a.eval.as_ref(), b.eval.as_ref());
    if eval_a.map(|e| &e.label) != eval_b.map(|e| &e.label) {
        changed.push("eval.label");
    }
    if eval_a.and_then(|e| e.score) != eval_b.and_then(|e| e.score) {
        changed.push("eval.score");
    }
    changed
}

/// The comparison as plain text: counts per class, then each case that changed.
pub fn text(comparison: &Comparison, a: &str, b: &str) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "A {a} (keyed by {}) → B {b} (keyed by {})\n",
        comparison.keyed_by.words(0),
        comparison.keyed_by.words(1)
    ));
    let (sa, sb) = (&comparison.summary.a, &comparison.summary.b);
    out.push_str(&format!("pass rate: {} → {}\n", rate(sa), rate(sb)));
    if comparison.summary.any_problems() {
        out.push_str(&format!(
            "problems while loading: {} → {} (`dump` a side to list them)\n",
            sa.problems.words(),
            sb.problems.words()
        ));
    }
    let labels: std::collections::BTreeSet<&String> =
        sa.eval_labels.keys().chain(sb.eval_labels.keys()).collect();
    for label in labels {
        let count = |s: &Summary| s.eval_labels.get(label).copied().unwrap_or(0);
        out.push_str(&format!(
            "  evaluator label {}: {} → {}\n",
            redact::sanitize_line(label),
            count(sa),
            count(sb)
        ));
    }
    for (name, a, b) in tool_deltas(comparison) {
        out.push_str(&format!(
            "  tool {}: {} of {} calls failed → {} of {}\n",
            redact::sanitize_line(name),
            a.failed,
            a.calls,
            b.failed,
            b.calls
        ));
    }
    let spread = |s: &Spread, unit: &str| match (s.median, s.p90) {
        (Some(median), Some(p90)) => format!("median {median:.0}{unit}, p90 {p90:.0}{unit}"),
        _ => "none".to_owned(),
    };
    out.push_str(&format!(
        "duration: {} → {}\ntokens: {} → {}\n",
        spread(&sa.duration_ms, " ms"),
        spread(&sb.duration_ms, " ms"),
        spread(&sa.tokens, ""),
        spread(&sb.tokens, "")
    ));
    let classes = comparison.classes();
    for (name, entries) in classes {
        out.push_str(&format!("{name}: {}\n", entries.len()));
    }
    for (name, entries) in &classes[..3] {
        for entry in entries.iter() {
            let facets = |side: &Option<Side>| match side {
                None => "-".to_owned(),
                Some(side) if side.failing => side.facets.join(","),
                Some(side) if side.facets.is_empty() => "passing".to_owned(),
                Some(side) => format!("passing ({})", side.facets.join(",")),
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
    for (entry, note) in still_failing_notes(comparison) {
        out.push_str(&format!(
            "  note  {} #{}  {}\n",
            redact::sanitize_line(&entry.case.id),
            entry.case.index,
            redact::sanitize_line(&note.words())
        ));
    }
    if !comparison.flaky.is_empty() {
        out.push_str(&format!(
            "flaky cases: {} (runs of one case disagree; ✓ pass, ✗ fail, in index order)\n",
            comparison.flaky.len()
        ));
        for case in &comparison.flaky {
            out.push_str(&format!(
                "  flaky  {}  A: {}  B: {}\n",
                redact::sanitize_line(&case.id),
                repeats_words(case.a.as_ref()),
                repeats_words(case.b.as_ref())
            ));
        }
    }
    out
}

/// The cases still failing that carry a triage note (B's, else A's carried over), in order.
pub fn still_failing_notes(comparison: &Comparison) -> Vec<(&Entry, &SideNote)> {
    comparison
        .still_failing
        .iter()
        .filter_map(|entry| Some((entry, entry.b.as_ref()?.note.as_ref()?)))
        .collect()
}

/// A side's runs of a flaky case: `✓✗✓ (2 of 3 pass)`, or `-` where it has none.
fn repeats_words(runs: Option<&Repeats>) -> String {
    match runs {
        Some(runs) => format!("{} ({})", runs.strip, runs.counts_words()),
        None => "-".to_owned(),
    }
}

/// The comparison as Markdown: the summary, then a table per class that changed or still
/// fails. Trace text sits in code spans, so none of it is read as Markdown or HTML.
pub fn markdown(comparison: &Comparison, a: &str, b: &str) -> String {
    let code = |text: &str| crate::views::report::code_of_shown(text.to_owned());
    let (sa, sb) = (&comparison.summary.a, &comparison.summary.b);
    let mut out = format!(
        "# Comparison\n\n- A: {} (paired by {})\n- B: {} (paired by {})\n\n",
        code(a),
        comparison.keyed_by.words(0),
        code(b),
        comparison.keyed_by.words(1)
    );
    let spread = |s: &Spread| match (s.median, s.p90) {
        (Some(median), Some(p90)) => format!("{median:.0} / {p90:.0}"),
        _ => "-".to_owned(),
    };
    let score = |s: &Summary| s.mean_score.map_or("-".to_owned(), |m| format!("{m:.2}"));
    let percent = |s: &Summary| {
        s.pass_rate
            .map_or("-".to_owned(), |rate| format!("{:.1}%", rate * 100.0))
    };
    out.push_str("| | A | B |\n| --- | --- | --- |\n");
    let problems = comparison.summary.any_problems().then(|| {
        (
            "problems while loading",
            sa.problems.words(),
            sb.problems.words(),
        )
    });
    let rows = [
        ("pass rate", percent(sa), percent(sb)),
        ("runs", sa.runs.to_string(), sb.runs.to_string()),
        ("failing", sa.failing.to_string(), sb.failing.to_string()),
        (
            "evaluated",
            sa.evaluated.to_string(),
            sb.evaluated.to_string(),
        ),
        ("errored", sa.errored.to_string(), sb.errored.to_string()),
    ]
    .into_iter()
    .chain(problems)
    .chain([
        ("mean evaluator score", score(sa), score(sb)),
        (
            "duration ms (median / p90)",
            spread(&sa.duration_ms),
            spread(&sb.duration_ms),
        ),
        (
            "tokens (median / p90)",
            spread(&sa.tokens),
            spread(&sb.tokens),
        ),
    ]);
    for (row, va, vb) in rows {
        out.push_str(&format!("| {row} | {va} | {vb} |\n"));
    }
    out.push_str("\n| class | cases |\n| --- | --- |\n");
    let classes = comparison.classes();
    for (name, entries) in &classes {
        out.push_str(&format!("| {name} | {} |\n", entries.len()));
    }
    let labels: std::collections::BTreeSet<&String> =
        sa.eval_labels.keys().chain(sb.eval_labels.keys()).collect();
    if !labels.is_empty() {
        out.push_str("\n## Evaluator labels\n\n| label | A | B |\n| --- | --- | --- |\n");
        for label in labels {
            let count = |s: &Summary| s.eval_labels.get(label).copied().unwrap_or(0);
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                code(label),
                count(sa),
                count(sb)
            ));
        }
    }
    let cases: std::collections::BTreeSet<&String> =
        sa.by_case.keys().chain(sb.by_case.keys()).collect();
    if cases.len() > 1 || sa.runs != cases.len() {
        out.push_str(
            "\n## By case\n\n| case | A failing / runs | B failing / runs |\n| --- | --- | --- |\n",
        );
        for case in cases {
            let counts = |s: &Summary| {
                s.by_case
                    .get(case)
                    .map_or("-".to_owned(), |c| format!("{} / {}", c.failing, c.runs))
            };
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                code(case),
                counts(sa),
                counts(sb)
            ));
        }
    }
    let tools = tool_deltas(comparison);
    if !tools.is_empty() {
        out.push_str("\n## Tool failures\n\n| tool | A failed / calls | B failed / calls |\n| --- | --- | --- |\n");
        for (name, ta, tb) in tools {
            out.push_str(&format!(
                "| {} | {} / {} | {} / {} |\n",
                code(name),
                ta.failed,
                ta.calls,
                tb.failed,
                tb.calls
            ));
        }
    }
    if !comparison.flaky.is_empty() {
        out.push_str(
            "\n## Flaky cases\n\nRuns of one case (epochs, repeats) that disagree within a run; \
             ✓ passing, ✗ failing, in index order.\n\n| case | A | B |\n| --- | --- | --- |\n",
        );
        for case in &comparison.flaky {
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                code(&case.id),
                repeats_words(case.a.as_ref()),
                repeats_words(case.b.as_ref())
            ));
        }
    }
    for (name, entries) in &classes[..3] {
        if entries.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n## {}{}\n\n| case | index | A | B |\n| --- | --- | --- | --- |\n",
            name[..1].to_uppercase(),
            &name[1..]
        ));
        for entry in entries.iter() {
            let verdict = |side: &Option<Side>| match side {
                None => "-".to_owned(),
                Some(side) if !side.failing && side.facets.is_empty() => "passing".to_owned(),
                Some(side) if !side.failing => format!("passing ({})", side.facets.join(", ")),
                Some(side) => {
                    let mut text = side.facets.join(", ");
                    if let Some(eval) = &side.eval {
                        text.push_str(&format!(" {}", code(&eval.label)));
                        if !eval.reason.is_empty() {
                            text.push_str(&format!(": {}", code(&eval.reason)));
                        }
                    }
                    text
                }
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                code(&entry.case.id),
                entry.case.index,
                verdict(&entry.a),
                verdict(&entry.b)
            ));
        }
    }
    let notes = still_failing_notes(comparison);
    if !notes.is_empty() {
        out.push_str(
            "\n## Triage notes of cases still failing\n\nB's note, else A's carried over.\n\n\
             | case | index | label | note | by |\n| --- | --- | --- | --- | --- |\n",
        );
        for (entry, note) in notes {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                code(&entry.case.id),
                entry.case.index,
                note.label,
                code(&redact::sanitize_line(
                    format!(
                        "{}{}",
                        note.note,
                        if note.carried { " (from A)" } else { "" }
                    )
                    .trim()
                )),
                code(&redact::sanitize_line(&note.author))
            ));
        }
    }
    out
}
