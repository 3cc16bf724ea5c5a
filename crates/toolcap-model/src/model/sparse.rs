//! [`Sparse`]: a struct that is all-empty on most spans, kept out of line and allocated only
//! once something is set, so the many spans without it pay one pointer instead of its size.
//! Boxed by default; held by an `Arc` where one value has two owners (a payload that is both
//! an attribute and the span's input), so that it is allocated once.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// A type with a statically known empty value that an absent [`Sparse`] reads as.
pub trait SparseEmpty: Default + PartialEq + 'static {
    const EMPTY: &'static Self;
}

/// What holds a set [`Sparse`] value: a `Box`, or an `Arc` to share it.
pub trait Holder<T>: Deref<Target = T> + Sized {
    fn hold(value: T) -> Self;
    /// The value to change; a shared one is copied first, so other owners never see it change.
    fn change(&mut self) -> &mut T;
}

impl<T> Holder<T> for Box<T> {
    fn hold(value: T) -> Self {
        Box::new(value)
    }
    fn change(&mut self) -> &mut T {
        self
    }
}

impl<T: Clone> Holder<T> for Arc<T> {
    fn hold(value: T) -> Self {
        Arc::new(value)
    }
    fn change(&mut self) -> &mut T {
        Arc::make_mut(self)
    }
}

/// Reads see the value, or [`SparseEmpty::EMPTY`] when nothing was ever set; the first write
/// through `DerefMut` allocates. Equality, `Debug` and `Clone` behave as for the value itself.
pub struct Sparse<T: SparseEmpty, P: Holder<T> = Box<T>>(Option<P>, PhantomData<T>);

impl<T: SparseEmpty, P: Holder<T>> Default for Sparse<T, P> {
    fn default() -> Self {
        Sparse(None, PhantomData)
    }
}

impl<T: SparseEmpty, P: Holder<T>> Sparse<T, P> {
    /// Nothing set, as a constant (what `default()` gives).
    pub const UNSET: Self = Sparse(None, PhantomData);

    /// True when no value was ever set (reads see the empty value without an allocation).
    pub fn is_unset(&self) -> bool {
        self.0.is_none()
    }

    /// The value as its holder already holds it: an `Arc` then has one more owner.
    pub fn held(holder: P) -> Self {
        if *holder == *T::EMPTY {
            Sparse::default()
        } else {
            Sparse(Some(holder), PhantomData)
        }
    }

    /// Lets the block go when what it holds reads as empty again (what a never-set value reads
    /// as), so an emptied value costs no allocation.
    pub fn release_if_empty(&mut self) {
        if self.0.as_deref().is_some_and(|value| *value == *T::EMPTY) {
            self.0 = None;
        }
    }

    /// The holder, when a value is set.
    pub fn holder(&self) -> Option<&P> {
        self.0.as_ref()
    }
}

impl<T: SparseEmpty, P: Holder<T>> Deref for Sparse<T, P> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_deref().unwrap_or(T::EMPTY)
    }
}

impl<T: SparseEmpty, P: Holder<T>> DerefMut for Sparse<T, P> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.get_or_insert_with(|| P::hold(T::default())).change()
    }
}

impl<T: SparseEmpty, P: Holder<T>> From<T> for Sparse<T, P> {
    /// An empty value is not stored at all.
    fn from(value: T) -> Self {
        if value == *T::EMPTY {
            Sparse::default()
        } else {
            Sparse(Some(P::hold(value)), PhantomData)
        }
    }
}

impl<T: SparseEmpty, P: Holder<T> + Clone> Clone for Sparse<T, P> {
    fn clone(&self) -> Self {
        Sparse(self.0.clone(), PhantomData)
    }
}

impl<T: SparseEmpty, P: Holder<T>> PartialEq for Sparse<T, P> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: SparseEmpty + Eq, P: Holder<T>> Eq for Sparse<T, P> {}

impl<T: SparseEmpty + fmt::Debug, P: Holder<T>> fmt::Debug for Sparse<T, P> {
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
        assert!(Sparse::<Facts>::from(Facts::default()).is_unset());
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
        let set = Sparse::<Facts>::from(Facts {
            name: Some("a".into()),
            index: None,
        });
        assert_eq!(set.name.as_deref(), Some("a"));
    }

    #[test]
    fn a_shared_value_is_one_allocation_until_one_owner_changes_it() {
        let value = Arc::new(Facts {
            name: Some("shared".into()),
            index: None,
        });
        let mut sparse: Sparse<Facts, Arc<Facts>> = Sparse::held(value.clone());
        assert!(Arc::ptr_eq(sparse.holder().unwrap(), &value));
        sparse.index = Some(1);
        assert_eq!(value.index, None, "the other owner never sees the change");
        assert_eq!(sparse.index, Some(1));
        assert_eq!(sparse.name.as_deref(), Some("shared"));
        let empty: Sparse<Facts, Arc<Facts>> = Sparse::held(Arc::new(Facts::default()));
        assert!(empty.is_unset());
    }
}
