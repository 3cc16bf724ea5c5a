//! Synthetic runs for tests of the query worker and the list search (unit and integration
//! tests alike build the same runs from here).

use crate::model::{Batch, ErrorInfo, Span, SpanKind, SpanStatus, ToolFacts};

const TOOLS: [&str; 4] = ["search_flights", "refund", "get_weather", "lookup_order"];

/// Runs `from..to` (ids `run00000`…), two spans each: an agent root `agent_{r % 7}` and a tool
/// call cycling through four tools; every 5th run's tool fails with a "(non-fatal)" timeout.
#[doc(hidden)]
pub fn tool_runs(from: usize, to: usize) -> Batch {
    let mut spans = Vec::new();
    for r in from..to {
        let trace = format!("run{r:05}");
        let base = |id: &str, parent: Option<&str>, name: String, kind| Span {
            trace_id: trace.clone().into(),
            span_id: format!("{trace}-{id}").into(),
            parent_span_id: parent.map(|p| format!("{trace}-{p}")).map(Into::into),
            name: name.into(),
            kind,
            start_unix_nano: 1_764_496_800_000_000_000 + r as u64 * 1_000_000_000,
            end_unix_nano: 1_764_496_801_000_000_000 + r as u64 * 1_000_000_000,
            provenance: crate::model::Provenance::shared(None, None, "test".into()),
            ..Default::default()
        };
        spans.push(base(
            "root",
            None,
            format!("agent_{}", r % 7),
            SpanKind::Agent,
        ));
        let tool_name = TOOLS[r % TOOLS.len()];
        let mut tool = base(
            "tool",
            Some("root"),
            format!("execute_tool {tool_name}"),
            SpanKind::Tool,
        );
        tool.set_tool(Some(Box::new(ToolFacts {
            name: Some(tool_name.into()),
            ..Default::default()
        })));
        if r % 5 == 0 {
            tool.status = SpanStatus::Error;
            tool.set_error(Some(ErrorInfo {
                message: Some("upstream timed out (non-fatal)".into()),
                ..Default::default()
            }));
        }
        spans.push(tool);
    }
    Batch {
        spans,
        ..Default::default()
    }
}
