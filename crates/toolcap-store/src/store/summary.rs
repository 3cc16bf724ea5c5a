//! What the list shows of an invocation: counts, tokens, tool calls, and the conversation it is a turn of.

use super::*;
use crate::model::FormatName;

pub(super) fn summarize(inv: &Invocation) -> Summary {
    let spans = &inv.spans;
    let tree = inv.kept();
    let mut counts = KindCounts::default();
    let mut input_tokens: u64 = 0;
    let mut output_tokens: u64 = 0;
    let mut formats = FormatList::new();
    let mut start = u64::MAX;
    let mut end = 0;
    for span in spans {
        counts.spans += 1;
        counts.bump(span.kind);
        if span.status.is_error() && !span.is_evaluator() {
            counts.errors += 1;
        }
        if let Some((input, output)) = span.llm_tokens() {
            // Counts come from the trace: a hostile one can sum past u64.
            input_tokens = input_tokens.saturating_add(input.get().map_or(0, u64::from));
            output_tokens = output_tokens.saturating_add(output.get().map_or(0, u64::from));
        }
        formats.add(span.format());
        if span.start_unix_nano > 0 {
            start = start.min(span.start_unix_nano);
        }
        end = end.max(span.end_unix_nano);
    }
    if start == u64::MAX {
        start = 0;
    }
    let mut tool_spans: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].kind == SpanKind::Tool)
        .collect();
    tool_spans.sort_by(|&a, &b| {
        spans[a]
            .start_unix_nano
            .cmp(&spans[b].start_unix_nano)
            .then_with(|| tree.row_of(a).cmp(&tree.row_of(b)))
    });
    let tool_calls: ThinVec<ToolCallRef> = tool_spans
        .into_iter()
        .map(|i| ToolCallRef::of(&spans[i], i))
        .collect();
    let failed = tool_calls.iter().filter(|c| c.failed).count();
    let failed_tool_calls = u32::try_from(failed).unwrap_or(u32::MAX);

    // The run's root: the earliest span without a parent, else the first row of the tree.
    let true_roots: Vec<usize> = tree
        .rows
        .iter()
        .filter(|r| r.depth() == 0 && spans[r.span()].parent_span_id.is_none())
        .map(|r| r.span())
        .collect();
    let first_row = tree.rows.first().map(|r| r.span());
    let (health, name) = root_facts(inv, &true_roots, first_row, counts.errors);
    let named = conversation_of(spans);
    Summary {
        name,
        health,
        start_unix_nano: start,
        end_unix_nano: end.max(start),
        counts,
        input_tokens,
        output_tokens,
        tool_calls,
        failed_tool_calls,
        formats,
        conversation: named.conversation,
        conversation_rank: named.conversation_rank,
        turn: named.turn,
        turn_rank: named.turn_rank,
    }
}

/// Attributes naming the conversation (or session) a run is a turn of, most specific first.
pub(super) const CONVERSATION_KEYS: &[&str] = &[
    "arksim.conversation_id",
    "gen_ai.conversation.id",
    "session.id",
    "langfuse.session.id",
];

/// The run's health and name from its root: the first of `true_roots` (spans without a parent,
/// in tree order), else the tree's first row. The name a format gave the run comes first.
pub(super) fn root_facts(
    inv: &Invocation,
    true_roots: &[usize],
    first_row: Option<usize>,
    errors: u32,
) -> (Health, ArcStr) {
    let spans = &inv.spans;
    let root = true_roots.first().copied().or(first_row);
    let health = if true_roots
        .iter()
        .any(|&r| spans[r].status.is_error() && !spans[r].is_evaluator())
        || (true_roots.is_empty() && root.is_some_and(|r| spans[r].status.is_error()))
    {
        Health::Error
    } else if errors > 0 {
        Health::Degraded
    } else {
        Health::Ok
    };
    let name = inv
        .display_name()
        .map(ArcStr::from)
        .or_else(|| root.map(|r| spans[r].name.clone()))
        .unwrap_or_else(|| inv.id.to_string().into());
    (health, name)
}

/// Attributes numbering a run's turn within its conversation, most specific first.
const TURN_KEYS: &[&str] = &["arksim.turn_id", "gen_ai.conversation.turn", "turn_index"];

/// A run's conversation and turn as found, with the rank of the key each came from: its index
/// in [`CONVERSATION_KEYS`] or [`TURN_KEYS`] (lower is more specific), one past them for an
/// openai-agents `group_id`, `None` when nothing names one. A rank can be decided while
/// its value is not (a turn that is no number, a blank `group_id`): a less specific key then
/// does not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ConversationFacts {
    pub conversation: Option<ArcStr>,
    pub conversation_rank: Option<KeyRank>,
    pub turn: Option<u64>,
    pub turn_rank: Option<KeyRank>,
}

/// A key's rank (see [`ConversationFacts`]) in one byte, absence included: every run's summary
/// holds two, and an `Option<u8>` each would make it 8 bytes bigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct KeyRank(std::num::NonZeroU8);

impl KeyRank {
    fn new(rank: usize) -> KeyRank {
        let rank = u8::try_from(rank).unwrap_or(u8::MAX - 1);
        KeyRank(std::num::NonZeroU8::MIN.saturating_add(rank))
    }
    pub(super) fn index(self) -> usize {
        usize::from(self.0.get() - 1)
    }
}

/// The shared-table numbers of [`CONVERSATION_KEYS`] then [`TURN_KEYS`], asked once; `None` when
/// the table was full before one of them got a number (a list may then hold it written out).
fn conversation_key_numbers() -> Option<&'static [u32; CONVERSATION_KEYS.len() + TURN_KEYS.len()]> {
    static NUMBERS: std::sync::OnceLock<Option<[u32; CONVERSATION_KEYS.len() + TURN_KEYS.len()]>> =
        std::sync::OnceLock::new();
    NUMBERS
        .get_or_init(|| {
            let mut numbers = [0; CONVERSATION_KEYS.len() + TURN_KEYS.len()];
            for (number, key) in numbers
                .iter_mut()
                .zip(CONVERSATION_KEYS.iter().chain(TURN_KEYS))
            {
                *number = crate::model::interner::number_of(&ArcStr::from(*key))?;
            }
            Some(numbers)
        })
        .as_ref()
}

/// The conversation id as a shared text: most often a span's identity holds the same text (its
/// invocation or correlation id, read from the same attribute), and the summary then shares it
/// instead of holding a copy in every run.
fn shared_with_an_identity(spans: &[Span], text: String) -> ArcStr {
    spans
        .iter()
        .find_map(|s| {
            let identity = s.identity();
            [&identity.invocation_id, &identity.correlation_id]
                .into_iter()
                .flatten()
                .find(|id| id.as_str() == text)
                .cloned()
        })
        .unwrap_or_else(|| text.into())
}

/// A key of rank `later` names the run's conversation (or turn) instead of one of rank
/// `current`: it is more specific, or there was none.
fn outranks(later: Option<KeyRank>, current: Option<KeyRank>) -> bool {
    match (later, current) {
        (Some(later), Some(current)) => later < current,
        (later, current) => later.is_some() && current.is_none(),
    }
}

/// The conversation a run belongs to and its turn number: for the first of
/// [`CONVERSATION_KEYS`] (and of [`TURN_KEYS`]) that any span holds a non-blank value of, the
/// value of the first such span (a span's first attribute of a key is the one it holds); else
/// an openai-agents trace's `group_id`. One pass over the attributes, whatever the run holds.
pub(super) fn conversation_of(spans: &[Span]) -> ConversationFacts {
    const KEYS: usize = CONVERSATION_KEYS.len() + TURN_KEYS.len();
    let text = |value: &crate::model::AttrValue| {
        match value {
            crate::model::AttrValue::Int(i) => Some(i.to_string()),
            other => other.as_str().map(str::to_owned),
        }
        .filter(|v| !v.trim().is_empty())
    };
    let mut found: [Option<String>; KEYS] = Default::default();
    for span in spans {
        // A packed list is asked for the keys by their numbers: only their values are read.
        if let Some(numbers) = conversation_key_numbers()
            && span.attributes.is_packed()
        {
            // A key is sought until it or a more specific key of its kind has been found: a
            // less specific one never counts then, so most spans are searched for one key.
            let sought: [Option<u32>; KEYS] = std::array::from_fn(|k| {
                let kind = match k < CONVERSATION_KEYS.len() {
                    true => 0,
                    false => CONVERSATION_KEYS.len(),
                };
                let settled = found[kind..=k].iter().any(Option::is_some);
                (!settled).then_some(numbers[k])
            });
            let values = span.attributes.values_under_keys(sought);
            for (found, value) in found.iter_mut().zip(values) {
                if found.is_none()
                    && let Some(value) = value
                {
                    *found = text(&value);
                }
            }
            continue;
        }
        let mut seen = [false; KEYS];
        for (key, value) in &span.attributes {
            let Some(k) = CONVERSATION_KEYS
                .iter()
                .chain(TURN_KEYS)
                .position(|known| key == *known)
            else {
                continue;
            };
            if !std::mem::replace(&mut seen[k], true) && found[k].is_none() {
                found[k] = text(&value);
            }
        }
    }
    let (conversation_rank, conversation) = match found[..CONVERSATION_KEYS.len()]
        .iter_mut()
        .enumerate()
        .find_map(|(rank, value)| Some((KeyRank::new(rank), value.take()?)))
    {
        Some((rank, value)) => (Some(rank), Some(value)),
        None => spans
            .iter()
            .filter(|s| s.format() == "openai-agents")
            .find_map(|s| s.identity().correlation_id.as_deref())
            .map_or((None, None), |group| {
                let group = Some(group.to_owned()).filter(|v| !v.trim().is_empty());
                (Some(KeyRank::new(CONVERSATION_KEYS.len())), group)
            }),
    };
    let (turn_rank, turn) = found[CONVERSATION_KEYS.len()..]
        .iter()
        .enumerate()
        .find_map(|(rank, t)| Some((Some(KeyRank::new(rank)), t.as_deref()?.trim().parse().ok())))
        .unwrap_or((None, None));
    ConversationFacts {
        conversation: conversation.map(|text| shared_with_an_identity(spans, text)),
        conversation_rank,
        turn,
        turn_rank,
    }
}

impl Summary {
    /// Takes what spans appended after the ones summarized name, where it ranks above what
    /// the summary holds: the same as [`conversation_of`] over all the spans, from the new
    /// ones alone (a tie goes to the earlier span, which the summary already holds).
    pub(super) fn adopt_later_conversation(&mut self, later: ConversationFacts) {
        if outranks(later.conversation_rank, self.conversation_rank) {
            self.conversation = later.conversation;
            self.conversation_rank = later.conversation_rank;
        }
        if outranks(later.turn_rank, self.turn_rank) {
            self.turn = later.turn;
            self.turn_rank = later.turn_rank;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{ArcStr, AttrValue, Span};

    /// The run's conversation and turn, as the summary keeps them.
    fn conversation_of(spans: &[Span]) -> (Option<String>, Option<u64>) {
        let named = super::conversation_of(spans);
        (named.conversation.map(|c| c.to_string()), named.turn)
    }

    fn span(attributes: &[(&str, AttrValue)]) -> Span {
        Span {
            attributes: attributes
                .iter()
                .map(|(key, value)| (ArcStr::from(*key), value.clone()))
                .collect(),
            ..Span::default()
        }
    }

    fn text(value: &str) -> AttrValue {
        AttrValue::Str(value.into())
    }

    #[test]
    fn the_most_specific_key_any_span_holds_names_the_conversation_and_its_turn() {
        let spans = [
            span(&[("session.id", text("s-1")), ("turn_index", text("x"))]),
            // A span's first attribute of a key is the one it holds: this blank id hides the
            // second, and the span names no arksim conversation.
            span(&[
                ("arksim.conversation_id", text("  ")),
                ("arksim.conversation_id", text("hidden")),
            ]),
            span(&[
                ("gen_ai.conversation.id", text("g-1")),
                ("arksim.turn_id", AttrValue::Int(3)),
            ]),
            span(&[("arksim.conversation_id", text("c-2"))]),
            span(&[("arksim.conversation_id", text("c-3"))]),
        ];
        let packed = spans.clone().map(|mut span| {
            span.attributes.pack();
            assert!(span.attributes.is_packed());
            span
        });
        // Open lists are read entry by entry, packed ones by key number: the same answers.
        for spans in [&spans, &packed] {
            assert_eq!(conversation_of(spans), (Some("c-2".into()), Some(3)));
            assert_eq!(conversation_of(&spans[..3]), (Some("g-1".into()), Some(3)));
            assert_eq!(conversation_of(&spans[..1]), (Some("s-1".into()), None));
            assert_eq!(conversation_of(&spans[1..2]), (None, None));
        }
    }

    #[test]
    fn a_turn_that_is_not_a_number_is_no_turn_even_when_a_later_key_holds_one() {
        let spans = [span(&[
            ("arksim.turn_id", text("first")),
            ("turn_index", AttrValue::Int(4)),
        ])];
        assert_eq!(conversation_of(&spans), (None, None));
    }

    /// The summary's conversation id is the identity's own text when a span's identity holds it.
    #[test]
    fn the_conversation_shares_the_identitys_text() {
        let mut root = span(&[("gen_ai.conversation.id", AttrValue::Str("conv-9".into()))]);
        let correlation = ArcStr::from(String::from("conv-9"));
        root.identity_mut().invocation_id = Some("run-1".into());
        root.identity_mut().correlation_id = Some(correlation.clone());
        let named = super::conversation_of(&[root]);
        let conversation = named.conversation.expect("named");
        assert!(ArcStr::ptr_eq(&conversation, &correlation));
        // OTLP's conversation id is the run's invocation id.
        let mut chat = span(&[("session.id", AttrValue::Str("s-1".into()))]);
        let session = ArcStr::from(String::from("s-1"));
        chat.identity_mut().invocation_id = Some(session.clone());
        let named = super::conversation_of(&[chat]);
        assert!(ArcStr::ptr_eq(
            &named.conversation.expect("named"),
            &session
        ));
        let other = span(&[("session.id", AttrValue::Str("s-1".into()))]);
        let named = super::conversation_of(&[other]);
        assert_eq!(
            named.conversation.as_deref(),
            Some("s-1"),
            "a copy otherwise"
        );
    }
}

/// A run's formats by number, in first-seen order. Two words, the first seven inline: a run's
/// spans come from one format or two, and a list of names would be an allocation in every run.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct FormatList {
    first: [FormatName; FormatList::INLINE],
    len: u8,
    /// Formats past the seventh: no registry mixes that many in a run, but a crafted directory
    /// could.
    rest: ThinVec<FormatName>,
}

impl FormatList {
    const INLINE: usize = 7;

    pub(super) fn new() -> Self {
        Self::default()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = FormatName> + '_ {
        self.first[..usize::from(self.len)]
            .iter()
            .chain(self.rest.iter())
            .copied()
    }

    /// Counts `format` among them, once.
    pub(super) fn add(&mut self, format: FormatName) {
        if self.iter().any(|known| known == format) {
            return;
        }
        match usize::from(self.len) {
            len if len < Self::INLINE => {
                self.first[len] = format;
                self.len += 1;
            }
            _ => self.rest.push(format),
        }
    }

    /// Heap bytes: none unless more formats than fit inline.
    pub(super) fn heap_bytes(&self) -> u64 {
        match self.rest.capacity() {
            0 => 0,
            capacity => crate::model::thin_vec_bytes(capacity, 1),
        }
    }
}

#[cfg(test)]
mod format_list_tests {
    use super::*;

    #[test]
    fn formats_keep_first_seen_order_once_each_past_the_inline_ones() {
        const NAMES: [&str; 10] = [
            "list-a", "list-b", "list-c", "list-d", "list-e", "list-f", "list-g", "list-h",
            "list-i", "list-j",
        ];
        let names: Vec<FormatName> = NAMES.into_iter().map(FormatName::of).collect();
        let mut list = FormatList::new();
        for &name in names.iter().chain(names.iter().rev()) {
            list.add(name);
        }
        assert_eq!(list.iter().collect::<Vec<_>>(), names);
        assert!(list.heap_bytes() > 0);
        let mut one = FormatList::new();
        one.add(names[3]);
        one.add(names[3]);
        assert_eq!(one.iter().collect::<Vec<_>>(), vec![names[3]]);
        assert_eq!(one.heap_bytes(), 0);
    }
}
