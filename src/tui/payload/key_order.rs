//! JSON pretty-printed with each object's keys in the order the document wrote them.
//! `serde_json::Value` keeps keys sorted, so the masked or shaped value a pane shows is printed
//! along a tree of the original key orders, read from the same text (stringified JSON inside
//! strings too, as the pane unescapes it).

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The document's key order per object, as a tree mirroring it.
#[derive(Debug, Default)]
pub struct KeyOrder {
    keys: Vec<(String, KeyOrder)>,
    items: Vec<KeyOrder>,
}

/// Stringified JSON nested deeper than this keeps the sorted order.
const NESTED_MAX_DEPTH: usize = 8;

impl KeyOrder {
    /// The key orders of `text`; empty (sorted output) when it does not parse.
    pub fn of(text: &str) -> KeyOrder {
        Self::at_depth(text, 0)
    }

    fn at_depth(text: &str, depth: usize) -> KeyOrder {
        if depth > NESTED_MAX_DEPTH {
            return KeyOrder::default();
        }
        let mut deserializer = serde_json::Deserializer::from_str(text);
        OrderSeed { depth }
            .deserialize_in(&mut deserializer)
            .unwrap_or_default()
    }

    fn child(&self, key: &str) -> Option<&KeyOrder> {
        self.keys.iter().find(|(k, _)| k == key).map(|(_, o)| o)
    }

    fn position(&self, key: &str) -> usize {
        self.keys
            .iter()
            .position(|(k, _)| k == key)
            .unwrap_or(usize::MAX)
    }
}

struct OrderSeed {
    depth: usize,
}

impl OrderSeed {
    fn deserialize_in<'de, D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<KeyOrder, D::Error> {
        deserializer.deserialize_any(OrderVisitor { depth: self.depth })
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for OrderSeed {
    type Value = KeyOrder;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<KeyOrder, D::Error> {
        self.deserialize_in(deserializer)
    }
}

struct OrderVisitor {
    depth: usize,
}

impl<'de> Visitor<'de> for OrderVisitor {
    type Value = KeyOrder;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyOrder, A::Error> {
        let mut order = KeyOrder::default();
        while let Some(key) = map.next_key::<String>()? {
            let child = map.next_value_seed(OrderSeed { depth: self.depth })?;
            order.keys.push((key, child));
        }
        Ok(order)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KeyOrder, A::Error> {
        let mut order = KeyOrder::default();
        while let Some(item) = seq.next_element_seed(OrderSeed { depth: self.depth })? {
            order.items.push(item);
        }
        Ok(order)
    }

    fn visit_str<E>(self, text: &str) -> Result<KeyOrder, E> {
        // The pane shows stringified JSON as JSON (`redact::unstring_nested_json`).
        let trimmed = text.trim_start();
        Ok(match trimmed.starts_with('{') || trimmed.starts_with('[') {
            true => KeyOrder::at_depth(text, self.depth + 1),
            false => KeyOrder::default(),
        })
    }

    fn visit_bool<E>(self, _: bool) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
    fn visit_unit<E>(self) -> Result<KeyOrder, E> {
        Ok(KeyOrder::default())
    }
}

impl<'de> Deserialize<'de> for KeyOrder {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<KeyOrder, D::Error> {
        OrderSeed { depth: 0 }.deserialize_in(deserializer)
    }
}

/// `value` pretty-printed as `serde_json::to_string_pretty` does, its objects' keys in
/// `order` (keys `order` does not know, such as a masked one, follow in sorted order).
pub fn pretty_in_order(value: &Value, order: &KeyOrder) -> String {
    let mut out = String::new();
    write_value(value, Some(order), 0, &mut out);
    out
}

fn write_value(value: &Value, order: Option<&KeyOrder>, indent: usize, out: &mut String) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            if let Some(order) = order {
                keys.sort_by_key(|key| order.position(key));
            }
            out.push_str("{\n");
            for (n, key) in keys.iter().enumerate() {
                push_indent(indent + 1, out);
                out.push_str(&Value::String((*key).clone()).to_string());
                out.push_str(": ");
                let child = order.and_then(|o| o.child(key));
                write_value(&map[*key], child, indent + 1, out);
                if n + 1 < keys.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            push_indent(indent, out);
            out.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (n, item) in items.iter().enumerate() {
                push_indent(indent + 1, out);
                let child = order.and_then(|o| o.items.get(n));
                write_value(item, child, indent + 1, out);
                if n + 1 < items.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            push_indent(indent, out);
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn push_indent(levels: usize, out: &mut String) {
    for _ in 0..levels {
        out.push_str("  ");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        let mut value: Value = serde_json::from_str(text).unwrap();
        crate::redact::unstring_nested_json(&mut value, 0);
        pretty_in_order(&value, &KeyOrder::of(text))
    }

    #[test]
    fn keys_keep_the_document_s_order_at_every_depth() {
        let text = r#"{"role": "user", "parts": [{"type": "text", "content": "hi"}], "a": {"z": 1, "b": [], "m": {}}}"#;
        assert_eq!(
            shown(text),
            "{\n  \"role\": \"user\",\n  \"parts\": [\n    {\n      \"type\": \"text\",\n      \"content\": \"hi\"\n    }\n  ],\n  \"a\": {\n    \"z\": 1,\n    \"b\": [],\n    \"m\": {}\n  }\n}"
        );
    }

    #[test]
    fn the_layout_is_serde_json_s_pretty_one() {
        let text = r#"[1, "two", null, true, 2.5, {"k": "v\n\"q\""}, [], {}]"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            pretty_in_order(&value, &KeyOrder::of(text)),
            serde_json::to_string_pretty(&value).unwrap()
        );
    }

    #[test]
    fn stringified_json_inside_a_string_keeps_its_order_too() {
        let text = r#"{"args": "{\"zeta\": 1, \"alpha\": 2}"}"#;
        assert_eq!(
            shown(text),
            "{\n  \"args\": {\n    \"zeta\": 1,\n    \"alpha\": 2\n  }\n}"
        );
    }

    #[test]
    fn keys_the_order_does_not_know_follow_sorted() {
        let value = serde_json::json!({"b": 1, "new": 2, "a": 3});
        let order = KeyOrder::of(r#"{"b": 0, "a": 0}"#);
        assert_eq!(
            pretty_in_order(&value, &order),
            "{\n  \"b\": 1,\n  \"a\": 3,\n  \"new\": 2\n}"
        );
    }

    #[test]
    fn text_that_is_not_json_or_too_deep_gives_an_empty_order() {
        assert!(KeyOrder::of("not json").keys.is_empty());
        let deep = "[".repeat(5_000) + &"]".repeat(5_000);
        assert!(KeyOrder::of(&deep).items.is_empty());
    }
}
