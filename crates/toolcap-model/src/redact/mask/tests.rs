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

#[test]
fn provider_keys_are_masked_wherever_they_start() {
    for (text, key, kept) in [
        (
            "tool_sk-proj-M4nB7vC1xZ9lK2jH5gF8dS3aQ6wE0rT failed",
            "sk-proj-M4nB7vC1xZ9lK2jH5gF8dS3aQ6wE0rT",
            "tool_•••••• failed",
        ),
        (
            "GET https://maps.example.com/p?key=AIzaSyD4k9Lm2Nq7Rs1Tv6Wx3Yz8Ab5Cd0Ef2Gh&z=3",
            "AIzaSyD4k9Lm2Nq7Rs1Tv6Wx3Yz8Ab5Cd0Ef2Gh",
            "GET https://maps.example.com/p?key=••••••&z=3",
        ),
        (
            "/v1/ghp_Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Dd8Ss/x",
            "ghp_Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Dd8Ss",
            "/v1/••••••/x",
        ),
        (
            "cfg.AKIAIOSFODNN7EXAMPLE",
            "AKIAIOSFODNN7EXAMPLE",
            "cfg.••••••",
        ),
        (
            "bot-xoxb-1234567890-A1b2C3d4E5f6G7h8I9j0K1l2",
            "xoxb-1234567890",
            "bot-••••••",
        ),
        (
            "x=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "hf_AbCd",
            "x=••••••",
        ),
        (
            "auth.glpat-Xy9Zq8Wv7Ut6Sr5Qp4On",
            "glpat-Xy9Zq8",
            "auth.••••••",
        ),
        (
            "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.dozjgNryP4J3jVmNHl0w5N",
            "eyJhbGci",
            "jwt=••••••",
        ),
        (
            "prefixsk-live0secretVALUE0123456789",
            "secretVALUE",
            "prefix••••••",
        ),
    ] {
        let masked = revealed(text);
        assert!(!masked.contains(key), "{text} -> {masked}");
        assert_eq!(masked, kept, "{text}");
    }
}

#[test]
fn secret_keys_and_url_credentials_after_a_slash_or_equals_sign_are_masked() {
    for (text, kept) in [
        (
            "GET /cb/token=abc123xyz HTTP/1.1",
            "GET /cb/token=•••••• HTTP/1.1",
        ),
        (
            "h/p?x=1&access_token=abc123&y=2",
            "h/p?x=1&access_token=••••••&y=2",
        ),
        ("h/p?api_key=abc123", "h/p?api_key=••••••"),
        (
            "next=https://admin:s3cret@db.local/app",
            "next=https://••••••@db.local/app",
        ),
    ] {
        assert_eq!(revealed(text), kept, "{text}");
    }
}

#[test]
fn words_that_contain_a_key_prefix_are_not_keys() {
    for text in [
        "risk-assessment-for-the-quarterly-report",
        "task-description-of-the-quarterly-planning",
        "please ask-me-anything-about-the-weather-today",
        "task-2024-summary-report-for-the-board",
        "task-3fa85f64-5717-4562-b3fc-2c963f66afa6",
        "load_hf_dataset_from_the_hub_with_retries_and_cache",
        "run_npm_install_for_the_frontend_packages_now",
        "path/to/AKIAx",
        "thekeyJwt.is.notAToken",
        "/v1/ghp_short/x",
    ] {
        assert_eq!(revealed(text), text);
    }
}

#[test]
fn keys_inside_long_tokens_are_found_in_one_pass() {
    // Every few bytes of these tokens start a prefix; a scan that looked again from each one
    // would not finish.
    let same = |text: &str| revealed(text) == text;
    assert!(same(&"ask-".repeat(200_000)));
    assert!(same(&"a=b/".repeat(200_000)));
    assert!(same(&"_hf_AbCdE".repeat(100_000)));
    assert!(same(&format!("x{}", "eyJ.".repeat(200_000))));
    let masked = revealed(&"_sk-AbCdEfGh12345678".repeat(100_000));
    assert_eq!(masked, format!("_{}", super::MASK));
}

mod glued {
    use super::revealed;
    use proptest::prelude::*;

    /// A provider key or JWT, and the part of it that must never show.
    fn key() -> impl Strategy<Value = (String, String)> {
        let body =
            |n: usize| proptest::string::string_regex(&format!("[A-Za-z0-9]{{{n}}}")).unwrap();
        prop_oneof![
            body(32).prop_map(|b| (format!("sk-proj-{b}"), b)),
            body(36).prop_map(|b| (format!("ghp_{b}"), b)),
            body(35).prop_map(|b| (format!("AIza{b}"), b)),
            body(34).prop_map(|b| (format!("hf_{b}"), b)),
            body(24).prop_map(|b| (format!("xoxb-1234567890-{b}"), b)),
            proptest::string::string_regex("[A-Z0-9]{16}")
                .unwrap()
                .prop_map(|b| (format!("AKIA{b}"), b)),
            (body(12), body(16))
                .prop_map(|(a, b)| (format!("eyJ{a}.eyJ{b}.sig"), format!("{a}.eyJ{b}"))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whatever comes before a key (a word, a path, a query, a name), it is masked.
        #[test]
        fn a_key_is_masked_whatever_precedes_it(
            before in "[a-zA-Z0-9_./=~+ -]{0,12}",
            (key, hidden) in key(),
            after in "[/&?,; ]?[a-z]{0,4}",
        ) {
            let text = format!("{before}{key}{after}");
            let masked = revealed(&text);
            prop_assert!(!masked.contains(&hidden), "{} -> {}", text, masked);
        }

        #[test]
        fn any_text_masks_without_panicking(text in "\\PC{0,64}") {
            let _ = revealed(&text);
            let _ = super::redacted(&text);
        }
    }
}

#[test]
fn a_phone_number_followed_by_more_digits_is_hidden_with_them() {
    for text in [
        "call +14155550123 4111 1111 1111 1111 now",
        "call 415 555 0123 4111 1111 1111 1111 now",
    ] {
        let masked = redacted(text);
        assert!(!masked.contains("4155550123"), "{text} -> {masked}");
        assert!(!masked.contains("555 0123"), "{text} -> {masked}");
        assert!(!masked.contains("1111"), "{text} -> {masked}");
        assert!(
            masked.starts_with("call ") && masked.ends_with(" now"),
            "{masked}"
        );
    }
    // A long number that is no phone number at its start stays: ids, counts, timestamps.
    assert_eq!(
        redacted("id 1234567890123456789 ok"),
        "id 1234567890123456789 ok"
    );
    assert_eq!(redacted("+1234567890123456789"), "+1234567890123456789");
}
