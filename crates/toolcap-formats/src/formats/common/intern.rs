//! Shared strings for what repeats from span to span: attribute keys and payload field names,
//! and short attribute values (models, providers, operation names, tool names). One allocation
//! per distinct text per parsing thread, instead of one per span.
//!
//! Longer values (stack traces, statements, URLs) are shared through a table of their own: an
//! exception event's stack trace repeats from failure to failure, and one copy per event would
//! be most of the events' memory; kept apart, they never push the short values out.
//!
//! Every table is bounded, so hostile input with endless distinct texts cannot grow them: the
//! name table stops taking new names when full (names are few and the first ones are the ones
//! that repeat), the value tables start over (values drift over a long file; the common ones
//! are back after a few spans). The long-value table is bounded by its bytes too, so texts of
//! spans long gone (evicted from a live store) are not kept alive by it.

use std::cell::RefCell;
// foldhash: these tables are looked up for every attribute of every span, where SipHash's
// cost shows; both are bounded, so a flood of colliding texts cannot grow them.
use foldhash::HashSet;

use crate::model::ArcStr;

/// Names kept per thread.
const MAX_NAMES: usize = 4096;
/// Values kept per thread before the table starts over.
const MAX_VALUES: usize = 16 * 1024;
/// Values up to this long go to the short-value table.
const MAX_SHARED_VALUE_BYTES: usize = 128;
/// Longer values are not shared: messages and documents past this rarely repeat.
const MAX_SHARED_LONG_VALUE_BYTES: usize = 8 * 1024;
/// Bytes of text the long-value table holds before it starts over.
const MAX_LONG_VALUES_BYTES: usize = 1 << 20;

thread_local! {
    static NAMES: RefCell<HashSet<ArcStr>> = RefCell::new(HashSet::default());
    static VALUES: RefCell<HashSet<ArcStr>> = RefCell::new(HashSet::default());
    static LONG_VALUES: RefCell<LongValues> = RefCell::default();
}

#[derive(Default)]
struct LongValues {
    texts: HashSet<ArcStr>,
    /// Bytes of the texts held.
    bytes: usize,
}

/// An attribute key or payload field name, shared with every earlier use of the same name.
pub fn name(text: &str) -> ArcStr {
    // A span's keys are mostly the keys of the span before it: one comparison with the name
    // last met in the text's slot finds most of them without hashing the text.
    RECENT_NAMES.with(|recent| {
        let mut recent = recent.borrow_mut();
        let slot = &mut recent[recent_slot(text)];
        if let Some(held) = slot
            && held.as_str() == text
        {
            return held.clone();
        }
        let shared = name_in_table(text);
        *slot = Some(shared.clone());
        shared
    })
}

/// Slots of the recent-names memory, per thread.
const RECENT_NAME_SLOTS: usize = 256;

thread_local! {
    static RECENT_NAMES: RefCell<[Option<ArcStr>; RECENT_NAME_SLOTS]> =
        const { RefCell::new([const { None }; RECENT_NAME_SLOTS]) };
}

/// A slot for `text` from its length and its first and last eight bytes: names that share a
/// prefix (`gen_ai.request.…`) differ at the end.
fn recent_slot(text: &str) -> usize {
    let bytes = text.as_bytes();
    let word = |part: &[u8]| {
        let mut eight = [0u8; 8];
        eight[..part.len()].copy_from_slice(part);
        u64::from_le_bytes(eight)
    };
    let head = word(&bytes[..bytes.len().min(8)]);
    let tail = word(&bytes[bytes.len().saturating_sub(8)..]);
    let mixed =
        (head ^ tail.rotate_left(29) ^ bytes.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mixed >> 56) as usize % RECENT_NAME_SLOTS
}

fn name_in_table(text: &str) -> ArcStr {
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
    if text.len() > MAX_SHARED_LONG_VALUE_BYTES {
        return text.into();
    }
    if text.len() > MAX_SHARED_VALUE_BYTES {
        return long_value(text);
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

fn long_value(text: &str) -> ArcStr {
    LONG_VALUES.with(|long| {
        let mut long = long.borrow_mut();
        if let Some(shared) = long.texts.get(text) {
            return shared.clone();
        }
        if long.bytes + text.len() > MAX_LONG_VALUES_BYTES || long.texts.len() >= MAX_VALUES {
            long.texts.clear();
            long.bytes = 0;
        }
        let shared: ArcStr = text.into();
        long.bytes += text.len();
        long.texts.insert(shared.clone());
        shared
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_allocation_up_to_the_long_limit() {
        let a = value("gpt-4o");
        let b = value(&String::from("gpt-4o"));
        assert!(ArcStr::ptr_eq(&a, &b));
        let long = "x".repeat(MAX_SHARED_VALUE_BYTES + 1);
        assert!(ArcStr::ptr_eq(&value(&long), &value(&long)));
        let longest = "y".repeat(MAX_SHARED_LONG_VALUE_BYTES);
        assert!(ArcStr::ptr_eq(&value(&longest), &value(&longest)));
        let too_long = "z".repeat(MAX_SHARED_LONG_VALUE_BYTES + 1);
        assert!(!ArcStr::ptr_eq(&value(&too_long), &value(&too_long)));
        assert_eq!(&*value(&too_long), too_long);
    }

    #[test]
    fn long_values_do_not_push_short_ones_out_and_their_table_is_bounded_by_bytes() {
        let short = value("openai");
        let first_long = value(&"s".repeat(1000));
        // More than the table's bytes of distinct long texts.
        for i in 0..(MAX_LONG_VALUES_BYTES / 1000 + 10) {
            value(&format!("{i:0>1000}"));
        }
        LONG_VALUES.with(|long| {
            let long = long.borrow();
            assert!(long.bytes <= MAX_LONG_VALUES_BYTES);
            assert_eq!(
                long.bytes,
                long.texts.iter().map(|t| t.len()).sum::<usize>()
            );
        });
        assert!(ArcStr::ptr_eq(&short, &value("openai")), "short table kept");
        let again = value(&"s".repeat(1000));
        assert_eq!(again, first_long);
        assert!(
            !ArcStr::ptr_eq(&again, &first_long),
            "the long table started over"
        );
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
        // Names meeting in a slot of the recent memory still read back as themselves.
        let names: Vec<String> = (0..2 * RECENT_NAME_SLOTS)
            .map(|i| format!("k{i}"))
            .chain(["", "x", "a.much.longer.name.than.eight.bytes"].map(String::from))
            .collect();
        for _round in 0..2 {
            for text in &names {
                let shared = name(text);
                assert_eq!(shared.as_str(), text);
                assert!(ArcStr::ptr_eq(&shared, &name(text)));
            }
        }
    }
}
