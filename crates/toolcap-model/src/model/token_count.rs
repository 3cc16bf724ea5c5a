//! A model call's token count as its facts hold it: four bytes, absent or present, where an
//! `Option<u32>` takes eight. Three of them kept a model call's facts a size class larger.

use std::num::NonZeroU32;

/// The largest count held; a record claiming more is held at this (no model call comes near).
pub const MAX_TOKENS: u32 = u32::MAX - 1;

/// A token count a record gave, or none. Reads as an `Option<u32>` ([`TokenCount::get`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TokenCount(
    /// The count plus one, so that no count needs no bytes of its own.
    Option<NonZeroU32>,
);

impl TokenCount {
    pub fn get(self) -> Option<u32> {
        self.0.map(|stored| stored.get() - 1)
    }
}

/// Clamps a count past [`MAX_TOKENS`] to it.
pub fn token_count(count: u64) -> u32 {
    u32::try_from(count).map_or(MAX_TOKENS, |count| count.min(MAX_TOKENS))
}

impl From<Option<u32>> for TokenCount {
    fn from(count: Option<u32>) -> Self {
        TokenCount(count.and_then(|count| NonZeroU32::new(count.min(MAX_TOKENS) + 1)))
    }
}

impl From<u32> for TokenCount {
    fn from(count: u32) -> Self {
        Some(count).into()
    }
}

impl PartialEq<Option<u32>> for TokenCount {
    fn eq(&self, other: &Option<u32>) -> bool {
        self.get() == *other
    }
}

impl std::fmt::Debug for TokenCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_back_as_given_and_huge_ones_are_clamped() {
        assert_eq!(std::mem::size_of::<TokenCount>(), 4);
        for count in [0, 1, 300, MAX_TOKENS] {
            assert_eq!(TokenCount::from(count).get(), Some(count));
        }
        assert_eq!(TokenCount::default().get(), None);
        assert_eq!(TokenCount::from(None), TokenCount::default());
        assert_eq!(TokenCount::from(u32::MAX).get(), Some(MAX_TOKENS));
        assert_eq!(token_count(u64::MAX), MAX_TOKENS);
        assert_eq!(token_count(7), 7);
        assert_eq!(TokenCount::from(12), Some(12));
        assert_eq!(format!("{:?}", TokenCount::from(5)), "Some(5)");
    }
}
