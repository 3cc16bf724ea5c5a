//! Formatting many rows on every core and writing them in their order: `dump` formats one
//! invocation at a time, and each is independent of the others, so the rows are cut into
//! parts, every core formats part after part, and the calling thread only writes them, in
//! order. Writing into a pipe blocks whenever its reader lags; the formatting threads meanwhile
//! work ahead, by at most two parts each. So a few parts' output is in memory at a time, never
//! the whole output, and written parts' buffers are reused (a fresh multi-MB buffer per part
//! meant fresh pages from the kernel each time).

use std::io::{self, Write};
use std::sync::{Mutex, PoisonError};

/// Parts each formatting thread may be ahead of the writer.
const PARTS_AHEAD_PER_THREAD: usize = 2;

/// A part's output, emptied and reused from part to part.
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
/// order, `rows_per_part` rows to a part. `format` appends to the part's buffer; rows of a part
/// share one buffer.
pub fn write_in_order<T, B>(
    out: &mut dyn Write,
    rows: &[T],
    rows_per_part: usize,
    format: impl Fn(usize, &T, &mut B) + Sync,
) -> io::Result<()>
where
    T: Sync,
    B: PartBuffer,
{
    let rows_per_part = rows_per_part.max(1);
    let format_part = |first: usize, part: &[T], mut buffer: B| {
        for (offset, row) in part.iter().enumerate() {
            format(first + offset, row, &mut buffer);
        }
        buffer
    };
    if rows.len() <= rows_per_part {
        return out.write_all(format_part(0, rows, B::default()).as_ref());
    }
    // Written parts' buffers, emptied, for the next parts to fill.
    let spare: Mutex<Vec<B>> = Mutex::new(Vec::new());
    let take_spare = || {
        let mut spare = spare.lock().unwrap_or_else(PoisonError::into_inner);
        spare.pop().unwrap_or_default()
    };
    crate::machine::map_in_order(
        rows.chunks(rows_per_part).enumerate(),
        crate::machine::cores() * PARTS_AHEAD_PER_THREAD,
        |(k, part)| format_part(k * rows_per_part, part, take_spare()),
        |mut buffer| {
            out.write_all(buffer.as_ref())?;
            buffer.clear();
            spare
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(buffer);
            Ok(())
        },
    )
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
        // The line break and the indent in one write: a write per level would add a call per
        // level to every line.
        const LINE: &[u8; 66] =
            b",\n                                                                ";
        let indent = 2 * self.level;
        let start = usize::from(!comma);
        match LINE.get(start..2 + indent) {
            Some(line) => writer.write_all(line),
            None => {
                writer.write_all(&LINE[start..2])?;
                (0..self.level).try_for_each(|_| writer.write_all(b"  "))
            }
        }
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
    use std::sync::atomic::{AtomicUsize, Ordering};

    const ROWS_PER_PART: usize = 8;

    #[test]
    fn rows_come_out_in_order_whatever_the_window() {
        let rows_per_part = ROWS_PER_PART;
        for count in [
            0,
            1,
            rows_per_part,
            rows_per_part + 1,
            5 * rows_per_part + 7,
        ] {
            let rows: Vec<usize> = (0..count).collect();
            let mut out = Vec::new();
            write_in_order(
                &mut out,
                &rows,
                rows_per_part,
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

    /// Takes `room` bytes, then fails as a closed pipe does.
    struct ClosingPipe {
        room: usize,
    }

    impl Write for ClosingPipe {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            let taken = bytes.len().min(self.room);
            self.room -= taken;
            Ok(taken)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_write_that_fails_ends_the_formatting_and_is_returned() {
        let rows_per_part = ROWS_PER_PART;
        let cores = crate::machine::cores();
        let most_ahead = (cores.max(2) * PARTS_AHEAD_PER_THREAD + 2) * rows_per_part;
        let rows: Vec<usize> = (0..most_ahead + 20 * rows_per_part).collect();
        let formatted = AtomicUsize::new(0);
        let result = write_in_order(
            // Less than the first part's output (two bytes a row at least).
            &mut ClosingPipe {
                room: rows_per_part,
            },
            &rows,
            rows_per_part,
            |_, row: &usize, buffer: &mut String| {
                formatted.fetch_add(1, Ordering::Relaxed);
                buffer.push_str(&format!("{row}\n"));
            },
        );
        assert_eq!(result.map_err(|e| e.kind()), Err(io::ErrorKind::BrokenPipe));
        // The formatting threads work at most a few parts ahead of the failed write.
        let ahead = formatted.load(Ordering::Relaxed);
        assert!(ahead <= most_ahead, "{ahead} rows formatted");
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

    /// Indents past the longest one written in one piece (32 levels) read as serde writes them.
    #[test]
    fn deep_values_are_indented_as_serde_indents_them() {
        let mut deep = serde_json::json!([1, 2]);
        for level in 0..40 {
            deep = serde_json::json!({ "level": level, "inner": [deep, {}] });
        }
        let mut written = Vec::new();
        write_pretty_at(&deep, 0, &mut written).expect("JSON");
        let expected = serde_json::to_vec_pretty(&deep).expect("JSON");
        assert_eq!(String::from_utf8(written), String::from_utf8(expected));
    }
}
