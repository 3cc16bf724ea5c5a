//! Formatting many rows on every core and writing them in their order: `dump` formats one
//! invocation at a time, and each is independent of the others, so a window of rows is cut
//! into one part per core, the parts are formatted at once, and written one after the other.
//! Only a window's output is in memory at a time, never the whole output.

use std::io::{self, Write};

/// Rows formatted per part; a window is one part per core.
const ROWS_PER_PART: usize = 256;

/// A part's output. Buffers are emptied and reused from window to window: a fresh multi-MB
/// buffer per part and window meant fresh pages from the kernel each time.
pub trait PartBuffer: Default + AsRef<[u8]> + Send {
    fn clear(&mut self);
}

impl PartBuffer for String {
    fn clear(&mut self) {
        String::clear(self);
    }
}

impl PartBuffer for Vec<u8> {
    fn clear(&mut self) {
        Vec::clear(self);
    }
}

/// Formats every row with `format(index, row, buffer)` and writes the buffers to `out` in row
/// order. `format` appends to the part's buffer; rows of a part share one buffer.
pub fn write_in_order<T, B>(
    out: &mut dyn Write,
    rows: &[T],
    format: impl Fn(usize, &T, &mut B) + Sync,
) -> io::Result<()>
where
    T: Sync,
    B: PartBuffer,
{
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let window = ROWS_PER_PART * cores;
    let format_part = |first: usize, part: &[T], mut buffer: B| {
        for (offset, row) in part.iter().enumerate() {
            format(first + offset, row, &mut buffer);
        }
        buffer
    };
    let mut spare: Vec<B> = Vec::new();
    for (window_index, window_rows) in rows.chunks(window).enumerate() {
        let window_first = window_index * window;
        let mut take = || spare.pop().unwrap_or_default();
        let parts: Vec<B> = if cores < 2 || window_rows.len() <= ROWS_PER_PART {
            vec![format_part(window_first, window_rows, take())]
        } else {
            let part_len = window_rows.len().div_ceil(cores);
            std::thread::scope(|scope| {
                let mut pieces = window_rows.chunks(part_len).enumerate();
                let (_, own) = pieces.next().unwrap_or((0, &[]));
                let own_buffer = take();
                let others: Vec<_> = pieces
                    .map(|(k, part)| {
                        let format_part = &format_part;
                        let buffer = take();
                        scope.spawn(move || format_part(window_first + k * part_len, part, buffer))
                    })
                    .collect();
                let mut parts = vec![format_part(window_first, own, own_buffer)];
                for handle in others {
                    match handle.join() {
                        Ok(part) => parts.push(part),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
                parts
            })
        };
        for mut part in parts {
            out.write_all(part.as_ref())?;
            part.clear();
            spare.push(part);
        }
    }
    Ok(())
}

/// serde_json's pretty layout (two spaces per level) for a value that sits `depth` levels down
/// in a pretty document: what `to_vec_pretty` would write there, written straight into the
/// document's buffer instead of printed apart and re-indented.
pub struct NestedPretty {
    level: usize,
    has_value: bool,
}

impl NestedPretty {
    pub fn at_depth(depth: usize) -> Self {
        NestedPretty {
            level: depth,
            has_value: false,
        }
    }

    fn new_line<W: ?Sized + Write>(&self, writer: &mut W, comma: bool) -> io::Result<()> {
        writer.write_all(if comma { b",\n" } else { b"\n" })?;
        for _ in 0..self.level {
            writer.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl NestedPretty {
    fn open<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.new_line(writer, false)?;
        }
        writer.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for NestedPretty {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"[")
    }
    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"]")
    }
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.new_line(writer, !first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"{")
    }
    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"}")
    }
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.new_line(writer, !first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Appends `value` to `out` as serde's pretty printer writes it `depth` levels down.
pub fn write_pretty_at(
    value: &impl serde::Serialize,
    depth: usize,
    out: &mut Vec<u8>,
) -> serde_json::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(out, NestedPretty::at_depth(depth));
    value.serialize(&mut serializer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_out_in_order_whatever_the_window() {
        for count in [
            0,
            1,
            ROWS_PER_PART,
            ROWS_PER_PART + 1,
            5 * ROWS_PER_PART + 7,
        ] {
            let rows: Vec<usize> = (0..count).collect();
            let mut out = Vec::new();
            write_in_order(
                &mut out,
                &rows,
                |index, row: &usize, buffer: &mut String| {
                    assert_eq!(index, *row, "the index given is the row's own");
                    buffer.push_str(&format!("{row}\n"));
                },
            )
            .expect("writing to memory");
            let expected: String = rows.iter().map(|r| format!("{r}\n")).collect();
            assert_eq!(
                String::from_utf8(out).expect("UTF-8"),
                expected,
                "{count} rows"
            );
        }
    }

    #[test]
    fn a_value_written_nested_reads_as_serde_pretty_prints_it_nested() {
        let inner = serde_json::json!({"a": [1, {"b": "line\nbreak"}, []], "c": {}, "d": [[]]});
        let whole = serde_json::json!({"x": [inner.clone()]});
        let mut nested = b"{\n  \"x\": [\n    ".to_vec();
        write_pretty_at(&inner, 2, &mut nested).expect("JSON");
        nested.extend_from_slice(b"\n  ]\n}");
        let expected = serde_json::to_vec_pretty(&whole).expect("JSON");
        assert_eq!(String::from_utf8(nested), String::from_utf8(expected));
    }
}
