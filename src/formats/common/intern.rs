//! Shared strings for what repeats from span to span: attribute keys and payload field names,
//! and short attribute values (models, providers, operation names, tool names). One allocation
//! per distinct text per parsing thread, instead of one per span.
//!
//! Both tables are bounded, so hostile input with endless distinct texts cannot grow them: the
//! name table stops taking new names when full (names are few and the first ones are the ones
//! that repeat), the value table starts over (values drift over a long file; the common ones
//! are back after a few spans).

use std::cell::RefCell;
// foldhash: these tables are looked up for every attribute of every span, SipHash showed
// in profiles; both are bounded, so a flood of colliding texts cannot grow them.
use foldhash::HashSet;

use crate::model::ArcStr;

/// Names kept per thread.
const MAX_NAMES: usize = 4096;
/// Values kept per thread before the table starts over.
const MAX_VALUES: usize = 16 * 1024;
/// Longer values are rarely equal to one another (ids, queries, messages): not worth a lookup.
const MAX_SHARED_VALUE_BYTES: usize = 128;

thread_local! {
    static NAMES: RefCell<HashSet<ArcStr>> = RefCell::new(HashSet::default());
    static VALUES: RefCell<HashSet<ArcStr>> = RefCell::new(HashSet::default());
}

/// An attribute key or payload field name, shared with every earlier use of the same name.
pub fn name(text: &str) -> ArcStr {
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        if let Some(shared) = names.get(text) {
            return shared.clone();
        }
        let shared: ArcStr = text.into();
        if names.len() < MAX_NAMES {
            names.insert(shared.clone());
        }
        shared
    })
}

/// An attribute value, shared with earlier equal values when it is short.
pub fn value(text: &str) -> ArcStr {
    if text.len() > MAX_SHARED_VALUE_BYTES {
        return text.into();
    }
    VALUES.with(|values| {
        let mut values = values.borrow_mut();
        if let Some(shared) = values.get(text) {
            return shared.clone();
        }
        if values.len() >= MAX_VALUES {
            values.clear();
        }
        let shared: ArcStr = text.into();
        values.insert(shared.clone());
        shared
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_short_values_share_one_allocation_and_long_ones_do_not() {
        let a = value("gpt-4o");
        let b = value(&String::from("gpt-4o"));
        assert!(ArcStr::ptr_eq(&a, &b));
        let long = "x".repeat(MAX_SHARED_VALUE_BYTES + 1);
        assert!(!ArcStr::ptr_eq(&value(&long), &value(&long)));
        assert_eq!(&*value(&long), long);
    }

    #[test]
    fn the_value_table_starts_over_when_full_and_stays_bounded() {
        let first = value("first value");
        for i in 0..MAX_VALUES {
            value(&format!("distinct {i}"));
        }
        VALUES.with(|values| assert!(values.borrow().len() <= MAX_VALUES));
        let again = value("first value");
        assert_eq!(again, first, "equal text either way");
        assert!(!ArcStr::ptr_eq(&again, &first), "the table started over");
    }

    #[test]
    fn names_are_shared() {
        assert!(ArcStr::ptr_eq(
            &name("gen_ai.request.model"),
            &name("gen_ai.request.model")
        ));
    }
}
