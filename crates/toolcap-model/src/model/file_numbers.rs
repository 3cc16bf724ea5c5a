//! One process-wide numbering of the files payload ranges point into, so a packed attribute
//! list can name a payload's file by a small number instead of holding a pointer to it (see
//! `attributes/payloads.rs`).
//!
//! A load names one file for all its payloads, and a live spool one file per segment, so the
//! table stays small; it is bounded in entries all the same, and a payload whose file finds no
//! room stays a value of its own. Entries are never removed: a number, once handed out, names
//! its file for as long as the process runs.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};

/// More files than a load or live session names (a number per file read and per live spool
/// segment, 128 MiB each by default), and at most a few megabytes of paths; past it, payloads
/// keep their own value.
pub const MAX_FILES: usize = 1 << 16;

#[derive(Default)]
struct Table {
    paths: Vec<Arc<PathBuf>>,
    numbers: HashMap<Arc<PathBuf>, u32, foldhash::fast::RandomState>,
}

fn table() -> &'static RwLock<Table> {
    static TABLE: OnceLock<RwLock<Table>> = OnceLock::new();
    TABLE.get_or_init(RwLock::default)
}

thread_local! {
    /// The file this thread numbered last, by address: the payloads of one parse share one
    /// path allocation, so nearly every lookup ends here. It holds the path, so the address
    /// cannot be reused by another path while it is remembered.
    static LAST: RefCell<Option<(Arc<PathBuf>, u32)>> = const { RefCell::new(None) };
}

/// The number of `path`, adding it when there is room; `None` once the table is full.
pub fn number_of(path: &Arc<PathBuf>) -> Option<u32> {
    let remembered = LAST.with(|last| {
        let last = last.borrow();
        let (known, number) = last.as_ref()?;
        Arc::ptr_eq(known, path).then_some(*number)
    });
    if remembered.is_some() {
        return remembered;
    }
    let number = number_in_table(path)?;
    LAST.with(|last| *last.borrow_mut() = Some((path.clone(), number)));
    Some(number)
}

fn number_in_table(path: &Arc<PathBuf>) -> Option<u32> {
    if let Some(&number) = read().numbers.get(path) {
        return Some(number);
    }
    table()
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .number(path, MAX_FILES)
}

impl Table {
    /// The number of `path`, adding it while the table holds fewer than `max` files.
    fn number(&mut self, path: &Arc<PathBuf>, max: usize) -> Option<u32> {
        if let Some(&number) = self.numbers.get(path) {
            return Some(number);
        }
        if self.paths.len() >= max {
            return None;
        }
        let number = self.paths.len() as u32;
        self.paths.push(path.clone());
        self.numbers.insert(path.clone(), number);
        Some(number)
    }
}

fn read() -> std::sync::RwLockReadGuard<'static, Table> {
    table()
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The file numbered `number`, or `None` for a number never handed out.
pub fn path(number: u32) -> Option<Arc<PathBuf>> {
    read().paths.get(number as usize).cloned()
}

/// Heap bytes the table holds (for `dump --stats`): its lists and the paths themselves.
pub fn heap_bytes() -> u64 {
    let table = read();
    let entry = size_of::<Arc<PathBuf>>();
    let lists = table.paths.capacity() * entry + table.numbers.capacity() * (entry + 4 + 1);
    let paths: usize = table
        .paths
        .iter()
        .map(|path| path.as_os_str().len() + size_of::<PathBuf>() + 16)
        .sum();
    (lists + paths) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_keeps_its_number_whichever_allocation_names_it() {
        let first = Arc::new(PathBuf::from("/file-numbers-test/a.jsonl"));
        let other = Arc::new(PathBuf::from("/file-numbers-test/b.jsonl"));
        let a = number_of(&first).unwrap();
        let b = number_of(&other).unwrap();
        assert_ne!(a, b);
        let same_name = Arc::new(PathBuf::from("/file-numbers-test/a.jsonl"));
        assert_eq!(number_of(&same_name), Some(a));
        assert_eq!(number_of(&first), Some(a));
        assert_eq!(path(a).as_deref(), Some(&*first));
        assert_eq!(path(b).as_deref(), Some(&*other));
        assert_eq!(path(u32::MAX), None);
    }

    /// A full table numbers the files it has and no new one (their payloads stay values).
    #[test]
    fn a_full_table_numbers_no_new_file() {
        let mut table = Table::default();
        let file = |name: &str| Arc::new(PathBuf::from(name));
        assert_eq!(table.number(&file("/a"), 2), Some(0));
        assert_eq!(table.number(&file("/b"), 2), Some(1));
        assert_eq!(table.number(&file("/c"), 2), None);
        assert_eq!(table.number(&file("/a"), 2), Some(0));
        assert_eq!(table.paths.len(), 2);
    }

    #[test]
    fn numbers_agree_across_threads() {
        let shared = Arc::new(PathBuf::from("/file-numbers-test/threads.jsonl"));
        let numbers: Vec<u32> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| number_of(&Arc::new((*shared).clone())).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            numbers.windows(2).all(|pair| pair[0] == pair[1]),
            "{numbers:?}"
        );
        assert_eq!(path(numbers[0]).as_deref(), Some(&*shared));
    }
}
