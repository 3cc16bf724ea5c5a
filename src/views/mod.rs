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

/// Errors and warnings met while loading a store: runs lost or guessed that no count of runs
/// holds, said beside those counts (`report`, `compare`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ProblemCounts {
    pub errors: usize,
    pub warnings: usize,
}

impl ProblemCounts {
    pub fn of(store: &crate::store::Store) -> Self {
        let problems = store.problems();
        let errors = problems
            .iter()
            .filter(|p| p.severity == crate::model::Severity::Error)
            .count();
        let warnings = problems.iter().filter(|p| p.is_counted()).count() - errors;
        ProblemCounts { errors, warnings }
    }

    /// `2 errors, 1 warning`, or `none`.
    pub fn words(&self) -> String {
        if *self == ProblemCounts::default() {
            return "none".to_owned();
        }
        let plural = |n: usize, word: &str| match n {
            1 => format!("1 {word}"),
            n => format!("{n} {word}s"),
        };
        format!(
            "{}, {}",
            plural(self.errors, "error"),
            plural(self.warnings, "warning")
        )
    }
}
