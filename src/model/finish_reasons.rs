//! An LLM call's finish reasons: almost always one (`stop`, `tool_calls`), held inline so that
//! it needs no allocation of its own; several only when the record lists several choices.

use std::ops::Deref;

use super::ArcStr;

/// Reads as a slice of shared texts (`is_empty`, `iter`, `join`, indexing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FinishReasons {
    #[default]
    None,
    One(ArcStr),
    Several(thin_vec::ThinVec<ArcStr>),
}

impl FinishReasons {
    /// Heap bytes of a list of several (the texts themselves are shared, counted apart).
    pub fn own_heap_bytes(&self) -> u64 {
        match self {
            FinishReasons::Several(list) => {
                super::thin_vec_bytes(list.capacity(), std::mem::size_of::<ArcStr>())
            }
            FinishReasons::None | FinishReasons::One(_) => 0,
        }
    }
}

impl Deref for FinishReasons {
    type Target = [ArcStr];
    fn deref(&self) -> &[ArcStr] {
        match self {
            FinishReasons::None => &[],
            FinishReasons::One(reason) => std::slice::from_ref(reason),
            FinishReasons::Several(list) => list,
        }
    }
}

impl FromIterator<ArcStr> for FinishReasons {
    fn from_iter<I: IntoIterator<Item = ArcStr>>(iter: I) -> Self {
        let mut iter = iter.into_iter();
        let Some(first) = iter.next() else {
            return FinishReasons::None;
        };
        match iter.next() {
            None => FinishReasons::One(first),
            Some(second) => {
                let mut list = thin_vec::thin_vec![first, second];
                list.extend(iter);
                FinishReasons::Several(list)
            }
        }
    }
}

impl<T, const N: usize> PartialEq<[T; N]> for FinishReasons
where
    ArcStr: PartialEq<T>,
{
    fn eq(&self, other: &[T; N]) -> bool {
        **self == *other
    }
}

impl<T> PartialEq<Vec<T>> for FinishReasons
where
    ArcStr: PartialEq<T>,
{
    fn eq(&self, other: &Vec<T>) -> bool {
        **self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_one_and_several_read_as_the_list_they_were_made_from() {
        let none: FinishReasons = std::iter::empty().collect();
        assert!(none.is_empty());
        assert_eq!(none, FinishReasons::None);
        let one: FinishReasons = [ArcStr::from("stop")].into_iter().collect();
        assert!(matches!(one, FinishReasons::One(_)));
        assert_eq!(one, ["stop"]);
        assert_eq!(one.own_heap_bytes(), 0);
        let several: FinishReasons = ["stop", "length", "tool_calls"]
            .into_iter()
            .map(ArcStr::from)
            .collect();
        assert_eq!(several, ["stop", "length", "tool_calls"]);
        assert_eq!(several.join(", "), "stop, length, tool_calls");
        assert!(several.own_heap_bytes() > 0);
    }
}
