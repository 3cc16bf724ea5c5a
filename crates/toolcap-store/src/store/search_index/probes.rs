//! Which texts of a vocabulary a needle is found in, worked out once per needle and thread
//! and kept: a query asks every run's index with the same needles, and a run's pieces are then
//! looked up in a bit set instead of searched. Texts added since (runs indexed while the query
//! runs) are searched when a run first needs them.

use std::cell::RefCell;

use super::holds_lowered_in_order;
use super::vocabulary::{Texts, Vocabulary};

/// How a needle is looked for in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// As a substring.
    Contains,
    /// Its characters in order (a fuzzy word).
    InOrder,
}

/// What a needle was found in, by text id.
#[derive(Debug)]
pub struct Found {
    vocabulary: u64,
    probe: Probe,
    needle: Box<[u8]>,
    /// Texts `0..covered` are searched.
    covered: u32,
    hits: Vec<u64>,
    /// Among the hits, the texts that are all ASCII.
    ascii: Vec<u64>,
    any: bool,
}

fn bit(bits: &[u64], id: u32) -> bool {
    bits[id as usize / 64] & (1 << (id % 64)) != 0
}

fn set(bits: &mut Vec<u64>, id: u32) {
    let word = id as usize / 64;
    if bits.len() <= word {
        bits.resize(word + 1, 0);
    }
    bits[word] |= 1 << (id % 64);
}

impl Found {
    /// Whether any text holds the needle (if not, no piece can).
    pub fn any(&self) -> bool {
        self.any
    }

    /// Whether text `id` holds the needle.
    pub fn hit(&self, id: u32) -> bool {
        id < self.covered && bit(&self.hits, id)
    }

    /// Whether text `id` holds the needle and is all ASCII.
    pub fn ascii_hit(&self, id: u32) -> bool {
        self.hit(id) && bit(&self.ascii, id)
    }

    fn search(&mut self, texts: &Texts) {
        let from = self.covered;
        self.covered = texts.len();
        let words = (self.covered as usize).div_ceil(64);
        self.hits.resize(words, 0);
        self.ascii.resize(words, 0);
        match self.probe {
            Probe::Contains => self.search_substring(texts, from),
            Probe::InOrder => {
                for id in from..self.covered {
                    let text = texts.text(id);
                    if holds_lowered_in_order(text, &self.needle) {
                        set(&mut self.hits, id);
                        if text.is_ascii() {
                            set(&mut self.ascii, id);
                        }
                    }
                }
            }
        }
        self.any = self.hits.iter().any(|&w| w != 0);
    }

    /// One SIMD search through the texts back to back: a match across two texts is not one.
    fn search_substring(&mut self, texts: &Texts, from: u32) {
        let (bytes, starts) = texts.all();
        let starts = &starts[..=self.covered as usize];
        if self.needle.is_empty() {
            for id in from..self.covered {
                set(&mut self.hits, id);
            }
            return;
        }
        let finder = memchr::memmem::Finder::new(&self.needle);
        let mut at = starts[from as usize] as usize;
        let end = starts[self.covered as usize] as usize;
        while let Some(found) = finder.find(&bytes[at..end]) {
            let start = at + found;
            // The text holding the match's start (the last of any empty ones starting there).
            let id = starts.partition_point(|&s| s as usize <= start) - 1;
            let text_end = starts[id + 1] as usize;
            if start + self.needle.len() <= text_end {
                set(&mut self.hits, id as u32);
                at = text_end;
            } else {
                // Across two texts; the next one may hold it.
                at = start + 1;
            }
        }
    }
}

/// Found needles kept per thread: a query has a few, and evaluates them run after run.
const KEPT: usize = 8;

thread_local! {
    static KEPT_FOUND: RefCell<Vec<Found>> = const { RefCell::new(Vec::new()) };
}

/// Calls `reading` with what `needle` (lower-case ASCII) is found in among `vocabulary`'s
/// texts, all of them up to now.
pub fn with_found<T>(
    vocabulary: &Vocabulary,
    probe: Probe,
    needle: &[u8],
    reading: impl FnOnce(&Found) -> T,
) -> T {
    KEPT_FOUND.with(|kept| {
        let mut kept = kept.borrow_mut();
        let at = kept.iter().position(|f| {
            f.vocabulary == vocabulary.serial() && f.probe == probe && *f.needle == *needle
        });
        let at = match at {
            Some(at) => at,
            None => {
                if kept.len() >= KEPT {
                    kept.remove(0);
                }
                kept.push(Found {
                    vocabulary: vocabulary.serial(),
                    probe,
                    needle: needle.into(),
                    covered: 0,
                    hits: Vec::new(),
                    ascii: Vec::new(),
                    any: false,
                });
                kept.len() - 1
            }
        };
        let found = &mut kept[at];
        if found.covered < vocabulary.len() {
            vocabulary.read(|texts| found.search(texts));
        }
        reading(found)
    })
}
