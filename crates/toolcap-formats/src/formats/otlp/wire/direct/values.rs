//! Attribute lists and the values they hold, read by the direct reader.

use super::{Cursor, MAX_VALUE_DEPTH, Read, UnsupportedShape, first_time};
use crate::formats::otlp::wire::{AnyValue, ArrayValue, KeyValue, KvList};

impl<'a> Cursor<'a> {
    pub(super) fn key_values_into(&mut self, list: &mut Vec<KeyValue<'a>>) -> Read<()> {
        self.array::<KeyValue>(|cursor| {
            let pair = cursor.key_value(0)?;
            list.push(pair);
            Ok(())
        })
    }

    fn key_value(&mut self, depth: usize) -> Read<KeyValue<'a>> {
        // Exporters write `{"key":…,"value":{…}}`: that shape is read without the general walk
        // (any other goes through it, from the start).
        self.skip_whitespace();
        let start = self.at;
        if self.bytes[start..].starts_with(b"{\"key\":") {
            self.at += 7;
            let key = self.text()?;
            if self.bytes[self.at..].starts_with(b",\"value\":") {
                self.at += 9;
                let value = self.any_value(depth)?;
                if self.bytes.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    let value = Some(value);
                    return Ok(KeyValue { key, value });
                }
            }
            self.at = start;
        }
        let mut seen = 0;
        let mut pair = KeyValue::default();
        self.object(|cursor, name| match name {
            "key" => {
                first_time(&mut seen, 1)?;
                pair.key = cursor.text()?;
                Ok(())
            }
            "value" => {
                first_time(&mut seen, 2)?;
                pair.value = Some(cursor.any_value(depth)?);
                Ok(())
            }
            other => cursor.ignore(other),
        })?;
        Ok(pair)
    }

    fn any_value(&mut self, depth: usize) -> Read<AnyValue<'a>> {
        if depth > MAX_VALUE_DEPTH {
            return Err(UnsupportedShape);
        }
        // The usual value, `{"stringValue":…}`, read without the general walk.
        self.skip_whitespace();
        let start = self.at;
        if self.bytes[start..].starts_with(b"{\"stringValue\":") {
            self.at += 15;
            let token = self.string_token()?;
            if self.bytes.get(self.at) == Some(&b'}') {
                self.at += 1;
                let string_value = Some(token.text());
                return Ok(AnyValue {
                    string_value,
                    ..AnyValue::default()
                });
            }
            self.at = start;
        }
        let mut seen = 0;
        let mut value = AnyValue::default();
        self.object(|cursor, name| {
            match name {
                "stringValue" => {
                    first_time(&mut seen, 1)?;
                    value.string_value = Some(cursor.string_token()?.text());
                }
                "boolValue" => {
                    first_time(&mut seen, 1 << 1)?;
                    cursor.skip_whitespace();
                    value.bool_value = Some(cursor.boolean()?);
                }
                "intValue" => {
                    first_time(&mut seen, 1 << 2)?;
                    value.int_value = Some(cursor.scalar()?);
                }
                "doubleValue" => {
                    first_time(&mut seen, 1 << 3)?;
                    value.double_value = Some(cursor.scalar()?);
                }
                "bytesValue" => {
                    first_time(&mut seen, 1 << 4)?;
                    value.bytes_value = Some(Box::new(cursor.text()?));
                }
                "arrayValue" => {
                    first_time(&mut seen, 1 << 5)?;
                    value.array_value = Some(Box::new(cursor.array_value(depth)?));
                }
                "kvlistValue" => {
                    first_time(&mut seen, 1 << 6)?;
                    value.kvlist_value = Some(Box::new(cursor.kvlist_value(depth)?));
                }
                other => cursor.ignore(other)?,
            }
            Ok(())
        })?;
        Ok(value)
    }

    fn array_value(&mut self, depth: usize) -> Read<ArrayValue<'a>> {
        let values = self.values_object(|cursor| cursor.any_value(depth + 1))?;
        Ok(ArrayValue { values })
    }

    fn kvlist_value(&mut self, depth: usize) -> Read<KvList<'a>> {
        let values = self.values_object(|cursor| cursor.key_value(depth + 1))?;
        Ok(KvList { values })
    }

    /// An array or key-value-list value: `{"values":[…]}`, each item read by `item`.
    fn values_object<T>(&mut self, mut item: impl FnMut(&mut Self) -> Read<T>) -> Read<Vec<T>> {
        let mut seen = 0;
        let mut values = Vec::new();
        self.object(|cursor, name| match name {
            "values" => {
                first_time(&mut seen, 1)?;
                cursor.array::<T>(|cursor| {
                    values.push(item(cursor)?);
                    Ok(())
                })
            }
            other => cursor.ignore(other),
        })?;
        Ok(values)
    }
}
