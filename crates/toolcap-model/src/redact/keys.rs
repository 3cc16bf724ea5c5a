//! What an attribute key says about its values: secret (masked even when revealed), or
//! payload content (hidden while redacted). Both read the key word by word, the same way.

use crate::model::AttrValue;

/// Whether the redacted view hides `value`, held under `key`: text, lists and maps under a
/// payload key ([`is_payload_key`]); numbers and flags stay visible. The detail pane, search
/// and the search index all ask this.
pub fn hides_value(key: &str, value: &AttrValue) -> bool {
    key_rules(key).hides(value)
}

/// What a key says about the values held under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRules {
    /// [`is_secret_key`]: masked even when revealed.
    pub secret: bool,
    /// [`is_payload_key`]: its text, lists and maps are hidden while redacted.
    pub payload: bool,
}

impl KeyRules {
    /// [`hides_value`] for a value under this key.
    pub fn hides(self, value: &AttrValue) -> bool {
        self.payload && can_hold_content(value)
    }
}

/// Keys whose rules a thread remembers (see [`key_rules`]).
const MAX_REMEMBERED_KEYS: usize = 4096;

/// The rules of `key`, remembered per thread for as many keys as [`MAX_REMEMBERED_KEYS`]: a
/// search, the index and the detail pane ask of every attribute of every span, the same few
/// keys come with every span, and the rules read a key word by word (what asking afresh costs
/// is in docs/PERFORMANCE.md).
pub fn key_rules(key: &str) -> KeyRules {
    thread_local! {
        static RULES: std::cell::RefCell<foldhash::HashMap<Box<str>, KeyRules>> =
            std::cell::RefCell::default();
    }
    RULES.with(|rules| {
        let mut rules = rules.borrow_mut();
        if let Some(&known) = rules.get(key) {
            return known;
        }
        let found = KeyRules {
            secret: is_secret_key(key),
            payload: is_payload_key(key),
        };
        // Endless distinct keys (hostile input) start the table over instead of growing it.
        if rules.len() >= MAX_REMEMBERED_KEYS {
            rules.clear();
        }
        rules.insert(key.into(), found);
        found
    })
}

/// Values that can carry payload content: text, lists and maps.
pub fn can_hold_content(value: &AttrValue) -> bool {
    matches!(
        value,
        AttrValue::Str(_) | AttrValue::List(_) | AttrValue::Map(_)
    )
}

/// Calls `word` with each word of a key, lower-cased: split at every character that is not
/// alphanumeric and where a lower-case letter or digit meets an upper-case one
/// (`apiKey`, `x-api-key`, `API_KEY` all give `api`, `key`). Words longer than any secret
/// word are given as `None`. No allocation: this runs for every attribute a search or a
/// redacted view looks at.
fn each_key_word(key: &str, mut word: impl FnMut(Option<&str>)) {
    const LONGEST: usize = 16;
    let mut buffer = [0u8; LONGEST];
    let mut len = 0;
    let mut too_long = false;
    let mut started = false;
    let mut flush = |buffer: &[u8; LONGEST], len: &mut usize, too_long: &mut bool| {
        let text = std::str::from_utf8(&buffer[..*len]).ok();
        word(if *too_long { None } else { text });
        *len = 0;
        *too_long = false;
    };
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if started {
                flush(&buffer, &mut len, &mut too_long);
                started = false;
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && started {
            flush(&buffer, &mut len, &mut too_long);
            started = false;
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        for lower in c.to_lowercase() {
            started = true;
            let mut utf8 = [0u8; 4];
            let encoded = lower.encode_utf8(&mut utf8).as_bytes();
            match buffer.get_mut(len..len + encoded.len()) {
                Some(room) if !too_long => {
                    room.copy_from_slice(encoded);
                    len += encoded.len();
                }
                _ => too_long = true,
            }
        }
    }
    if started {
        flush(&buffer, &mut len, &mut too_long);
    }
}

/// Attribute keys whose string, list and map values are payload content: hidden while
/// redacted, by the detail pane and by search alike (a redacted search that matched them
/// would tell what the view hides). A key is content when one of its words is, unless its last
/// word names a fact: counts, ids, names, types and models stay visible.
pub fn is_payload_key(key: &str) -> bool {
    const CONTENT: &[&str] = &[
        "input",
        "output",
        "content",
        "contents",
        "message",
        "messages",
        "prompt",
        "prompts",
        "completion",
        "completions",
        "arguments",
        "args",
        "argument",
        "result",
        "results",
        "query",
        "document",
        "documents",
        "text",
        "body",
        "payload",
        "value",
        "values",
        "response",
        "instructions",
        "parts",
    ];
    const FACT: &[&str] = &[
        "tokens", "token", "count", "model", "type", "id", "ids", "name", "names", "role",
        "reason", "reasons", "size", "length", "index", "status", "code", "provider", "system",
        "kind",
    ];
    // The key's words as secrets are judged by (`apiKey`, `x-api-key`); asked for every
    // attribute a search index takes in, so nothing is copied. No content or fact word is longer
    // than a word `each_key_word` gives.
    let mut content = false;
    let mut last_is_fact = false;
    each_key_word(key, |word| {
        content |= word.is_some_and(|w| CONTENT.contains(&w));
        last_is_fact = word.is_some_and(|w| FACT.contains(&w));
    });
    content && !last_is_fact
}

/// Keys whose values are masked even when revealed. Token *counts* (`input_tokens`,
/// `max_tokens`) are not secrets: only the singular word `token` counts.
pub fn is_secret_key(key: &str) -> bool {
    let mut secret = false;
    // Words that make a key secret only together: api, key, private, access, session, id.
    let mut pairs = [false; 6];
    each_key_word(key, |word| match word {
        Some(
            "authorization" | "auth" | "apikey" | "password" | "passwd" | "pwd" | "pw" | "secret"
            | "cookie" | "token" | "bearer" | "credential" | "credentials" | "passphrase",
        ) => secret = true,
        Some("api") => pairs[0] = true,
        Some("key") => pairs[1] = true,
        Some("private") => pairs[2] = true,
        Some("access") => pairs[3] = true,
        Some("session") => pairs[4] = true,
        Some("id") => pairs[5] = true,
        _ => {}
    });
    let [api, key, private, access, session, id] = pairs;
    secret || (api || private || access) && key || session && id
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule written plainly, with the allocations the real one avoids.
    fn is_secret_key_by_words(key: &str) -> bool {
        let mut words = Vec::new();
        let mut current = String::new();
        let mut prev_lower = false;
        for c in key.chars() {
            if !c.is_alphanumeric() {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                prev_lower = false;
                continue;
            }
            if c.is_uppercase() && prev_lower && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        }
        if !current.is_empty() {
            words.push(current);
        }
        let has = |w: &str| words.iter().any(|x| x == w);
        [
            "authorization",
            "auth",
            "apikey",
            "password",
            "passwd",
            "pwd",
            "pw",
            "secret",
            "cookie",
            "token",
            "bearer",
            "credential",
            "credentials",
            "passphrase",
        ]
        .iter()
        .any(|w| has(w))
            || (has("api") && has("key"))
            || (has("private") && has("key"))
            || (has("access") && has("key"))
            || (has("session") && has("id"))
    }

    proptest::proptest! {
        #[test]
        fn secret_keys_are_judged_as_by_their_words(
            key in "([aA][pP][iI]|[kK][eE][yY]|[iI][dD]|Session|private|ACCESS|token|Tokens|auth|pw|passphrase|credentials|x|\u{212A}ey|İd|ß|[a-zA-Z0-9]{0,20}|[-_. :]){0,8}"
        ) {
            proptest::prop_assert_eq!(is_secret_key(&key), is_secret_key_by_words(&key), "{:?}", key);
        }
    }

    #[test]
    fn token_counts_are_not_secrets_but_tokens_are() {
        for key in [
            "input_tokens",
            "max_tokens",
            "gen_ai.usage.output_tokens",
            "tokenizer",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
        for key in [
            "api_key",
            "apiKey",
            "Authorization",
            "access_token",
            "password",
            "x-api-key",
            "Cookie",
            "client_secret",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn content_keys_are_hidden_unless_their_last_word_names_a_fact() {
        for key in [
            "gen_ai.input.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
            "input.value",
            "langfuse.observation.status_message",
            "toolInput",
            "llm.prompts",
        ] {
            assert!(is_payload_key(key), "{key}");
        }
        for key in [
            "gen_ai.usage.input_tokens",
            "gen_ai.response.id",
            "gen_ai.tool.name",
            "input.mime_type",
            "gen_ai.output.type",
            "openarmature.llm.output.tool_calls.names",
            "service.name",
            "http.status_code",
        ] {
            assert!(!is_payload_key(key), "{key}");
        }
        // Under a payload key, numbers and flags stay visible; text, lists and maps do not.
        let key = "gen_ai.input.messages";
        assert!(hides_value(key, &AttrValue::Str("hi".into())));
        assert!(hides_value(key, &AttrValue::List(Default::default())));
        assert!(!hides_value(key, &AttrValue::Int(3)));
        assert!(!hides_value(key, &AttrValue::Bool(true)));
        assert!(!hides_value(
            "gen_ai.tool.name",
            &AttrValue::Str("hi".into())
        ));
    }

    #[test]
    fn remembered_rules_are_the_rules_before_and_after_the_table_starts_over() {
        for key in [
            "api_key",
            "gen_ai.input.messages",
            "gen_ai.usage.input_tokens",
            "x-api-key",
            "tool.name",
        ] {
            let expected = KeyRules {
                secret: is_secret_key(key),
                payload: is_payload_key(key),
            };
            // Asked twice: computed, then remembered.
            assert_eq!(key_rules(key), expected, "{key}");
            assert_eq!(key_rules(key), expected, "{key}");
        }
        for i in 0..3 * MAX_REMEMBERED_KEYS {
            key_rules(&format!("distinct.key.{i}"));
        }
        assert!(
            key_rules("api_key").secret,
            "still right after the table started over"
        );
        assert!(!key_rules("gen_ai.usage.input_tokens").payload);
    }
}
