//! What went wrong in a span and the events it logged. Most spans have neither, so both live
//! in one block out of line ([`ErrorAndEvents`], held sparsely): a span pays one word for them,
//! where an error box and an event list took a word each.

use super::{ArcStr, Attributes, Span, SparseEmpty};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpanEvent {
    pub time_unix_nano: u64,
    /// Shared, as span names and attribute keys are: `exception` and its keys repeat.
    pub name: ArcStr,
    pub attributes: Attributes,
}

/// Shared texts: the type repeats from error to error, and the message is most often the
/// exception event's own attribute value, held once for both.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorInfo {
    pub error_type: Option<ArcStr>,
    pub message: Option<ArcStr>,
    /// The message is the failed tool's result text (MCP `isError`, `is_error` blocks): a
    /// payload, so views show it only when revealed.
    pub message_is_result: bool,
}

/// A span's [`Span::error`] and [`Span::events`], held together out of line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ErrorAndEvents {
    pub error: Option<ErrorInfo>,
    pub events: thin_vec::ThinVec<SpanEvent>,
}

impl SparseEmpty for ErrorAndEvents {
    const EMPTY: &'static Self = &ErrorAndEvents {
        error: None,
        events: thin_vec::ThinVec::new(),
    };
}

impl Span {
    /// What went wrong, when something did.
    pub fn error(&self) -> Option<&ErrorInfo> {
        self.error_and_events.error.as_ref()
    }
    /// Sets or clears the error; clearing it on a span without events allocates nothing.
    pub fn set_error(&mut self, error: Option<ErrorInfo>) {
        if error.is_some() || !self.error_and_events.is_unset() {
            self.error_and_events.error = error;
        }
    }
    /// The events it logged (an exception, a progress notification), in order.
    pub fn events(&self) -> &[SpanEvent] {
        &self.error_and_events.events
    }
    /// Replaces the events; no events on a span without an error allocate nothing.
    pub fn set_events(&mut self, events: thin_vec::ThinVec<SpanEvent>) {
        if !events.is_empty() || !self.error_and_events.is_unset() {
            self.error_and_events.events = events;
        }
    }
    /// Adds an event at the end.
    pub fn push_event(&mut self, event: SpanEvent) {
        self.error_and_events.events.push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str) -> SpanEvent {
        SpanEvent {
            name: name.into(),
            ..SpanEvent::default()
        }
    }

    #[test]
    fn a_span_without_error_or_events_holds_no_block_even_once_cleared() {
        let mut span = Span::default();
        span.set_error(None);
        span.set_events(thin_vec::ThinVec::new());
        assert!(span.error_and_events.is_unset());
        assert_eq!(span.error(), None);
        assert!(span.events().is_empty());
    }

    #[test]
    fn error_and_events_read_back_as_set_and_share_one_block() {
        let mut span = Span::default();
        let error = ErrorInfo {
            error_type: Some("Timeout".into()),
            message: Some("gave up".into()),
            message_is_result: false,
        };
        span.set_error(Some(error.clone()));
        span.push_event(event("exception"));
        span.push_event(event("retry"));
        assert_eq!(span.error(), Some(&error));
        let names: Vec<&str> = span.events().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["exception", "retry"]);
        span.set_error(None);
        assert_eq!(span.error(), None);
        assert_eq!(
            span.events().len(),
            2,
            "clearing the error keeps the events"
        );
        span.set_events(thin_vec::ThinVec::new());
        assert!(span.events().is_empty());
        assert_eq!(span, Span::default(), "an emptied block reads as none");
    }
}
