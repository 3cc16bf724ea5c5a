//! Provider and tool events of the OpenArmature typed-event stream (LLM attempts and
//! completions, embedding, rerank, tool calls) as spans; see [`super`].

use std::sync::Arc;

use serde_json::Value;

use super::Parser;
use crate::formats::Input;
use crate::formats::common::jsonrec::{self, Line};
use crate::model::{
    ArcStr, LlmFacts, RecordRef, RequestedToolCall, RetrievalFacts, SpanKind, ToolFacts,
};

impl Parser {
    pub(super) fn llm(
        &mut self,
        input: &Input,
        line: &Line,
        event: &Value,
        event_type: &str,
        invocation: &str,
        record: Option<&Arc<RecordRef>>,
    ) {
        let call_id = jsonrec::str_at(event, "call_id")
            .map(str::to_owned)
            .unwrap_or_else(|| format!("line{}", line.number));
        let attempt = if event_type == "LlmRetryAttemptEvent" {
            self.llm_calls_with_attempts.insert(call_id.clone());
            jsonrec::u64_at(event, "llm_attempt_index").unwrap_or(0)
        } else if self.llm_calls_with_attempts.contains(&call_id) {
            return;
        } else {
            0
        };
        let mut span = self.timed_span(input, line, event, invocation);
        span.span_id = format!("llm:{call_id}#{attempt}").into();
        span.name = "openarmature.llm.complete".into();
        span.kind = SpanKind::Llm;
        span.identity_mut().node.attempt_index = u32::try_from(attempt).ok();
        let usage = event.get("usage").filter(|u| u.is_object());
        let mut facts = LlmFacts {
            provider: jsonrec::str_at(event, "provider").map(Into::into),
            model: jsonrec::str_at(event, "model").map(Into::into),
            response_model: jsonrec::str_at(event, "response_model").map(Into::into),
            input_tokens: jsonrec::tokens_at(usage, &["prompt_tokens"]),
            output_tokens: jsonrec::tokens_at(usage, &["completion_tokens"]),
            cache_read_tokens: jsonrec::tokens_at(usage, &["cached_tokens"]),
            finish_reasons: jsonrec::str_at(event, "finish_reason")
                .map(crate::model::interner::value)
                .into_iter()
                .collect(),
            ..Default::default()
        };
        let tool_calls = event.get("output_tool_calls").and_then(Value::as_array);
        for call in tool_calls.map(Vec::as_slice).unwrap_or_default() {
            if let Some(name) = jsonrec::str_at(call, "name") {
                facts.requested_tool_calls.push(RequestedToolCall {
                    id: jsonrec::str_at(call, "id").map(ArcStr::from),
                    name: crate::model::interner::value(name),
                });
            }
        }
        span.set_llm(Some(Box::new(facts)));
        if let Some(reason) = event.get("retry_reason").filter(|r| !r.is_null()) {
            span.attributes.push((
                "openarmature.llm.retry_reason".into(),
                jsonrec::attr_of(reason),
            ));
        }
        span.set_input(
            jsonrec::payload(
                "input_messages",
                event.get("input_messages"),
                record,
                "/input_messages",
            )
            .into(),
        );
        span.set_output(
            match event.get("output_content").filter(|c| !c.is_null()) {
                Some(content) => {
                    jsonrec::payload("output_content", Some(content), record, "/output_content")
                }
                None => jsonrec::payload(
                    "output_tool_calls",
                    event.get("output_tool_calls"),
                    record,
                    "/output_tool_calls",
                ),
            }
            .into(),
        );
        self.spans.push(span);
    }

    pub(super) fn call(
        &mut self,
        input: &Input,
        line: &Line,
        event: &Value,
        event_type: &str,
        invocation: &str,
        record: Option<&Arc<RecordRef>>,
    ) {
        let mut span = self.timed_span(input, line, event, invocation);
        let call_id = jsonrec::str_at(event, "call_id")
            .map(str::to_owned)
            .unwrap_or_else(|| format!("line{}", line.number));
        if event_type.starts_with("Embedding") {
            span.span_id = format!("embedding:{call_id}").into();
            span.name = "openarmature.embedding.complete".into();
            span.kind = SpanKind::Embedding;
            span.set_llm(Some(Box::new(LlmFacts {
                provider: jsonrec::str_at(event, "provider").map(Into::into),
                model: jsonrec::str_at(event, "model").map(Into::into),
                response_model: jsonrec::str_at(event, "response_model").map(Into::into),
                input_tokens: jsonrec::tokens_at(event.get("usage"), &["input_tokens"]),
                ..Default::default()
            })));
            span.set_input(
                jsonrec::payload(
                    "input_strings",
                    event.get("input_strings"),
                    record,
                    "/input_strings",
                )
                .into(),
            );
            span.set_output(
                jsonrec::payload_null_is_absent(
                    "output_vectors",
                    event.get("output_vectors"),
                    record,
                    "/output_vectors",
                )
                .into(),
            );
        } else if event_type.starts_with("Rerank") {
            span.span_id = format!("rerank:{call_id}").into();
            span.name = "openarmature.rerank.complete".into();
            span.kind = SpanKind::Rerank;
            span.set_llm(Some(Box::new(LlmFacts {
                provider: jsonrec::str_at(event, "provider").map(Into::into),
                model: jsonrec::str_at(event, "model").map(Into::into),
                response_model: jsonrec::str_at(event, "response_model").map(Into::into),
                ..Default::default()
            })));
            span.set_retrieval(Some(Box::new(RetrievalFacts {
                query: jsonrec::str_at(event, "query").map(Into::into),
                document_count: jsonrec::u64_at(event, "document_count"),
            })));
            span.set_input(
                jsonrec::payload("documents", event.get("documents"), record, "/documents").into(),
            );
            span.set_output(
                jsonrec::payload_null_is_absent(
                    "output_results",
                    event.get("output_results"),
                    record,
                    "/output_results",
                )
                .into(),
            );
        } else {
            self.tool_calls += 1;
            span.span_id = format!("tool:{call_id}").into();
            span.name = "openarmature.tool.call".into();
            span.kind = SpanKind::Tool;
            span.set_tool(Some(Box::new(ToolFacts {
                name: jsonrec::str_at(event, "tool_name").map(Into::into),
                call_id: jsonrec::str_at(event, "tool_call_id").map(Into::into),
            })));
            span.set_input(
                jsonrec::payload("arguments", event.get("arguments"), record, "/arguments").into(),
            );
            span.set_output(if event_type == "ToolCallEvent" {
                jsonrec::payload("result", event.get("result"), record, "/result").into()
            } else {
                crate::model::Payload::not_captured().into()
            });
        }
        self.spans.push(span);
    }
}
