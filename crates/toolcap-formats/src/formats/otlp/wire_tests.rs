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

/// A span as both readers see it: its resource's position and service, and its name.
type Seen = (usize, Option<String>, String);

fn service(resource: Option<&Resource>) -> Option<String> {
    let kv = resource?
        .attributes
        .iter()
        .find(|kv| kv.key == "service.name")?;
    Some(
        kv.value
            .as_ref()?
            .string_value
            .as_ref()?
            .decoded()
            .into_owned(),
    )
}

fn streamed(line: &str) -> Result<Vec<Seen>, serde_json::Error> {
    let mut seen = Vec::new();
    for_each_span(line.as_bytes(), &mut |index, resource, span| {
        seen.push((index, service(resource), span.name.to_string()))
    })?;
    Ok(seen)
}

fn modelled(line: &str) -> Result<Vec<Seen>, serde_json::Error> {
    let request = Request::parse(line.as_bytes())?;
    let mut seen = Vec::new();
    for (index, resource_spans) in request.resource_spans.iter().enumerate() {
        for scope in &resource_spans.scope_spans {
            for span in &scope.spans {
                let resource = resource_spans.resource.as_ref();
                seen.push((index, service(resource), span.name.to_string()));
            }
        }
    }
    Ok(seen)
}

#[test]
fn spans_read_one_at_a_time_are_the_spans_of_the_whole_request_in_its_order() {
    let svc = |name: &str| {
        format!(r#"{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{name}"}}}}]}}"#)
    };
    let shapes = [
        format!(
            r#"{{"resourceSpans":[{{"resource":{},"scopeSpans":[{{"scope":{{"name":"s"}},"spans":[{{"name":"a"}},{{"name":"b"}}]}},{{"spans":[{{"name":"c"}}]}}]}}]}}"#,
            svc("one")
        ),
        // Spans before their resource: kept until the resource is read.
        format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"name":"a"}}]}}],"resource":{}}},{{"resource":{},"scopeSpans":[{{"spans":[{{"name":"b"}}],"scope":{{}}}}]}}]}}"#,
            svc("late"),
            svc("early")
        ),
        r#"{"resource_spans":[{"scope_spans":[{"spans":[{"name":"snake"}]}]},{"instrumentationLibrarySpans":[{"spans":[{"name":"old"}]}]},{"instrumentation_library_spans":[{"spans":[{"name":"older"}]}]}]}"#.into(),
        r#"{"extra":[1,{"x":2}],"resourceSpans":[{"resource":null,"other":3,"scopeSpans":[{"spans":[{"name":"a","unknown":true}],"schemaUrl":"u"}]}]}"#.into(),
        r#"{}"#.into(),
        r#"{"resourceSpans":[]}"#.into(),
        // Field names with escapes are read as the names they spell.
        r#"{"resource\u0053pans":[{"scope\u0053pans":[{"sp\u0061ns":[{"name":"escaped"}]}]}]}"#
            .into(),
    ];
    for shape in &shapes {
        let expected = modelled(shape).expect(shape);
        assert_eq!(streamed(shape).ok(), Some(expected), "{shape}");
    }
    assert_eq!(streamed(&shapes[6]).unwrap(), [(0, None, "escaped".into())]);
    assert_eq!(
        streamed(&shapes[1]).unwrap(),
        [
            (0, Some("late".into()), "a".into()),
            (1, Some("early".into()), "b".into())
        ]
    );
}

#[test]
fn a_request_the_model_refuses_fails_when_read_one_span_at_a_time() {
    for shape in [
        r#"{"resourceSpans":[],"resource_spans":[]}"#,
        r#"{"resourceSpans":[{"resource":{},"resource":{}}]}"#,
        r#"{"resourceSpans":[{"scopeSpans":[],"scope_spans":[]}]}"#,
        r#"{"resourceSpans":[{"scopeSpans":[{"spans":[],"spans":[]}]}]}"#,
        r#"{"resourceSpans":[{"scopeSpans":[{"scope":5,"spans":[{"name":"a"}]}]}]}"#,
        r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a"}],"scope":{"name":7}}]}]}"#,
        r#"{"resourceSpans":[{"scopeSpans":[{"spans":null}]}]}"#,
        r#"{"resourceSpans":[{"resource":{"attributes":5},"scopeSpans":[]}]}"#,
        r#"{"resourceSpans":[null]}"#,
        r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a"}]}]}]} trailing"#,
        r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a"}"#,
    ] {
        assert!(modelled(shape).is_err(), "the model took {shape}");
        assert!(streamed(shape).is_err(), "read one at a time: {shape}");
    }
    // The model takes a request written as an array of its fields; the one-at-a-time reader
    // leaves it to the model rather than read it differently.
    let as_array = r#"[[{"scopeSpans":[{"spans":[{"name":"a"}]}]}]]"#;
    assert_eq!(modelled(as_array).unwrap().len(), 1);
    assert!(streamed(as_array).is_err());
}

/// The sample requests, mutated a few thousand ways (bytes cut, repeated, swapped, replaced
/// by other JSON): whenever the one-span-at-a-time reader takes a mutant, the model takes it
/// too and reads the same spans. (When it refuses one, the caller asks the model.)
#[test]
fn what_the_one_span_reader_takes_the_model_takes_and_reads_alike() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/sample-traces");
    let mut lines = Vec::new();
    for name in [
        "genai-python-sdk.otlp.jsonl",
        "openarmature-payload-on.otlp.jsonl",
        "openinference.otlp.jsonl",
    ] {
        let text = std::fs::read_to_string(format!("{dir}/{name}")).expect(name);
        lines.extend(text.lines().map(str::to_owned));
    }
    assert!(lines.len() >= 10);
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % below.max(1) as u64) as usize
    };
    let pieces = ["null", "5", "[]", "{}", "\"x\"", ","];
    let members = [
        "\"spans\":[]",
        "\"resource\":{}",
        "\"resource\":null",
        "\"scope\":{}",
        "\"scope\":5",
        "\"scopeSpans\":[]",
        "\"resourceSpans\":[]",
        "\"resource_spans\":[]",
        "\"other\":[1]",
    ];
    let (mut taken, mut refused) = (0, 0);
    for line in &lines {
        for _ in 0..300 {
            let mut bytes = line.as_bytes().to_vec();
            let at = next(bytes.len());
            let len = 1 + next(24);
            let end = (at + len).min(bytes.len());
            match next(5) {
                0 => drop(bytes.drain(at..end)),
                1 => {
                    let copy = bytes[at..end].to_vec();
                    bytes.splice(at..at, copy);
                }
                2 => {
                    let other = next(bytes.len());
                    bytes.swap(at, other);
                }
                3 => drop(bytes.splice(at..end, pieces[next(pieces.len())].bytes())),
                // A member added to some object: right after a `{`, with its comma.
                _ => {
                    if let Some(open) = bytes[at..].iter().position(|&b| b == b'{') {
                        let member = format!("{},", members[next(members.len())]);
                        bytes.splice(at + open + 1..at + open + 1, member.bytes());
                    }
                }
            }
            let Ok(mutant) = String::from_utf8(bytes) else {
                continue;
            };
            match streamed(&mutant) {
                Ok(spans) => {
                    taken += 1;
                    assert_eq!(modelled(&mutant).ok().as_ref(), Some(&spans), "{mutant}");
                }
                Err(_) => refused += 1,
            }
        }
    }
    // Both outcomes were exercised.
    assert!(
        taken > 100 && refused > 100,
        "{taken} taken, {refused} refused"
    );
}

/// Number texts read by the plain-digits shortcut agree with the checked parse, at the edges of
/// both integer types and on texts the shortcut leaves to it.
#[test]
fn number_texts_read_as_the_checked_parse_reads_them() {
    for text in [
        "0",
        "7",
        "1768471200001000000",
        "9999999999999999999",
        "18446744073709551615",
        "18446744073709551616",
        "9223372036854775807",
        "9223372036854775808",
        "-5",
        "+5",
        " 42 ",
        "",
        "12a",
        "00000000000000000001",
    ] {
        let scalar = Scalar::Str(Cow::Borrowed(text));
        assert_eq!(scalar.as_u64(), text.trim().parse::<u64>().ok(), "{text:?}");
        assert_eq!(scalar.as_i64(), text.trim().parse::<i64>().ok(), "{text:?}");
    }
}
