//! OTLP `ExportTraceServiceRequest` as OTLP/JSON (one document or JSONL) and protobuf.

use super::{Format, Input};
use crate::model::Batch;

pub struct OtlpJson;
pub struct OtlpProtobuf;

impl Format for OtlpJson {
    fn name(&self) -> &'static str {
        "otlp-json"
    }
    fn detect(&self, _input: &Input) -> Option<String> {
        None
    }
    fn parse(&self, _input: &Input) -> Batch {
        Batch::default()
    }
}

impl Format for OtlpProtobuf {
    fn name(&self) -> &'static str {
        "otlp-protobuf"
    }
    fn detect(&self, _input: &Input) -> Option<String> {
        None
    }
    fn parse(&self, _input: &Input) -> Batch {
        Batch::default()
    }
}
