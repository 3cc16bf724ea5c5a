//! The invocation list's order and rows: the sort key, and runs of one conversation grouped
//! under a collapsible conversation row, turns in turn order.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::Memo;
use crate::model::Id;
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
                let score = |inv: &Invocation| inv.eval().and_then(|e| e.score);
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

/// One row of the list as drawn. Two words: a list holds a row per run and per conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListRow {
    /// A conversation's header row, with its number of turns; they follow each other in
    /// reading order from position `first`, and the first names the conversation (see
    /// [`ListView::conversation_id`]).
    Conversation { turns: u32, first: u32 },
    /// A run: its position in [`Arranged::runs`] (the list's reading order).
    Invocation(usize),
}

/// The list's order: every listed invocation (members of folded conversations too, for the
/// failure queue) and the rows shown.
#[derive(Debug, Default, Clone)]
pub struct Arranged {
    /// Every listed invocation in reading order (turns of folded conversations included).
    /// Emptied just before the store changes (see [`ListView::release`]).
    pub runs: Vec<Arc<Invocation>>,
    /// The rows drawn: conversation rows and the invocations not folded away.
    pub rows: Vec<ListRow>,
    /// By position in `runs`: the row of the conversation the run sits under, or
    /// [`NOT_GROUPED`] (empty when no run is grouped). Four bytes a run, where a map from
    /// ids to conversation texts held two copied texts for each.
    pub conversation_rows: Vec<u32>,
}

/// In [`Arranged::conversation_rows`]: the run sits under no conversation.
pub const NOT_GROUPED: u32 = u32::MAX;

/// Sorts `listed` by `key` (a pass that only checks, when it already is in that order, as the
/// filter hands it over) and groups runs sharing a conversation (two or more) under a row
/// placed where its best-sorted turn would be; turns follow in turn order.
///
/// Runs are handed on as shared handles and rows refer to them by position: a list of 100,000
/// runs is built without copying an id (copying them would be most of a rebuild's cost).
pub fn arrange(
    mut listed: Vec<Arc<Invocation>>,
    key: SortKey,
    folded: &HashSet<String>,
) -> Arranged {
    if !listed.is_sorted_by(|a, b| key.compare(a, b) != Ordering::Greater) {
        listed.sort_by(|a, b| key.compare(a, b));
    }
    // Counted first: most conversations hold a single run (a chat that was never continued),
    // and a list of turns for each of them would cost an allocation per run on every rebuild.
    let mut turn_counts: HashMap<&str, u32> = HashMap::new();
    for inv in &listed {
        if let Some(conversation) = inv.conversation_id() {
            *turn_counts.entry(conversation).or_default() += 1;
        }
    }
    turn_counts.retain(|_, turns| *turns >= 2);
    let mut members: HashMap<&str, Vec<usize>> = turn_counts
        .into_iter()
        .map(|(conversation, turns)| (conversation, Vec::with_capacity(turns as usize)))
        .collect();
    if !members.is_empty() {
        for (k, inv) in listed.iter().enumerate() {
            if let Some(turns) = inv.conversation_id().and_then(|c| members.get_mut(c)) {
                turns.push(k);
            }
        }
    }
    if members.is_empty() {
        let rows = (0..listed.len()).map(ListRow::Invocation).collect();
        return Arranged {
            runs: listed,
            rows,
            conversation_rows: Vec::new(),
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
    // A row per run and one per conversation: sized once, as the list is rebuilt at every
    // settle while spans stream in.
    let mut rows = Vec::with_capacity(listed.len() + members.len());
    let mut conversation_rows = Vec::with_capacity(listed.len());
    let mut placed: HashSet<&str> = HashSet::new();
    for (k, inv) in listed.iter().enumerate() {
        match inv.conversation_id().filter(|c| members.contains_key(c)) {
            None => {
                rows.push(ListRow::Invocation(order.len()));
                order.push(k);
                conversation_rows.push(NOT_GROUPED);
            }
            Some(conversation) => {
                if !placed.insert(conversation) {
                    continue;
                }
                let turns = &members[conversation];
                // Lossless: a list of more than 2^32 rows does not fit in memory.
                let row = rows.len() as u32;
                rows.push(ListRow::Conversation {
                    turns: turns.len() as u32,
                    first: order.len() as u32,
                });
                let open = !folded.contains(conversation);
                for &turn in turns {
                    if open {
                        rows.push(ListRow::Invocation(order.len()));
                    }
                    order.push(turn);
                    conversation_rows.push(row);
                }
            }
        }
    }
    let runs = order.into_iter().map(|k| Arc::clone(&listed[k])).collect();
    Arranged {
        runs,
        rows,
        conversation_rows,
    }
}

/// The invocation list as shown: filtered by the search, sorted, conversations grouped.
#[derive(Debug, Default, Clone)]
pub struct ListView {
    pub(super) arranged: Memo<ListKey, Arranged>,
    pub offset: usize,
    /// Bumped whenever the runs were rebuilt, for views derived from them.
    pub version: u64,
    /// Where the selected run was in reading order when the runs were released.
    pub(super) released_at: Option<usize>,
    /// Where the last position asked for was found: the cursor moves a row at a time, so the
    /// next question is answered by looking there first, not by a pass over every run.
    last_found: FoundAt,
}

/// A position remembered across `&self` calls (read by the query worker's threads too).
#[derive(Debug, Default)]
struct FoundAt(std::sync::atomic::AtomicUsize);

impl Clone for FoundAt {
    fn clone(&self) -> Self {
        FoundAt(self.get().into())
    }
}

impl FoundAt {
    fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
    fn set(&self, at: usize) {
        self.0.store(at, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What the list is arranged from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListKey {
    pub(super) generation: u64,
    /// The text of the query whose matches are shown.
    pub(super) query: String,
    pub(super) sort: SortKey,
    /// Bumped by every fold or unfold of a conversation.
    pub(super) folds: u64,
    /// Bumped whenever the search's matches shown change.
    pub(super) filter: u64,
}

impl ListView {
    /// Every listed invocation in reading order (see [`Arranged::runs`]).
    pub fn runs(&self) -> &[Arc<Invocation>] {
        &self.arranged.runs
    }

    /// The rows drawn (see [`Arranged::rows`]).
    pub fn rows(&self) -> &[ListRow] {
        &self.arranged.rows
    }

    /// Makes the next refresh arrange the list again (the search's results depend on the
    /// reveal mode).
    pub fn force_rebuild(&mut self) {
        self.arranged.invalidate();
    }

    /// The listed runs' ids in reading order.
    pub fn ids(&self) -> Vec<String> {
        self.runs().iter().map(|inv| inv.id.to_string()).collect()
    }

    /// The id of the run at `pos` in reading order.
    pub fn id(&self, pos: usize) -> Option<&Id> {
        self.runs().get(pos).map(|inv| &inv.id)
    }

    pub fn len(&self) -> usize {
        self.runs().len()
    }

    pub fn is_empty(&self) -> bool {
        self.runs().is_empty()
    }

    /// Position of run `id` in reading order.
    pub fn position(&self, id: &str) -> Option<usize> {
        let near = self.last_found.get();
        let found = (near.saturating_sub(1)..near.saturating_add(2))
            .find(|&k| self.id(k).is_some_and(|at| at == id))
            .or_else(|| self.runs().iter().position(|inv| inv.id == id))?;
        self.last_found.set(found);
        Some(found)
    }

    /// The row of the conversation the run at position `pos` sits under, when it is grouped.
    pub fn conversation_row_at(&self, pos: usize) -> Option<usize> {
        let row = *self.arranged.conversation_rows.get(pos)?;
        (row != NOT_GROUPED).then_some(row as usize)
    }

    /// The row of the conversation run `id` sits under, when it is grouped under one.
    pub fn conversation_row_of(&self, id: &str) -> Option<usize> {
        self.conversation_row_at(self.position(id)?)
    }

    /// The conversation run `id` sits under, when it is grouped under one.
    pub fn conversation_of(&self, id: &str) -> Option<&str> {
        self.conversation_id(self.rows().get(self.conversation_row_of(id)?)?)
    }

    /// The conversation a conversation row shows (`None` for a run's row): its first turn's.
    pub fn conversation_id(&self, row: &ListRow) -> Option<&str> {
        match *row {
            ListRow::Conversation { first, .. } => {
                self.runs().get(first as usize)?.conversation_id()
            }
            ListRow::Invocation(_) => None,
        }
    }

    /// The row of conversation `id`, when it has one in the list.
    pub fn conversation_row(&self, id: &str) -> Option<usize> {
        self.rows()
            .iter()
            .position(|row| self.conversation_id(row) == Some(id))
    }

    /// Whether conversation `id` has a row in the list.
    pub fn has_conversation(&self, id: &str) -> bool {
        self.conversation_row(id).is_some()
    }

    /// The id of the run a row shows (`None` for a conversation row).
    pub fn row_id(&self, row: &ListRow) -> Option<&Id> {
        match row {
            ListRow::Invocation(k) => self.id(*k),
            ListRow::Conversation { .. } => None,
        }
    }

    /// Lets go of the listed runs before the store changes, so changing a run does not copy it
    /// (`Arc::make_mut` copies what someone else still holds), remembering where the selection
    /// was. The list is rebuilt from the changed store right after.
    pub(super) fn release(&mut self, selected: Option<&str>) {
        // Released again before a rebuild: the position was taken from the last list.
        if self.arranged.key().is_none() && self.runs().is_empty() {
            return;
        }
        self.released_at = selected.and_then(|id| self.position(id));
        self.arranged.value_mut().runs = Vec::new();
        self.arranged.invalidate();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use super::{ListRow, SortKey, arrange};
    use crate::model::{ArcStr, AttrValue, Batch, Span};
    use crate::store::{Invocation, Store};

    /// A one-span run started at `start`, a turn of `conversation` when it names one.
    fn run(trace: &str, conversation: Option<&str>, start: u64) -> Span {
        let mut span = Span {
            trace_id: trace.into(),
            span_id: format!("{trace}-root").as_str().into(),
            name: "turn".into(),
            start_unix_nano: start,
            end_unix_nano: start + 10,
            ..Span::default()
        };
        if let Some(conversation) = conversation {
            span.attributes = [(
                ArcStr::from("gen_ai.conversation.id"),
                AttrValue::Str(conversation.into()),
            )]
            .into_iter()
            .collect();
        }
        span
    }

    fn listed(spans: Vec<Span>) -> Vec<Arc<Invocation>> {
        let mut store = Store::new();
        store.ingest(Batch {
            spans,
            ..Default::default()
        });
        let mut runs: Vec<_> = store.shared_invocations().cloned().collect();
        runs.sort_by(|a, b| SortKey::Start.compare(a, b));
        runs
    }

    /// The list holds a row per run and per conversation, rebuilt at every settle while spans
    /// stream in: each row stays two words, and the rows are allocated once at their count.
    #[test]
    fn grouped_rows_are_two_words_allocated_at_their_count() {
        assert_eq!(std::mem::size_of::<ListRow>(), 16);
        let runs = listed(vec![
            run("a", Some("chat-1"), 1),
            run("b", None, 2),
            run("c", Some("chat-1"), 3),
            run("d", Some("chat-2"), 4),
        ]);
        let arranged = arrange(runs, SortKey::Start, &HashSet::new());
        assert_eq!(
            arranged.rows,
            [
                ListRow::Invocation(0),
                ListRow::Conversation { turns: 2, first: 1 },
                ListRow::Invocation(1),
                ListRow::Invocation(2),
                ListRow::Invocation(3),
            ],
            "newest first: chat-2's one turn and b are plain rows, chat-1's two turns sit under \
             its row where its newest turn would be"
        );
        assert_eq!(arranged.rows.capacity(), arranged.rows.len());
        let turns: Vec<_> = arranged.runs[1..3]
            .iter()
            .map(|inv| inv.id.to_string())
            .collect();
        assert_eq!(turns, ["a", "c"], "turns in start order");
        assert_eq!(arranged.runs[1].conversation_id(), Some("chat-1"));
    }
}
