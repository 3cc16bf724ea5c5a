//! A bound on how much memory one OTLP request (a body, a line, a protobuf file's group of
//! resources) may decode into, for every decoder: JSON's serde model (`wire.rs`) and direct
//! reader (`wire/direct.rs`), and protobuf (`protobuf.rs`).
//!
//! Real exports decode to one to three times their size. A hostile body of empty messages
//! decodes to far more: an empty span is 2 bytes of protobuf or 3 of JSON and 264 bytes
//! decoded, so under the receiver's 20 MiB body limit one request could take 2.7 GB. Every
//! vector the decoders fill is grown here, and growth is charged against the budget of the
//! bytes being decoded; past it, decoding stops with [`OverBudget`].

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use smallvec::SmallVec;

/// Bytes of decoded structures allowed per byte of input. The densest legitimate shape known
/// is an array of small integers (4 bytes each in protobuf, 104 decoded: 26 times).
pub const DECODED_BYTES_PER_INPUT_BYTE: usize = 16;
/// What any input may decode to, however small: a few empty spans are no threat.
pub const DECODED_BYTES_FLOOR: usize = 4 << 20;

thread_local! {
    /// Bytes the decoding under way on this thread may still allocate; `usize::MAX` outside
    /// a [`Budget`].
    static LEFT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// While alive, decoding on this thread allocates at most the budget of `input_len` bytes.
/// Scopes do not nest: inside one, another is a no-op, so a request's resources share the
/// request's budget instead of each getting its own floor.
#[must_use]
pub struct Budget {
    outermost: bool,
}

impl Budget {
    pub fn for_input(input_len: usize) -> Budget {
        let outermost = LEFT.get() == usize::MAX;
        if outermost {
            LEFT.set(
                input_len
                    .saturating_mul(DECODED_BYTES_PER_INPUT_BYTE)
                    .max(DECODED_BYTES_FLOOR),
            );
        }
        Budget { outermost }
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        if self.outermost {
            LEFT.set(usize::MAX);
        }
    }
}

/// The input would decode past its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget;

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "it would decode to more than {DECODED_BYTES_PER_INPUT_BYTE} bytes per byte of \
             input (empty or near-empty messages); refused"
        )
    }
}

impl std::error::Error for OverBudget {}

fn charge(bytes: usize) -> Result<(), OverBudget> {
    let left = LEFT.get();
    if bytes > left {
        return Err(OverBudget);
    }
    if left != usize::MAX {
        LEFT.set(left - bytes);
    }
    Ok(())
}

/// Pushes `item`, charging the vector's growth (capacity doubles, as `Vec`'s own does).
pub fn push<T>(items: &mut Vec<T>, item: T) -> Result<(), OverBudget> {
    if items.len() == items.capacity() {
        let more = items.capacity().max(4);
        charge(more.saturating_mul(std::mem::size_of::<T>()))?;
        items.reserve_exact(more);
    }
    items.push(item);
    Ok(())
}

/// Items a sequence gathers on the stack before it moves to the heap.
const ON_STACK: usize = 16;

/// What [`sequence`] charges for a sequence, item by item: the room the gathered items take
/// (on the stack up to [`ON_STACK`], then a heap buffer doubling from there). The direct JSON
/// reader, which hands spans on instead of keeping them (`wire::for_each_span_directly`),
/// charges the same, so a request is refused or accepted alike whichever way it is read.
pub struct Growth {
    item_bytes: usize,
    len: usize,
    capacity: usize,
    spilled: bool,
}

impl Growth {
    pub fn of<T>() -> Growth {
        Growth {
            item_bytes: size_of::<T>(),
            len: 0,
            capacity: ON_STACK,
            spilled: false,
        }
    }

    /// Charges one more item: the heap's growth when the gathered items fill their room.
    pub fn add(&mut self) -> Result<(), OverBudget> {
        if self.len == self.capacity {
            let more = self.capacity;
            // What the heap holds after: all of it when the items leave the stack.
            let new_heap = if self.spilled { more } else { 2 * more };
            charge(new_heap.saturating_mul(self.item_bytes))?;
            self.capacity += more;
            self.spilled = true;
        }
        self.len += 1;
        Ok(())
    }

    /// Charges a sequence that never left the stack: it is allocated at its length.
    pub fn finish(self) -> Result<(), OverBudget> {
        match self.spilled {
            true => Ok(()),
            false => charge(self.len.saturating_mul(self.item_bytes)),
        }
    }
}

/// `deserialize_with` for the JSON model's vectors: a sequence charged as [`push`] charges.
pub fn sequence<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Items<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for Items<T> {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            // serde's own words for a `Vec`, so errors read as before.
            f.write_str("a sequence")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            // Most sequences (a span's attributes, a request's spans) are short: gathered on
            // the stack, they are allocated once, at their length, instead of growing 4, 8,
            // 16. Longer ones move to the heap and grow as `push` grows them, charged alike.
            let mut items = SmallVec::<[T; ON_STACK]>::new();
            let mut growth = Growth::of::<T>();
            while let Some(item) = seq.next_element()? {
                growth.add().map_err(de::Error::custom)?;
                if items.len() == items.capacity() {
                    items.reserve_exact(items.capacity());
                }
                items.push(item);
            }
            growth.finish().map_err(de::Error::custom)?;
            if items.spilled() {
                return Ok(items.into_vec());
            }
            let mut exact = Vec::with_capacity(items.len());
            exact.extend(items);
            Ok(exact)
        }
    }

    deserializer.deserialize_seq(Items(PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_past_the_budget_is_refused_and_the_budget_ends_with_its_scope() {
        {
            let _budget = Budget::for_input(0);
            let mut items: Vec<[u8; 1024]> = Vec::new();
            let mut pushed = 0usize;
            while push(&mut items, [0; 1024]).is_ok() {
                pushed += 1;
            }
            // Doubling from 4 stops at the capacity whose growth would pass 4 MiB.
            assert_eq!(pushed, 4096);
            assert!(items.capacity() * 1024 <= DECODED_BYTES_FLOOR);
        }
        let mut unbounded: Vec<[u8; 1024]> = Vec::new();
        for _ in 0..5000 {
            push(&mut unbounded, [0; 1024]).expect("no budget outside a scope");
        }
    }

    #[derive(Debug, Deserialize)]
    struct Numbers {
        #[serde(deserialize_with = "sequence")]
        items: Vec<u64>,
    }

    fn numbers(count: usize) -> String {
        let items: Vec<String> = (0..count).map(|i| (i % 10).to_string()).collect();
        format!("{{\"items\":[{}]}}", items.join(","))
    }

    #[test]
    fn a_short_sequence_is_allocated_at_its_length_and_a_long_one_is_charged_as_it_grows() {
        for count in [0, 1, 15, 16, 17, 100] {
            let parsed: Numbers = serde_json::from_str(&numbers(count)).unwrap();
            assert_eq!(parsed.items.len(), count);
            assert_eq!(
                parsed.items,
                (0..count).map(|i| (i % 10) as u64).collect::<Vec<_>>()
            );
            if count <= ON_STACK {
                assert_eq!(parsed.items.capacity(), count);
            }
        }
        // The floor's 4 MiB hold 524,288 numbers of 8 bytes, grown by doubling from 16.
        let _budget = Budget::for_input(0);
        assert!(serde_json::from_str::<Numbers>(&numbers(262_144)).is_ok());
        let refused = serde_json::from_str::<Numbers>(&numbers(524_289)).unwrap_err();
        assert!(refused.to_string().contains("refused"), "{refused}");
    }

    #[test]
    fn an_inner_scope_shares_the_outer_budget() {
        let _outer = Budget::for_input(0);
        let mut items: Vec<[u8; 1024]> = Vec::new();
        for _ in 0..4096 {
            push(&mut items, [0; 1024]).unwrap();
        }
        let _inner = Budget::for_input(1 << 30);
        assert_eq!(push(&mut items, [0; 1024]), Err(OverBudget));
    }
}
