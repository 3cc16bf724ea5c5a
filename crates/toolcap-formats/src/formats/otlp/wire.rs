//! A borrowed serde model of OTLP/JSON `ExportTraceServiceRequest`.
//!
//! It exists for speed and tolerance. String attribute values are kept as the raw JSON token
//! (`&RawValue`), so a megabyte payload is scanned once and never unescaped or copied unless a
//! pane asks for it. It also accepts what protobuf's canonical JSON mapping writes (base64 ids,
//! enum names, snake_case keys) and reports every such leniency as a [`Leniency`], so the caller
//! can warn about it. Protobuf requests are converted into the same model (see `proto.rs`), so
//! one builder turns both into spans.
//!
//! A JSON line in the shape exporters write is read into these types by a direct reader
//! (`direct.rs`), span by span, without serde's visitors. Every other JSON request, and any
//! line that reader gives up on, is parsed whole by serde ([`Request::parse`]): the direct
//! reader's one fallback, and the verdict on a malformed request.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::value::RawValue;

use super::decode_budget::{self, Budget};

mod direct;
mod unescape;
pub use direct::for_each_span as for_each_span_directly;
use unescape::{unescape_into, unescaped_len};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Request<'a> {
    #[serde(
        borrow,
        alias = "resource_spans",
        deserialize_with = "decode_budget::sequence"
    )]
    pub resource_spans: Vec<ResourceSpans<'a>>,
}

/// Whole requests decoded into this model, process-wide (see [`requests_decoded`]).
static REQUESTS_DECODED: AtomicU64 = AtomicU64::new(0);

/// Counts one whole request decoded into this model (from JSON here, from protobuf in
/// `protobuf.rs`).
pub fn count_request_decoded() {
    REQUESTS_DECODED.fetch_add(1, Ordering::Relaxed);
}

/// Whole requests decoded into this model so far in this process.
pub fn requests_decoded() -> u64 {
    REQUESTS_DECODED.load(Ordering::Relaxed)
}

impl<'a> Request<'a> {
    /// Parses one OTLP/JSON request; every JSON request is read through here. The bytes are
    /// checked as UTF-8 once, up front: parsing from a `&str` then skips serde_json's check of
    /// every string and raw value, a noticeable part of the parse. Bytes that are not UTF-8
    /// go through the byte parser, so the error says where.
    pub fn parse(bytes: &'a [u8]) -> Result<Request<'a>, serde_json::Error> {
        count_request_decoded();
        let _budget = Budget::for_input(bytes.len());
        match std::str::from_utf8(bytes) {
            Ok(text) => serde_json::from_str(text),
            Err(_) => serde_json::from_slice(bytes),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceSpans<'a> {
    #[serde(borrow)]
    pub resource: Option<Resource<'a>>,
    /// `instrumentationLibrarySpans` is the name before OTLP 0.15 (older exporters still write it).
    #[serde(
        borrow,
        alias = "scope_spans",
        alias = "instrumentationLibrarySpans",
        alias = "instrumentation_library_spans",
        deserialize_with = "decode_budget::sequence"
    )]
    pub scope_spans: Vec<ScopeSpans<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Resource<'a> {
    #[serde(borrow, deserialize_with = "decode_budget::sequence")]
    pub attributes: Vec<KeyValue<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScopeSpans<'a> {
    #[serde(borrow)]
    pub scope: Option<Scope<'a>>,
    #[serde(borrow, deserialize_with = "decode_budget::sequence")]
    pub spans: Vec<Span<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Scope<'a> {
    #[serde(borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub version: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Span<'a> {
    #[serde(borrow, alias = "trace_id")]
    pub trace_id: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "span_id")]
    pub span_id: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "parent_span_id")]
    pub parent_span_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(borrow)]
    pub kind: Option<Scalar<'a>>,
    #[serde(borrow, alias = "start_time_unix_nano")]
    pub start_time_unix_nano: Option<Scalar<'a>>,
    #[serde(borrow, alias = "end_time_unix_nano")]
    pub end_time_unix_nano: Option<Scalar<'a>>,
    #[serde(borrow, deserialize_with = "decode_budget::sequence")]
    pub attributes: Vec<KeyValue<'a>>,
    #[serde(borrow, deserialize_with = "decode_budget::sequence")]
    pub events: Vec<Event<'a>>,
    #[serde(borrow)]
    pub status: Option<Status<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Event<'a> {
    #[serde(borrow, alias = "time_unix_nano")]
    pub time_unix_nano: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(borrow, deserialize_with = "decode_budget::sequence")]
    pub attributes: Vec<KeyValue<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Status<'a> {
    #[serde(borrow)]
    pub code: Option<Scalar<'a>>,
    #[serde(borrow)]
    pub message: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KeyValue<'a> {
    #[serde(borrow)]
    pub key: Cow<'a, str>,
    #[serde(borrow)]
    pub value: Option<AnyValue<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AnyValue<'a> {
    #[serde(borrow, alias = "string_value")]
    pub string_value: Option<Text<'a>>,
    #[serde(alias = "bool_value")]
    pub bool_value: Option<bool>,
    #[serde(borrow, alias = "int_value")]
    pub int_value: Option<Scalar<'a>>,
    #[serde(borrow, alias = "double_value")]
    pub double_value: Option<Scalar<'a>>,
    // The rare kinds are boxed: every attribute of every span is parsed into this struct and
    // moved while its vector grows, so its size shows in the parse's time.
    #[serde(borrow, alias = "bytes_value")]
    pub bytes_value: Option<Box<Cow<'a, str>>>,
    #[serde(borrow, alias = "array_value")]
    pub array_value: Option<Box<ArrayValue<'a>>>,
    #[serde(borrow, alias = "kvlist_value")]
    pub kvlist_value: Option<Box<KvList<'a>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ArrayValue<'a> {
    #[serde(borrow, deserialize_with = "decode_budget::sequence")]
    pub values: Vec<AnyValue<'a>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct KvList<'a> {
    #[serde(borrow, deserialize_with = "decode_budget::sequence")]
    pub values: Vec<KeyValue<'a>>,
}

/// A string value: either still the raw JSON token (quotes and escapes included) or text.
#[derive(Clone)]
pub enum Text<'a> {
    /// `decoded_len`: the text's length once unescaped, when the reader counted it while it
    /// checked the token's escapes (it then needs no pass of its own).
    Json {
        token: &'a str,
        decoded_len: Option<u32>,
    },
    Plain(Cow<'a, str>),
}

/// The text as read; a counted length is left out, so both readers' values print alike.
impl std::fmt::Debug for Text<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Text::Json { token, .. } => f.debug_tuple("Json").field(token).finish(),
            Text::Plain(text) => f.debug_tuple("Plain").field(text).finish(),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&'a RawValue>::deserialize(deserializer)?;
        let token = raw.get();
        if token.len() >= 2 && token.starts_with('"') && token.ends_with('"') {
            Ok(Text::json(token))
        } else {
            Err(de::Error::custom("stringValue is not a string"))
        }
    }
}

/// What serde_json makes of a token [`unescape_into`] refused (a lone surrogate): its error
/// leaves the text as it stands.
fn slow_decoded(token: &str) -> Cow<'_, str> {
    serde_json::from_str::<String>(token)
        .map(Cow::Owned)
        .unwrap_or(Cow::Borrowed(&token[1..token.len() - 1]))
}

impl<'a> Text<'a> {
    /// A JSON string token, quotes included, whose escapes were not counted.
    pub fn json(token: &'a str) -> Self {
        Text::Json {
            token,
            decoded_len: None,
        }
    }

    /// The token's text between its quotes, and whether it holds an escape: every escape
    /// decodes to fewer bytes than it takes, so a counted length tells without a search.
    fn json_body(token: &str, decoded_len: Option<u32>) -> (&str, bool) {
        let inner = &token[1..token.len() - 1];
        let escaped = match decoded_len {
            Some(len) => len as usize != inner.len(),
            None => inner.contains('\\'),
        };
        (inner, escaped)
    }

    /// The text, unescaped. Borrowed when the JSON had no escapes.
    pub fn decoded(&self) -> Cow<'a, str> {
        match *self {
            Text::Plain(ref text) => text.clone(),
            Text::Json { token, decoded_len } => {
                let (inner, escaped) = Self::json_body(token, decoded_len);
                if !escaped {
                    return Cow::Borrowed(inner);
                }
                let mut text = String::with_capacity(self.decoded_len());
                match unescape_into(inner, &mut text) {
                    true => Cow::Owned(text),
                    false => slow_decoded(token),
                }
            }
        }
    }

    /// `read` of the text, unescaped into a buffer this thread reuses: most texts are read
    /// once (interned, judged empty or not) and need no allocation of their own.
    pub fn with_decoded<R>(&self, read: impl FnOnce(&str) -> R) -> R {
        let (token, decoded_len) = match *self {
            Text::Plain(ref text) => return read(text),
            Text::Json { token, decoded_len } => (token, decoded_len),
        };
        let (inner, escaped) = Self::json_body(token, decoded_len);
        if !escaped {
            return read(inner);
        }
        thread_local! {
            static SCRATCH: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
        }
        let mut scratch = SCRATCH.take();
        scratch.clear();
        let result = match unescape_into(inner, &mut scratch) {
            true => read(&scratch),
            false => read(&slow_decoded(token)),
        };
        // A buffer grown for one huge text is not kept.
        if scratch.capacity() <= 64 << 10 {
            SCRATCH.set(scratch);
        }
        result
    }

    /// An upper bound of the unescaped length, free to compute.
    pub fn raw_len(&self) -> usize {
        match self {
            Text::Plain(text) => text.len(),
            Text::Json { token, .. } => token.len() - 2,
        }
    }

    /// Byte length of the unescaped text, without unescaping it.
    pub fn decoded_len(&self) -> usize {
        match self {
            Text::Plain(text) => text.len(),
            Text::Json {
                decoded_len: Some(len),
                ..
            } => *len as usize,
            Text::Json { token, .. } => unescaped_len(&token[1..token.len() - 1]),
        }
    }

    /// The last bytes of the text (enough to see a truncation marker), unescaped.
    pub fn tail(&self, max: usize) -> Cow<'a, str> {
        match self {
            Text::Plain(text) => {
                let start = floor_char_boundary(text, text.len().saturating_sub(max));
                Cow::Owned(text[start..].to_owned())
            }
            Text::Json { token, .. } => {
                let inner = &token[1..token.len() - 1];
                let mut start = floor_char_boundary(inner, inner.len().saturating_sub(max));
                // Never start inside an escape sequence: step back to the escape's backslash.
                let prefix = &inner.as_bytes()[start.saturating_sub(6)..start];
                if let Some(back) = prefix.iter().rposition(|b| *b == b'\\') {
                    start = start - prefix.len() + back;
                }
                let mut tail = String::with_capacity(max + 8);
                if unescape_into(&inner[start..], &mut tail) {
                    return Cow::Owned(tail);
                }
                let piece = format!("\"{}\"", &inner[start..]);
                serde_json::from_str::<String>(&piece)
                    .map(Cow::Owned)
                    .unwrap_or(Cow::Borrowed(""))
            }
        }
    }
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// A JSON number or a string holding one (int64 as string, enum names, "NaN").
#[derive(Debug, Clone)]
pub enum Scalar<'a> {
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl<'de> Visitor<'de> for ScalarVisitor {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Scalar::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Scalar::UInt(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Scalar::Float(v))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_any(ScalarVisitor)
    }
}

impl Scalar<'_> {
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Scalar::Int(i) => u64::try_from(*i).ok(),
            Scalar::UInt(u) => Some(*u),
            Scalar::Float(f) if *f >= 0.0 && f.fract() == 0.0 => Some(*f as u64),
            Scalar::Float(_) => None,
            Scalar::Str(s) => plain_digits(s).or_else(|| trim_number(s).parse().ok()),
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Scalar::Int(i) => Some(*i),
            Scalar::UInt(u) => i64::try_from(*u).ok(),
            Scalar::Float(f) if f.fract() == 0.0 => Some(*f as i64),
            Scalar::Float(_) => None,
            Scalar::Str(s) => plain_digits(s)
                .and_then(|n| i64::try_from(n).ok())
                .or_else(|| trim_number(s).parse().ok()),
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(i) => Some(*i as f64),
            Scalar::UInt(u) => Some(*u as f64),
            Scalar::Float(f) => Some(*f),
            Scalar::Str(s) => match trim_number(s) {
                "NaN" => Some(f64::NAN),
                "Infinity" => Some(f64::INFINITY),
                "-Infinity" => Some(f64::NEG_INFINITY),
                other => other.parse().ok(),
            },
        }
    }
}

/// The value of a text of 1 to 19 decimal digits and nothing else (a time or an int64 as OTLP/JSON
/// writes it), which cannot overflow, so it skips the checked parse's work. `None` for any
/// other text, which the checked parse then reads.
fn plain_digits(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > 19 {
        return None;
    }
    bytes.iter().try_fold(0u64, |n, &b| {
        let digit = b.wrapping_sub(b'0');
        (digit < 10).then(|| n * 10 + u64::from(digit))
    })
}

/// The number text without surrounding whitespace. Times and int64s are strings in OTLP/JSON,
/// two per span at least; almost none have whitespace, and `trim` walks chars.
fn trim_number(text: &str) -> &str {
    let bytes = text.as_bytes();
    let plain = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_alphanumeric());
    if plain(bytes.first()) && plain(bytes.last()) {
        text
    } else {
        text.trim()
    }
}

/// Something the strict OTLP/JSON encoding forbids but this parser accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Leniency {
    Base64Id,
    EnumName,
}

impl Leniency {
    pub fn describe(self) -> &'static str {
        match self {
            Leniency::Base64Id => {
                "ids are base64 (protobuf canonical JSON), not the hex OTLP/JSON requires"
            }
            Leniency::EnumName => {
                "enums are names like SPAN_KIND_CLIENT (protobuf canonical JSON), not the integers OTLP/JSON requires"
            }
        }
    }
}

/// Why an id was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdError {
    Missing,
    Malformed,
    WrongLength(usize),
    AllZero,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdError::Missing => f.write_str("missing"),
            IdError::Malformed => f.write_str("neither hex nor base64"),
            IdError::WrongLength(n) => write!(f, "{n} bytes long"),
            IdError::AllZero => f.write_str("all zero"),
        }
    }
}

/// Decodes an id written as hex (OTLP/JSON) or base64 (canonical JSON) into `len` bytes.
pub fn decode_id(
    text: Option<&str>,
    len: usize,
    leniencies: &mut Vec<Leniency>,
) -> Result<IdBytes, IdError> {
    let text = text.map(str::trim).unwrap_or("");
    if text.is_empty() {
        return Err(IdError::Missing);
    }
    let bytes = id_bytes(text, leniencies).ok_or(IdError::Malformed)?;
    check_id(&bytes, len)?;
    Ok(bytes)
}

/// An id's bytes as read: trace (16) and span (8) ids stay on the stack, three per span on
/// every line, and ids of other lengths are kept whole for the rule to judge.
pub type IdBytes = smallvec::SmallVec<[u8; 16]>;

/// The bytes an id text encodes, whatever their length.
pub fn id_bytes(text: &str, leniencies: &mut Vec<Leniency>) -> Option<IdBytes> {
    use base64::Engine as _;
    let text = text.trim();
    if text.len().is_multiple_of(2) {
        let mut bytes = IdBytes::from_elem(0, text.len() / 2);
        // Fails on any character that is not a hex digit: such text is read as base64.
        if decode_hex(text.as_bytes(), &mut bytes) {
            return Some(bytes);
        }
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    if !leniencies.contains(&Leniency::Base64Id) {
        leniencies.push(Leniency::Base64Id);
    }
    Some(IdBytes::from_vec(bytes))
}

/// Each byte's value as a hex digit (either case), or `NOT_HEX`.
const HEX_VALUE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut digit = 0;
    while digit < 16 {
        table[b"0123456789abcdef"[digit] as usize] = digit as u8;
        table[b"0123456789ABCDEF"[digit] as usize] = digit as u8;
        digit += 1;
    }
    table
};
const NOT_HEX: u8 = 0xff;

/// Fills `out` from twice as many hex digits; false when any is not one. Three ids per span
/// come through here: a table lookup per digit, where the `hex` crate matched ranges.
fn decode_hex(digits: &[u8], out: &mut [u8]) -> bool {
    if digits.len() != 2 * out.len() {
        return false;
    }
    let mut invalid = 0;
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let (high, low) = (HEX_VALUE[pair[0] as usize], HEX_VALUE[pair[1] as usize]);
        invalid |= high | low;
        *byte = (high << 4) | (low & 0x0f);
    }
    // NOT_HEX has its high bit set, no digit's value has.
    invalid & 0x80 == 0
}

/// The bytes of a parent span id as the one id rule judges them: none (a root) when absent or
/// empty; text that is neither hex nor base64 becomes one byte, refused as any parent of the
/// wrong length is. The builder and the receiver's tolerant JSON decoder both read parents here.
pub fn parent_id_bytes(text: Option<&str>, leniencies: &mut Vec<Leniency>) -> IdBytes {
    match text.map(str::trim) {
        None | Some("") => IdBytes::new(),
        Some(text) => id_bytes(text, leniencies).unwrap_or_else(|| IdBytes::from_elem(0, 1)),
    }
}

/// Checks decoded id bytes: `len` long and not all zero (empty means missing).
pub fn check_id(bytes: &[u8], len: usize) -> Result<(), IdError> {
    if bytes.is_empty() {
        return Err(IdError::Missing);
    }
    if bytes.len() != len {
        return Err(IdError::WrongLength(bytes.len()));
    }
    if bytes.iter().all(|b| *b == 0) {
        return Err(IdError::AllZero);
    }
    Ok(())
}

/// Reads an enum that should be an integer but may be a proto enum name.
pub fn enum_value(
    value: Option<&Scalar>,
    names: &[(&str, i32)],
    leniencies: &mut Vec<Leniency>,
) -> i32 {
    let Some(value) = value else { return 0 };
    if let Some(n) = value.as_i64() {
        return i32::try_from(n).unwrap_or(0);
    }
    if let Scalar::Str(name) = value
        && let Some((_, n)) = names.iter().find(|(k, _)| k.eq_ignore_ascii_case(name))
    {
        if !leniencies.contains(&Leniency::EnumName) {
            leniencies.push(Leniency::EnumName);
        }
        return *n;
    }
    0
}

pub const SPAN_KIND_NAMES: &[(&str, i32)] = &[
    ("SPAN_KIND_UNSPECIFIED", 0),
    ("SPAN_KIND_INTERNAL", 1),
    ("SPAN_KIND_SERVER", 2),
    ("SPAN_KIND_CLIENT", 3),
    ("SPAN_KIND_PRODUCER", 4),
    ("SPAN_KIND_CONSUMER", 5),
];

pub const STATUS_CODE_NAMES: &[(&str, i32)] = &[
    ("STATUS_CODE_UNSET", 0),
    ("STATUS_CODE_OK", 1),
    ("STATUS_CODE_ERROR", 2),
];

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
