//! What reading trace bytes can fail at: opening their container, decoding a request, reading
//! a payload back from its file.

use std::io;
use std::path::PathBuf;

use crate::formats::otlp::container::ZstdError;
use crate::formats::otlp::decode_budget::OverBudget;

/// An error of the formats crate. Its text is what the user sees (a problem line, a pane).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file cannot be read.
    #[error("{}: {source}", path.display())]
    Unreadable { path: PathBuf, source: io::Error },
    /// Gzip bytes that do not inflate.
    #[error("gzip data is corrupt: {0}")]
    GzipCorrupt(io::Error),
    /// Gzip bytes that inflate past the limit.
    #[error("gzip data expands beyond {limit} bytes; refused")]
    GzipTooLarge { limit: u64 },
    #[error(transparent)]
    Zstd(#[from] ZstdError),
    /// A payload's file no longer holds a value where its range points.
    #[error("{} changed on disk: the payload is no longer where it was", path.display())]
    PayloadMoved { path: PathBuf },
    /// A payload's record no longer holds the value its locator names.
    #[error("{} changed on disk: payload {locator} is no longer there", path.display())]
    PayloadGone { path: PathBuf, locator: String },
    /// A file read as gzip when its payloads were found is gzip no more.
    #[error("{} is no longer gzip", path.display())]
    NoLongerGzip { path: PathBuf },
    /// A payload's file was deleted on purpose (a live spool's old segment); `note` says why.
    #[error("{note}")]
    Expired { note: String },
    /// A record names a format this build does not know.
    #[error("unknown format {0}")]
    UnknownFormat(&'static str),
    /// A body that is not an OTLP/JSON request.
    #[error("not an OTLP/JSON ExportTraceServiceRequest: {0}")]
    NotOtlpJson(serde_json::Error),
    /// A body that is not a protobuf request.
    #[error("not a protobuf ExportTraceServiceRequest: {0}")]
    NotOtlpProtobuf(prost::DecodeError),
    /// A span converted to OTLP/JSON that does not read back as OTLP.
    #[error("not an OTLP span: {0}")]
    NotOtlpSpan(serde_json::Error),
    /// The JSON decoder's verdict on a body, as it gives it.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The protobuf wire reader's verdict on a body, as it gives it.
    #[error(transparent)]
    Protobuf(#[from] Malformed),
    /// A span's ids make it unusable; `reason` says which id and how.
    #[error("{reason}")]
    UnusableIds { reason: String },
    /// A span refused for its ids, named by its (shortened) name.
    #[error("{reason} (span {name:?})")]
    SpanRefused { reason: String, name: String },
}

/// Why protobuf wire bytes do not decode.
#[derive(Debug, thiserror::Error)]
pub enum Malformed {
    #[error(transparent)]
    Varint(#[from] prost::DecodeError),
    #[error("a length runs past the end of the message")]
    PastTheEnd,
    #[error("field number out of range")]
    FieldNumberOutOfRange,
    #[error("field number 0")]
    FieldNumberZero,
    /// A fixed-width field shorter than its width (`"fixed64"`, `"fixed32"`).
    #[error("short {0}")]
    ShortFixed(&'static str),
    #[error("length out of range")]
    LengthOutOfRange,
    #[error("unsupported wire type {0}")]
    WireType(u64),
    #[error("a string field is not valid UTF-8")]
    NotUtf8,
    /// Values nested deeper than the limit.
    #[error("values nested deeper than {0}")]
    TooDeep(usize),
    #[error(transparent)]
    OverBudget(#[from] OverBudget),
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn an_unreadable_file_is_named_before_the_cause() {
        let path = std::path::Path::new("/no/such/trace.jsonl");
        let source = std::fs::read(path).unwrap_err();
        let error = Error::Unreadable {
            path: path.to_path_buf(),
            source,
        };
        assert!(
            error
                .to_string()
                .starts_with("/no/such/trace.jsonl: No such file"),
            "{error}"
        );
    }

    #[test]
    fn gzip_that_is_not_gzip_says_it_is_corrupt() {
        let error = crate::formats::maybe_gunzip(&[0x1f, 0x8b, 0, 0]).unwrap_err();
        assert!(
            error.to_string().starts_with("gzip data is corrupt: "),
            "{error}"
        );
    }
}
