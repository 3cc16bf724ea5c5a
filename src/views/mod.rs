//! Views: everything that presents the store headless: `dump`'s text and JSON, the triage
//! report. The TUI lives in `tui`.

pub mod compare;
pub mod dump;
mod dump_json;
mod in_order;
pub mod out_file;
pub mod report;
pub mod summary;

#[cfg(test)]
mod dump_stream_tests;

/// Errors, warnings and notes met while loading a store: the errors and warnings stand for
/// runs lost or guessed that no count of runs holds, and are said beside those counts (the
/// status bar, `report`, `compare`); notes are listed, never counted as problems.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ProblemCounts {
    pub errors: usize,
    pub warnings: usize,
    #[serde(skip)]
    pub notes: usize,
}

impl ProblemCounts {
    pub fn of(problems: &[crate::model::Problem]) -> Self {
        let mut counts = ProblemCounts::default();
        for problem in problems {
            match problem.severity {
                crate::model::Severity::Error => counts.errors += 1,
                crate::model::Severity::Warning => counts.warnings += 1,
                crate::model::Severity::Note => counts.notes += 1,
            }
        }
        counts
    }

    /// No error and no warning (notes aside).
    pub fn is_clean(&self) -> bool {
        self.errors == 0 && self.warnings == 0
    }

    /// `2 errors, 0 warnings`, or `none`.
    pub fn words(&self) -> String {
        if self.is_clean() {
            return "none".to_owned();
        }
        format!(
            "{}, {}",
            plural(self.errors, "error"),
            plural(self.warnings, "warning")
        )
    }

    /// `2 errors, 1 warning` without the kinds there are none of; `None` when clean.
    pub fn counted(&self) -> Option<String> {
        let parts: Vec<String> = [(self.errors, "error"), (self.warnings, "warning")]
            .into_iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, word)| plural(n, word))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// `3 notes`; `None` without notes.
    pub fn notes_counted(&self) -> Option<String> {
        (self.notes > 0).then(|| plural(self.notes, "note"))
    }
}

/// `1 error`, `2 errors`.
fn plural(n: usize, word: &str) -> String {
    match n {
        1 => format!("1 {word}"),
        n => format!("{n} {word}s"),
    }
}
