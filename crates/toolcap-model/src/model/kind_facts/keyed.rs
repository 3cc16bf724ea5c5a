//! The keyed forms of a span's facts: facts that are values of the span's own attributes, held
//! as those attributes' keys once the span is packed ([`ToolKeys`](super::ToolKeys) in the
//! slot's word, [`KeyedLlmFacts`] in a smaller block), and made whole again to be changed.

use super::{KEYED, KindFacts, KindFactsView, Owned};
use crate::model::{
    ArcStr, Attributes, FinishReasons, LlmFacts, LlmFactsRef, RequestedCalls, Span, TokenCount,
    ToolFacts,
};

/// A model call's facts whose provider, model and response model are values of the span's
/// attributes: those keys' numbers in the shared table (plus one, 0 for a name the call does
/// not have), 21 bits each, in place of the three texts; and its finish reasons as the number
/// of their list in [`FINISH_LISTS`].
#[derive(Debug, Clone, PartialEq)]
pub struct KeyedLlmFacts {
    name_keys: u64,
    pub input_tokens: TokenCount,
    pub output_tokens: TokenCount,
    pub cache_read_tokens: TokenCount,
    finish_reasons: u16,
    pub requested_tool_calls: RequestedCalls,
}

const NAME_KEY_BITS: u32 = 21;
const _: () = assert!(crate::model::interner::MAX_ENTRIES < 1 << NAME_KEY_BITS);
const _: () = assert!(3 * NAME_KEY_BITS <= u64::BITS);
// What makes it worth holding: a block of the allocator's size classes below `LlmFacts`'s
// (a 48-byte block where the whole facts take 80).
const _: () = assert!(size_of::<KeyedLlmFacts>() <= 40 && size_of::<LlmFacts>() > 56);

/// The lists of finish reasons model calls name, each held once for the process: a handful
/// (`stop`, `tool_calls`, `length`) repeat on every call, and a list in every keyed block would
/// be 16 of its bytes. Bounded: a list past the last slot is not numbered, and its call keeps its
/// facts whole.
const FINISH_LISTS: usize = 256;

static FINISH_LIST_SLOTS: [std::sync::OnceLock<FinishReasons>; FINISH_LISTS] =
    [const { std::sync::OnceLock::new() }; FINISH_LISTS];
/// Lists numbered so far; numbers are handed out under it, slots read without it.
static FINISH_LISTS_NUMBERED: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// The number of `reasons` among the held lists, holding it when new; `None` once all slots
/// are taken.
fn finish_list_number(reasons: &FinishReasons) -> Option<u16> {
    // Slots are filled in order and never emptied: a list held already is found without the
    // lock, which only a new list takes.
    let held = FINISH_LIST_SLOTS
        .iter()
        .map_while(std::sync::OnceLock::get)
        .position(|list| list == reasons);
    if let Some(number) = held {
        return u16::try_from(number).ok();
    }
    let mut numbered = FINISH_LISTS_NUMBERED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let held = FINISH_LIST_SLOTS[..*numbered]
        .iter()
        .position(|slot| slot.get() == Some(reasons));
    let number = match held {
        Some(number) => number,
        None if *numbered < FINISH_LISTS => {
            let _ = FINISH_LIST_SLOTS[*numbered].set(reasons.clone());
            *numbered += 1;
            *numbered - 1
        }
        None => return None,
    };
    u16::try_from(number).ok()
}

/// The list numbered `number` (an empty list for a number never handed out).
fn finish_list(number: u16) -> &'static FinishReasons {
    static EMPTY: std::sync::LazyLock<FinishReasons> = std::sync::LazyLock::new(Default::default);
    FINISH_LIST_SLOTS
        .get(usize::from(number))
        .and_then(std::sync::OnceLock::get)
        .unwrap_or(&EMPTY)
}

impl KeyedLlmFacts {
    /// The keys of provider, model and response model, in that order.
    pub(super) fn name_keys(&self) -> [Option<u32>; 3] {
        std::array::from_fn(|i| {
            match (self.name_keys >> (i as u32 * NAME_KEY_BITS)) & ((1 << NAME_KEY_BITS) - 1) {
                0 => None,
                number => Some(number as u32 - 1),
            }
        })
    }

    /// The facts read with `attributes` (the span's).
    pub(super) fn read<'a>(&'a self, attributes: &'a Attributes) -> LlmFactsRef<'a> {
        let [provider, model, response_model] = attributes.texts_under_keys(self.name_keys());
        LlmFactsRef {
            provider,
            model,
            response_model,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.cache_read_tokens,
            finish_reasons: finish_list(self.finish_reasons),
            requested_tool_calls: &self.requested_tool_calls,
        }
    }
}

/// Which attributes hold a tool call's name and call id: their keys' numbers in the shared
/// table (see [`Attributes::keys_holding`]), `None` for a fact
/// the call does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolKeys {
    pub name: Option<u32>,
    pub call_id: Option<u32>,
}

impl Span {
    /// Once packed: facts that are values of the attributes are read from there instead of
    /// held (see [`ToolKeys`] and [`KeyedLlmFacts`]).
    pub(in crate::model) fn key_facts(&mut self) {
        // Each fact's key (`None` for a fact the call does not have); `None` when some fact is
        // not an attribute's value.
        fn keys_of<const N: usize>(
            attributes: &Attributes,
            texts: [&Option<ArcStr>; N],
        ) -> Option<[Option<u32>; N]> {
            let keys = attributes.keys_holding(texts.map(|text| text.as_deref()));
            let all = texts
                .iter()
                .zip(&keys)
                .all(|(text, key)| text.is_none() || key.is_some());
            all.then_some(keys)
        }
        match self.facts.view() {
            Some(KindFactsView::Tool(tool)) => {
                let Some([name, call_id]) = keys_of(&self.attributes, [&tool.name, &tool.call_id])
                else {
                    return;
                };
                if let Some(keyed) = KindFacts::by_keys(ToolKeys { name, call_id }) {
                    self.facts = keyed;
                }
            }
            Some(KindFactsView::Llm(llm)) if KEYED => {
                let names = [&llm.provider, &llm.model, &llm.response_model];
                let Some([provider, model, response_model]) = keys_of(&self.attributes, names)
                else {
                    return;
                };
                let Some(finish_reasons) = finish_list_number(&llm.finish_reasons) else {
                    return;
                };
                let Some(Owned::Llm(llm)) = self.facts.take() else {
                    unreachable!("viewed as a model call's facts above");
                };
                let LlmFacts {
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    requested_tool_calls,
                    ..
                } = *llm;
                let field = |key: Option<u32>| key.map_or(0, |key| u64::from(key) + 1);
                self.facts = KindFacts::hold(Owned::LlmKeyed(Box::new(KeyedLlmFacts {
                    name_keys: field(provider)
                        | field(model) << NAME_KEY_BITS
                        | field(response_model) << (2 * NAME_KEY_BITS),
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    finish_reasons,
                    requested_tool_calls,
                })));
            }
            _ => {}
        }
    }

    /// Facts read from the attributes, held whole again: to change them, or the span's other
    /// facts.
    pub(super) fn unkey_facts(&mut self) {
        let shared = |attributes: &Attributes, key: Option<u32>| {
            attributes.value_under_key(key?)?.shared_text()
        };
        match self.facts.view() {
            Some(KindFactsView::ToolByKeys(keys)) => {
                self.facts = KindFacts::from(Box::new(ToolFacts {
                    name: shared(&self.attributes, keys.name),
                    call_id: shared(&self.attributes, keys.call_id),
                }));
            }
            Some(KindFactsView::LlmByKeys(keyed)) => {
                let [provider, model, response_model] =
                    keyed.name_keys().map(|key| shared(&self.attributes, key));
                let Some(Owned::LlmKeyed(keyed)) = self.facts.take() else {
                    unreachable!("viewed as keyed facts above");
                };
                let KeyedLlmFacts {
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    finish_reasons,
                    requested_tool_calls,
                    ..
                } = *keyed;
                let finish_reasons = finish_list(finish_reasons).clone();
                self.facts = KindFacts::from(Box::new(LlmFacts {
                    provider,
                    model,
                    response_model,
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    finish_reasons,
                    requested_tool_calls,
                }));
            }
            _ => {}
        }
    }
}
