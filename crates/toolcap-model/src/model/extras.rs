//! What most spans lack: what went wrong, the events it logged, the ids that tie it to a run or
//! a graph node, and an input or output that is not one of its attributes. They live in one
//! block out of line ([`SpanExtras`], held sparsely): every span pays one word for them rather
//! than one per fact, and only a span that has one of them pays the block.

use super::{ArcStr, Attributes, Identity, PayloadSlot, Span, SparseEmpty};

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

/// A span's [`Span::error`], [`Span::events`], [`Span::identity`] and the payloads a parser set
/// apart from its attributes ([`Span::input_slot`], [`Span::output_slot`]), held together out
/// of line. The identity is inline: a span that has one (a run's root, every OpenArmature span)
/// then needs one block, not two.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpanExtras {
    pub error: Option<ErrorInfo>,
    pub events: thin_vec::ThinVec<SpanEvent>,
    pub identity: Identity,
    pub input: PayloadSlot,
    pub output: PayloadSlot,
}

impl SparseEmpty for SpanExtras {
    const EMPTY: &'static Self = &SpanExtras {
        error: None,
        events: thin_vec::ThinVec::new(),
        identity: Identity {
            invocation_id: None,
            correlation_id: None,
            node: super::Sparse::UNSET,
        },
        input: PayloadSlot::UNSET,
        output: PayloadSlot::UNSET,
    };
}

impl Span {
    /// What went wrong, when something did.
    pub fn error(&self) -> Option<&ErrorInfo> {
        self.extras.error.as_ref()
    }
    /// Sets or clears the error; clearing it on a span without extras allocates nothing.
    pub fn set_error(&mut self, error: Option<ErrorInfo>) {
        if error.is_some() || !self.extras.is_unset() {
            self.extras.error = error;
        }
    }
    /// The events it logged (an exception, a progress notification), in order.
    pub fn events(&self) -> &[SpanEvent] {
        &self.extras.events
    }
    /// Replaces the events; no events on a span without extras allocate nothing.
    pub fn set_events(&mut self, events: thin_vec::ThinVec<SpanEvent>) {
        if !events.is_empty() || !self.extras.is_unset() {
            self.extras.events = events;
        }
    }
    /// Adds an event at the end.
    pub fn push_event(&mut self, event: SpanEvent) {
        self.extras.events.push(event);
    }

    /// The ids that tie it to a run, a conversation and a graph node.
    pub fn identity(&self) -> &Identity {
        &self.extras.identity
    }
    /// The identity to change (the extras block is allocated on the first call).
    pub fn identity_mut(&mut self) -> &mut Identity {
        &mut self.extras.identity
    }
    /// Replaces the identity; an empty one on a span without extras allocates nothing.
    pub fn set_identity(&mut self, identity: Identity) {
        if identity != *<Identity as SparseEmpty>::EMPTY || !self.extras.is_unset() {
            self.extras.identity = identity;
        }
    }

    /// The input as a parser set it. A packed span may keep it in its attributes instead:
    /// read [`Span::input`] once the span is done.
    pub fn input_slot(&self) -> &PayloadSlot {
        &self.extras.input
    }
    /// The output as a parser set it (see [`Span::input_slot`]).
    pub fn output_slot(&self) -> &PayloadSlot {
        &self.extras.output
    }
    /// The input slot to change (the extras block is allocated on the first call).
    pub fn input_slot_mut(&mut self) -> &mut PayloadSlot {
        &mut self.extras.input
    }
    /// The output slot to change (the extras block is allocated on the first call).
    pub fn output_slot_mut(&mut self) -> &mut PayloadSlot {
        &mut self.extras.output
    }
    /// Sets the input; an unset one on a span without extras allocates nothing.
    pub fn set_input(&mut self, input: PayloadSlot) {
        if !input.is_unset() || !self.extras.is_unset() {
            self.extras.input = input;
        }
    }
    /// Sets the output; an unset one on a span without extras allocates nothing.
    pub fn set_output(&mut self, output: PayloadSlot) {
        if !output.is_unset() || !self.extras.is_unset() {
            self.extras.output = output;
        }
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
        span.set_identity(Identity::default());
        span.set_input(PayloadSlot::UNSET);
        span.set_output(PayloadSlot::UNSET);
        assert!(span.extras.is_unset());
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

    #[test]
    fn a_payload_that_moves_into_the_attributes_takes_the_extras_block_with_it() {
        use crate::model::{AttrValue, Payload, PayloadBody, PayloadRange, PayloadState};
        use std::sync::Arc;
        // What a parser sets for an argument left in its file: the attribute and the input
        // share one payload, and packing writes it into the attribute list's bytes.
        let field = "gen_ai.tool.call.arguments";
        let arguments = Arc::new(Payload {
            state: PayloadState::Present,
            bytes: 40,
            field: Some(field.into()),
            body: PayloadBody::Range(PayloadRange {
                path: Arc::new("/extras-tests/spans.jsonl".into()),
                offset: 120,
                len: 40,
                encoding: crate::model::RawEncoding::JsonString,
                gzip: false,
            }),
        });
        let mut span = Span {
            attributes: [(ArcStr::from(field), AttrValue::Payload(arguments.clone()))]
                .into_iter()
                .collect(),
            ..Span::default()
        };
        span.set_input(PayloadSlot::held(arguments.clone()));
        assert!(!span.extras.is_unset());
        span.pack();
        assert!(span.extras.is_unset(), "nothing else was set: no block");
        assert_eq!(*span.input(), *arguments);

        let mut with_identity = Span::default();
        with_identity.identity_mut().correlation_id = Some("conv-7".into());
        with_identity.pack();
        assert_eq!(
            with_identity.identity().correlation_id.as_deref(),
            Some("conv-7"),
            "a block holding something else stays"
        );
    }
}
