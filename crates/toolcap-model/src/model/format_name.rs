//! [`FormatName`]: the registry name of the format a span was parsed from, held in one byte.
//! Every span names its format, and a `&'static str` would take 16 bytes of each; a number fits
//! beside the span's kind and status.

use std::fmt;
use std::ops::Deref;
use std::sync::{Mutex, OnceLock};

/// A format's name as a number in a process-wide table of names. Equal names have equal
/// numbers; the empty name (a span built by hand) is 0.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FormatName(u8);

/// Names by number; 0 is the empty name and is never set. Names come from code (the format
/// registry, tests), never from input, so the table cannot fill from a file.
static NAMES: [OnceLock<&'static str>; 256] = [const { OnceLock::new() }; 256];
/// Held while a name is added, so that two threads adding one name give it one number.
static ADDING: Mutex<()> = Mutex::new(());

fn find(name: &str) -> Option<u8> {
    for (number, slot) in NAMES.iter().enumerate().skip(1) {
        match slot.get() {
            Some(held) if *held == name => return Some(number as u8),
            Some(_) => {}
            None => return None,
        }
    }
    None
}

impl FormatName {
    /// The number of `name`, added to the table the first time it is met. A parser asks once
    /// per piece and copies the number into each span.
    pub fn of(name: &'static str) -> FormatName {
        if name.is_empty() {
            return FormatName(0);
        }
        if let Some(number) = find(name) {
            return FormatName(number);
        }
        let _adding = ADDING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(number) = find(name) {
            return FormatName(number);
        }
        match NAMES
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, slot)| slot.get().is_none())
        {
            Some((number, slot)) => {
                let _ = slot.set(name);
                FormatName(number as u8)
            }
            // More than 255 format names in one program: none has that many.
            None => FormatName(0),
        }
    }

    pub fn as_str(self) -> &'static str {
        NAMES[usize::from(self.0)].get().copied().unwrap_or("")
    }
}

impl Deref for FormatName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&'static str> for FormatName {
    fn from(name: &'static str) -> FormatName {
        FormatName::of(name)
    }
}

impl fmt::Display for FormatName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// As the `&str` it replaced would print.
impl fmt::Debug for FormatName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<str> for FormatName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for FormatName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for FormatName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_back_and_keeps_its_number() {
        let first = FormatName::of("format-name-test-a");
        let second = FormatName::of("format-name-test-b");
        assert_ne!(first, second);
        assert_eq!(first.as_str(), "format-name-test-a");
        assert_eq!(second, "format-name-test-b");
        // A name equal in text but held elsewhere gets the same number.
        let again: &'static str = String::from("format-name-test-a").leak();
        assert_eq!(FormatName::of(again), first);
        assert_eq!(FormatName::default().as_str(), "");
        assert_eq!(FormatName::of(""), FormatName::default());
        assert_eq!(format!("{first:?}"), "\"format-name-test-a\"");
    }

    #[test]
    fn names_added_from_many_threads_get_one_number_each() {
        let names: Vec<&'static str> = (0..8)
            .map(|i| &*format!("format-name-race-{i}").leak())
            .collect();
        let numbers: Vec<Vec<FormatName>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| names.iter().map(|n| FormatName::of(n)).collect()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for other in &numbers[1..] {
            assert_eq!(other, &numbers[0]);
        }
        for (name, number) in names.iter().zip(&numbers[0]) {
            assert_eq!(number.as_str(), *name);
        }
    }
}
