//! The one interner for texts that repeat from span to span: attribute keys, payload field
//! names and event names ([`key`]), and attribute values such as models, providers, operation
//! names, tool names and stack traces ([`value`]). Parsers call it for a text's shared `ArcStr`;
//! packing a span's attributes ([`super::Attributes`]) asks it for a text's number
//! ([`Numbering::number_of`]).
//!
//! It holds three kinds of table:
//!
//! - **The numbered table**, one per process. Each text in it is stored once for every thread
//!   and named by a small number; a packed list holds those numbers, two or three bytes each,
//!   where an unpacked one holds a 16-byte value per attribute. Entries are never removed, so a
//!   reader gets a `&'static` value without a lock, and a numbered text is a static `ArcStr`
//!   whose clones change no count. A key gets its number when a parser meets it; a value when a
//!   packed list takes it (short, and not a one-off id: `shareable` in `attributes/encoding.rs`).
//! - **The value tables**, per thread. A value met again is the allocation handed out the first
//!   time, numbered or not: a run's conversation id repeats on every span of the run without
//!   being worth a number. Longer values (stack traces, statements, URLs) have a table of their
//!   own: an exception event's stack trace repeats from failure to failure, and one copy per
//!   event would be most of the events' memory; kept apart, they never push the short values
//!   out.
//! - **Recent texts**, per thread: slots that remember the texts last numbered, by their text,
//!   so that most of a span's keys and shared values are found with one comparison, without
//!   the numbered table's lock and without hashing the text.
//!
//! Every table is bounded, so hostile input with endless distinct texts cannot grow them. The
//! numbered table stops numbering once it holds its entries or bytes: a new key is then shared
//! through the value tables, a new value is kept by its owner. The value tables start over when
//! full (values drift over a long file; the common ones are back after a few spans), and the
//! long-value table is bounded by its bytes too, so texts of spans long gone (evicted from a
//! live store) are not kept alive by it.

use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

// foldhash: these tables are looked up for every attribute of every span, where SipHash's
// cost shows; all are bounded, so a flood of colliding texts cannot grow them.
use foldhash::HashSet;

use super::{ArcStr, AttrValue};

const CHUNK: usize = 4096;
const CHUNKS: usize = 64;
/// Texts the numbered table holds: 262,144.
pub const MAX_ENTRIES: usize = CHUNK * CHUNKS;
/// Bytes of the numbered table's texts, all entries together.
pub const MAX_BYTES: usize = 16 << 20;
/// Longest text the numbered table takes: longer texts are rarely repeated verbatim.
pub const MAX_TEXT_BYTES: usize = 64;

/// Values kept per thread before the short-value table starts over.
const MAX_VALUES: usize = 16 * 1024;
/// Values up to this long go to the short-value table.
const MAX_SHARED_VALUE_BYTES: usize = 128;
/// Longer values are not shared: messages and documents past this rarely repeat.
const MAX_SHARED_LONG_VALUE_BYTES: usize = 8 * 1024;
/// Bytes of text the long-value table holds before it starts over.
const MAX_LONG_VALUES_BYTES: usize = 1 << 20;

/// Slots of the recent texts per thread: two to this power.
const RECENT_SLOT_BITS: u32 = 10;
const RECENT_SLOTS: usize = 1 << RECENT_SLOT_BITS;

// ---- The numbered table ----

/// A text as a value (for readers of values) and as a plain `str` held in the slot itself, so
/// a reader of keys finds the text without going through the value's pointer.
struct Entry {
    text: &'static str,
    value: AttrValue,
}

impl Entry {
    /// The text as the static `ArcStr` the entry holds.
    fn shared(&self) -> ArcStr {
        match &self.value {
            AttrValue::Str(shared) => shared.clone(),
            _ => ArcStr::from(self.text),
        }
    }
}

type Chunk = Box<[OnceLock<Entry>]>;

static SLOTS: [OnceLock<Chunk>; CHUNKS] = [const { OnceLock::new() }; CHUNKS];

#[derive(Default)]
struct Index {
    numbers: HashMap<ArcStr, u32, foldhash::fast::RandomState>,
    bytes: usize,
}

fn index() -> &'static Mutex<Index> {
    static INDEX: OnceLock<Mutex<Index>> = OnceLock::new();
    INDEX.get_or_init(Mutex::default)
}

/// The number of `text` and its entry, numbering it when there is room; `None` when the table
/// is full. A new entry holds `held` (an allocation of the text the caller has) when given:
/// every clone of it then shares the entry's static text.
fn number_in_table(text: &str, held: Option<&ArcStr>) -> Option<(u32, &'static Entry)> {
    let mut index = index()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&number) = index.numbers.get(text) {
        return Some((number, entry(number)?));
    }
    let number = index.numbers.len();
    if number >= MAX_ENTRIES || index.bytes + text.len() > MAX_BYTES {
        return None;
    }
    let shared = held.cloned().unwrap_or_else(|| ArcStr::from(text));
    let chunk = SLOTS[number / CHUNK].get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect());
    // Set before the number is handed out: whoever reads the number finds the text.
    // Entries live as long as the process: the text is made static rather than copied.
    let _ = chunk[number % CHUNK].set(Entry {
        text: shared.leak(),
        value: AttrValue::Str(shared.clone()),
    });
    index.bytes += text.len();
    index.numbers.insert(shared, number as u32);
    Some((number as u32, entry(number as u32)?))
}

/// The text numbered `number` (an `AttrValue::Str`), or `None` for a number never handed out.
pub fn numbered_value(number: u32) -> Option<&'static AttrValue> {
    Some(&entry(number)?.value)
}

/// The text numbered `number`, or `""` for a number never handed out.
pub fn numbered_text(number: u32) -> &'static str {
    handed_out_text(number).unwrap_or("")
}

/// The text numbered `number`, if that number was handed out.
pub fn handed_out_text(number: u32) -> Option<&'static str> {
    entry(number).map(|entry| entry.text)
}

fn entry(number: u32) -> Option<&'static Entry> {
    let number = number as usize;
    SLOTS.get(number / CHUNK)?.get()?[number % CHUNK].get()
}

/// Heap bytes the numbered table holds: slots, index and texts (for `dump --stats`).
pub fn heap_bytes() -> u64 {
    let index = index()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let entries = index.numbers.len();
    let chunks = entries.div_ceil(CHUNK);
    let slots = chunks * CHUNK * size_of::<OnceLock<Entry>>();
    let map = index.numbers.capacity() * (size_of::<(ArcStr, u32)>() + 1);
    (slots + map + index.bytes + entries * 16) as u64
}

// ---- Recent texts ----

/// A text met lately and its number; `None` when the numbered table cannot take it (too long,
/// or the table is full, which it stays: entries are never removed).
struct Recent {
    text: ArcStr,
    number: Option<u32>,
}

type RecentTexts = [Option<Recent>; RECENT_SLOTS];

thread_local! {
    static RECENT: RefCell<RecentTexts> = const { RefCell::new([const { None }; RECENT_SLOTS]) };
}

/// A slot for `text` from its length and its first and last eight bytes: keys that share a
/// prefix (`gen_ai.request.…`) differ at the end.
fn slot_of(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (head, tail) = match (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) {
        (Some(head), Some(tail)) => (u64::from_le_bytes(*head), u64::from_le_bytes(*tail)),
        // Shorter than eight bytes: the whole text is both ends.
        _ => {
            let word = bytes
                .iter()
                .rev()
                .fold(0u64, |word, &byte| word << 8 | u64::from(byte));
            (word, word)
        }
    };
    let mixed =
        (head ^ tail.rotate_left(29) ^ bytes.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mixed >> (64 - RECENT_SLOT_BITS)) as usize
}

/// What `recent` remembers of `text`, or what the numbered table says of it (then remembered):
/// the shared text and its number. `held` is the caller's allocation of the text, if it has one.
fn recent_or_numbered<'a>(
    recent: &'a mut RecentTexts,
    text: &str,
    held: Option<&ArcStr>,
) -> &'a Recent {
    let slot = &mut recent[slot_of(text)];
    // The same allocation (a key, a numbered value) needs no comparison of bytes.
    let other_text =
        |known: &Recent| !std::ptr::eq(known.text.as_str(), text) && known.text.as_str() != text;
    if slot.as_ref().is_some_and(other_text) {
        *slot = None;
    }
    slot.get_or_insert_with(|| {
        let (text, number) = numbered(text, held);
        Recent { text, number }
    })
}

/// The numbered table's text and number for `text`, without the recent texts; when it has no
/// number, `held` or, for a key, the value tables' allocation.
fn numbered(text: &str, held: Option<&ArcStr>) -> (ArcStr, Option<u32>) {
    let found = (text.len() <= MAX_TEXT_BYTES)
        .then(|| number_in_table(text, held))
        .flatten();
    match found {
        Some((number, entry)) => (entry.shared(), Some(number)),
        None => (held.cloned().unwrap_or_else(|| value(text)), None),
    }
}

// ---- Parsers' entry points ----

/// An attribute key, payload field name or event name: the numbered table's text, shared by
/// every thread and span, or, past the table's bounds, the value tables' allocation.
pub fn key(text: &str) -> ArcStr {
    RECENT.with(|recent| match recent.try_borrow_mut() {
        Ok(mut recent) => recent_or_numbered(&mut recent, text, None).text.clone(),
        // Asked while this thread numbers a list (a reader inside a packer): the table alone.
        Err(_) => numbered(text, None).0,
    })
}

thread_local! {
    static VALUES: RefCell<HashSet<ArcStr>> = RefCell::new(HashSet::default());
    static LONG_VALUES: RefCell<LongValues> = RefCell::default();
}

#[derive(Default)]
struct LongValues {
    texts: HashSet<ArcStr>,
    /// Bytes of the texts held.
    bytes: usize,
}

/// An attribute value, shared with earlier equal values on this thread unless it is too long
/// to repeat.
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

// ---- Packers' entry points ----

/// Numbers texts through this thread's recent texts; one per packed list, so a list's dozen
/// lookups reach the thread-local once.
pub struct Numbering<'a> {
    recent: RefMut<'a, RecentTexts>,
}

pub fn numbering<R>(work: impl FnOnce(&mut Numbering<'_>) -> R) -> R {
    RECENT.with(|recent| {
        work(&mut Numbering {
            recent: recent.borrow_mut(),
        })
    })
}

impl Numbering<'_> {
    /// The number of `text` in the table, adding it when there is room; `None` when the table
    /// is full or the text too long to share.
    pub fn number_of(&mut self, text: &ArcStr) -> Option<u32> {
        if text.len() > MAX_TEXT_BYTES {
            return None;
        }
        recent_or_numbered(&mut self.recent, text, Some(text)).number
    }
}

/// [`Numbering::number_of`], for a single text.
pub fn number_of(text: &ArcStr) -> Option<u32> {
    numbering(|numbering| numbering.number_of(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_keeps_its_number_and_reads_back() {
        let a = number_of(&ArcStr::from("interner.test.alpha")).unwrap();
        let b = number_of(&ArcStr::from("interner.test.beta")).unwrap();
        assert_ne!(a, b);
        assert_eq!(number_of(&ArcStr::from("interner.test.alpha")), Some(a));
        assert_eq!(numbered_text(a), "interner.test.alpha");
        assert_eq!(numbered_text(b), "interner.test.beta");
        assert_eq!(numbered_value(u32::MAX), None);
        assert_eq!(numbered_text(u32::MAX), "");
    }

    #[test]
    fn a_long_text_is_not_numbered() {
        let long = ArcStr::from("x".repeat(MAX_TEXT_BYTES + 1));
        assert_eq!(number_of(&long), None);
        let edge = ArcStr::from("y".repeat(MAX_TEXT_BYTES));
        assert!(number_of(&edge).is_some());
    }

    #[test]
    fn a_key_is_the_numbered_text_on_every_thread() {
        let here = key("interner.test.key");
        let there = std::thread::spawn(|| key("interner.test.key"))
            .join()
            .unwrap();
        assert!(ArcStr::ptr_eq(&here, &there));
        assert!(ArcStr::is_static(&here), "its clones change no count");
        let number = number_of(&ArcStr::from("interner.test.key")).unwrap();
        assert!(std::ptr::eq(numbered_text(number), here.as_str()));
    }

    #[test]
    fn a_key_too_long_to_number_is_still_shared() {
        let long = format!("interner.test.{}", "k".repeat(MAX_TEXT_BYTES));
        let first = key(&long);
        assert_eq!(first, long);
        assert!(ArcStr::ptr_eq(&first, &key(&long)));
        assert_eq!(number_of(&first), None);
    }

    #[test]
    fn numbering_a_value_makes_its_allocation_the_tables() {
        let held = value("interner.test.model");
        assert!(!ArcStr::is_static(&held));
        let number = number_of(&held).unwrap();
        assert!(ArcStr::is_static(&held));
        assert!(std::ptr::eq(numbered_text(number), held.as_str()));
        // Another allocation of the same text finds the same number.
        assert_eq!(
            number_of(&ArcStr::from("interner.test.model")),
            Some(number)
        );
    }

    #[test]
    fn texts_meeting_in_a_recent_slot_read_back_as_themselves() {
        let texts: Vec<String> = (0..2 * RECENT_SLOTS)
            .map(|i| format!("k{i}"))
            .chain(["", "x", "a.much.longer.name.than.eight.bytes"].map(String::from))
            .collect();
        let mut numbers = HashMap::new();
        for _round in 0..2 {
            for text in &texts {
                let shared = key(text);
                assert_eq!(shared.as_str(), text);
                assert!(ArcStr::ptr_eq(&shared, &key(text)));
                let number = number_of(&ArcStr::from(text.as_str())).unwrap();
                assert_eq!(numbered_text(number), text);
                assert_eq!(*numbers.entry(text.clone()).or_insert(number), number);
            }
        }
    }

    #[test]
    fn a_key_asked_while_numbering_is_found_in_the_table() {
        let inside = numbering(|numbering| {
            numbering.number_of(&ArcStr::from("interner.test.outer"));
            key("interner.test.inner")
        });
        assert!(ArcStr::ptr_eq(&inside, &key("interner.test.inner")));
    }

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
}
