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

pub fn wrap_all(lines: Vec<Line<'static>>, width: u16) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .flat_map(|l| wrap_line(l, width))
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
}
