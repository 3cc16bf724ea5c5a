//! State of the two query prompts: the list search (`/` in the list) and find-in-trace (`/` in
//! the tree). Both parse with [`crate::query`]; this module holds the line being edited
//! (readline keys), the history, and what a find has matched.

use crate::query::{Query, QueryError};

/// Readline-style editing keys inside a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EditKey {
    Left,
    Right,
    /// Ctrl-A.
    Home,
    /// Ctrl-E.
    End,
    Delete,
    /// Ctrl-U: delete to the start of the line.
    KillToStart,
    /// Ctrl-W: delete the word before the cursor.
    KillWordBack,
    /// Alt-B.
    WordLeft,
    /// Alt-F.
    WordRight,
    /// ↑: older history entry.
    HistoryPrev,
    /// ↓: newer history entry.
    HistoryNext,
}

/// One line of text with a cursor (a byte index on a char boundary).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineEditor {
    text: String,
    cursor: usize,
}

impl LineEditor {
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Cursor position in chars (where the prompt draws its caret).
    pub fn cursor_chars(&self) -> usize {
        self.text[..self.cursor].chars().count()
    }

    pub fn set(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
    }

    pub fn insert(&mut self, c: char) {
        // Control characters never enter a query (a paste may carry them).
        if c.is_control() {
            return;
        }
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Applies an editing key; history keys are handled by [`History`].
    pub fn edit(&mut self, key: EditKey) {
        match key {
            EditKey::Left => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                }
            }
            EditKey::Right => {
                if let Some(c) = self.text[self.cursor..].chars().next() {
                    self.cursor += c.len_utf8();
                }
            }
            EditKey::Home => self.cursor = 0,
            EditKey::End => self.cursor = self.text.len(),
            EditKey::Delete => {
                if self.cursor < self.text.len() {
                    self.text.remove(self.cursor);
                }
            }
            EditKey::KillToStart => {
                self.text.replace_range(..self.cursor, "");
                self.cursor = 0;
            }
            EditKey::KillWordBack => {
                let start = self.word_start_before();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
            }
            EditKey::WordLeft => self.cursor = self.word_start_before(),
            EditKey::WordRight => {
                let rest = &self.text[self.cursor..];
                let skip_space = rest.len() - rest.trim_start().len();
                let word = rest[skip_space..]
                    .find(char::is_whitespace)
                    .unwrap_or(rest.len() - skip_space);
                self.cursor += skip_space + word;
            }
            EditKey::HistoryPrev | EditKey::HistoryNext => {}
        }
    }

    /// Start of the word before the cursor (readline's Ctrl-W / Alt-B: skip spaces, then
    /// non-spaces).
    fn word_start_before(&self) -> usize {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        trimmed.rfind(char::is_whitespace).map_or(0, |i| {
            i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
        })
    }
}

/// Queries accepted with Enter, newest last, without repeats in a row.
#[derive(Debug, Clone, Default)]
pub struct History {
    entries: Vec<String>,
    /// Position while browsing with ↑/↓; `None` when editing a fresh line.
    browsing: Option<usize>,
    /// The line being typed before browsing started, restored by ↓ past the newest entry.
    draft: String,
}

const HISTORY_LIMIT: usize = 100;

impl History {
    pub fn push(&mut self, query: &str) {
        self.browsing = None;
        if query.trim().is_empty() || self.entries.last().is_some_and(|l| l == query) {
            return;
        }
        self.entries.push(query.to_owned());
        if self.entries.len() > HISTORY_LIMIT {
            self.entries.remove(0);
        }
    }

    pub fn reset(&mut self) {
        self.browsing = None;
    }

    /// Moves through the history, replacing the editor's line.
    pub fn browse(&mut self, editor: &mut LineEditor, older: bool) {
        if self.entries.is_empty() {
            return;
        }
        let next = match (self.browsing, older) {
            (None, true) => {
                self.draft = editor.text().to_owned();
                Some(self.entries.len() - 1)
            }
            (None, false) => return,
            (Some(i), true) => Some(i.saturating_sub(1)),
            (Some(i), false) if i + 1 < self.entries.len() => Some(i + 1),
            (Some(_), false) => None,
        };
        self.browsing = next;
        match next {
            Some(i) => editor.set(&self.entries[i]),
            None => {
                let draft = std::mem::take(&mut self.draft);
                editor.set(&draft);
            }
        }
    }
}

/// Parses a prompt's text: an error keeps the previous good query in force, so a half-typed
/// query never empties the screen.
pub fn compile(text: &str) -> Result<Query, QueryError> {
    Query::parse(text)
}

/// The list search.
#[derive(Debug, Clone, Default)]
pub struct ListSearch {
    pub editor: LineEditor,
    pub history: History,
    /// The query the list is filtered by (the last one that parsed).
    pub query: Option<Query>,
    /// The typed text does not parse: shown inline with its position.
    pub error: Option<QueryError>,
    /// The filter in force when the prompt opened, restored by Esc.
    pub before: String,
}

impl ListSearch {
    /// Re-parses the edited line; a bad line keeps the previous query.
    pub fn recompile(&mut self) {
        match compile(self.editor.text()) {
            Ok(q) => {
                self.query = (!q.is_empty()).then_some(q);
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
    }
}

/// Text looked for in the detail pane: plain text, any case, over what the pane shows.
#[derive(Debug, Clone, Default)]
pub struct DetailFind {
    pub editor: LineEditor,
    /// Typing the text.
    pub editing: bool,
    /// A find is in force: its matches are marked and n/N go from one to the next.
    pub active: bool,
}

impl DetailFind {
    /// The text looked for, when there is one.
    pub fn needle(&self) -> Option<&str> {
        Some(self.editor.text()).filter(|t| (self.editing || self.active) && !t.is_empty())
    }
}

/// Find in a trace: the matching spans of one invocation and which one is current.
#[derive(Debug, Clone, Default)]
pub struct Find {
    pub editor: LineEditor,
    pub history: History,
    /// Typing the find query.
    pub editing: bool,
    /// A find is in force (n/N cycle its matches instead of the failure queue).
    pub active: bool,
    pub query: Option<Query>,
    pub error: Option<QueryError>,
    /// Invocation the matches belong to, and the store generation they were computed at.
    pub invocation: String,
    pub computed_at: Option<(u64, String, crate::redact::Reveal)>,
    /// Matched span indices in tree (reading) order.
    pub matches: Vec<usize>,
    /// Index into `matches` of the current one.
    pub current: Option<usize>,
    /// Show only matches and their ancestors.
    pub only_matches: bool,
}

impl Find {
    pub fn history_reset(&mut self) {
        self.history.reset();
    }

    /// The span is one of the matches.
    pub fn is_match(&self, span: usize) -> bool {
        (self.editing || self.active) && self.matches.contains(&span)
    }

    pub fn recompile(&mut self) {
        match compile(self.editor.text()) {
            Ok(q) => {
                self.query = (!q.is_empty()).then_some(q);
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
        self.computed_at = None;
    }

    /// `3 of 17`, or `no match`.
    pub fn position_label(&self) -> String {
        match (self.current, self.matches.len()) {
            (_, 0) => "no match".into(),
            (Some(i), n) => format!("{} of {n}", i + 1),
            (None, n) => format!("{n} matches"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn editor(text: &str, cursor_chars: usize) -> LineEditor {
        let mut e = LineEditor::default();
        e.set(text);
        e.cursor = text
            .char_indices()
            .nth(cursor_chars)
            .map_or(text.len(), |(i, _)| i);
        e
    }

    #[test]
    fn readline_keys_edit_like_readline() {
        // (start text, cursor, key, resulting text, resulting cursor)
        let cases: &[(&str, usize, EditKey, &str, usize)] = &[
            ("tool:a is:error", 15, EditKey::KillToStart, "", 0),
            ("tool:a is:error", 6, EditKey::KillToStart, " is:error", 0),
            ("tool:a is:error", 15, EditKey::KillWordBack, "tool:a ", 7),
            ("tool:a is:error  ", 17, EditKey::KillWordBack, "tool:a ", 7),
            ("tool:a", 6, EditKey::KillWordBack, "", 0),
            ("ab cd", 5, EditKey::Home, "ab cd", 0),
            ("ab cd", 0, EditKey::End, "ab cd", 5),
            ("ab cd ef", 8, EditKey::WordLeft, "ab cd ef", 6),
            ("ab cd ef", 6, EditKey::WordLeft, "ab cd ef", 3),
            ("ab cd ef", 0, EditKey::WordRight, "ab cd ef", 2),
            ("ab cd ef", 2, EditKey::WordRight, "ab cd ef", 5),
            ("é", 1, EditKey::Left, "é", 0),
            ("é", 0, EditKey::Right, "é", 1),
            ("éa", 0, EditKey::Delete, "a", 0),
            ("a éb", 4, EditKey::KillWordBack, "a ", 2),
        ];
        for &(text, cursor, key, want_text, want_cursor) in cases {
            let mut e = editor(text, cursor);
            e.edit(key);
            assert_eq!(
                (e.text(), e.cursor_chars()),
                (want_text, want_cursor),
                "{text:?} at {cursor} + {key:?}"
            );
        }
    }

    #[test]
    fn insert_and_backspace_work_at_the_cursor() {
        let mut e = editor("ac", 1);
        e.insert('b');
        assert_eq!((e.text(), e.cursor_chars()), ("abc", 2));
        e.insert('\u{1b}');
        assert_eq!(e.text(), "abc");
        e.backspace();
        e.backspace();
        assert_eq!((e.text(), e.cursor_chars()), ("c", 0));
        e.backspace();
        assert_eq!(e.text(), "c");
    }

    #[test]
    fn history_browses_older_and_back_to_the_draft() {
        let mut h = History::default();
        let mut e = LineEditor::default();
        h.push("is:error");
        h.push("is:error");
        h.push("tool:search");
        e.set("dra");
        h.browse(&mut e, true);
        assert_eq!(e.text(), "tool:search");
        h.browse(&mut e, true);
        assert_eq!(e.text(), "is:error");
        h.browse(&mut e, true);
        assert_eq!(e.text(), "is:error", "stays at the oldest");
        h.browse(&mut e, false);
        assert_eq!(e.text(), "tool:search");
        h.browse(&mut e, false);
        assert_eq!(e.text(), "dra", "past the newest: the draft");
    }

    #[test]
    fn a_bad_line_keeps_the_previous_query() {
        let mut s = ListSearch::default();
        s.editor.set("tool:x");
        s.recompile();
        assert!(s.query.is_some() && s.error.is_none());
        s.editor.set("tool:x (");
        s.recompile();
        assert_eq!(s.query.as_ref().map(Query::text), Some("tool:x"));
        assert_eq!(s.error.as_ref().map(|e| e.position), Some(8));
    }
}
