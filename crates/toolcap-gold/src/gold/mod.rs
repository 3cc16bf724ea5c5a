//! Gold versus actual: where a gold trajectory comes from ([`source`]), how one argument is
//! compared ([`compare`]), how calls are lined up ([`align`]), toolscore's metrics
//! ([`metrics`]) and arksim's verdict ([`arksim`]), the report ([`report`]) and the `check`
//! command ([`check`]).
//!
//! The engine works on plain call lists ([`ActualCall`], [`GoldCall`]) so it does not depend on
//! which trace format the calls came from.

pub mod align;
pub mod arguments;
pub mod arksim;
pub mod check;
pub mod compare;
pub mod conversation;
pub mod fingerprint;
pub mod metrics;
pub mod policy;
pub mod report;
mod report_json;
pub use report_json::shown_document;
pub mod source;
pub mod toolscore_reading;

pub use crate::model::{GoldCall, GoldSpec};

pub type Args = serde_json::Map<String, serde_json::Value>;

/// One call of the actual trajectory, as the metrics see it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ActualCall {
    pub name: String,
    /// `None` when the trace did not capture the arguments (scored as `{}`, like toolscore).
    pub args: Option<Args>,
    pub failed: bool,
    pub error: Option<String>,
    /// The error text is the failed tool's result (a payload): redacted views show only its size.
    pub error_is_result: bool,
    /// Seconds, as toolscore reports durations.
    pub duration_s: Option<f64>,
    pub cost: Option<f64>,
    pub call_id: Option<String>,
    /// Index into `Invocation::spans`, when the call came from a loaded trace.
    pub span: Option<usize>,
}

impl ActualCall {
    pub fn new(name: impl Into<String>, args: Args) -> Self {
        ActualCall {
            name: name.into(),
            args: Some(args),
            ..ActualCall::default()
        }
    }
}

/// The empty argument map that stands in for uncaptured arguments.
pub(crate) fn empty_args() -> &'static Args {
    static EMPTY: std::sync::OnceLock<Args> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Args::new)
}

impl ActualCall {
    /// The error as a report shows it under `mode`: masked like any free text, and hidden
    /// while redacted when it is the tool's result.
    pub fn shown_error(&self, mode: crate::redact::Reveal) -> Option<String> {
        let error = crate::model::ErrorInfo {
            message: self.error.as_deref().map(Into::into),
            message_is_result: self.error_is_result,
            ..Default::default()
        };
        crate::redact::error_message(&error, mode)
    }

    /// Arguments as scored: uncaptured counts as `{}` (toolscore's rule for the trace side).
    pub fn scored_args(&self) -> &Args {
        self.args.as_ref().unwrap_or_else(|| empty_args())
    }
}

#[cfg(test)]
mod shown_error_tests {
    use super::ActualCall;
    use crate::redact::Reveal;

    #[test]
    fn report_errors_are_masked_and_tool_results_hidden_while_redacted() {
        let mut call = ActualCall {
            name: "lookup".into(),
            failed: true,
            error: Some("no account for jane.doe@example.com (pw=hunter2-secret)".into()),
            ..ActualCall::default()
        };
        let redacted = call.shown_error(Reveal::Redacted).unwrap();
        assert!(!redacted.contains("jane.doe@example.com"), "{redacted}");
        assert!(!redacted.contains("hunter2-secret"), "{redacted}");
        let revealed = call.shown_error(Reveal::Revealed).unwrap();
        assert!(revealed.contains("jane.doe@example.com"), "{revealed}");
        assert!(!revealed.contains("hunter2-secret"), "{revealed}");

        call.error_is_result = true;
        let hidden = call.shown_error(Reveal::Redacted).unwrap();
        assert!(hidden.contains("tool result hidden"), "{hidden}");
        assert!(!hidden.contains("no account"), "{hidden}");
    }
}
