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
/// not have), 21 bits each, in place of the three texts.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyedLlmFacts {
    name_keys: u64,
    pub input_tokens: TokenCount,
    pub output_tokens: TokenCount,
    pub cache_read_tokens: TokenCount,
    pub finish_reasons: FinishReasons,
    pub requested_tool_calls: RequestedCalls,
}

const NAME_KEY_BITS: u32 = 21;
const _: () = assert!(crate::model::shared_texts::MAX_ENTRIES < 1 << NAME_KEY_BITS);
const _: () = assert!(3 * NAME_KEY_BITS <= u64::BITS);
// What makes it worth holding: a block of the allocator's size class below `LlmFacts`'s.
const _: () = assert!(size_of::<KeyedLlmFacts>() <= 56 && size_of::<LlmFacts>() > 56);

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
            finish_reasons: &self.finish_reasons,
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
                let Some(Owned::Llm(llm)) = self.facts.take() else {
                    unreachable!("viewed as a model call's facts above");
                };
                let LlmFacts {
                    input_tokens,
                    output_tokens,
                    cache_read_tokens,
                    finish_reasons,
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
