//! Marks the characters a query matched in text that is already on its way to the screen
//! (sanitized, redacted or masked), so a highlight can never show more than the view does.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::query::Query;

/// `text` split into spans, the chars at `marks` (ascending char indices) in `mark` style.
pub fn marked_spans(text: &str, marks: &[usize], base: Style, mark: Style) -> Vec<Span<'static>> {
    if marks.is_empty() {
        return vec![Span::styled(text.to_owned(), base)];
    }
    let mut out = Vec::new();
    let mut run = String::new();
    let mut run_marked = false;
    let mut next = marks.iter().peekable();
    for (i, c) in text.chars().enumerate() {
        let is_marked = next.peek().is_some_and(|&&m| m == i);
        if is_marked {
            next.next();
        }
        if is_marked != run_marked && !run.is_empty() {
            let style = if run_marked { base.patch(mark) } else { base };
            out.push(Span::styled(std::mem::take(&mut run), style));
        }
        run_marked = is_marked;
        run.push(c);
    }
    if !run.is_empty() {
        out.push(Span::styled(
            run,
            if run_marked { base.patch(mark) } else { base },
        ));
    }
    out
}

/// The same line with what `query` matches in its text marked.
pub fn highlight_line(line: &Line<'_>, query: &Query, mark: Style) -> Line<'static> {
    mark_line(line, &query.highlight(&line_text(line)), mark)
}

/// A line's text, its spans joined.
pub fn line_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// The same line with each place it holds `needle` (any case) marked.
pub fn mark_text(line: &Line<'_>, needle: &str, mark: Style) -> Line<'static> {
    mark_line(line, &text_marks(&line_text(line), needle), mark)
}

/// The chars of `line`'s text that are `needle`, whatever their case, as ascending char indices.
pub fn text_marks(text: &str, needle: &str) -> Vec<usize> {
    let needle: Vec<char> = needle.chars().flat_map(char::to_lowercase).collect();
    let chars: Vec<char> = text.chars().collect();
    let lower: Vec<char> = chars
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    if needle.is_empty() || needle.len() > lower.len() {
        return Vec::new();
    }
    let mut marks = Vec::new();
    let mut at = 0;
    while at + needle.len() <= lower.len() {
        if lower[at..at + needle.len()] == needle[..] {
            marks.extend(at..at + needle.len());
            at += needle.len();
        } else {
            at += 1;
        }
    }
    marks
}

/// The same line with the chars at `marks` (ascending char indices of its text) marked.
pub fn mark_line(line: &Line<'_>, marks: &[usize], mark: Style) -> Line<'static> {
    let mut out = Vec::new();
    let mut offset = 0;
    for span in &line.spans {
        let len = span.content.chars().count();
        let local: Vec<usize> = marks
            .iter()
            .filter(|&&m| m >= offset && m < offset + len)
            .map(|&m| m - offset)
            .collect();
        out.extend(marked_spans(&span.content, &local, span.style, mark));
        offset += len;
    }
    Line::from(out).style(line.style)
}
