//! The distinct texts search indexes hold, shared by every run indexed into it: the same model,
//! provider, service, operation and tool names, attribute values and error messages repeat on
//! span after span and run after run, so a run's index names them by id (4 bytes) instead of
//! copying their bytes: a big load's copies would be a few hundred distinct texts many times over.
//!
//! A vocabulary only grows. So that texts of runs evicted long ago are not kept forever, the
//! one new runs are indexed into is retired once it is big ([`RETIRE_BYTES`]): later runs start
//! a fresh one, and a retired vocabulary is freed with the last run indexed into it (runs are
//! evicted oldest first, so old vocabularies go with their runs).

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

/// Text bytes past which new runs go to a fresh vocabulary.
const RETIRE_BYTES: usize = 8 << 20;
/// Ids use the low bits of a piece (its field is above them).
pub(super) const ID_BITS: u32 = 29;
/// Ids past this are not handed out (the span holding such a text is left unindexed).
const MAX_IDS: u32 = (1 << ID_BITS) - 1;
/// An empty hash slot.
const EMPTY: u32 = u32::MAX;

/// The table of distinct texts (ASCII-lower-cased), behind a lock: runs are indexed on several
/// threads, and queries on other threads read texts added since they last looked.
pub struct Vocabulary {
    /// Tells vocabularies apart in query caches (an address can be reused once one is freed).
    serial: u64,
    /// How many texts it holds, readable without the lock (set after each addition).
    len: AtomicU32,
    retired: AtomicBool,
    texts: Mutex<Texts>,
}

pub struct Texts {
    /// Every text, one after the other.
    bytes: Vec<u8>,
    /// Where text `id` starts; it ends where `id + 1` starts (one entry more than texts).
    starts: Vec<u32>,
    /// Open-addressing hash table of ids (a power of two long, at most 3/4 full).
    slots: Vec<u32>,
    /// The text being added, lower-cased.
    scratch: Vec<u8>,
    /// Seeded per process: texts come from untrusted traces, and with a known seed a file
    /// could be made of colliding texts that turn every addition into a walk of the table.
    hasher: foldhash::fast::RandomState,
}

impl Texts {
    fn new() -> Texts {
        Texts {
            bytes: Vec::new(),
            starts: vec![0],
            slots: vec![EMPTY; 64],
            scratch: Vec::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    pub fn len(&self) -> u32 {
        (self.starts.len() - 1) as u32
    }

    /// Text `id`.
    pub fn text(&self, id: u32) -> &[u8] {
        let id = id as usize;
        &self.bytes[self.starts[id] as usize..self.starts[id + 1] as usize]
    }

    /// Every text back to back, and where each starts (one more entry than texts).
    pub fn all(&self) -> (&[u8], &[u32]) {
        (&self.bytes, &self.starts)
    }

    /// The id of `text` lower-cased (ASCII), added when new; `None` when the vocabulary is
    /// full.
    #[cfg(test)]
    pub fn id(&mut self, text: &str) -> Option<u32> {
        let mut lowered = std::mem::take(&mut self.scratch);
        lowered.clear();
        lowered.extend(text.bytes().map(|b| b.to_ascii_lowercase()));
        let found = self.id_of_lowered(&lowered);
        self.scratch = lowered;
        found
    }

    fn id_of_lowered(&mut self, lowered: &[u8]) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut slot = self.hasher.hash_one(lowered) as usize & mask;
        loop {
            match self.slots[slot] {
                EMPTY => break,
                id if self.text(id) == lowered => return Some(id),
                _ => slot = (slot + 1) & mask,
            }
        }
        let id = self.len();
        if id >= MAX_IDS || self.bytes.len() + lowered.len() > u32::MAX as usize {
            return None;
        }
        self.bytes.extend_from_slice(lowered);
        self.starts.push(self.bytes.len() as u32);
        self.slots[slot] = id;
        if (self.len() as usize) * 4 > self.slots.len() * 3 {
            self.grow_slots();
        }
        Some(id)
    }

    fn grow_slots(&mut self) {
        let mut slots = vec![EMPTY; self.slots.len() * 2];
        let mask = slots.len() - 1;
        for id in 0..self.len() {
            let mut slot = self.hasher.hash_one(self.text(id)) as usize & mask;
            while slots[slot] != EMPTY {
                slot = (slot + 1) & mask;
            }
            slots[slot] = id;
        }
        self.slots = slots;
    }

    fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + (self.starts.capacity() + self.slots.capacity()) * 4
            + self.scratch.capacity()
    }
}

/// Texts longer than this are not kept in a thread's table of known texts: long texts rarely
/// recur, and the table stays small.
const KNOWN_TEXT_MAX: usize = 256;
/// A thread's table of known texts is emptied when it holds this many.
const KNOWN_TEXTS: usize = 4096;

/// The ids of texts one thread has met in one vocabulary (ids never change once given).
#[derive(Default)]
struct Known {
    serial: Option<u64>,
    ids: std::collections::HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    /// When this table last answered, in lookups on this thread (the older of two is reused).
    used: u64,
}

impl Known {
    fn forget(&mut self, serial: u64) {
        self.serial = Some(serial);
        self.ids.clear();
        if self.ids.capacity() > 2 * KNOWN_TEXTS {
            self.ids.shrink_to(KNOWN_TEXTS);
        }
    }
}

/// A thread's tables: two, because a settle goes back and forth between the current
/// vocabulary (new runs) and a retired one (older runs still growing), and one table would be
/// emptied at every switch.
#[derive(Default)]
struct KnownTables {
    tables: [Known; 2],
    lookups: u64,
    lowered: Vec<u8>,
}

thread_local! {
    static KNOWN: std::cell::RefCell<KnownTables> = std::cell::RefCell::new(KnownTables::default());
}

/// The vocabulary new runs are indexed into; held weakly, so it is freed with its last run.
static CURRENT: Mutex<Weak<Vocabulary>> = Mutex::new(Weak::new());
static SERIALS: AtomicU64 = AtomicU64::new(0);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Texts are only appended, each addition complete before the next: a panic elsewhere
    // leaves nothing half-done to guard against.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Vocabulary {
    pub fn new() -> Vocabulary {
        Vocabulary {
            serial: SERIALS.fetch_add(1, Ordering::Relaxed),
            len: AtomicU32::new(0),
            retired: AtomicBool::new(false),
            texts: Mutex::new(Texts::new()),
        }
    }

    /// The vocabulary new runs are indexed into.
    pub fn current() -> Arc<Vocabulary> {
        let mut current = lock(&CURRENT);
        match current.upgrade() {
            Some(vocabulary) if !vocabulary.retired.load(Ordering::Relaxed) => vocabulary,
            _ => {
                let vocabulary = Arc::new(Vocabulary::new());
                *current = Arc::downgrade(&vocabulary);
                vocabulary
            }
        }
    }

    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// How many texts it holds (at least as many as any index into it has seen).
    pub fn len(&self) -> u32 {
        self.len.load(Ordering::Acquire)
    }

    /// The id of `text` lower-cased (ASCII), added when new; `None` when the vocabulary is
    /// full. Texts this thread met before are answered from its own table, without the lock:
    /// a settle indexes runs on every core, the same few hundred names and values recur on
    /// every span, and with the lock taken for each of them the cores would mostly wait on it.
    pub fn id(&self, text: &str) -> Option<u32> {
        KNOWN.with(|known| {
            let mut known = known.borrow_mut();
            let KnownTables {
                tables,
                lookups,
                lowered,
            } = &mut *known;
            *lookups += 1;
            let slot = match tables.iter().position(|t| t.serial == Some(self.serial)) {
                Some(slot) => slot,
                None => {
                    let oldest = usize::from(tables[1].used < tables[0].used);
                    tables[oldest].forget(self.serial);
                    oldest
                }
            };
            let table = &mut tables[slot];
            table.used = *lookups;
            lowered.clear();
            lowered.extend(text.bytes().map(|b| b.to_ascii_lowercase()));
            if let Some(&id) = table.ids.get(lowered.as_slice()) {
                return Some(id);
            }
            let id = self.add(|texts| texts.id_of_lowered(lowered))?;
            if lowered.len() <= KNOWN_TEXT_MAX {
                if table.ids.len() >= KNOWN_TEXTS {
                    table.forget(self.serial);
                }
                table.ids.insert(lowered.as_slice().into(), id);
            }
            Some(id)
        })
    }

    /// Adds texts (and reads ids) under one lock; retires the vocabulary once it is big.
    pub fn add<T>(&self, adding: impl FnOnce(&mut Texts) -> T) -> T {
        let mut texts = lock(&self.texts);
        let result = adding(&mut texts);
        self.len.store(texts.len(), Ordering::Release);
        if texts.bytes.len() > RETIRE_BYTES {
            self.retired.store(true, Ordering::Relaxed);
        }
        result
    }

    /// Reads the texts.
    pub fn read<T>(&self, reading: impl FnOnce(&Texts) -> T) -> T {
        reading(&lock(&self.texts))
    }

    /// Heap bytes held, itself included (it is shared: count it once).
    pub fn heap_bytes(&self) -> usize {
        size_of::<Vocabulary>() + self.read(Texts::heap_bytes)
    }

    #[cfg(test)]
    pub fn retire(&self) {
        self.retired.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_get_one_id_whatever_their_case() {
        let vocabulary = Vocabulary::new();
        let words: Vec<String> = (0..1000).map(|i| format!("Word {i}")).collect();
        let ids: Vec<u32> = vocabulary.add(|t| words.iter().map(|w| t.id(w).unwrap()).collect());
        assert_eq!(vocabulary.len(), 1000);
        vocabulary.add(|t| {
            for (word, id) in words.iter().zip(&ids) {
                assert_eq!(t.id(&word.to_uppercase()), Some(*id));
                assert_eq!(t.text(*id), word.to_ascii_lowercase().as_bytes());
            }
            assert_eq!(t.id(""), Some(1000));
            assert_eq!(t.id(""), Some(1000));
            assert_eq!(t.text(1000), b"");
        });
        assert_eq!(vocabulary.len(), 1001);
    }

    #[test]
    fn a_thread_answers_each_vocabulary_with_its_own_ids() {
        let first = Vocabulary::new();
        let second = Vocabulary::new();
        second.add(|t| t.id("padding"));
        // Met on this thread in `first`, then asked of `second`: its own id, not the one known.
        assert_eq!(first.id("Alpha"), Some(0));
        assert_eq!(second.id("ALPHA"), Some(1));
        assert_eq!(first.id("alpha"), Some(0));
        assert_eq!(second.id("alpha"), Some(1));
        // A text added on another thread gets the same id here.
        let beta = std::thread::scope(|s| s.spawn(|| first.id("Beta")).join().unwrap());
        assert_eq!(beta, Some(1));
        assert_eq!(first.id("BETA"), beta);
        assert_eq!((first.len(), second.len()), (2, 2));
        // A third vocabulary takes the table used longest ago; every answer stays its own.
        let third = Vocabulary::new();
        assert_eq!(third.id("beta"), Some(0));
        assert_eq!(first.id("Alpha"), Some(0));
        assert_eq!(second.id("alpha"), Some(1));
        assert_eq!(third.id("ALPHA"), Some(1));
        assert_eq!(third.len(), 2);
        // Texts too long for a thread's table are still found in the vocabulary.
        let long = "x".repeat(KNOWN_TEXT_MAX + 1);
        assert_eq!(first.id(&long), Some(2));
        assert_eq!(first.id(&long.to_uppercase()), Some(2));
        assert_eq!(first.len(), 3);
    }

    #[test]
    fn a_retired_vocabulary_is_not_handed_to_new_runs() {
        let first = Vocabulary::current();
        assert_eq!(Vocabulary::current().serial(), first.serial());
        first.retire();
        let second = Vocabulary::current();
        assert_ne!(second.serial(), first.serial());
        assert_eq!(Vocabulary::current().serial(), second.serial());
    }
}
