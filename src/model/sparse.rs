//! [`Sparse`]: a struct that is all-empty on most spans, kept out of line and allocated only
//! once something is set, so the many spans without it pay one pointer instead of its size.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// A type with a statically known empty value that an absent [`Sparse`] reads as.
pub trait SparseEmpty: Default + PartialEq + 'static {
    const EMPTY: &'static Self;
}

/// Reads see the value, or [`SparseEmpty::EMPTY`] when nothing was ever set; the first write
/// through `DerefMut` allocates. Equality, `Debug` and `Clone` behave as for the value itself.
#[derive(Default)]
pub struct Sparse<T: SparseEmpty>(Option<Box<T>>);

impl<T: SparseEmpty> Sparse<T> {
    /// True when no value was ever set (reads see the empty value without an allocation).
    pub fn is_unset(&self) -> bool {
        self.0.is_none()
    }
}

impl<T: SparseEmpty> Deref for Sparse<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_deref().unwrap_or(T::EMPTY)
    }
}

impl<T: SparseEmpty> DerefMut for Sparse<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.get_or_insert_with(Box::default)
    }
}

impl<T: SparseEmpty> From<T> for Sparse<T> {
    /// An empty value is not stored at all.
    fn from(value: T) -> Self {
        if value == *T::EMPTY {
            Sparse(None)
        } else {
            Sparse(Some(Box::new(value)))
        }
    }
}

impl<T: SparseEmpty + Clone> Clone for Sparse<T> {
    fn clone(&self) -> Self {
        Sparse(self.0.clone())
    }
}

impl<T: SparseEmpty> PartialEq for Sparse<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: SparseEmpty + Eq> Eq for Sparse<T> {}

impl<T: SparseEmpty + fmt::Debug> fmt::Debug for Sparse<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    struct Facts {
        name: Option<String>,
        index: Option<u32>,
    }

    impl SparseEmpty for Facts {
        const EMPTY: &'static Self = &Facts {
            name: None,
            index: None,
        };
    }

    #[test]
    fn unset_reads_as_empty_and_compares_equal_to_an_empty_value() {
        let unset: Sparse<Facts> = Sparse::default();
        assert!(unset.is_unset());
        assert_eq!(unset.name, None);
        assert_eq!(unset, Sparse::from(Facts::default()));
        assert!(Sparse::from(Facts::default()).is_unset());
        assert_eq!(format!("{unset:?}"), format!("{:?}", Facts::default()));
    }

    #[test]
    fn a_write_allocates_and_is_seen_by_reads_and_clones() {
        let mut facts: Sparse<Facts> = Sparse::default();
        let writable: &mut Facts = &mut facts;
        writable.index = Some(3);
        assert!(!facts.is_unset());
        let copy = facts.clone();
        assert_eq!(copy.index, Some(3));
        assert_ne!(copy, Sparse::default());
        let set = Sparse::from(Facts {
            name: Some("a".into()),
            index: None,
        });
        assert_eq!(set.name.as_deref(), Some("a"));
    }
}
