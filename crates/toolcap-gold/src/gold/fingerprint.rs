//! Short keyed fingerprints of values, so a redacted gold diff can still say whether two
//! values are the same (`str(6)·a41f` on both sides) without showing either.
//!
//! The hash is SipHash-2-4 (a keyed PRF) under a key drawn from the OS once per process:
//! without the key, a fingerprint cannot be checked against guessed values (an order id,
//! a yes/no), and fingerprints from two runs of the program cannot be linked. Sixteen bits
//! are enough to tell values apart on one screen; the verdict itself always compares the real
//! values, so a rare collision can only make two different values *look* alike, never change
//! whether a row matches.

use std::hash::Hasher;
use std::sync::OnceLock;

use serde_json::Value;
use siphasher::sip::SipHasher24;

fn key() -> &'static [u8; 16] {
    static KEY: OnceLock<[u8; 16]> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut key = [0u8; 16];
        if getrandom::fill(&mut key).is_err() {
            // No OS randomness: fall back to the per-process keys std draws for hash maps,
            // which are still unknown outside this process.
            use std::hash::BuildHasher;
            let state = std::collections::hash_map::RandomState::new();
            key[..8].copy_from_slice(&state.hash_one(0u8).to_le_bytes());
            key[8..].copy_from_slice(&state.hash_one(1u8).to_le_bytes());
        }
        key
    })
}

/// Feeds a value in a canonical, unambiguous encoding: a type tag, lengths before contents,
/// object keys sorted (so key order never changes a fingerprint).
fn feed(hasher: &mut SipHasher24, value: &Value) {
    match value {
        Value::Null => hasher.write_u8(0),
        Value::Bool(b) => {
            hasher.write_u8(1);
            hasher.write_u8(u8::from(*b));
        }
        Value::Number(n) => {
            hasher.write_u8(2);
            let text = n.to_string();
            hasher.write_usize(text.len());
            hasher.write(text.as_bytes());
        }
        Value::String(s) => {
            hasher.write_u8(3);
            hasher.write_usize(s.len());
            hasher.write(s.as_bytes());
        }
        Value::Array(items) => {
            hasher.write_u8(4);
            hasher.write_usize(items.len());
            for item in items {
                feed(hasher, item);
            }
        }
        Value::Object(map) => {
            hasher.write_u8(5);
            hasher.write_usize(map.len());
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            for k in keys {
                hasher.write_usize(k.len());
                hasher.write(k.as_bytes());
                feed(hasher, &map[k]);
            }
        }
    }
}

/// Four hex digits: equal values always give equal fingerprints within this process.
pub fn fingerprint(value: &Value) -> String {
    let mut hasher = SipHasher24::new_with_key(key());
    feed(&mut hasher, value);
    format!("{:04x}", hasher.finish() & 0xffff)
}

/// A value's shape and its fingerprint, e.g. `str(6)·a41f` (what a redacted diff shows).
pub fn shape_and_fingerprint(value: &Value) -> String {
    format!(
        "{}·{}",
        super::compare::describe_shape(value),
        fingerprint(value)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_share_a_fingerprint_and_key_order_does_not_matter() {
        assert_eq!(fingerprint(&json!("ORD-1")), fingerprint(&json!("ORD-1")));
        assert_eq!(
            fingerprint(&json!({"a": 1, "b": [true, null]})),
            fingerprint(&json!({"b": [true, null], "a": 1}))
        );
    }

    #[test]
    fn different_values_of_one_shape_are_told_apart() {
        // 16 bits: of 200 distinct ids, nearly all fingerprints differ.
        let prints: std::collections::HashSet<String> = (0..200)
            .map(|i| fingerprint(&json!(format!("ORD-{i:03}"))))
            .collect();
        assert!(prints.len() > 190, "{}", prints.len());
        assert_ne!(fingerprint(&json!(1)), fingerprint(&json!("1")));
        assert_ne!(fingerprint(&json!([1, 2])), fingerprint(&json!([2, 1])));
    }

    #[test]
    fn the_text_is_shape_then_four_hex_digits_never_the_value() {
        let shown = shape_and_fingerprint(&json!("secret-value"));
        let (shape, print) = shown.split_once('·').expect("separator");
        assert_eq!(shape, "str(12)");
        assert_eq!(print.len(), 4);
        assert!(print.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(!shown.contains("secret"));
    }
}
