//! What may wrap trace bytes in a file, recognised by content like every format: gzip, zstd
//! (a whole file, possibly several frames), and the OpenTelemetry Collector file exporter's
//! framing. With `format: proto` or any `compression` the Collector writes every message
//! preceded by its length as a 4-byte big-endian integer; with `compression: zstd` each
//! message is its own zstd frame, with OTLP/JSON or protobuf inside.
//!
//! Unwrapping yields bytes an ordinary format reads: framed JSON messages become JSON lines
//! (one message per line, so "line N" in a problem is message N), framed protobuf messages are
//! concatenated, which protobuf defines as merging them into one request whose
//! `resourceSpans` are all of theirs. Every decompression is bounded by
//! [`MAX_DECOMPRESSED_BYTES`] in total.

use std::io::Read;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;

use crate::formats::{MAX_DECOMPRESSED_BYTES, maybe_gunzip};

pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
const LENGTH_PREFIX_BYTES: usize = 4;
/// Protobuf `ExportTraceServiceRequest` starts with field 1 (`resource_spans`), wire type 2.
const PROTOBUF_FIRST_TAG: u8 = 0x0a;

/// Bytes taken out of their container, with what the container was and what could not be
/// read (a corrupt message, a file cut off in the middle of a message).
#[derive(Debug)]
pub struct Unwrapped {
    pub bytes: Vec<u8>,
    /// For `dump --explain`: "gzip", "zstd", "Collector framing: 3 messages, zstd each".
    pub container: String,
    pub problems: Vec<String>,
    /// The last message is incomplete: the file is probably still being written.
    pub incomplete_tail: bool,
}

/// `Ok(None)` when the bytes are not in any known container; `Err` when they are but cannot
/// be opened at all.
pub fn unwrap(raw: &[u8]) -> Result<Option<Unwrapped>, crate::Error> {
    let (outer, name) = if let Some(inflated) = maybe_gunzip(raw)? {
        (Some(inflated), "gzip")
    } else if raw.starts_with(&ZSTD_MAGIC) {
        let inflated = zstd_decode(raw, MAX_DECOMPRESSED_BYTES)?;
        (Some(inflated), "zstd")
    } else {
        (None, "")
    };
    let inner = outer.as_deref().unwrap_or(raw);
    match unframe(inner) {
        Some(mut framed) => {
            if !name.is_empty() {
                framed.container = format!("{name}; {}", framed.container);
            }
            Ok(Some(framed))
        }
        None => Ok(outer.map(|bytes| Unwrapped {
            bytes,
            container: name.to_owned(),
            problems: Vec::new(),
            incomplete_tail: false,
        })),
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ZstdError {
    #[error("zstd data expands beyond {0} bytes; refused")]
    TooLarge(u64),
    #[error("zstd data is corrupt: {0}")]
    Corrupt(String),
}

/// Decodes every zstd frame in `data` (a file may hold several), reading at most `limit + 1`
/// bytes of output so a bomb costs no more than the limit.
pub fn zstd_decode(data: &[u8], limit: u64) -> Result<Vec<u8>, ZstdError> {
    let mut source = data;
    let mut out = Vec::new();
    while !source.is_empty() {
        let decoder = ruzstd::decoding::StreamingDecoder::new(&mut source)
            .map_err(|e| ZstdError::Corrupt(e.to_string()))?;
        let room = limit.saturating_add(1).saturating_sub(out.len() as u64);
        decoder
            .take(room)
            .read_to_end(&mut out)
            .map_err(|e| ZstdError::Corrupt(e.to_string()))?;
        if out.len() as u64 > limit {
            return Err(ZstdError::TooLarge(limit));
        }
    }
    Ok(out)
}

/// The messages of a Collector-framed file, or `None` when the bytes are not framed: every
/// length must fit the file and every message must open like zstd, JSON or an OTLP protobuf
/// request. Only the last message may be cut short (a file being written).
fn split_frames(bytes: &[u8]) -> Option<(Vec<&[u8]>, bool)> {
    let mut frames = Vec::new();
    let mut rest = bytes;
    let mut incomplete_tail = false;
    while !rest.is_empty() {
        let Some((prefix, after)) = rest.split_first_chunk::<LENGTH_PREFIX_BYTES>() else {
            incomplete_tail = true;
            break;
        };
        let len = u32::from_be_bytes(*prefix) as usize;
        let Some(frame) = after.get(..len) else {
            // A first "length" longer than the file means this is no framing at all.
            if frames.is_empty() {
                return None;
            }
            incomplete_tail = true;
            break;
        };
        let opens_like_a_message = frame.starts_with(&ZSTD_MAGIC)
            || frame.first() == Some(&PROTOBUF_FIRST_TAG)
            || frame.trim_ascii_start().first() == Some(&b'{');
        if !opens_like_a_message {
            return None;
        }
        frames.push(frame);
        rest = &after[len..];
    }
    (!frames.is_empty()).then_some((frames, incomplete_tail))
}

fn unframe(bytes: &[u8]) -> Option<Unwrapped> {
    let (frames, incomplete_tail) = split_frames(bytes)?;
    let mut problems = Vec::new();
    let mut compressed = 0usize;
    let mut json_lines: Vec<u8> = Vec::new();
    let mut protobuf: Vec<u8> = Vec::new();
    let mut budget = MAX_DECOMPRESSED_BYTES;
    for (index, frame) in frames.iter().enumerate() {
        let number = index + 1;
        let message = if frame.starts_with(&ZSTD_MAGIC) {
            compressed += 1;
            match zstd_decode(frame, budget) {
                Ok(decoded) => std::borrow::Cow::Owned(decoded),
                Err(e) => {
                    problems.push(format!("message {number}: {e}"));
                    continue;
                }
            }
        } else {
            std::borrow::Cow::Borrowed(*frame)
        };
        budget = budget.saturating_sub(message.len() as u64);
        if message.trim_ascii_start().starts_with(b"{") {
            // One message per line: the Collector's JSON has no raw newlines, but a message
            // written by hand might; flatten it so line N stays message N.
            json_lines.extend(message.iter().map(|b| if *b == b'\n' { b' ' } else { *b }));
            json_lines.push(b'\n');
        } else {
            match ExportTraceServiceRequest::decode(&message[..]) {
                Ok(_) => protobuf.extend_from_slice(&message),
                Err(e) => problems.push(format!(
                    "message {number}: not an OTLP protobuf request: {e}"
                )),
            }
        }
    }
    if incomplete_tail {
        problems.push(format!(
            "the file ends inside message {}: it is cut short or still being written",
            frames.len() + 1
        ));
    }
    let zstd = if compressed > 0 { ", zstd each" } else { "" };
    let (bytes, inside) = match (json_lines.is_empty(), protobuf.is_empty()) {
        (false, true) | (true, true) => (json_lines, "JSON, one per line"),
        (true, false) => (protobuf, "protobuf, merged"),
        (false, false) => {
            problems.push(
                "protobuf messages among JSON ones were skipped: a Collector file holds one format"
                    .into(),
            );
            (json_lines, "JSON, one per line")
        }
    };
    Some(Unwrapped {
        bytes,
        container: format!(
            "Collector framing: {} length-prefixed messages{zstd} ({inside})",
            frames.len()
        ),
        problems,
        incomplete_tail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(messages: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            out.extend_from_slice(&(m.len() as u32).to_be_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    #[test]
    fn plain_json_and_plain_protobuf_are_not_framed() {
        assert!(unwrap(b"{\"resourceSpans\":[]}\n").unwrap().is_none());
        assert!(unwrap(&[0x0a, 0x02, 0x0a, 0x00]).unwrap().is_none());
        assert!(unwrap(b"").unwrap().is_none());
    }

    #[test]
    fn framed_json_becomes_one_line_per_message() {
        let a = br#"{"resourceSpans":[]}"#;
        let b = b"{\"resourceSpans\":\n[]}";
        let out = unwrap(&framed(&[a, b])).unwrap().unwrap();
        assert_eq!(
            out.bytes,
            b"{\"resourceSpans\":[]}\n{\"resourceSpans\": []}\n"
        );
        assert!(out.problems.is_empty());
        assert!(out.container.contains("2 length-prefixed messages"));
    }

    #[test]
    fn zstd_frames_are_decoded_and_a_cut_tail_is_reported() {
        let message = br#"{"resourceSpans":[]}"#;
        let compressed = ruzstd::encoding::compress_to_vec(
            &message[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let mut bytes = framed(&[&compressed, &compressed]);
        bytes.extend_from_slice(&[0, 0, 0, 40, 0x28]);
        let out = unwrap(&bytes).unwrap().unwrap();
        assert_eq!(out.bytes.split(|b| *b == b'\n').count(), 3);
        assert!(out.incomplete_tail);
        assert!(out.container.contains("zstd each"), "{}", out.container);
        assert!(out.problems[0].contains("message 3"), "{:?}", out.problems);
    }

    #[test]
    fn a_zstd_bomb_stops_at_the_limit() {
        let zeros = vec![0u8; 1 << 20];
        let compressed = ruzstd::encoding::compress_to_vec(
            &zeros[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(
            zstd_decode(&compressed, 1000),
            Err(ZstdError::TooLarge(1000))
        );
    }

    #[test]
    fn corrupt_protobuf_message_is_a_problem_and_the_others_load() {
        let good = ExportTraceServiceRequest::default().encode_to_vec();
        let good = [&[PROTOBUF_FIRST_TAG, 0][..], &good].concat();
        let bad = [PROTOBUF_FIRST_TAG, 0x7f, 1];
        let out = unwrap(&framed(&[&good, &bad, &good])).unwrap().unwrap();
        assert_eq!(out.bytes, [good.clone(), good].concat());
        assert_eq!(out.problems.len(), 1);
        assert!(
            out.problems[0].starts_with("message 2:"),
            "{:?}",
            out.problems
        );
    }
}
