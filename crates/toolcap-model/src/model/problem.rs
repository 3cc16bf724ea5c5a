//! Problems with an input, reported with their place and severity; the good data around them
//! still loads.

use std::fmt;

/// How bad a problem is. `Error`: a source that looks like a trace (or was given as one) failed
/// to load. `Warning`: data was loaded but something was lost or guessed. `Note`: a source was
/// skipped because it is not a trace (a log, a config, a README, a FIFO); nothing was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }

    /// Errors and warnings are counted (status bar, problem totals); notes are only listed.
    pub fn is_counted(self) -> bool {
        !matches!(self, Severity::Note)
    }
}

/// Something wrong with an input, reported with its place; the good data around it still loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub source: String,
    pub line: Option<u64>,
    pub message: String,
    pub severity: Severity,
}

impl Problem {
    pub fn error(source: impl fmt::Display, line: Option<u64>, message: impl Into<String>) -> Self {
        Problem {
            source: source.to_string(),
            line,
            message: message.into(),
            severity: Severity::Error,
        }
    }
    pub fn warning(
        source: impl fmt::Display,
        line: Option<u64>,
        message: impl Into<String>,
    ) -> Self {
        Problem {
            source: source.to_string(),
            line,
            message: message.into(),
            severity: Severity::Warning,
        }
    }
    /// A source skipped on purpose (not a trace); listed, never counted as a problem.
    pub fn note(source: impl fmt::Display, line: Option<u64>, message: impl Into<String>) -> Self {
        Problem {
            source: source.to_string(),
            line,
            message: message.into(),
            severity: Severity::Note,
        }
    }
    pub fn is_counted(&self) -> bool {
        self.severity.is_counted()
    }
    /// A note the file at `path` gave (what it holds as a whole, or that it was skipped): what a
    /// batch that renews the file's notes takes away.
    pub fn is_note_of(&self, path: &std::path::Path) -> bool {
        self.severity == Severity::Note && self.source == path.display().to_string()
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = self.severity.as_str();
        match self.line {
            Some(line) => write!(f, "{level}: {}:{line}: {}", self.source, self.message),
            None => write!(f, "{level}: {}: {}", self.source, self.message),
        }
    }
}
