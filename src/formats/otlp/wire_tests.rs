use super::*;

#[test]
fn unescaped_len_counts_escapes_and_surrogates() {
    for text in [
        "plain",
        "say \"hi\"\n",
        "a\"b\\c\n",
        "caf\u{e9} \u{2026} \u{1F600}",
        "",
    ] {
        let token = serde_json::to_string(text).unwrap();
        let ascii_token = token
            .chars()
            .map(|c| {
                if c.is_ascii() {
                    c.to_string()
                } else {
                    let mut buf = [0u16; 2];
                    c.encode_utf16(&mut buf)
                        .iter()
                        .map(|u| format!("\\u{u:04x}"))
                        .collect()
                }
            })
            .collect::<String>();
        assert_eq!(Text::Json(&ascii_token).decoded_len(), text.len(), "{text}");
        assert_eq!(Text::Json(&ascii_token).decoded(), text);
    }
}

#[test]
fn unescaped_len_survives_cut_escapes() {
    for body in ["\\", "ab\\", "x\\u12", "x\\ud83d"] {
        assert!(unescaped_len(body) <= body.len());
    }
}

#[test]
fn tail_never_splits_an_escape() {
    let token = r#""abc\u2026[truncated, 730 bytes total]""#;
    for max in 30..45 {
        let tail = Text::Json(token).tail(max);
        assert!(
            tail.ends_with("[truncated, 730 bytes total]"),
            "{max}: {tail}"
        );
    }
}

#[test]
fn ids_accept_hex_and_base64_and_refuse_the_rest() {
    let mut lenient = Vec::new();
    assert_eq!(
        decode_id(Some("0102030405060708"), 8, &mut lenient)
            .unwrap()
            .as_slice(),
        [1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert!(lenient.is_empty());
    assert_eq!(
        decode_id(Some("AQIDBAUGBwg="), 8, &mut lenient)
            .unwrap()
            .as_slice(),
        [1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert_eq!(lenient, vec![Leniency::Base64Id]);
    // Longer than the stack holds: kept whole, so the rule can say how long it was.
    let long = "ab".repeat(20);
    assert_eq!(
        id_bytes(&long, &mut lenient).unwrap().as_slice(),
        [0xab; 20]
    );
    assert_eq!(
        decode_id(Some(&long), 16, &mut lenient),
        Err(IdError::WrongLength(20))
    );
    // Even-length text with a character that is not a hex digit is read as base64.
    assert_eq!(
        id_bytes("AQID", &mut lenient).unwrap().as_slice(),
        [1, 2, 3]
    );
    assert_eq!(decode_id(None, 8, &mut lenient), Err(IdError::Missing));
    assert_eq!(
        decode_id(Some("0000000000000000"), 8, &mut lenient),
        Err(IdError::AllZero)
    );
    assert_eq!(
        decode_id(Some("0102"), 8, &mut lenient),
        Err(IdError::WrongLength(2))
    );
    assert_eq!(
        decode_id(Some("zz!"), 8, &mut lenient),
        Err(IdError::Malformed)
    );
}

/// The table decoder agrees with the `hex` crate on every pair of bytes, both cases included.
#[test]
fn hex_digits_decode_as_the_hex_crate_decodes_them() {
    for first in 0..=255u8 {
        for second in 0..=255u8 {
            let digits = [first, second, b'a', b'F'];
            let mut ours = [0u8; 2];
            let mut theirs = [0u8; 2];
            let decoded = decode_hex(&digits, &mut ours);
            assert_eq!(
                decoded,
                hex::decode_to_slice(digits, &mut theirs).is_ok(),
                "{digits:?}"
            );
            if decoded {
                assert_eq!(ours, theirs, "{digits:?}");
            }
        }
    }
    assert!(!decode_hex(b"abc", &mut [0u8; 2]), "too short");
    assert!(decode_hex(b"", &mut []));
}
