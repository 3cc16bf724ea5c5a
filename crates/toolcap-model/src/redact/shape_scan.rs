//! A redacted payload's shape found in one pass over its text: what
//! `present(&parse_payload(text), Redacted)` gives, without first building the whole value and
//! every stringified JSON inside it. Items past the first few of an array, and everything below
//! the shape's depth, are only counted, never built.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{PayloadValue, SHAPE_DEPTH, SHAPE_ITEMS, UNSTRING_MAX_DEPTH, shown_key};

/// The payload as the redacted view shows it.
pub fn redacted_payload(text: &str) -> PayloadValue {
    match shape_of_json(text, Depth::default()) {
        Some(shape) => PayloadValue::Json(shape),
        None => PayloadValue::Text(format!(
            "text ({} chars, {} lines)",
            text.chars().count(),
            text.lines().count()
        )),
    }
}

/// Where a value sits: how deep in stringified JSON unpacking (bounded like
/// [`super::unstring_nested_json`]) and how deep in the shape (bounded like [`super::shape`]).
/// They differ because an unpacked string's value takes the string's place in the shape.
#[derive(Clone, Copy, Default)]
struct Depth {
    unstring: usize,
    shape: usize,
}

impl Depth {
    fn child(self) -> Depth {
        Depth {
            unstring: self.unstring + 1,
            shape: self.shape + 1,
        }
    }
}

/// The shape of `text` as one JSON value, `None` when it is not one.
fn shape_of_json(text: &str, depth: Depth) -> Option<Value> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let shape = ShapeSeed(depth).deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(shape)
}

#[derive(Clone, Copy)]
struct ShapeSeed(Depth);

impl ShapeSeed {
    fn string(self, text: &str) -> Value {
        let depth = self.0;
        let trimmed = text.trim_start();
        if depth.unstring <= UNSTRING_MAX_DEPTH
            && (trimmed.starts_with('{') || trimmed.starts_with('['))
        {
            let inner = Depth {
                unstring: depth.unstring + 1,
                shape: depth.shape,
            };
            if let Some(shape) = shape_of_json(text, inner) {
                return shape;
            }
        }
        Value::String(format!("string ({} chars)", text.chars().count()))
    }
}

impl<'de> DeserializeSeed<'de> for ShapeSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn kind(name: &str) -> Value {
    Value::String(name.into())
}

impl<'de> Visitor<'de> for ShapeSeed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(kind("null"))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Value, E> {
        Ok(kind("bool"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Value, E> {
        Ok(kind("int"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Value, E> {
        Ok(kind("int"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Value, E> {
        Ok(kind("float"))
    }
    fn visit_str<E>(self, text: &str) -> Result<Value, E> {
        Ok(self.string(text))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let depth = self.0;
        let mut items = 0;
        let mut shapes = Vec::new();
        if depth.shape < SHAPE_DEPTH {
            while items < SHAPE_ITEMS {
                match seq.next_element_seed(ShapeSeed(depth.child()))? {
                    Some(shape) => shapes.push(shape),
                    None => break,
                }
                items += 1;
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            items += 1;
        }
        if depth.shape >= SHAPE_DEPTH {
            return Ok(Value::String(format!("array ({items} items)")));
        }
        if items > SHAPE_ITEMS {
            shapes.push(Value::String(format!(
                "… {} more items",
                items - SHAPE_ITEMS
            )));
        }
        Ok(Value::Array(shapes))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let depth = self.0;
        if depth.shape >= SHAPE_DEPTH {
            // A key given twice is one key, as in the parsed value.
            let mut keys = BTreeSet::new();
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.insert(key);
            }
            return Ok(Value::String(format!("object ({} keys)", keys.len())));
        }
        // Raw keys first (the last of a repeated key wins, as when parsing), then the shown
        // keys in the raw keys' order, as the shape of the parsed value makes them.
        let mut raw = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let shape = map.next_value_seed(ShapeSeed(depth.child()))?;
            raw.insert(key, shape);
        }
        Ok(Value::Object(
            raw.into_iter()
                .map(|(key, shape)| (shown_key(&key), shape))
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::{Reveal, parse_payload, present};
    use proptest::prelude::*;

    fn through_the_tree(text: &str) -> PayloadValue {
        present(&parse_payload(text), Reveal::Redacted)
    }

    #[test]
    fn known_payloads_have_the_shape_the_parsed_value_has() {
        for text in [
            r#"{"city":"Paris","unit":"celsius"}"#,
            r#"[{"role":"user","content":"{\"a\":[1,2.5,null,true,{\"b\":\"[1,2,3,4,5]\"}]}"}]"#,
            r#"{"a":1,"a":"x","b\u0007":2,"b\u0008":3}"#,
            r#""[1, 2, 3, 4, 5, 6]""#,
            "  {\"nested\": \" [\\\"x\\\"]\"}  ",
            "[[[[[[[[[[[[[[[[1,2,3,4]]]]]]]]]]]]]]]",
            r#"{"s":"{not json"}"#,
            "plain text\nover two lines",
            "",
            "{\"a\":1} trailing",
            "-12.5e3",
            // Once found by the random payloads below: repeated empty keys.
            r#"{"":[],"":null}"#,
        ] {
            assert_eq!(redacted_payload(text), through_the_tree(text), "{text}");
        }
        // JSON stringified in JSON, again and again: unpacking stops at its depth bound, and
        // the shape at its own.
        for wrap in ["[{}, 3]", "[[{}]]", "{\"k\": [{}]}"] {
            let mut text = "[1,2]".to_string();
            for level in 0..14 {
                text = wrap.replace("{}", &serde_json::to_string(&text).unwrap());
                assert_eq!(
                    redacted_payload(&text),
                    through_the_tree(&text),
                    "{level} x {wrap}"
                );
            }
        }
    }

    /// JSON texts with repeated and control-character keys, long arrays, deep nesting and
    /// JSON stringified inside strings (several levels down).
    fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            any::<bool>().prop_map(|b| b.to_string()),
            any::<i64>().prop_map(|i| i.to_string()),
            (-1e6f64..1e6).prop_map(|f| format!("{f:?}")),
            "[a-c\\u{7}é ]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ];
        leaf.prop_recursive(16, 96, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(("[ab\\u{1}]{0,2}", inner.clone()), 0..5).prop_map(|kv| {
                    let members: Vec<String> = kv
                        .into_iter()
                        .map(|(k, v)| format!("{}:{v}", serde_json::to_string(&k).unwrap()))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
                // The value as a JSON string: unpacked again by the redacted view.
                inner.prop_map(|v| serde_json::to_string(&format!(" {v}")).unwrap()),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn any_payload_has_the_shape_the_parsed_value_has(text in json_text(), cut in 0usize..4) {
            prop_assert_eq!(redacted_payload(&text), through_the_tree(&text));
            // Broken JSON too: the text is then shown as text either way.
            let broken: String = text.chars().take(text.chars().count().saturating_sub(cut)).collect();
            prop_assert_eq!(redacted_payload(&broken), through_the_tree(&broken));
        }
    }
}
