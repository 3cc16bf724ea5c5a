//! What reading golds, weights and forbidden-tool rules can fail at. Each message is the one
//! `check` and the TUI show.

use std::io;
use std::path::PathBuf;

use crate::gold::metrics::WEIGHT_KEYS;

/// An error of the gold crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An error found inside a named document (a file, a `--forbidden` value).
    #[error("{place}: {error}")]
    In { place: String, error: Box<Error> },
    #[error("{}: {source}", path.display())]
    Unreadable { path: PathBuf, source: io::Error },
    #[error("{}: not JSON: {source}", path.display())]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: {bytes} bytes is larger than the {limit} byte limit for gold files", path.display())]
    TooLarge {
        path: PathBuf,
        bytes: u64,
        limit: u64,
    },

    // A gold document's shape.
    #[error("a gold must be a JSON array of tool calls or an object with a \"calls\" array")]
    NotACallList,
    #[error(
        "a gold must be a list of calls, {{\"calls\": [...]}}, or an object mapping invocation ids to call lists"
    )]
    NotAGold,
    #[error("no entry of the gold map is a usable list of calls")]
    NoUsableEntry,

    // One gold call; `shape` describes the JSON value found.
    #[error("not an object ({shape})")]
    CallNotAnObject { shape: String },
    #[error("\"tool\" is empty")]
    EmptyTool,
    #[error("\"tool\" is not a string ({shape})")]
    ToolNotAString { shape: String },
    #[error("it has \"name\" but no \"tool\" (toolscore reads only \"tool\")")]
    NameWithoutTool,
    #[error("it has no \"tool\"")]
    NoTool,
    #[error("\"args\" of {tool} is not an object ({shape})")]
    ArgsNotAnObject { tool: String, shape: String },

    // An arksim assertion.
    #[error("assertion type {kind:?} is not \"tool_calls\"")]
    NotToolCalls { kind: String },
    #[error("unknown match_mode {mode:?}")]
    UnknownMatchMode { mode: String },
    #[error("assertion has no \"expected\" list")]
    NoExpectedList,

    // `--weight NAME=VALUE`; `spec` is the option's value as given.
    #[error("--weight {spec:?}: expected NAME=VALUE")]
    WeightNotNameValue { spec: String },
    #[error("--weight {spec:?}: unknown weight {name:?} (known: {})", WEIGHT_KEYS.join(", "))]
    UnknownWeight { spec: String, name: String },
    #[error("--weight {spec:?}: {value:?} is not a number")]
    WeightNotANumber { spec: String, value: String },
    #[error("--weight {spec:?}: must be a finite number")]
    WeightNotFinite { spec: String },
    #[error("--weight {spec:?}: must be non-negative")]
    WeightNegative { spec: String },
    #[error("weights sum to zero; at least one must be positive")]
    WeightsSumToZero,

    // Forbidden-tool rules.
    #[error("$regex needs a pattern string, got {operand}")]
    RegexWithoutPattern { operand: serde_json::Value },
    #[error("$regex {pattern:?}: {source}")]
    Regex {
        pattern: String,
        source: regex::Error,
    },
    #[error("$one_of needs a list, got {operand}")]
    OneOfWithoutList { operand: serde_json::Value },
    #[error("forbidden rules must be a JSON list of rule objects")]
    RulesNotAList,
    #[error("forbidden rule {position} needs a non-empty \"tool\"")]
    RuleWithoutTool { position: usize },
    #[error("forbidden rule {position}: \"args\" must be an object")]
    RuleArgsNotAnObject { position: usize },
    #[error("forbidden rule {position}: {error}")]
    InRule { position: usize, error: Box<Error> },
    #[error("--forbidden {value:?}: expected a rule file or TOOL,TOOL,…")]
    NoForbiddenTools { value: String },

    // Why toolscore's adapters refuse a document, in their words.
    #[error("Expected list of calls in custom trace")]
    CustomNotACallList,
    #[error("Trace data must be dict or list")]
    NotDictOrList,
    #[error("Expected list of messages in OpenAI trace")]
    OpenAiNotAMessageList,
    #[error("Expected list of messages in Anthropic trace")]
    AnthropicNotAMessageList,
    #[error("LangChain trace must be a list")]
    LangChainNotAList,
}

impl Error {
    /// This error, as found inside the document named `place`.
    pub(crate) fn in_place(self, place: impl Into<String>) -> Error {
        Error::In {
            place: place.into(),
            error: Box::new(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::gold::source::load_gold_file;

    #[test]
    fn a_missing_gold_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.gold.json");
        let error = load_gold_file(&path).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("{}: ", path.display())),
            "{error}"
        );
    }

    #[test]
    fn a_gold_of_the_wrong_shape_is_named_once_with_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.gold.json");
        std::fs::write(&path, "5").unwrap();
        let error = load_gold_file(&path).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: a gold must be a list of calls, {{\"calls\": [...]}}, or an object mapping \
                 invocation ids to call lists",
                path.display()
            )
        );
    }
}
