use super::super::{Reveal, mask_text, shown_line};
use super::{REMEMBERED, REMEMBERED_MAX, mask, mask_scanned};

fn redacted(text: &str) -> String {
    mask_text(text, Reveal::Redacted).into_owned()
}
fn revealed(text: &str) -> String {
    mask_text(text, Reveal::Revealed).into_owned()
}

#[test]
fn key_value_forms_keep_the_key_and_hide_the_value() {
    for (text, secret) in [
        ("login failed pw=hunter2-xyz for bob", "hunter2"),
        ("password=correct horse", "correct"),
        (r#"{"api_key": "abc123def"}"#, "abc123def"),
        (r#"{\"client_secret\":\"s3cr3t-value\"}"#, "s3cr3t"),
        ("Authorization: Bearer abc", "abc"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpw"),
        ("x-api-key: k-123", "k-123"),
        ("access_token='tok_1'", "tok_1"),
        ("DB_PASSWORD = p@ss", "p@ss"),
    ] {
        let masked = revealed(text);
        assert!(!masked.contains(secret), "{text} -> {masked}");
        assert!(masked.contains(super::MASK), "{text} -> {masked}");
    }
    assert_eq!(revealed("pw=hunter2 ok"), "pw=•••••• ok");
    assert_eq!(revealed("input_tokens=42"), "input_tokens=42");
    assert_eq!(revealed("max_tokens: 100"), "max_tokens: 100");
}

#[test]
fn credentials_in_every_usual_spelling_are_masked() {
    for secret in [
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "sk-ant-api03-abcdefghijklmnopqrst",
        "sk_live_abcdefghijklmnop1234",
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "github_pat_11ABCDEFG0123456789_abcdefghij",
        "glpat-abcdefghij1234567890",
        "xoxb-1234567890-abcdefghij",
        "AKIAIOSFODNN7EXAMPLE",
        "AIzaSyA-abcdefghijklmnopqrstuvwxyz12345",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.sig-nature_x",
        "Bearer abcdefgh12345678",
    ] {
        let text = format!("call failed: {secret} (retry)");
        let masked = revealed(&text);
        assert!(!masked.contains(secret), "{masked}");
        assert!(masked.starts_with("call failed: "), "{masked}");
        assert!(masked.ends_with(" (retry)"), "{masked}");
    }
    let pem =
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nafter";
    let masked = revealed(pem);
    assert!(
        !masked.contains("MIIEow") && masked.ends_with("\nafter"),
        "{masked}"
    );
    let cut = "-----BEGIN PRIVATE KEY-----\nMIIEvQ";
    assert!(!revealed(cut).contains("MIIEvQ"));
    let url = "connect postgres://admin:s3cret@db.local:5432/app failed";
    assert_eq!(
        revealed(url),
        "connect postgres://••••••@db.local:5432/app failed"
    );
    assert_eq!(
        revealed("see https://example.com/a@b"),
        "see https://example.com/a@b"
    );
}

#[test]
fn personal_data_is_masked_only_while_redacted() {
    for (text, pii) in [
        ("mail alice.smith+x@example.co.uk now", "alice.smith"),
        ("call +44 20 7946 0958 today", "7946"),
        ("call (555) 123-4567 today", "123-4567"),
        ("call 555.123.4567 today", "123.4567"),
        ("card 4111 1111 1111 1111 declined", "1111 1111"),
        ("card 4111-1111-1111-1111 declined", "1111-1111"),
        ("card 378282246310005 declined", "378282246310005"),
    ] {
        let masked = redacted(text);
        assert!(!masked.contains(pii), "{text} -> {masked}");
        assert_eq!(revealed(text), text);
    }
    // Timestamps, dates, ids and counts are not personal data.
    for text in [
        "at 2024-01-15 10:30:00",
        "start 1700000000000000000",
        "span 4bf92f3577b34da6a3ce929d0e0e4736",
        "took 1234567 ms",
        "version 1.2.3",
        "4111111111111112",
    ] {
        assert_eq!(redacted(text), text);
    }
}

#[test]
fn masking_is_safe_on_any_text() {
    for text in [
        "",
        "=",
        ":",
        "pw=",
        "password:",
        "@",
        "a@b",
        "-----BEGIN ",
        "é@ü.de",
        "bearer ",
        "\\\"token\\\":\\\"",
        "+",
        "(",
        "4",
    ] {
        let _ = redacted(text);
        let _ = shown_line(text, super::super::Reveal::Redacted);
    }
    assert_eq!(redacted("naïve café ✓"), "naïve café ✓");
}

#[test]
fn remembered_masks_are_the_scanned_ones_in_either_mode() {
    for text in [
        "sk-abcdefghijklmnopqrstuvwx",
        "mail alice@example.com",
        "chat gpt-4o",
        "",
    ] {
        for personal in [false, true] {
            let scanned = mask_scanned(text, personal).into_owned();
            assert_eq!(mask(text, personal), scanned, "{text:?} first");
            assert_eq!(mask(text, personal), scanned, "{text:?} remembered");
        }
    }
    // Personal data is masked in one mode only: the modes do not share an answer.
    assert_eq!(
        mask("mail alice@example.com", false),
        "mail alice@example.com"
    );
    assert_ne!(
        mask("mail alice@example.com", true),
        "mail alice@example.com"
    );
}

#[test]
fn what_is_remembered_stays_bounded() {
    for i in 0..REMEMBERED_MAX + 10 {
        let _ = mask(&format!("name {i}"), false);
    }
    REMEMBERED.with(|r| assert!(r.borrow()[0].len() <= REMEMBERED_MAX));
    assert_eq!(
        mask("token sk-abcdefghijklmnopqrstuvwx", false),
        mask_scanned("token sk-abcdefghijklmnopqrstuvwx", false)
    );
}
