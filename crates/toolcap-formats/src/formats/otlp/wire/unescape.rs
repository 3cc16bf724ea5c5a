//! JSON string bodies unescaped without a parser: a token the wire parser kept raw is read
//! once, for its value or its state, without serde_json's own route (a fresh deserializer, its
//! growing scratch buffer, then a `String`), which is costly on every token of a load.

/// Appends the unescaped `body` (a JSON string token without its quotes) to `out`, as
/// serde_json would decode it. False, with `out` part-written, for what serde_json refuses
/// when decoding a string: a raw control character, an unknown escape, a cut escape or a
/// lone surrogate; the caller then asks serde_json, so both agree on every input.
pub(super) fn unescape_into(body: &str, out: &mut String) -> bool {
    let bytes = body.as_bytes();
    let mut copied = 0;
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b'\\', &bytes[at..]) {
        let escape = at + offset;
        let run = &body[copied..escape];
        if run.bytes().any(|b| b < 0x20) {
            return false;
        }
        out.push_str(run);
        let (decoded, length) = match bytes.get(escape + 1) {
            Some(b'"') => ('"', 2),
            Some(b'\\') => ('\\', 2),
            Some(b'/') => ('/', 2),
            Some(b'b') => ('\u{8}', 2),
            Some(b'f') => ('\u{c}', 2),
            Some(b'n') => ('\n', 2),
            Some(b'r') => ('\r', 2),
            Some(b't') => ('\t', 2),
            Some(b'u') => match unicode_escape(bytes, escape) {
                Some(found) => found,
                None => return false,
            },
            _ => return false,
        };
        out.push(decoded);
        at = escape + length;
        copied = at;
    }
    let rest = &body[copied..];
    if rest.bytes().any(|b| b < 0x20) {
        return false;
    }
    out.push_str(rest);
    true
}

/// The character of the `\uXXXX` escape at `escape` (two of them for a surrogate pair) and
/// the escape's length in bytes.
fn unicode_escape(bytes: &[u8], escape: usize) -> Option<(char, usize)> {
    let unit = hex4(bytes.get(escape + 2..escape + 6)?)?;
    match unit {
        0xd800..=0xdbff => {
            if bytes.get(escape + 6..escape + 8)? != b"\\u" {
                return None;
            }
            let low = hex4(bytes.get(escape + 8..escape + 12)?)?;
            if !(0xdc00..=0xdfff).contains(&low) {
                return None;
            }
            let code = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
            Some((char::from_u32(code)?, 12))
        }
        0xdc00..=0xdfff => None,
        _ => Some((char::from_u32(unit)?, 6)),
    }
}

pub(super) fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |value, digit| {
        Some(value << 4 | char::from(*digit).to_digit(16)?)
    })
}

/// Length of a JSON string body once unescaped.
pub(super) fn unescaped_len(body: &str) -> usize {
    let bytes = body.as_bytes();
    // Jump from escape to escape: payload text is mostly plain runs between them.
    let mut len = bytes.len();
    let mut i = 0;
    while let Some(offset) = bytes.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + offset;
        if bytes.get(at + 1) != Some(&b'u') {
            len = len.saturating_sub(1);
            i = at + 2;
            continue;
        }
        let code = body
            .get(at + 2..at + 6)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .unwrap_or(0);
        let (escaped, decoded) = match code {
            0..=0x7f => (6, 1),
            0x80..=0x7ff => (6, 2),
            // A high surrogate plus its low surrogate encode one 4-byte character.
            0xd800..=0xdbff => (12, 4),
            _ => (6, 3),
        };
        len = len.saturating_sub(escaped - decoded);
        i = at + escaped;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde_json makes of the token, or None where it refuses it.
    fn by_serde(body: &str) -> Option<String> {
        serde_json::from_str::<String>(&format!("\"{body}\"")).ok()
    }

    #[test]
    fn every_escape_decodes_as_serde_json_decodes_it_or_is_refused_where_serde_refuses() {
        let bodies = [
            "",
            "plain text",
            r#"say \"hi\"\n"#,
            r#"\\\/\b\f\n\r\t"#,
            r#"caf\u00e9 \u2026 \ud83d\ude00 end"#,
            r#"\u0000\u001f\u007f\u0080\u07ff\u0800\uffff"#,
            r#"\uD83D\uDE00 upper-case digits"#,
            r#"lone high \ud83d then text"#,
            r#"lone low \ude00"#,
            r#"high then wrong low \ud83d\u0041"#,
            r#"cut \u12"#,
            r#"cut at the end \"#,
            r#"unknown \x escape"#,
            "raw control \u{1} char",
            "raw tab\tinside",
            "non-ASCII \u{e9}\u{1F600} kept",
            r#"\u00"#,
            r#"\ud83d\u"#,
        ];
        for body in bodies {
            let mut out = String::new();
            let ours = unescape_into(body, &mut out).then_some(out);
            assert_eq!(ours, by_serde(body), "{body:?}");
        }
    }

    #[test]
    fn decoded_length_is_the_length_of_the_decoded_text() {
        for body in [r#"a\"b\\c\n"#, r#"caf\u00e9 \u2026 \ud83d\ude00"#, "plain"] {
            let mut out = String::new();
            assert!(unescape_into(body, &mut out));
            assert_eq!(unescaped_len(body), out.len(), "{body}");
        }
    }
}
