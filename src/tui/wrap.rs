//! Wrapping styled lines to a width (by display cells), keeping each piece's style.

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Splits `line` into lines at most `width` cells wide. Continuation lines start at column 0
/// with no marker, so a copied payload stays intact.
pub fn wrap_line(line: Line<'static>, width: u16) -> Vec<Line<'static>> {
    let width = width.max(4) as usize;
    if line.width() <= width {
        return vec![line];
    }
    let mut out = Vec::new();
    let mut current: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in line.spans {
        let style = span.style;
        let mut piece = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width {
                if !piece.is_empty() {
                    current.push(Span::styled(std::mem::take(&mut piece), style));
                }
                out.push(Line::from(std::mem::take(&mut current)).style(line.style));
                used = 0;
            }
            piece.push(c);
            used += w;
        }
        if !piece.is_empty() {
            current.push(Span::styled(piece, style));
        }
    }
    if !current.is_empty() {
        out.push(Line::from(current).style(line.style));
    }
    out
}

/// Like [`wrap_line`], breaking after a space, a comma, or an opening parenthesis a name follows,
/// where one is within the width, so words and `name(key=value, …)` arguments stay whole (a
/// shape's `str(7)` too); a piece with no such place is cut at the width.
pub fn wrap_line_at_words(line: Line<'static>, width: u16) -> Vec<Line<'static>> {
    let width = width.max(4) as usize;
    if line.width() <= width {
        return vec![line];
    }
    let cells: Vec<(char, usize, usize)> = line
        .spans
        .iter()
        .enumerate()
        .flat_map(|(n, span)| {
            span.content
                .chars()
                .map(move |c| (c, n, c.width().unwrap_or(0)))
        })
        .collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < cells.len() {
        let mut end = start;
        let mut used = 0;
        while end < cells.len() && used + cells[end].2 <= width {
            used += cells[end].2;
            end += 1;
        }
        // At least one character per line, whatever its width.
        let end = end.max(start + 1);
        let cut = if end == cells.len() {
            end
        } else {
            (start + 1..=end)
                .rev()
                .find(|&at| match cells[at - 1].0 {
                    ' ' | ',' => true,
                    '(' => cells[at].0.is_alphabetic(),
                    _ => false,
                })
                .unwrap_or(end)
        };
        let mut spans: Vec<Span<'static>> = Vec::new();
        let mut piece = String::new();
        let mut piece_span = cells[start].1;
        for &(c, span, _) in &cells[start..cut] {
            if span != piece_span && !piece.is_empty() {
                spans.push(Span::styled(
                    std::mem::take(&mut piece),
                    line.spans[piece_span].style,
                ));
            }
            piece_span = span;
            piece.push(c);
        }
        if !piece.is_empty() {
            spans.push(Span::styled(piece, line.spans[piece_span].style));
        }
        out.push(Line::from(spans).style(line.style));
        // The space a line breaks at (after a comma) starts no line.
        start = match cells.get(cut) {
            Some((' ', _, _)) => cut + 1,
            _ => cut,
        };
    }
    out
}

/// Every line wrapped at words ([`wrap_line_at_words`]): the detail pane's text.
pub fn wrap_all(lines: Vec<Line<'static>>, width: u16) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .flat_map(|l| wrap_line_at_words(l, width))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_by_cells_and_keeps_text() {
        let line = Line::from(vec![Span::raw("abcdef"), Span::raw("ghij")]);
        let lines = wrap_line(line, 4);
        let texts: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(texts, ["abcd", "efgh", "ij"]);
        let wide = wrap_line(Line::raw("日本語です"), 4);
        assert_eq!(wide.len(), 3);
    }

    #[test]
    fn word_wrapping_breaks_after_spaces_commas_and_parentheses_and_keeps_styles() {
        let bold = ratatui::style::Style::new().bold();
        let line = Line::from(vec![
            Span::raw("lookup(id=str(6)·a41f, "),
            Span::styled("note=int·9c0e)", bold),
        ]);
        let lines = wrap_line_at_words(line, 16);
        let texts: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(texts, ["lookup(", "id=str(6)·a41f, ", "note=int·9c0e)"]);
        assert_eq!(lines[2].spans[0].style, bold);
        // A piece with no place to break is cut at the width.
        let cut = wrap_line_at_words(Line::raw("abcdefghij"), 4);
        let texts: Vec<String> = cut.iter().map(|l| l.to_string()).collect();
        assert_eq!(texts, ["abcd", "efgh", "ij"]);
    }
}
