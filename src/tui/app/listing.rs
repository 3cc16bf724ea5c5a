//! The invocation list's order and rows: the sort key, and runs of one conversation grouped
//! under a collapsible conversation row, turns in turn order.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::store::Invocation;

/// What the list is sorted by; `s` cycles through them. Each sorts the worst / newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    #[default]
    Start,
    Duration,
    Tokens,
    FailedTools,
    Score,
}

impl SortKey {
    pub fn next(self) -> SortKey {
        match self {
            SortKey::Start => SortKey::Duration,
            SortKey::Duration => SortKey::Tokens,
            SortKey::Tokens => SortKey::FailedTools,
            SortKey::FailedTools => SortKey::Score,
            SortKey::Score => SortKey::Start,
        }
    }

    /// What the list header says.
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Start => "newest first",
            SortKey::Duration => "longest first",
            SortKey::Tokens => "most tokens first",
            SortKey::FailedTools => "most failed tools first",
            SortKey::Score => "lowest score first",
        }
    }

    /// `Less` when `a` goes above `b`.
    pub(super) fn compare(self, a: &Invocation, b: &Invocation) -> Ordering {
        let (sa, sb) = (a.summary(), b.summary());
        let primary = match self {
            SortKey::Start => sb.start_unix_nano.cmp(&sa.start_unix_nano),
            SortKey::Duration => sb.duration_ms().total_cmp(&sa.duration_ms()),
            SortKey::Tokens => sb.tokens().cmp(&sa.tokens()),
            SortKey::FailedTools => sb.failed_tool_calls.cmp(&sa.failed_tool_calls),
            // Runs without a score go last.
            SortKey::Score => {
                let score = |inv: &Invocation| inv.eval.as_ref().and_then(|e| e.score);
                match (score(a), score(b)) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                }
            }
        };
        primary
            .then_with(|| sb.start_unix_nano.cmp(&sa.start_unix_nano))
            .then_with(|| a.id.cmp(&b.id))
    }
}

/// One row of the list as drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListRow {
    /// A conversation's header row, with its number of turns; they follow each other in
    /// reading order from position `first`.
    Conversation {
        id: String,
        turns: usize,
        first: usize,
    },
    /// A run: its position in [`Arranged::runs`] (the list's reading order).
    Invocation(usize),
}

/// The list's order: every listed invocation (members of folded conversations too, for the
/// failure queue) and the rows shown.
pub struct Arranged {
    pub runs: Vec<Arc<Invocation>>,
    pub rows: Vec<ListRow>,
    /// Invocation id → the conversation row it sits under.
    pub conversation_of: HashMap<String, String>,
}

/// Sorts `listed` by `key` (a pass that only checks, when it already is in that order, as the
/// filter hands it over) and groups runs sharing a conversation (two or more) under a row
/// placed where its best-sorted turn would be; turns follow in turn order.
///
/// Runs are handed on as shared handles and rows refer to them by position: a list of 100,000
/// runs is built without copying an id (copying them was most of a rebuild's cost).
pub fn arrange(
    mut listed: Vec<Arc<Invocation>>,
    key: SortKey,
    folded: &HashSet<String>,
) -> Arranged {
    if !listed.is_sorted_by(|a, b| key.compare(a, b) != Ordering::Greater) {
        listed.sort_by(|a, b| key.compare(a, b));
    }
    let mut members: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, inv) in listed.iter().enumerate() {
        if let Some(conversation) = inv.conversation_id() {
            members.entry(conversation).or_default().push(k);
        }
    }
    members.retain(|_, turns| turns.len() >= 2);
    if members.is_empty() {
        let rows = (0..listed.len()).map(ListRow::Invocation).collect();
        return Arranged {
            runs: listed,
            rows,
            conversation_of: HashMap::new(),
        };
    }
    for turns in members.values_mut() {
        turns.sort_by(|&a, &b| {
            let (a, b) = (&listed[a], &listed[b]);
            let (sa, sb) = (a.summary(), b.summary());
            sa.turn
                .cmp(&sb.turn)
                .then_with(|| sa.start_unix_nano.cmp(&sb.start_unix_nano))
                .then_with(|| a.id.cmp(&b.id))
        });
    }
    let mut order = Vec::with_capacity(listed.len());
    let mut rows = Vec::with_capacity(listed.len());
    let mut conversation_of = HashMap::new();
    let mut placed: HashSet<&str> = HashSet::new();
    for (k, inv) in listed.iter().enumerate() {
        match inv.conversation_id().filter(|c| members.contains_key(c)) {
            None => {
                rows.push(ListRow::Invocation(order.len()));
                order.push(k);
            }
            Some(conversation) => {
                if !placed.insert(conversation) {
                    continue;
                }
                let turns = &members[conversation];
                rows.push(ListRow::Conversation {
                    id: conversation.to_owned(),
                    turns: turns.len(),
                    first: order.len(),
                });
                let open = !folded.contains(conversation);
                for &turn in turns {
                    conversation_of.insert(listed[turn].id.clone(), conversation.to_owned());
                    if open {
                        rows.push(ListRow::Invocation(order.len()));
                    }
                    order.push(turn);
                }
            }
        }
    }
    let runs = order.into_iter().map(|k| Arc::clone(&listed[k])).collect();
    Arranged {
        runs,
        rows,
        conversation_of,
    }
}
