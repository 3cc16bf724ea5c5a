//! Golds about a whole conversation. An arksim scenario's `tool_calls` assertion is matched
//! by arksim against every turn's calls concatenated, so it is evaluated here on the calls of
//! all the conversation's turns (in turn order), never on the one turn its gold was filed
//! under. Each turn's share is the rows its own calls (or, for missing calls, the turn the
//! gold was filed under, as arksim reports them) stand on.

use std::collections::HashMap;
use std::sync::Arc;

use super::align::Row;
use super::check::actual_calls;
use super::report::{CheckOptions, ConversationScope, DiffReport};
use super::{ActualCall, GoldSpec};
use crate::model::AttrValue;
use crate::store::{Invocation, Store};

/// The arksim conversation an invocation is a turn of, from its turn span. A blank id names
/// none, as in the run's summary, which looks at this key first: a run whose summary did not
/// take its conversation from this key holds no non-blank value of it, has none here either,
/// and its spans are not read (callers ask of every run, on every refresh of the TUI).
pub fn conversation_of(invocation: &Invocation) -> Option<&str> {
    if invocation.summary().conversation_key() != Some(ARKSIM_CONVERSATION_KEY) {
        return None;
    }
    let conversation = invocation
        .spans
        .iter()
        .find_map(|s| s.attr(ARKSIM_CONVERSATION_KEY)?.text())
        .filter(|id| !id.trim().is_empty())?;
    // A turn of a simulation is `<simulation>/<conversation>/turn-<n>`: two runs that reuse
    // conversation ids are two conversations.
    let run_scoped = (invocation.id.as_text())
        .and_then(|id| id.rsplit_once("/turn-"))
        .map(|(scope, _)| scope)
        .filter(|scope| {
            scope
                .strip_suffix(conversation)
                .is_some_and(|run| run.ends_with('/'))
        });
    Some(run_scoped.unwrap_or(conversation))
}

const ARKSIM_CONVERSATION_KEY: &str = "arksim.conversation_id";

/// A turn's position: arksim turn ids are integers; anything else sorts after them by text.
fn turn_key(invocation: &Invocation) -> (u64, String) {
    let turn = invocation
        .spans
        .iter()
        .find_map(|s| match s.attr("arksim.turn_id").as_deref() {
            Some(AttrValue::Str(t)) => Some(t.to_string()),
            Some(AttrValue::Int(t)) => Some(t.to_string()),
            _ => None,
        })
        .or_else(|| {
            (invocation.id.as_text())
                .and_then(|id| id.rsplit_once("/turn-"))
                .map(|(_, t)| t.to_string())
        })
        .unwrap_or_default();
    (turn.parse().unwrap_or(u64::MAX), turn)
}

/// A turn's sort key with its invocation id.
type TurnEntry = ((u64, String), String);

/// Conversation id → its turns' invocation ids in turn order, for one store state.
///
/// Kept current run by run: a refresh looks again only at the runs changed since the last one
/// (finding a run's conversation reads every attribute of every span, and a live load changes
/// the store every drain), and rebuilds from scratch only when runs left the store.
#[derive(Debug, Default, Clone)]
pub struct Conversations {
    turns: HashMap<String, Vec<String>>,
    /// Each conversation's turns with their sort keys, in turn order.
    keyed: HashMap<String, Vec<TurnEntry>>,
    /// The conversation of each run that has one.
    member: HashMap<String, String>,
    generation: Option<u64>,
    runs_removed: u64,
}

impl Conversations {
    pub fn of_store(store: &Store) -> Self {
        let mut conversations = Conversations::default();
        conversations.refresh(store);
        conversations
    }

    /// Brings the index up to date with the store.
    pub fn refresh(&mut self, store: &Store) {
        let since = match self.generation {
            Some(g) if g == store.generation() => return,
            Some(g) if self.runs_removed == store.runs_removed() => Some(g),
            _ => None,
        };
        if since.is_none() {
            *self = Conversations {
                runs_removed: store.runs_removed(),
                ..Conversations::default()
            };
        }
        let mut touched = std::collections::HashSet::new();
        // In the store's own order: each turn is placed by its key, so the order runs are
        // looked at in does not matter, and sorting every run at every drain would.
        for inv in store.invocations() {
            if since.is_some_and(|g| inv.changed_at() <= g) {
                continue;
            }
            let id = inv.id.to_string();
            if let Some(before) = self.member.remove(&id)
                && let Some(list) = self.keyed.get_mut(&before)
            {
                list.retain(|(_, turn_id)| *turn_id != id);
                touched.insert(before);
            }
            if let Some(conversation) = conversation_of(inv) {
                let entry = (turn_key(inv), id.clone());
                let list = self.keyed.entry(conversation.to_string()).or_default();
                let at = list.binary_search(&entry).unwrap_or_else(|at| at);
                list.insert(at, entry);
                self.member.insert(id, conversation.to_string());
                touched.insert(conversation.to_string());
            }
        }
        for conversation in touched {
            match self
                .keyed
                .get(&conversation)
                .filter(|list| !list.is_empty())
            {
                Some(list) => {
                    let ids = list.iter().map(|(_, id)| id.clone()).collect();
                    self.turns.insert(conversation, ids);
                }
                None => {
                    self.keyed.remove(&conversation);
                    self.turns.remove(&conversation);
                }
            }
        }
        self.generation = Some(store.generation());
    }

    pub fn turns(&self, conversation: &str) -> &[String] {
        self.turns.get(conversation).map_or(&[], Vec::as_slice)
    }
}

/// The whole-conversation gold of a conversation: an arksim assertion carried by one of its
/// turns, with the turn it was filed under.
pub fn conversation_gold<'a>(
    store: &'a Store,
    turns: &[String],
) -> Option<(&'a Invocation, Arc<GoldSpec>)> {
    turns.iter().find_map(|id| {
        let inv = store.get(id)?;
        let gold = inv.gold().filter(|g| g.match_mode.is_some())?;
        Some((inv, Arc::new(gold.clone())))
    })
}

/// What arksim itself wrote about this conversation: the trajectory verdicts (`[Trajectory]`
/// reasons) on its turns and the conversation's `evaluation_status`, quoted and attributed.
pub fn arksim_said(store: &Store, turns: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut status = None;
    for id in turns {
        let Some(inv) = store.get(id) else { continue };
        for span in &inv.spans {
            for (key, value) in &span.attributes {
                let Some(text) = value.text() else {
                    continue;
                };
                if key.starts_with("arksim.qual.") && text.contains("[Trajectory]") {
                    lines.push(format!(
                        "arksim said (evaluation.json, {}): {text}",
                        turn_label(inv)
                    ));
                } else if key == "arksim.conversation.evaluation_status" && status.is_none() {
                    status = Some(text);
                }
            }
        }
    }
    if let Some(status) = status {
        let recorded = if lines.is_empty() {
            ", no trajectory failure recorded"
        } else {
            ""
        };
        lines.insert(
            0,
            format!(
                "arksim said (evaluation.json, conversation): evaluation_status {status}{recorded}"
            ),
        );
    }
    lines
}

fn turn_label(inv: &Invocation) -> String {
    let (_, turn) = turn_key(inv);
    format!("turn {turn}")
}

/// The report of a conversation's gold over all its turns' calls.
pub fn conversation_report(
    store: &Store,
    conversation: &str,
    turns: &[String],
    options: CheckOptions,
) -> Option<DiffReport> {
    let (holder, gold) = conversation_gold(store, turns)?;
    let mut actual: Vec<ActualCall> = Vec::new();
    let mut call_turn = Vec::new();
    let mut notes = Vec::new();
    for (t, id) in turns.iter().enumerate() {
        let Some(inv) = store.get(id) else { continue };
        let (calls, more) = actual_calls(inv);
        call_turn.extend(std::iter::repeat_n(t, calls.len()));
        actual.extend(calls);
        notes.extend(more);
    }
    let mut report = DiffReport::build(conversation, gold, actual, options);
    let scenario = holder
        .summary()
        .name
        .split(" · ")
        .next()
        .unwrap_or_default()
        .to_string();
    report.name = Some(format!(
        "{scenario} · conversation, {} turn(s)",
        turns.len()
    ))
    .filter(|_| !scenario.is_empty());
    report.notes.extend(notes);
    report.evaluator = arksim_said(store, turns);
    report.conversation = Some(ConversationScope {
        conversation_id: conversation.to_string(),
        turns: turns.to_vec(),
        call_turn,
        holder: turns.iter().position(|t| *t == holder.id),
        focus: None,
    });
    Some(report)
}

/// One turn's share of a conversation report: the rows its calls stand on, how many of those
/// count against the gold, and (for the turn the gold is filed under) the missing calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnShare {
    pub rows: usize,
    pub differing: usize,
}

/// Whether a row is part of one turn's share (by index into the scope's turns).
pub fn row_in_turn(scope: &ConversationScope, row: &Row, turn: usize) -> bool {
    match row.actual {
        Some(a) => scope.call_turn.get(a) == Some(&turn),
        None => scope.holder == Some(turn),
    }
}

/// Whether `id`'s part of `report` passes. For a turn of a whole-conversation gold, its share
/// of the rows (the turn the gold is filed under also carries the conversation's verdict); for
/// any other report, the report's verdict. The list, the failure queue, `dump`, queries and the
/// triage report all judge an invocation's gold by this one rule.
pub fn passes_for(report: &DiffReport, id: &str) -> bool {
    match (turn_share(report, id), report.conversation.as_ref()) {
        (Some(share), Some(scope)) => {
            let holder = scope
                .holder
                .and_then(|h| scope.turns.get(h))
                .map(String::as_str)
                == Some(id);
            share.differing == 0 && (!holder || report.passed())
        }
        _ => report.passed(),
    }
}

pub fn turn_share(report: &DiffReport, turn_id: &str) -> Option<TurnShare> {
    let scope = report.conversation.as_ref()?;
    let turn = scope.turns.iter().position(|t| t == turn_id)?;
    let mut share = TurnShare::default();
    for row in report.rows.iter().filter(|r| row_in_turn(scope, r, turn)) {
        share.rows += 1;
        share.differing += usize::from(report.row_differs(row));
    }
    Some(share)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ArcStr, Batch, Span};
    use crate::store::Budget;

    fn turn(conversation: &str, turn: u64, trace: &str, span: &str) -> Span {
        let text = |t: String| AttrValue::Str(ArcStr::from(t.as_str()));
        Span {
            trace_id: trace.into(),
            span_id: span.into(),
            name: "turn".into(),
            provenance: crate::model::Provenance::shared(None, None, "test".into()),
            attributes: vec![
                ("arksim.conversation_id".into(), text(conversation.into())),
                ("arksim.turn_id".into(), AttrValue::Int(turn as i64)),
            ]
            .into(),
            ..Default::default()
        }
    }

    fn plain(trace: &str, span: &str) -> Span {
        Span {
            trace_id: trace.into(),
            span_id: span.into(),
            name: "other".into(),
            provenance: crate::model::Provenance::shared(None, None, "test".into()),
            ..Default::default()
        }
    }

    fn all_turns(c: &Conversations, conversations: &[&str]) -> Vec<Vec<String>> {
        conversations
            .iter()
            .map(|id| c.turns(id).to_vec())
            .collect()
    }

    /// Runs whose spans name conversations by several keys, blank or not, text or number: the
    /// run's arksim conversation read through its summary equals one read from every span.
    #[test]
    fn a_run_s_arksim_conversation_is_what_its_spans_say() {
        let text = |t: &str| AttrValue::Str(ArcStr::from(t));
        let by_every_span = |inv: &Invocation| -> Option<String> {
            let named = inv
                .spans
                .iter()
                .find_map(|s| s.attr(ARKSIM_CONVERSATION_KEY)?.text());
            named.filter(|id| !id.trim().is_empty()).map(str::to_owned)
        };
        // (shape, each span's attributes, the conversation expected).
        type Shape<'a> = (&'a str, Vec<Vec<(&'a str, AttrValue)>>, Option<&'a str>);
        let shapes: Vec<Shape> = vec![
            (
                "arksim",
                vec![vec![(ARKSIM_CONVERSATION_KEY, text("c1"))]],
                Some("c1"),
            ),
            (
                "other key",
                vec![vec![("gen_ai.conversation.id", text("g1"))]],
                None,
            ),
            (
                "blank arksim beside another key",
                vec![vec![
                    (ARKSIM_CONVERSATION_KEY, text(" ")),
                    ("gen_ai.conversation.id", text("g1")),
                ]],
                None,
            ),
            (
                "blank then named",
                vec![
                    vec![(ARKSIM_CONVERSATION_KEY, text(""))],
                    vec![(ARKSIM_CONVERSATION_KEY, text("c2"))],
                ],
                None,
            ),
            (
                "a number, then a text",
                vec![
                    vec![(ARKSIM_CONVERSATION_KEY, AttrValue::Int(5))],
                    vec![(ARKSIM_CONVERSATION_KEY, text("c3"))],
                ],
                Some("c3"),
            ),
            ("none", vec![vec![]], None),
        ];
        for (k, (shape, spans, expected)) in shapes.into_iter().enumerate() {
            let trace = format!("run{k}");
            let spans = spans
                .into_iter()
                .enumerate()
                .map(|(i, attributes)| Span {
                    attributes: attributes
                        .into_iter()
                        .map(|(key, value)| (ArcStr::from(key), value))
                        .collect(),
                    ..plain(&trace, &format!("s{i}"))
                })
                .collect();
            let mut store = Store::new();
            store.apply(Batch {
                spans,
                ..Default::default()
            });
            store.settle();
            let inv = store.get(&trace).expect(shape);
            assert_eq!(conversation_of(inv), expected, "{shape}");
            assert_eq!(
                conversation_of(inv).map(str::to_owned),
                by_every_span(inv),
                "{shape}"
            );
        }
    }

    #[test]
    fn kept_current_run_by_run_it_equals_one_built_from_scratch() {
        let names = ["c1", "c2", "c3"];
        let mut store = Store::with_budget(Budget {
            max_invocations: Some(6),
            max_bytes: None,
        });
        let mut kept = Conversations::of_store(&store);
        let steps: Vec<Vec<Span>> = vec![
            vec![
                turn("c1", 2, "t2", "s2"),
                turn("c1", 1, "t1", "s1"),
                plain("p1", "x1"),
            ],
            vec![turn("c2", 1, "t3", "s3"), turn("c1", 3, "t4", "s4")],
            // A run that had no conversation gains one; another run grows.
            vec![turn("c3", 1, "p1", "x2"), plain("t3", "s5")],
            // Past six runs the oldest are evicted: the index starts again from the store.
            vec![
                turn("c2", 2, "t5", "s6"),
                turn("c2", 3, "t6", "s7"),
                plain("p2", "x3"),
            ],
        ];
        for (step, spans) in steps.into_iter().enumerate() {
            store.ingest(Batch {
                spans,
                ..Default::default()
            });
            kept.refresh(&store);
            let fresh = Conversations::of_store(&store);
            assert_eq!(
                all_turns(&kept, &names),
                all_turns(&fresh, &names),
                "after step {step}"
            );
        }
        assert!(store.runs_removed() > 0, "the last step evicted runs");
        assert_eq!(
            kept.turns("c1"),
            ["t4"],
            "t2 and t1, the oldest, were evicted"
        );
        assert_eq!(kept.turns("c2"), ["t3", "t5", "t6"], "in turn order");
        assert_eq!(kept.turns("c3"), ["p1"]);
    }
}
