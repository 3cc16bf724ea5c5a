//! The detector behind [`super::mask_text`]: one left-to-right scan that finds secrets
//! (credentials in any of their usual spellings) and personal data in free text.
//!
//! Most patterns are tried only where a token starts; provider keys and JWTs are also tried
//! where they start inside a token (`tool_sk-…`, `?key=AIza…`, `/v1/ghp_…/x`), with the
//! facts about each run of key characters gathered once, so the scan stays linear in the text
//! and cheap enough for every cell of every frame.

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

/// Characters of a key in `key=value` text, and of a provider key or JWT: they end at a `/`,
/// `=`, `+` or `~`, where a path segment or query parameter ends.
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

/// The fewest key characters a provider key or JWT takes: shorter runs are not looked into.
const SHORTEST_KEY: usize = {
    let mut shortest = JWT_MIN_LEN;
    let mut i = 0;
    while i < PREFIXES.len() {
        let len = PREFIXES[i].0.len() + PREFIXES[i].1;
        if len < shortest {
            shortest = len;
        }
        i += 1;
    }
    shortest
};

const JWT_MIN_LEN: usize = 24;

/// Bytes a provider key or a JWT (`eyJ`) starts with.
const KEY_FIRST_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < PREFIXES.len() {
        table[PREFIXES[i].0.as_bytes()[0] as usize] = true;
        i += 1;
    }
    table[b'e' as usize] = true;
    table
};

/// A run of key characters inside a token, with what keys starting in it need to know.
#[derive(Default)]
struct KeyRun {
    end: usize,
    /// The dot before the last one: a JWT starting before it holds two dots.
    second_last_dot: Option<usize>,
    /// A body starting here or later was found to hold nothing random (see
    /// [`Scanner::looks_random`]); every later start holds less, so it need not be looked at.
    plain_from: Option<usize>,
}

impl KeyRun {
    fn at(bytes: &[u8], start: usize) -> Self {
        let mut dots = [None, None];
        let mut end = start;
        while end < bytes.len() && is_key_byte(bytes[end]) {
            if bytes[end] == b'.' {
                dots = [dots[1], Some(end)];
            }
            end += 1;
        }
        KeyRun {
            end,
            second_last_dot: dots[0],
            plain_from: None,
        }
    }
}

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
        if KEY_FIRST_BYTES[usize::from(first)] {
            let run = KeyRun::at(b, at);
            if let Some(len) = self.key_in_run(at, &run) {
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

    /// The range of `hit`, found at `at`; the scan goes on after it.
    fn take(&mut self, at: usize, hit: Hit) -> (usize, usize, Found) {
        self.at = at + hit.len.max(1);
        while !self.text.is_char_boundary(self.at) {
            self.at += 1;
        }
        self.floor = at + hit.len;
        (at + hit.keep, at + hit.len, hit.found)
    }

    /// A provider key or JWT starting at `at` in `run`: its length (to the end of the run).
    fn key_in_run(&self, at: usize, run: &KeyRun) -> Option<usize> {
        let b = self.bytes;
        let len = run.end - at;
        if b[at..].starts_with(b"eyJ")
            && len >= JWT_MIN_LEN
            && run.second_last_dot.is_some_and(|dot| dot > at)
        {
            return Some(len);
        }
        PREFIXES
            .iter()
            .any(|&(prefix, min_body)| {
                b[at] == prefix.as_bytes()[0]
                    && b[at..].starts_with(prefix.as_bytes())
                    && len >= prefix.len() + min_body
            })
            .then_some(len)
    }

    /// A secret starting inside the token that ends at `end`, from `from` on: a provider key or
    /// JWT wherever it starts (`tool_sk-…`, `?key=AIza…`, `/v1/ghp_…/x`), and `key=value` or
    /// URL credentials after a `/`, `=` or `~` (`/v1/token=…`, `?next=https://user:pw@…`).
    /// Inside a token a prefix can be a piece of a word (`risk-assessment-…`), so the key's
    /// body must also look random.
    fn inside_token(&self, from: usize, end: usize) -> Option<(usize, Hit)> {
        let b = self.bytes;
        let mut run = KeyRun::default();
        for at in from..end {
            // A `key=` or `scheme://` starts after these; their runs end at the next one, so
            // no text is read twice.
            if matches!(b[at - 1], b'/' | b'=' | b'~')
                && let Some(hit) = self.key_value(at).or_else(|| self.url_credentials(at))
            {
                return Some((at, hit));
            }
            let c = b[at];
            if !is_key_byte(c) {
                continue;
            }
            if at >= run.end {
                run = KeyRun::at(b, at);
            }
            if !KEY_FIRST_BYTES[usize::from(c)] || run.end - at < SHORTEST_KEY {
                continue;
            }
            if let Some(len) = self.key_in_run(at, &run) {
                let body = at + self.prefix_len(at);
                if self.looks_random(body, &mut run) {
                    return Some((at, Hit::whole(len, Found::Secret)));
                }
            }
        }
        None
    }

    /// How much of a provider key or JWT starting at `at` is its fixed prefix.
    fn prefix_len(&self, at: usize) -> usize {
        let rest = &self.bytes[at..];
        PREFIXES
            .iter()
            .filter(|(prefix, _)| rest.starts_with(prefix.as_bytes()))
            .map(|(prefix, _)| prefix.len())
            .max()
            .unwrap_or("eyJ".len())
    }

    /// Whether the key body from `body` to the end of `run` holds something random rather than
    /// words: a stretch of 8 letters and digits with an upper-case letter after its first
    /// character, or of 16 mixing letters and digits. Ordinary text (`assessment-for-the`,
    /// `2024-summary`, the groups of a UUID) does not.
    fn looks_random(&self, body: usize, run: &mut KeyRun) -> bool {
        if run.plain_from.is_some_and(|plain| body >= plain) {
            return false;
        }
        let found = self.bytes[body..run.end]
            .split(|c| !c.is_ascii_alphanumeric())
            .any(|stretch| {
                let upper_inside = stretch.iter().skip(1).any(u8::is_ascii_uppercase);
                let digits = stretch.iter().any(u8::is_ascii_digit);
                let letters = stretch.iter().any(u8::is_ascii_alphabetic);
                (stretch.len() >= 8 && upper_inside) || (stretch.len() >= 16 && digits && letters)
            });
        if !found {
            run.plain_from = Some(body);
        }
        found
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
        if b.get(end).is_some_and(|&c| is_word_byte(c)) {
            return None;
        }
        let groups: Vec<usize> = groups.into_iter().filter(|&g| g > 0).collect();
        let is_phone = |groups: &[usize]| {
            let digits: usize = groups.iter().sum();
            digits <= 15
                && if plus {
                    digits >= 8
                } else {
                    digits >= 10
                        && groups.len() >= 3
                        && groups.last().is_some_and(|&g| g >= 4)
                        && groups.first().is_some_and(|&g| (2..=4).contains(&g))
                }
        };
        if digits <= 15 {
            return is_phone(&groups).then_some(end - at);
        }
        // Digits running on past a phone number (another number right after it, such as a
        // card): the whole run is hidden when it starts with a phone number, since the part
        // after it would otherwise show only because of what precedes it.
        (1..groups.len())
            .any(|n| is_phone(&groups[..n]))
            .then_some(end - at)
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
                return Some(self.take(at, hit));
            }
            if b[at] == b'@'
                && let Some((start, end)) = self.email_around(at)
            {
                self.at = end;
                let start = start.max(self.floor);
                self.floor = end;
                return Some((start, end, Found::Personal));
            }
            let mut next = at + 1;
            if is_token_byte(b[at]) {
                let end = at + self.token_len(at);
                let from = if boundary { at + 1 } else { at };
                if let Some((start, hit)) = self.inside_token(from, end) {
                    return Some(self.take(start, hit));
                }
                next = end;
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
