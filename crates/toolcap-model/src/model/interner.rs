//! One process-wide table of texts that repeat across spans (attribute keys, models, operation
//! names), each stored once and named by a small number. A packed span's attributes
//! ([`super::Attributes`]) hold those numbers, two or three bytes each, where an unpacked one
//! holds a 16-byte value per attribute.
//!
//! Entries are never removed, so a reader gets a `&'static` value without a lock. The table is
//! bounded in entries and bytes: once either is reached, new texts are not shared (their
//! owners keep their own copy), so hostile input cannot grow it without limit.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::{ArcStr, AttrValue};

const CHUNK: usize = 4096;
const CHUNKS: usize = 64;
/// 262,144 texts.
pub const MAX_ENTRIES: usize = CHUNK * CHUNKS;
/// Texts' bytes, all entries together.
pub const MAX_BYTES: usize = 16 << 20;
/// Longer texts are rarely repeated verbatim; they stay with their span.
pub const MAX_TEXT_BYTES: usize = 64;

/// A text as a value (for readers of values) and as a plain `str` held in the slot itself, so
/// a reader of keys finds the text without going through the value's pointer.
struct Entry {
    text: &'static str,
    value: AttrValue,
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

/// Texts this thread has numbered, by address: a parser hands out one allocation for a text it
/// meets again (`formats::common::intern`), so most lookups end here without the table's lock
/// or hashing the text. Each entry holds its text, so an address cannot be reused by another
/// text while it is remembered.
const KNOWN_PER_THREAD: usize = 16 * 1024;

thread_local! {
    static KNOWN: RefCell<Known> = RefCell::default();
}

type Known = HashMap<usize, (ArcStr, u32), foldhash::fast::RandomState>;

/// Numbers texts through this thread's memory of them; one per packed list, so a list's dozen
/// lookups reach the thread-local once.
pub struct Numbering<'a> {
    known: std::cell::RefMut<'a, Known>,
}

pub fn numbering<R>(work: impl FnOnce(&mut Numbering<'_>) -> R) -> R {
    KNOWN.with(|known| {
        work(&mut Numbering {
            known: known.borrow_mut(),
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
        let address = text.as_ptr() as usize;
        if let Some((_, number)) = self.known.get(&address) {
            return Some(*number);
        }
        let number = number_in_table(text)?;
        if self.known.len() >= KNOWN_PER_THREAD {
            self.known.clear();
        }
        self.known.insert(address, (text.clone(), number));
        Some(number)
    }
}

/// [`Numbering::number_of`], for a single text.
pub fn number_of(text: &ArcStr) -> Option<u32> {
    numbering(|numbering| numbering.number_of(text))
}

fn number_in_table(text: &ArcStr) -> Option<u32> {
    let mut index = index()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&number) = index.numbers.get(text.as_str()) {
        return Some(number);
    }
    let number = index.numbers.len();
    if number >= MAX_ENTRIES || index.bytes + text.len() > MAX_BYTES {
        return None;
    }
    let chunk = SLOTS[number / CHUNK].get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect());
    // Set before the number is handed out: whoever reads the number finds the text.
    // Entries live as long as the process: the text is made static rather than copied.
    let _ = chunk[number % CHUNK].set(Entry {
        text: text.leak(),
        value: AttrValue::Str(text.clone()),
    });
    index.bytes += text.len();
    index.numbers.insert(text.clone(), number as u32);
    Some(number as u32)
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

/// Heap bytes the table holds: slots, index and texts (for `dump --stats`).
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
    fn a_long_text_is_not_shared() {
        let long = ArcStr::from("x".repeat(MAX_TEXT_BYTES + 1));
        assert_eq!(number_of(&long), None);
        let edge = ArcStr::from("y".repeat(MAX_TEXT_BYTES));
        assert!(number_of(&edge).is_some());
    }
}
