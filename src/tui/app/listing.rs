//! The invocation list's order and rows: the sort key, and runs of one conversation grouped
//! under a collapsible conversation row, turns in turn order.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

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
    /// A conversation's header row, with its number of turns.
    Conversation {
        id: String,
        turns: usize,
    },
    Invocation(String),
}

/// The list's order: every listed invocation (members of folded conversations too, for the
/// failure queue) and the rows shown.
pub struct Arranged {
    pub ids: Vec<String>,
    pub rows: Vec<ListRow>,
    /// Invocation id → the conversation row it sits under.
    pub conversation_of: HashMap<String, String>,
}

/// Sorts `listed` by `key` and groups runs sharing a conversation (two or more) under a row
/// placed where its best-sorted turn would be; turns follow in turn order.
pub fn arrange(mut listed: Vec<&Invocation>, key: SortKey, folded: &HashSet<String>) -> Arranged {
    listed.sort_by(|a, b| key.compare(a, b));
    let mut members: HashMap<&str, Vec<&Invocation>> = HashMap::new();
    for inv in &listed {
        if let Some(conversation) = inv.conversation_id() {
            members.entry(conversation).or_default().push(inv);
        }
    }
    members.retain(|_, turns| turns.len() >= 2);
    for turns in members.values_mut() {
        turns.sort_by(|a, b| {
            let (sa, sb) = (a.summary(), b.summary());
            sa.turn
                .cmp(&sb.turn)
                .then_with(|| sa.start_unix_nano.cmp(&sb.start_unix_nano))
                .then_with(|| a.id.cmp(&b.id))
        });
    }
    let mut ids = Vec::with_capacity(listed.len());
    let mut rows = Vec::with_capacity(listed.len());
    let mut conversation_of = HashMap::new();
    let mut placed: HashSet<&str> = HashSet::new();
    for inv in &listed {
        match inv.conversation_id().filter(|c| members.contains_key(c)) {
            None => {
                ids.push(inv.id.clone());
                rows.push(ListRow::Invocation(inv.id.clone()));
            }
            Some(conversation) => {
                if !placed.insert(conversation) {
                    continue;
                }
                let turns = &members[conversation];
                rows.push(ListRow::Conversation {
                    id: conversation.to_owned(),
                    turns: turns.len(),
                });
                let open = !folded.contains(conversation);
                for turn in turns {
                    ids.push(turn.id.clone());
                    conversation_of.insert(turn.id.clone(), conversation.to_owned());
                    if open {
                        rows.push(ListRow::Invocation(turn.id.clone()));
                    }
                }
            }
        }
    }
    Arranged {
        ids,
        rows,
        conversation_of,
    }
}
