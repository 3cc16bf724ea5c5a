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
        assert_eq!(Text::json(&ascii_token).decoded_len(), text.len(), "{text}");
        assert_eq!(Text::json(&ascii_token).decoded(), text);
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
        let tail = Text::json(token).tail(max);
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

/// A span as the builder takes it: its resource's position and service, and its name.
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

/// What the direct reader hands on, or `None` when it leaves the line to serde.
fn read_directly(line: &str) -> Option<Vec<Seen>> {
    let mut seen = Vec::new();
    for_each_span_directly(line, &mut |index, resource, span| {
        seen.push((index, service(resource), span.name.to_string()))
    })
    .ok()?;
    Some(seen)
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

/// The model, the direct reader's fallback, reads every shape the direct reader leaves to it
/// (snake_case keys, the pre-0.15 scope name, escaped field names, nulls) in request order;
/// where the direct reader reads a shape itself, it reads the same spans in the same order.
#[test]
fn the_model_reads_every_shape_in_request_order_and_the_direct_reader_agrees() {
    let svc = |name: &str| {
        format!(r#"{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{name}"}}}}]}}"#)
    };
    let span = |name: &str| (0, None, name.to_string());
    let cases: [(String, Vec<Seen>, bool); 7] = [
        (
            format!(
                r#"{{"resourceSpans":[{{"resource":{},"scopeSpans":[{{"scope":{{"name":"s"}},"spans":[{{"name":"a"}},{{"name":"b"}}]}},{{"spans":[{{"name":"c"}}]}}]}}]}}"#,
                svc("one")
            ),
            ["a", "b", "c"]
                .map(|name| (0, Some("one".to_string()), name.to_string()))
                .to_vec(),
            true,
        ),
        // Spans before their resource: the direct reader keeps them until the resource is read.
        (
            format!(
                r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"name":"a"}}]}}],"resource":{}}},{{"resource":{},"scopeSpans":[{{"spans":[{{"name":"b"}}],"scope":{{}}}}]}}]}}"#,
                svc("late"),
                svc("early")
            ),
            vec![
                (0, Some("late".into()), "a".into()),
                (1, Some("early".into()), "b".into()),
            ],
            true,
        ),
        (
            r#"{"resource_spans":[{"scope_spans":[{"spans":[{"name":"snake"}]}]},{"instrumentationLibrarySpans":[{"spans":[{"name":"old"}]}]},{"instrumentation_library_spans":[{"spans":[{"name":"older"}]}]}]}"#.into(),
            vec![span("snake"), (1, None, "old".into()), (2, None, "older".into())],
            false,
        ),
        (
            r#"{"extra":[1,{"x":2}],"resourceSpans":[{"resource":null,"other":3,"scopeSpans":[{"spans":[{"name":"a","unknown":true}],"schemaUrl":"u"}]}]}"#.into(),
            vec![span("a")],
            false,
        ),
        (r#"{}"#.into(), vec![], true),
        (r#"{"resourceSpans":[]}"#.into(), vec![], true),
        // Field names with escapes are read as the names they spell.
        (
            r#"{"resource\u0053pans":[{"scope\u0053pans":[{"sp\u0061ns":[{"name":"escaped"}]}]}]}"#
                .into(),
            vec![span("escaped")],
            false,
        ),
    ];
    for (line, expected, direct) in &cases {
        assert_eq!(modelled(line).expect(line), *expected, "{line}");
        let read = read_directly(line);
        assert_eq!(read.is_some(), *direct, "{line}");
        if let Some(read) = read {
            assert_eq!(read, *expected, "{line}");
        }
    }
}

#[test]
fn a_request_the_model_refuses_is_refused_by_the_direct_reader() {
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
        assert!(read_directly(shape).is_none(), "read directly: {shape}");
    }
    // The model takes a request written as an array of its fields; the direct reader leaves it
    // to the model rather than read it differently.
    let as_array = r#"[[{"scopeSpans":[{"spans":[{"name":"a"}]}]}]]"#;
    assert_eq!(modelled(as_array).unwrap().len(), 1);
    assert!(read_directly(as_array).is_none());
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
