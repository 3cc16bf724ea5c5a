//! Formatting many rows on every core and writing them in their order: `dump` formats one
//! invocation at a time, and each is independent of the others, so a window of rows is cut
//! into one part per core, the parts are formatted at once, and written one after the other.
//! Only a window's output is in memory at a time, never the whole output.

use std::io::{self, Write};

/// Rows formatted per part; a window is one part per core.
const ROWS_PER_PART: usize = 256;

/// Formats every row with `format(index, row, buffer)` and writes the buffers to `out` in row
/// order. `format` appends to the part's buffer; rows of a part share one buffer.
pub fn write_in_order<T, B>(
    out: &mut dyn Write,
    rows: &[T],
    format: impl Fn(usize, &T, &mut B) + Sync,
) -> io::Result<()>
where
    T: Sync,
    B: Default + AsRef<[u8]> + Send,
{
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let window = ROWS_PER_PART * cores;
    let format_part = |first: usize, part: &[T]| {
        let mut buffer = B::default();
        for (offset, row) in part.iter().enumerate() {
            format(first + offset, row, &mut buffer);
        }
        buffer
    };
    for (window_index, window_rows) in rows.chunks(window).enumerate() {
        let window_first = window_index * window;
        let parts: Vec<B> = if cores < 2 || window_rows.len() <= ROWS_PER_PART {
            vec![format_part(window_first, window_rows)]
        } else {
            let part_len = window_rows.len().div_ceil(cores);
            std::thread::scope(|scope| {
                let mut pieces = window_rows.chunks(part_len).enumerate();
                let (_, own) = pieces.next().unwrap_or((0, &[]));
                let others: Vec<_> = pieces
                    .map(|(k, part)| {
                        let format_part = &format_part;
                        scope.spawn(move || format_part(window_first + k * part_len, part))
                    })
                    .collect();
                let mut parts = vec![format_part(window_first, own)];
                for handle in others {
                    match handle.join() {
                        Ok(part) => parts.push(part),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
                parts
            })
        };
        for part in parts {
            out.write_all(part.as_ref())?;
        }
    }
    Ok(())
}

/// Appends `pretty` (serde_json's pretty output of one value) to `out` as it reads `depth`
/// levels down in a pretty document: two spaces more per level after every line break. JSON
/// strings hold no raw line break, so every `\n` is one.
pub fn indent_pretty(pretty: &[u8], depth: usize, out: &mut Vec<u8>) {
    let mut rest = pretty;
    while let Some(at) = memchr::memchr(b'\n', rest) {
        out.extend_from_slice(&rest[..=at]);
        out.resize(out.len() + 2 * depth, b' ');
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
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
    fn an_indented_value_reads_as_the_same_value_nested() {
        let inner = serde_json::json!({"a": [1, {"b": "line\nbreak"}], "c": {}});
        let whole = serde_json::json!({"x": [inner.clone()]});
        let mut nested = b"{\n  \"x\": [\n    ".to_vec();
        let pretty = serde_json::to_vec_pretty(&inner).expect("JSON");
        indent_pretty(&pretty, 2, &mut nested);
        nested.extend_from_slice(b"\n  ]\n}");
        let expected = serde_json::to_vec_pretty(&whole).expect("JSON");
        assert_eq!(String::from_utf8(nested), String::from_utf8(expected));
    }
}
