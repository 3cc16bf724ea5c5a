//! The detector behind [`super::mask_text`]: one left-to-right scan that finds secrets
//! (credentials in any of their usual spellings) and personal data in free text.
//!
//! The scan only tries a match where a token starts, so it is linear in the text and cheap
//! enough for every cell of every frame.

use std::borrow::Cow;

use super::{MASK, is_secret_key};

/// What a masked range held (tests and reports say why something was hidden).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A credential: masked whatever the mode.
    Secret,
    /// Personal data: masked while payloads are redacted.
    Personal,
}

/// Byte ranges of everything sensitive in `text`, in order, not overlapping.
pub fn find_sensitive(text: &str) -> Vec<(usize, usize, Found)> {
    Scanner::new(text).collect()
}

pub(super) fn secret_ranges(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    Scanner::new(text)
        .filter(|r| r.2 == Found::Secret)
        .map(|(s, e, _)| (s, e))
}

/// Texts up to this long have their masked form remembered per thread: names, models and ids
/// repeat on every span, and a lookup is several times cheaper than a scan.
const REMEMBERED_MAX_BYTES: usize = 64;
/// Remembered texts per thread before the memory starts over.
const REMEMBERED_MAX: usize = 4096;

/// Remembered texts → their masked form (`None` when nothing was masked), one table for
/// secrets only and one for secrets and personal data.
type Remembered = [foldhash::HashMap<Box<str>, Option<Box<str>>>; 2];

thread_local! {
    static REMEMBERED: std::cell::RefCell<Remembered> = std::cell::RefCell::default();
}

/// Masks secrets, and personal data too when `personal` is set.
pub(super) fn mask(text: &str, personal: bool) -> Cow<'_, str> {
    if text.len() > REMEMBERED_MAX_BYTES {
        return mask_scanned(text, personal);
    }
    REMEMBERED.with(|remembered| {
        let table = &mut remembered.borrow_mut()[usize::from(personal)];
        if let Some(masked) = table.get(text) {
            return masked
                .as_deref()
                .map_or(Cow::Borrowed(text), |m| Cow::Owned(m.to_owned()));
        }
        let masked = mask_scanned(text, personal);
        if table.len() >= REMEMBERED_MAX {
            table.clear();
        }
        let stored = match &masked {
            Cow::Borrowed(_) => None,
            Cow::Owned(m) => Some(m.as_str().into()),
        };
        table.insert(text.into(), stored);
        masked
    })
}

fn mask_scanned(text: &str, personal: bool) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut last = 0;
    for (start, end, found) in Scanner::new(text) {
        if found == Found::Personal && !personal {
            continue;
        }
        let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
        buf.push_str(&text[last..start]);
        buf.push_str(MASK);
        last = end;
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buf) => {
            buf.push_str(&text[last..]);
            Cow::Owned(buf)
        }
    }
}

/// A match: `len` bytes from where it starts, of which the first `keep` stay visible (the key
/// of `key=value`, the scheme of a URL).
struct Hit {
    keep: usize,
    len: usize,
    found: Found,
}

impl Hit {
    fn whole(len: usize, found: Found) -> Self {
        Hit {
            keep: 0,
            len,
            found,
        }
    }
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    /// End of the last range returned: ranges never overlap.
    floor: usize,
}

/// Characters of a credential-like token (base64, base64url, hex, dotted JWTs).
fn is_token_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
}

/// Characters of a key in `key=value` text.
fn is_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Provider key prefixes and the fewest characters that must follow them.
const PREFIXES: &[(&str, usize)] = &[
    ("sk-", 16),
    ("sk_live_", 16),
    ("sk_test_", 16),
    ("rk_live_", 16),
    ("rk_test_", 16),
    ("ghp_", 20),
    ("gho_", 20),
    ("ghu_", 20),
    ("ghs_", 20),
    ("ghr_", 20),
    ("github_pat_", 20),
    ("glpat-", 16),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("xapp-", 10),
    ("AKIA", 16),
    ("ASIA", 16),
    ("AIza", 30),
    ("hf_", 30),
    ("npm_", 30),
    ("pypi-", 30),
    ("SG.", 30),
    ("shpat_", 20),
    ("dop_v1_", 30),
    ("gsk_", 30),
    ("r8_", 30),
];

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            at: 0,
            floor: 0,
        }
    }

    fn token_len(&self, from: usize) -> usize {
        self.bytes[from.min(self.bytes.len())..]
            .iter()
            .take_while(|&&c| is_token_byte(c))
            .count()
    }

    fn starts_with_ignore_case(&self, at: usize, word: &str) -> bool {
        self.bytes
            .get(at..at + word.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(word.as_bytes()))
    }

    /// A match starting exactly at `at` (a token boundary).
    fn match_at(&self, at: usize) -> Option<Hit> {
        let b = self.bytes;
        let first = b[at];
        // Every pattern below starts with one of these; most boundaries (spaces, quotes,
        // punctuation) are none of them, and are passed without trying each pattern.
        if !(first.is_ascii_alphanumeric() || matches!(first, b'-' | b'_' | b'.' | b'+' | b'(')) {
            return None;
        }
        if first == b'-' && self.starts_with_ignore_case(at, "-----BEGIN ") {
            return Some(Hit::whole(self.pem_len(at), Found::Secret));
        }
        for scheme in ["bearer ", "basic ", "token "] {
            if first.eq_ignore_ascii_case(&scheme.as_bytes()[0])
                && self.starts_with_ignore_case(at, scheme)
            {
                let mut from = at + scheme.len();
                while b.get(from) == Some(&b' ') {
                    from += 1;
                }
                let len = self.token_len(from);
                if len >= 8 {
                    return Some(Hit::whole(from + len - at, Found::Secret));
                }
            }
        }
        for &(prefix, min_body) in PREFIXES {
            if prefix.as_bytes()[0] == first && b[at..].starts_with(prefix.as_bytes()) {
                let len = self.token_len(at);
                if len >= prefix.len() + min_body {
                    return Some(Hit::whole(len, Found::Secret));
                }
            }
        }
        if b[at..].starts_with(b"eyJ") {
            let len = self.token_len(at);
            let token = &self.text[at..at + len];
            if len >= 24 && token.matches('.').count() >= 2 {
                return Some(Hit::whole(len, Found::Secret));
            }
        }
        if let Some(found) = self.key_value(at) {
            return Some(found);
        }
        if let Some(found) = self.url_credentials(at) {
            return Some(found);
        }
        if first.is_ascii_digit() || first == b'+' || first == b'(' {
            if let Some(len) = self.card_number(at) {
                return Some(Hit::whole(len, Found::Personal));
            }
            if let Some(len) = self.phone_number(at) {
                return Some(Hit::whole(len, Found::Personal));
            }
        }
        None
    }

    /// A PEM block through its END line, or to the end of the text when cut off.
    fn pem_len(&self, at: usize) -> usize {
        let rest = &self.text[at..];
        match rest.find("-----END ") {
            Some(end) => {
                let after = end + "-----END ".len();
                match rest[after..].find("-----") {
                    Some(close) => after + close + 5,
                    None => rest.len(),
                }
            }
            None => rest.len(),
        }
    }

    /// `password=…`, `"api_key": "…"`, `token: …`, `\"secret\":\"…\"` (stringified JSON):
    /// a secret-looking key followed by `=` or `:`. The key stays visible, the value is masked.
    fn key_value(&self, at: usize) -> Option<Hit> {
        let b = self.bytes;
        let key_len = b[at..].iter().take_while(|&&c| is_key_byte(c)).count();
        if key_len == 0 {
            return None;
        }
        let mut i = at + key_len;
        // A closing quote of a JSON key, possibly escaped.
        if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'"') {
            i += 2;
        } else if matches!(b.get(i), Some(b'"' | b'\'')) {
            i += 1;
        }
        while b.get(i) == Some(&b' ') {
            i += 1;
        }
        match b.get(i) {
            Some(b'=') => i += 1,
            Some(b':') if !b[i..].starts_with(b"://") => i += 1,
            _ => return None,
        }
        if !is_secret_key(&self.text[at..at + key_len]) {
            return None;
        }
        while matches!(b.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        let value_start = i;
        let end = if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'"') {
            // Stringified JSON: the value ends at the next escaped quote.
            let body = i + 2;
            self.text[body..]
                .find("\\\"")
                .map_or(b.len(), |e| body + e + 2)
        } else if matches!(b.get(i), Some(b'"' | b'\'')) {
            let quote = b[i];
            let mut j = i + 1;
            while j < b.len() && b[j] != quote {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(b.len())
        } else {
            // Unquoted: up to a delimiter; an auth scheme word takes its token with it.
            let mut j = i;
            for scheme in ["bearer ", "basic ", "token "] {
                if self.starts_with_ignore_case(j, scheme) {
                    j += scheme.len();
                    break;
                }
            }
            while j < b.len()
                && !matches!(
                    b[j],
                    b' ' | b'\t'
                        | b'\n'
                        | b'\r'
                        | b','
                        | b';'
                        | b'&'
                        | b'}'
                        | b']'
                        | b')'
                        | b'"'
                        | b'\''
                        | b'<'
                        | b'>'
                )
            {
                j += 1;
            }
            // Keep the scan on char boundaries.
            while !self.text.is_char_boundary(j) {
                j += 1;
            }
            j
        };
        if end <= value_start || self.text[value_start..end] == *MASK {
            return None;
        }
        Some(Hit {
            keep: value_start - at,
            len: end - at,
            found: Found::Secret,
        })
    }

    /// `scheme://user:password@host`: the user information is masked.
    fn url_credentials(&self, at: usize) -> Option<Hit> {
        let b = self.bytes;
        let scheme_len = b[at..]
            .iter()
            .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'.' | b'-'))
            .count();
        if scheme_len == 0 || !b[at + scheme_len..].starts_with(b"://") {
            return None;
        }
        let user_start = at + scheme_len + 3;
        let authority_len = b[user_start..]
            .iter()
            .take_while(|&&c| {
                !matches!(
                    c,
                    b'/' | b'?' | b'#' | b' ' | b'\n' | b'"' | b'\'' | b'<' | b'>'
                )
            })
            .count();
        let authority = &self.text[user_start..user_start + authority_len];
        let at_sign = authority.rfind('@')?;
        if at_sign == 0 {
            return None;
        }
        Some(Hit {
            keep: user_start - at,
            len: user_start + at_sign - at,
            found: Found::Secret,
        })
    }

    /// 13–19 digits (single spaces or dashes between groups allowed) with a card issuer's
    /// first digit that pass the Luhn check.
    fn card_number(&self, at: usize) -> Option<usize> {
        let b = self.bytes;
        if !matches!(b[at], b'2'..=b'6') {
            return None;
        }
        let mut digits = Vec::with_capacity(19);
        let mut i = at;
        let mut end = at;
        while i < b.len() && digits.len() < 20 {
            match b[i] {
                c if c.is_ascii_digit() => {
                    digits.push(c - b'0');
                    i += 1;
                    end = i;
                }
                b' ' | b'-' if b.get(i + 1).is_some_and(u8::is_ascii_digit) && i > at => i += 1,
                _ => break,
            }
        }
        if !(13..=19).contains(&digits.len()) || b.get(end).is_some_and(|&c| is_word_byte(c)) {
            return None;
        }
        let sum: u32 = digits
            .iter()
            .rev()
            .enumerate()
            .map(|(k, &d)| {
                let d = d as u32;
                if k % 2 == 1 {
                    let x = d * 2;
                    if x > 9 { x - 9 } else { x }
                } else {
                    d
                }
            })
            .sum();
        sum.is_multiple_of(10).then_some(end - at)
    }

    /// International numbers (`+` then 8–15 digits) and grouped national ones such as
    /// `(555) 123-4567` or `555.123.4567`: 10–15 digits in at least three groups, the last of
    /// at least four digits. Dates and times do not fit that shape.
    fn phone_number(&self, at: usize) -> Option<usize> {
        let b = self.bytes;
        let plus = b[at] == b'+';
        let mut i = at + usize::from(plus);
        let mut digits = 0;
        let mut groups: Vec<usize> = vec![0];
        let mut end = i;
        let mut open_paren = false;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_digit() {
                digits += 1;
                *groups.last_mut().expect("never empty") += 1;
                i += 1;
                end = i;
            } else if c == b'(' && !open_paren && *groups.last().expect("never empty") == 0 {
                open_paren = true;
                i += 1;
            } else if c == b')' && open_paren {
                open_paren = false;
                i += 1;
                end = i;
                if b.get(i) == Some(&b' ') {
                    i += 1;
                }
                groups.push(0);
            } else if matches!(c, b' ' | b'-' | b'.')
                && b.get(i + 1)
                    .is_some_and(|&n| n.is_ascii_digit() || n == b'(')
                && *groups.last().expect("never empty") > 0
            {
                groups.push(0);
                i += 1;
            } else {
                break;
            }
        }
        if b.get(end).is_some_and(|&c| is_word_byte(c)) || digits > 15 {
            return None;
        }
        let groups: Vec<usize> = groups.into_iter().filter(|&g| g > 0).collect();
        let ok = if plus {
            digits >= 8
        } else {
            digits >= 10
                && groups.len() >= 3
                && groups.last().is_some_and(|&g| g >= 4)
                && groups.first().is_some_and(|&g| (2..=4).contains(&g))
        };
        ok.then_some(end - at)
    }

    /// An e-mail address around the `@` at `at_sign`: start and end of the whole address.
    fn email_around(&self, at_sign: usize) -> Option<(usize, usize)> {
        let b = self.bytes;
        let local =
            |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'%' | b'+' | b'-');
        let mut start = at_sign;
        while start > 0 && local(b[start - 1]) {
            start -= 1;
        }
        let domain_byte = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-');
        let mut end = at_sign + 1;
        while end < b.len() && domain_byte(b[end]) {
            end += 1;
        }
        while end > at_sign + 1 && b[end - 1] == b'.' {
            end -= 1;
        }
        let domain = &self.text[at_sign + 1..end];
        let tld = domain.rsplit('.').next().unwrap_or("");
        let ok = start < at_sign
            && domain.contains('.')
            && tld.len() >= 2
            && tld.bytes().all(|c| c.is_ascii_alphabetic());
        ok.then_some((start, end))
    }
}

impl Iterator for Scanner<'_> {
    type Item = (usize, usize, Found);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.bytes;
        while self.at < b.len() {
            let at = self.at;
            let boundary = at == 0 || !is_token_byte(b[at - 1]);
            if boundary && let Some(hit) = self.match_at(at) {
                self.at = at + hit.len.max(1);
                while !self.text.is_char_boundary(self.at) {
                    self.at += 1;
                }
                self.floor = at + hit.len;
                return Some((at + hit.keep, at + hit.len, hit.found));
            }
            if b[at] == b'@'
                && let Some((start, end)) = self.email_around(at)
            {
                self.at = end;
                let start = start.max(self.floor);
                self.floor = end;
                return Some((start, end, Found::Personal));
            }
            // Skip the rest of this token: matches only start at boundaries.
            let mut next = at + 1;
            if is_token_byte(b[at]) {
                while next < b.len() && is_token_byte(b[next]) {
                    next += 1;
                }
            }
            while next < b.len() && !self.text.is_char_boundary(next) {
                next += 1;
            }
            self.at = next;
        }
        None
    }
}

#[cfg(test)]
mod tests;
