//! Redaction and terminal hygiene, shared by every view and export.
//!
//! Redacted (the default), a payload shows its structure — keys, types, sizes — and no values.
//! Revealed, values show, except those under secret-looking keys and secret-looking strings.
//! Every string that reaches a screen passes [`sanitize`], because trace data is untrusted.

use std::borrow::Cow;

use serde_json::{Map, Value};

mod keys;
mod mask;
mod shape_scan;

pub use keys::{KeyRules, can_hold_content, hides_value, is_payload_key, is_secret_key, key_rules};

pub use shape_scan::redacted_payload;

pub use mask::{Found, find_sensitive};

pub const MASK: &str = "••••••";

/// How payload values are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reveal {
    /// Structure only: keys, types and sizes.
    #[default]
    Redacted,
    /// Values shown; secrets still masked.
    Revealed,
}

impl Reveal {
    pub fn from_flag(reveal: bool) -> Self {
        if reveal {
            Reveal::Revealed
        } else {
            Reveal::Redacted
        }
    }
    pub fn toggled(self) -> Self {
        match self {
            Reveal::Redacted => Reveal::Revealed,
            Reveal::Revealed => Reveal::Redacted,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Reveal::Redacted => "REDACTED",
            Reveal::Revealed => "REVEALED (secrets masked)",
        }
    }
}

/// The one masking pass for free text that is not a payload (names, error messages, attribute
/// values, problems, search results, copies, reports): secrets are always masked; personal
/// data (e-mail addresses, phone and card numbers) is masked unless payloads are revealed.
/// The result is still raw text: pass it through [`sanitize_line`] (or use [`shown_line`])
/// before it reaches a terminal.
pub fn mask_text(text: &str, mode: Reveal) -> Cow<'_, str> {
    mask::mask(text, mode == Reveal::Redacted)
}

/// A span's error message as views show it: masked like any free text; when the message is
/// the failed tool's result (a payload), redacted views get only its size.
pub fn error_message(error: &crate::model::ErrorInfo, mode: Reveal) -> Option<String> {
    let message = error.message.as_deref()?;
    if error.message_is_result && mode == Reveal::Redacted {
        return Some(format!(
            "tool result hidden ({} chars; reveal to show)",
            message.chars().count()
        ));
    }
    Some(mask_text(message, mode).into_owned())
}

/// Free text ready for a one-line terminal cell under `mode`: masked, then made inert.
pub fn shown_line(text: &str, mode: Reveal) -> String {
    let mut line = String::new();
    push_shown_line(&mut line, text, mode);
    line
}

/// [`shown_line`], appended to `out`: views that write many lines (`dump`) spare an allocation
/// per cell. Text the mask leaves alone holds no secret for [`sanitize_line`]'s own pass to
/// find either (it masks a subset), so printable ASCII goes straight through.
pub fn push_shown_line(out: &mut String, text: &str, mode: Reveal) {
    if text.len() > REMEMBERED_LINE_MAX_BYTES {
        return push_shown_line_scanned(out, text, mode);
    }
    SHOWN_LINES.with(|remembered| {
        let mut remembered = remembered.borrow_mut();
        let lines = &mut remembered[usize::from(mode == Reveal::Redacted)];
        if let Some(shown) = lines.get(text) {
            out.push_str(shown);
            return;
        }
        let start = out.len();
        push_shown_line_scanned(out, text, mode);
        if lines.len() >= REMEMBERED_LINES {
            lines.clear();
        }
        lines.insert(text.into(), out[start..].into());
    })
}

/// Short texts shown again and again (span names, tools, models repeat from span to span) are
/// remembered as shown, per thread and mode: looking one up costs less than masking it again
/// (figure in docs/PERFORMANCE.md).
const REMEMBERED_LINE_MAX_BYTES: usize = 64;
/// Texts remembered per thread and mode before the memory starts over.
const REMEMBERED_LINES: usize = 1024;

type ShownLines = foldhash::HashMap<Box<str>, Box<str>>;

thread_local! {
    /// Indexed by whether the mode redacts.
    static SHOWN_LINES: std::cell::RefCell<[ShownLines; 2]> = Default::default();
}

fn push_shown_line_scanned(out: &mut String, text: &str, mode: Reveal) {
    match mask_text(text, mode) {
        Cow::Borrowed(unmasked) if unmasked.bytes().all(|b| (0x20..0x7f).contains(&b)) => {
            out.push_str(unmasked)
        }
        masked => out.push_str(&sanitize_line(&masked)),
    }
}

/// Free text ready for a multi-line terminal pane under `mode`: masked, then made inert.
pub fn shown(text: &str, mode: Reveal) -> String {
    sanitize(&mask_text(text, mode))
}

/// Free text for machine-readable output (`dump --json`, exports): masked under `mode`, and
/// invisible characters (zero-width, bidi controls, Unicode tags) written as visible
/// `\u{…}` escapes so a consumer printing the value cannot be fooled; control characters are
/// left to the JSON writer, which escapes them (with [`escape_json_text`]).
pub fn shown_data(text: &str, mode: Reveal) -> Cow<'_, str> {
    let masked = mask_text(text, mode);
    // Every invisible character is outside ASCII, which most texts never leave.
    if masked.is_ascii() || !masked.chars().any(is_invisible) {
        return masked;
    }
    let mut out = String::with_capacity(masked.len() + 16);
    for c in masked.chars() {
        if is_invisible(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Serialized JSON with every character a terminal or a reader could be fooled by written as a
/// `\uXXXX` escape: DEL, C1 controls (a terminal obeys `\u{9b}` as it does `ESC [`), U+2028 and
/// U+2029 (line breaks to JavaScript and many viewers) and the [`is_invisible`] ones. serde_json
/// escapes only C0 controls. Outside strings JSON is ASCII, so these can only sit inside strings,
/// where the escape stands for the same character: the data is unchanged. JSON text the program
/// prints or writes is meant to pass through this (`dump --json` uses [`escape_json_bytes`]).
pub fn escape_json_text(json: &str) -> Cow<'_, str> {
    let bytes = json.as_bytes();
    let Some((mut at, mut c)) = next_json_hazard(bytes, 0) else {
        return Cow::Borrowed(json);
    };
    let mut out = String::with_capacity(json.len() + 16);
    let mut done = 0;
    loop {
        out.push_str(&json[done..at]);
        for unit in c.encode_utf16(&mut [0; 2]) {
            out.push_str(&format!("\\u{unit:04x}"));
        }
        done = at + c.len_utf8();
        match next_json_hazard(bytes, done) {
            Some(next) => (at, c) = next,
            None => break,
        }
    }
    out.push_str(&json[done..]);
    Cow::Owned(out)
}

/// [`escape_json_text`] in place, for the part of `json` from byte `from` on (a document
/// written piece by piece).
pub fn escape_json_bytes(json: &mut Vec<u8>, from: usize) {
    let Some((first, _)) = next_json_hazard(json, from) else {
        return;
    };
    // serde_json writes UTF-8; anything else is left as it is.
    match String::from_utf8(json.split_off(first)) {
        Ok(tail) => json.extend_from_slice(escape_json_text(&tail).as_bytes()),
        Err(not_text) => json.extend_from_slice(not_text.as_bytes()),
    }
}

/// The next character from byte `from` on that [`escape_json_text`] rewrites: where it starts,
/// and the character. Only a few first bytes can start one (DEL, and the UTF-8 lead bytes of
/// C1 controls, U+2028/2029 and the invisible characters), so most text, whatever its
/// script, is passed over a byte at a time without being decoded.
fn next_json_hazard(bytes: &[u8], from: usize) -> Option<(usize, char)> {
    const CHUNK: usize = 32;
    let mut at = from;
    while at < bytes.len() {
        let end = (at + CHUNK).min(bytes.len());
        // Printable ASCII, most of any document, is passed over a chunk at a time: the test
        // has no early exit, so it compiles to a few vector instructions.
        if bytes[at..end]
            .iter()
            .fold(0, |seen, &b| seen | u8::from(b >= 0x7f))
            != 0
        {
            for start in at..end {
                if let Some(c) = json_hazard_at(bytes, start) {
                    return Some((start, c));
                }
            }
        }
        at = end;
    }
    None
}

/// The character starting at byte `at` when [`needs_json_escape`] holds for it.
fn json_hazard_at(bytes: &[u8], at: usize) -> Option<char> {
    let width = match bytes[at] {
        b if !may_start_json_hazard(b) => return None,
        0x7f => 1,
        0xc2 | 0xd8 => 2,
        0xf3 => 4,
        _ => 3,
    };
    let text = std::str::from_utf8(bytes.get(at..at + width)?).ok()?;
    text.chars().next().filter(|&c| needs_json_escape(c))
}

/// Whether `b` can be the first byte of a character [`needs_json_escape`] (kept in step by a
/// test over every character).
fn may_start_json_hazard(b: u8) -> bool {
    matches!(b, 0x7f | 0xc2 | 0xd8 | 0xe1 | 0xe2 | 0xef | 0xf3)
}

fn needs_json_escape(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}') || is_invisible(c)
}

/// Characters that change what a reader sees without being seen: zero-width characters,
/// bidi controls, invisible operators and the Unicode tag block (which can smuggle a whole
/// hidden ASCII message).
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{ad}'
        | '\u{61c}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{e0000}'..='\u{e007f}')
}

/// Makes untrusted text inert for a terminal: C0/C1 control characters and DEL become visible
/// control pictures (so `ESC[2J` shows as `␛[2J`), bidi overrides are shown escaped. Newlines
/// and tabs are kept; use [`sanitize_line`] for single-line cells.
pub fn sanitize(text: &str) -> String {
    let text = mask::mask(text, false);
    if text
        .bytes()
        .all(|b| b == b'\n' || (0x20..0x7f).contains(&b))
    {
        return text.into_owned();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_inert(&mut out, c, true);
    }
    out
}

/// Like [`sanitize`], for one-line cells: newlines show as `⏎`, tabs as a space.
pub fn sanitize_line(text: &str) -> String {
    let text = mask::mask(text, false);
    // Most cells are printable ASCII, which has nothing to replace.
    if text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return text.into_owned();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_inert(&mut out, c, false);
    }
    out
}

fn push_inert(out: &mut String, c: char, multiline: bool) {
    match c {
        '\n' if multiline => out.push('\n'),
        '\n' => out.push('⏎'),
        '\t' if multiline => out.push_str("    "),
        '\t' => out.push(' '),
        '\r' => out.push('␍'),
        '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
        '\u{7f}' => out.push('␡'),
        '\u{80}'..='\u{9f}' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        // Bidi controls can reorder what the user reads; zero-width and tag characters hide
        // text or differences.
        c if is_invisible(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        _ => out.push(c),
    }
}

/// Strings that look like credentials wherever they appear.
pub fn is_secret_value(text: &str) -> bool {
    crate::redact::mask::secret_ranges(text).next().is_some()
}

/// Replaces secret-looking parts of free text with [`MASK`] (whatever the mode).
pub fn mask_secrets_in_text(text: &str) -> String {
    mask::mask(text, false).into_owned()
}

/// Masks values under secret-looking keys and secret-looking strings, recursively.
pub fn mask_secrets(value: &mut Value) {
    match value {
        Value::Object(map) => {
            // A key can be a secret too (a token used as a map key).
            if map.keys().any(|key| is_secret_value(key)) {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(key, v)| (mask_secrets_in_text(&key), v))
                    .collect();
            }
            for (key, v) in map.iter_mut() {
                if is_secret_key(key) && !v.is_null() {
                    *v = Value::String(MASK.into());
                } else {
                    mask_secrets(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_secrets),
        Value::String(s) if is_secret_value(s) => *s = mask_secrets_in_text(s),
        _ => {}
    }
}

/// A payload's text, parsed when it is JSON. serde_json's recursion limit turns absurdly deep
/// nesting into an error (shown as text), never a stack overflow.
#[derive(Debug, Clone, PartialEq)]
pub enum PayloadValue {
    Json(Value),
    Text(String),
}

/// Parses a payload and unescapes stringified JSON inside it (`"{\"a\":1}"` shows as JSON).
pub fn parse_payload(text: &str) -> PayloadValue {
    match serde_json::from_str::<Value>(text) {
        Ok(mut value) => {
            unstring_nested_json(&mut value, 0);
            PayloadValue::Json(value)
        }
        Err(_) => PayloadValue::Text(text.to_owned()),
    }
}

/// How deep strings holding JSON are still unpacked.
const UNSTRING_MAX_DEPTH: usize = 8;

/// Replaces strings that hold a JSON object or array with the parsed value (bounded depth).
pub fn unstring_nested_json(value: &mut Value, depth: usize) {
    if depth > UNSTRING_MAX_DEPTH {
        return;
    }
    match value {
        Value::String(s) => {
            let trimmed = s.trim_start();
            if (trimmed.starts_with('{') || trimmed.starts_with('['))
                && let Ok(mut inner) = serde_json::from_str::<Value>(s)
            {
                unstring_nested_json(&mut inner, depth + 1);
                *value = inner;
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| unstring_nested_json(v, depth + 1)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| unstring_nested_json(v, depth + 1)),
        _ => {}
    }
}

/// The structure of a value with every leaf replaced by its type and size: what the redacted
/// pane and `dump --json` show. Arrays list their first few element shapes.
pub fn shape(value: &Value) -> Value {
    shape_at(value, 0)
}

const SHAPE_ITEMS: usize = 3;
const SHAPE_DEPTH: usize = 12;

fn shape_at(value: &Value, depth: usize) -> Value {
    match value {
        Value::Null => Value::String("null".into()),
        Value::Bool(_) => Value::String("bool".into()),
        Value::Number(n) if n.is_f64() => Value::String("float".into()),
        Value::Number(_) => Value::String("int".into()),
        Value::String(s) => Value::String(format!("string ({} chars)", s.chars().count())),
        Value::Array(items) if depth >= SHAPE_DEPTH => {
            Value::String(format!("array ({} items)", items.len()))
        }
        Value::Object(map) if depth >= SHAPE_DEPTH => {
            Value::String(format!("object ({} keys)", map.len()))
        }
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(SHAPE_ITEMS)
                .map(|v| shape_at(v, depth + 1))
                .collect();
            if items.len() > SHAPE_ITEMS {
                out.push(Value::String(format!(
                    "… {} more items",
                    items.len() - SHAPE_ITEMS
                )));
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            let out: Map<String, Value> = map
                .iter()
                .map(|(k, v)| (shown_key(k), shape_at(v, depth + 1)))
                .collect();
            Value::Object(out)
        }
    }
}

/// A payload key in the redacted shape: masked as a value there would be (secrets and
/// personal data), since a key can hold either, then made inert.
fn shown_key(key: &str) -> String {
    shown_line(key, Reveal::Redacted)
}

/// Text that quotes what a model produced outside its payloads (an Inspect scorer's answer and
/// explanation, which repeat the completion): its length while redacted, like the payload it
/// quotes; revealed, the text with secrets and personal data masked.
pub fn shown_quote(text: &str, mode: Reveal) -> String {
    match mode {
        Reveal::Redacted => format!("text ({} chars)", text.chars().count()),
        Reveal::Revealed => shown_data(text, mode).into_owned(),
    }
}

/// A payload prepared for display under the given mode: redacted → its shape; revealed →
/// the value with secrets masked. Text payloads redact to their length.
pub fn present(value: &PayloadValue, mode: Reveal) -> PayloadValue {
    match (value, mode) {
        (PayloadValue::Json(v), Reveal::Redacted) => PayloadValue::Json(shape(v)),
        (PayloadValue::Json(v), Reveal::Revealed) => {
            let mut v = v.clone();
            mask_secrets(&mut v);
            PayloadValue::Json(v)
        }
        (PayloadValue::Text(t), Reveal::Redacted) => PayloadValue::Text(format!(
            "text ({} chars, {} lines)",
            t.chars().count(),
            t.lines().count()
        )),
        (PayloadValue::Text(t), Reveal::Revealed) => PayloadValue::Text(mask_secrets_in_text(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_appended_in_place_is_the_mask_then_the_sanitizer() {
        let texts = [
            "chat gpt-4o",
            "mail ada@example.com now",
            "Authorization: Bearer sk-abcdefghijklmnopqrstuvwx",
            "tab\there\u{1b}[2J",
            "ok\u{200b}hidden",
            "",
            "a text longer than any remembered line, with a key sk-abcdefghijklmnopqrstuvwx in it",
        ];
        // The second round finds the short texts remembered: the same lines either way.
        for _round in 0..2 {
            for mode in [Reveal::Redacted, Reveal::Revealed] {
                for text in texts {
                    let mut line = String::from("before ");
                    push_shown_line(&mut line, text, mode);
                    let expected = format!("before {}", sanitize_line(&mask_text(text, mode)));
                    assert_eq!(line, expected, "{text:?} {mode:?}");
                }
            }
        }
    }

    #[test]
    fn remembered_lines_are_bounded() {
        let mut line = String::new();
        for i in 0..REMEMBERED_LINES + 10 {
            push_shown_line(&mut line, &format!("span {i}"), Reveal::Redacted);
        }
        SHOWN_LINES.with(|remembered| {
            let remembered = remembered.borrow();
            assert!((1..=REMEMBERED_LINES).contains(&remembered[1].len()));
        });
    }

    #[test]
    fn escape_sequences_become_inert() {
        let hostile = "a\u{1b}[2Jb\u{1b}]52;c;SGVsbG8=\u{7}c\u{9b}d";
        let clean = sanitize(hostile);
        assert!(!clean.contains('\u{1b}'));
        assert!(!clean.contains('\u{7}'));
        assert!(!clean.contains('\u{9b}'));
        assert!(clean.contains("␛[2J"));
        assert_eq!(sanitize_line("a\nb"), "a⏎b");
    }

    #[test]
    fn invisible_and_tag_characters_become_visible_escapes() {
        let hidden = "ok\u{e0041}\u{e007f}\u{200b}\u{2066}\u{feff}\u{ad}end";
        let shown = sanitize_line(hidden);
        assert_eq!(
            shown,
            r"ok\u{e0041}\u{e007f}\u{200b}\u{2066}\u{feff}\u{ad}end"
        );
        assert_eq!(shown_data(hidden, Reveal::Redacted), shown);
        // Visible non-ASCII text is left alone.
        assert_eq!(sanitize_line("café 東京 ✓"), "café 東京 ✓");
    }

    #[test]
    fn json_escapes_hazards_and_keeps_the_data() {
        let value = json!({"k\u{9b}": "a\u{85}b\u{2028}c\u{2029}d\u{7f}e\u{202e}f\u{e0041}g é ✓"});
        let text = serde_json::to_string(&value).unwrap();
        let escaped = escape_json_text(&text);
        assert_eq!(
            escaped,
            r#"{"k\u009b":"a\u0085b\u2028c\u2029d\u007fe\u202ef\udb40\udc41g é ✓"}"#
        );
        assert_eq!(serde_json::from_str::<Value>(&escaped).unwrap(), value);
        let mut bytes = b"[1,".to_vec();
        bytes.extend_from_slice(text.as_bytes());
        escape_json_bytes(&mut bytes, 3);
        assert_eq!(bytes, format!("[1,{escaped}").into_bytes());
        assert!(matches!(
            escape_json_text("{\"a\":\"é•…\"}"),
            Cow::Borrowed(_)
        ));
        // Wherever a hazard falls against the chunks the scan reads.
        for pad in 0..70 {
            let text = format!("{}\u{2028}é\u{e0041}", "a".repeat(pad));
            let expected = format!(r"{}\u2028é\udb40\udc41", "a".repeat(pad));
            assert_eq!(escape_json_text(&text), expected, "{pad}");
        }
    }

    #[test]
    fn every_character_json_escapes_starts_with_a_byte_the_scan_looks_at() {
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            if needs_json_escape(c) {
                let mut utf8 = [0; 4];
                let first = c.encode_utf8(&mut utf8).as_bytes()[0];
                assert!(may_start_json_hazard(first), "U+{:04X}", c as u32);
            }
        }
    }

    #[test]
    fn secret_strings_are_found_inside_text() {
        let text = "use sk-abcdefghijklmnopqrstuv and Bearer abc.def-ghij123 please";
        let masked = mask_secrets_in_text(text);
        assert!(!masked.contains("sk-abc"));
        assert!(!masked.contains("abc.def"));
        assert!(masked.starts_with("use ••••••"));
        assert!(!is_secret_value("sk-short"));
        assert!(!is_secret_value("task-abcdefghijklmnopqrstuvwxyz"));
    }

    #[test]
    fn redacted_shape_has_keys_and_sizes_but_no_values() {
        let value = json!({"city": "Paris", "days": 3, "tags": ["a", "b", "c", "d"]});
        let shown = shape(&value).to_string();
        assert!(shown.contains("city"));
        assert!(shown.contains("string (5 chars)"));
        assert!(!shown.contains("Paris"));
        assert!(shown.contains("1 more items"));
    }

    #[test]
    fn payload_keys_are_masked_as_values_are() {
        let text = r#"{"jane.roe@example.org": 1, "4111 1111 1111 1111": {"x": 2},
            "tool_sk-proj-Q7vX2mLp9RtY4wZ8nB3kJ6hF1dS5aG0c": "v"}"#;
        let PayloadValue::Json(scanned) = redacted_payload(text) else {
            panic!("json")
        };
        let PayloadValue::Json(built) = present(&parse_payload(text), Reveal::Redacted) else {
            panic!("json")
        };
        for redacted in [scanned.to_string(), built.to_string()] {
            for hidden in ["jane.roe", "1111 1111", "Q7vX2mLp9"] {
                assert!(!redacted.contains(hidden), "{hidden} in {redacted}");
            }
            assert!(redacted.contains("tool_"), "{redacted}");
        }
        // Revealed, personal data shows; a secret never does, key or value.
        let PayloadValue::Json(revealed) = present(&parse_payload(text), Reveal::Revealed) else {
            panic!("json")
        };
        let revealed = revealed.to_string();
        assert!(revealed.contains("jane.roe@example.org"), "{revealed}");
        assert!(!revealed.contains("Q7vX2mLp9"), "{revealed}");
        assert!(revealed.contains(r#""tool_••••••":"v""#), "{revealed}");
    }

    #[test]
    fn revealed_masks_secret_keys_and_values() {
        let value = json!({"q": "hi", "api_key": "x", "nested": {"h": "Bearer abcdefghijk"}});
        let PayloadValue::Json(shown) = present(&PayloadValue::Json(value), Reveal::Revealed)
        else {
            panic!("json stays json")
        };
        assert_eq!(shown["q"], "hi");
        assert_eq!(shown["api_key"], MASK);
        assert_eq!(shown["nested"]["h"], MASK);
    }

    #[test]
    fn stringified_json_is_unescaped_and_deep_json_does_not_crash() {
        let PayloadValue::Json(v) = parse_payload(r#"{"args": "{\"city\": \"Oslo\"}"}"#) else {
            panic!("parses")
        };
        assert_eq!(v["args"]["city"], "Oslo");
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(matches!(parse_payload(&deep), PayloadValue::Text(_)));
    }
}
