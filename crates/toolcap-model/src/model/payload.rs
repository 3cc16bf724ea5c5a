//! Payloads as the skeleton holds them: where the text is (inline, a record, a byte range) and
//! which of the four states it is in, so a pane can load it only when shown.

use std::path::PathBuf;
use std::sync::Arc;

/// A byte range of a source file holding one complete record (a JSONL line, or a whole
/// document). Loading a payload re-reads and re-parses just this record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRef {
    pub path: Arc<PathBuf>,
    pub offset: u64,
    pub len: u64,
    /// The record must be taken out of its container (gzip, zstd, Collector framing) after
    /// reading; the range then covers the whole file.
    pub gzip: bool,
    /// Registry name of the format that can find a payload inside this record again.
    pub format: &'static str,
}

/// The four payload states the model distinguishes. Never show `NotCaptured` as `Empty`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PayloadState {
    /// The exporter was told not to record it (or the format never records it).
    #[default]
    NotCaptured,
    /// Recorded, and empty (`""`, `[]`, `{}` or null).
    Empty,
    Present,
    /// Recorded but cut by the exporter: `total_bytes` is the original size it reported.
    Truncated {
        total_bytes: u64,
    },
}

impl PayloadState {
    pub fn label(self) -> String {
        match self {
            PayloadState::NotCaptured => "not captured".into(),
            PayloadState::Empty => "empty".into(),
            PayloadState::Present => "present".into(),
            PayloadState::Truncated { total_bytes } => format!("truncated ({total_bytes} bytes)"),
        }
    }
}

/// How to get a payload's text when a pane needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum PayloadBody {
    #[default]
    Absent,
    /// Small values, and everything that arrived over the network, are kept in memory.
    /// An `ArcStr`, so a payload that is also a string attribute shares its allocation.
    Inline(super::ArcStr),
    /// Big values stay on disk: the record plus a format-specific locator is enough to find the
    /// value again (formats whose parser does not yet know byte positions).
    InRecord {
        record: Arc<RecordRef>,
        /// A thin pointer: it keeps the body at three words, so a payload is 56 bytes and its
        /// shared allocation a size class smaller.
        locator: super::ArcStr,
    },
    /// Big values stay on disk as the exact bytes of the raw value: reading them needs no
    /// parse of the record around them.
    Range(PayloadRange),
}

/// How the raw bytes of a [`PayloadRange`] become the payload's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawEncoding {
    /// A JSON string token, quotes and escapes included.
    JsonString,
    /// Any JSON value, shown as its text.
    RawJson,
    /// Any JSON value, shown as `serde_json` prints it: strings unquoted, anything else as
    /// compact JSON (what the JSON record formats show for a value).
    JsonValue,
    /// The UTF-8 bytes of a protobuf `string` field.
    Utf8,
}

/// The position of a payload's raw value in a source file (in the decompressed stream when the
/// file is gzipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadRange {
    /// Shared by every payload of the file.
    pub path: Arc<PathBuf>,
    pub offset: u64,
    pub len: u32,
    pub encoding: RawEncoding,
    /// The offset counts bytes of the gunzipped file.
    pub gzip: bool,
}

/// A span's input or output as a parser sets it: shared with the attribute it came from, when it
/// came from one. Read it through [`super::Span::input`] and [`super::Span::output`]: once the
/// span is packed, a payload that is one of its attributes is kept in the attribute list's
/// bytes, not here (and a list unpacked again no longer says which entry it was).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PayloadSlot(super::Sparse<Payload, Arc<Payload>>);

impl PayloadSlot {
    pub const UNSET: PayloadSlot = PayloadSlot(super::Sparse::UNSET);

    /// The payload as its `Arc` already holds it (shared with an attribute, typically).
    pub fn held(payload: Arc<Payload>) -> PayloadSlot {
        PayloadSlot(super::Sparse::held(payload))
    }

    pub fn holder(&self) -> Option<&Arc<Payload>> {
        self.0.holder()
    }

    pub fn is_unset(&self) -> bool {
        self.0.is_unset()
    }

    /// The payload as a parser set it. A packed span may keep it in its attributes instead:
    /// read [`super::Span::input`] and [`super::Span::output`] once the span is done.
    pub fn as_set(&self) -> &Payload {
        &self.0
    }

    /// The payload to change, for a parser before the span is packed: set on first change,
    /// copied first when shared (its attribute keeps what it had).
    pub fn to_change(&mut self) -> &mut Payload {
        &mut self.0
    }
}

impl From<Payload> for PayloadSlot {
    fn from(payload: Payload) -> PayloadSlot {
        PayloadSlot(super::Sparse::from(payload))
    }
}

/// A payload as the skeleton holds it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Payload {
    pub state: PayloadState,
    /// Size of the value as recorded (bytes of its text form).
    pub bytes: u64,
    /// The attribute or field it came from, e.g. `gen_ai.tool.call.arguments`.
    pub field: Option<super::ArcStr>,
    pub body: PayloadBody,
}

impl super::SparseEmpty for Payload {
    const EMPTY: &'static Self = &Payload {
        state: PayloadState::NotCaptured,
        bytes: 0,
        field: None,
        body: PayloadBody::Absent,
    };
}

/// Which of a span's input and output a payload is: a packed attribute list marks the entry
/// holding each, and the span reads them back from there (see [`super::Span::input`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PayloadRoles(u8);

impl PayloadRoles {
    pub const NONE: PayloadRoles = PayloadRoles(0);
    pub const INPUT: PayloadRoles = PayloadRoles(1);
    pub const OUTPUT: PayloadRoles = PayloadRoles(2);

    pub fn bits(self) -> u8 {
        self.0
    }

    /// The roles of `bits` (other bits are ignored).
    pub fn from_bits(bits: u8) -> PayloadRoles {
        PayloadRoles(bits & 0b11)
    }

    pub fn with(self, other: PayloadRoles) -> PayloadRoles {
        PayloadRoles(self.0 | other.0)
    }

    pub fn contains(self, role: PayloadRoles) -> bool {
        role.0 != 0 && self.0 & role.0 == role.0
    }
}

/// The marker OpenArmature appends to a value it cut: `…[truncated, N bytes total]`.
pub fn truncation_marker_total(text: &str) -> Option<u64> {
    // Every payload is asked: the suffix test spares the others a backward search of all of it.
    if !text.ends_with(" bytes total]") {
        return None;
    }
    let tail_start = text.rfind("[truncated, ")?;
    let rest = &text[tail_start + "[truncated, ".len()..];
    let number = rest.strip_suffix(" bytes total]")?;
    number.trim().parse().ok()
}

impl Payload {
    pub fn not_captured() -> Self {
        Payload::default()
    }

    /// A payload whose text is kept in memory; its state is derived from the text.
    pub fn inline(field: impl Into<super::ArcStr>, text: impl Into<super::ArcStr>) -> Self {
        let text: super::ArcStr = text.into();
        let state = state_of_text(&text);
        Payload {
            state,
            bytes: text.len() as u64,
            field: Some(field.into()),
            body: PayloadBody::Inline(text),
        }
    }

    /// A payload left on disk. `text_for_state` is the value if the caller has it at hand
    /// (used only to decide empty/truncated and then dropped).
    pub fn in_record(
        field: impl Into<super::ArcStr>,
        text_for_state: &str,
        record: Arc<RecordRef>,
        locator: impl Into<super::ArcStr>,
    ) -> Self {
        Payload {
            state: state_of_text(text_for_state),
            bytes: text_for_state.len() as u64,
            field: Some(field.into()),
            body: PayloadBody::InRecord {
                record,
                locator: locator.into(),
            },
        }
    }

    pub fn is_captured(&self) -> bool {
        self.state != PayloadState::NotCaptured
    }

    pub fn inline_text(&self) -> Option<&str> {
        match &self.body {
            PayloadBody::Inline(t) => Some(t),
            _ => None,
        }
    }
}

impl PayloadState {
    /// The state of a payload whose whole text is `text`.
    pub fn of_text(text: &str) -> PayloadState {
        state_of_text(text)
    }
}

fn state_of_text(text: &str) -> PayloadState {
    let trimmed = text.trim();
    if matches!(trimmed, "" | "null" | "[]" | "{}" | "\"\"") {
        PayloadState::Empty
    } else if let Some(total) = truncation_marker_total(trimmed) {
        PayloadState::Truncated { total_bytes: total }
    } else {
        PayloadState::Present
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_states_are_distinct() {
        assert_eq!(Payload::not_captured().state, PayloadState::NotCaptured);
        assert_eq!(Payload::inline("k", "").state, PayloadState::Empty);
        assert_eq!(Payload::inline("k", "{}").state, PayloadState::Empty);
        assert_eq!(
            Payload::inline("k", "{\"a\":1}").state,
            PayloadState::Present
        );
        assert_eq!(
            Payload::inline("k", "{\"a\":\"xxxx…[truncated, 1234 bytes total]").state,
            PayloadState::Truncated { total_bytes: 1234 }
        );
    }

    #[test]
    fn truncation_marker_needs_the_exact_suffix() {
        assert_eq!(
            truncation_marker_total("abc[truncated, 12 bytes total]"),
            Some(12)
        );
        assert_eq!(truncation_marker_total("abc[truncated, 12 bytes]"), None);
        assert_eq!(truncation_marker_total("abc"), None);
    }
}
