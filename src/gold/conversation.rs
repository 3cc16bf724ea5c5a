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

/// The arksim conversation an invocation is a turn of, from its turn span.
pub fn conversation_of(invocation: &Invocation) -> Option<&str> {
    invocation
        .spans
        .iter()
        .find_map(|s| match s.attr("arksim.conversation_id") {
            Some(AttrValue::Str(id)) => Some(&**id),
            _ => None,
        })
}

/// A turn's position: arksim turn ids are integers; anything else sorts after them by text.
fn turn_key(invocation: &Invocation) -> (u64, String) {
    let turn = invocation
        .spans
        .iter()
        .find_map(|s| match s.attr("arksim.turn_id") {
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
#[derive(Debug, Default, Clone)]
pub struct Conversations {
    turns: HashMap<String, Vec<String>>,
    generation: Option<u64>,
}

impl Conversations {
    pub fn of_store(store: &Store) -> Self {
        let mut keyed: HashMap<String, Vec<TurnEntry>> = HashMap::new();
        for inv in store.oldest_first() {
            if let Some(conversation) = conversation_of(inv) {
                keyed
                    .entry(conversation.to_string())
                    .or_default()
                    .push((turn_key(inv), inv.id.to_string()));
            }
        }
        let turns = keyed
            .into_iter()
            .map(|(conversation, mut list)| {
                list.sort();
                (conversation, list.into_iter().map(|(_, id)| id).collect())
            })
            .collect();
        Conversations {
            turns,
            generation: Some(store.generation()),
        }
    }

    /// Rebuilds the index when the store changed since it was built.
    pub fn refresh(&mut self, store: &Store) {
        if self.generation != Some(store.generation()) {
            *self = Conversations::of_store(store);
        }
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
        let gold = inv.gold.as_deref().filter(|g| g.match_mode.is_some())?;
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
                let AttrValue::Str(text) = value else {
                    continue;
                };
                if key.starts_with("arksim.qual.") && text.contains("[Trajectory]") {
                    lines.push(format!(
                        "arksim said (evaluation.json, {}): {text}",
                        turn_label(inv)
                    ));
                } else if &**key == "arksim.conversation.evaluation_status" && status.is_none() {
                    status = Some(text.clone());
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
