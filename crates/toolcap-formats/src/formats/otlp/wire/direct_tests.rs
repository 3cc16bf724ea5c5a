use super::*;
use crate::formats::otlp::wire::Request;

/// A span as handed on: its resource's position, the resource and the span, as their debug
/// text (every field, texts and numbers as read).
type HandedOn = (usize, String, String);

/// Everything the direct reader hands on from `text`, or `None` when it leaves `text` to serde.
fn spans_read_directly(text: &str) -> Option<Vec<HandedOn>> {
    let mut seen = Vec::new();
    let ok = for_each_span(text, &mut |index, resource, span| {
        seen.push((index, format!("{resource:?}"), format!("{span:?}")))
    })
    .is_ok();
    ok.then_some(seen)
}

/// The spans of the request the serde model reads from `text`, in the order the builder takes
/// them from it, or `None` when the model refuses `text`.
fn modelled(text: &str) -> Option<Vec<HandedOn>> {
    let request = Request::parse(text.as_bytes()).ok()?;
    let mut seen = Vec::new();
    for (index, resource_spans) in request.resource_spans.iter().enumerate() {
        let resource = resource_spans.resource.as_ref();
        for scope_spans in &resource_spans.scope_spans {
            for span in &scope_spans.spans {
                seen.push((index, format!("{resource:?}"), format!("{span:?}")));
            }
        }
    }
    Some(seen)
}

/// The direct reader either leaves `text` to serde or hands on exactly the spans of the
/// request the serde model reads; it never accepts what the model refuses. Returns whether it
/// read `text` itself.
fn agrees(text: &str) -> bool {
    let direct = spans_read_directly(text);
    if let Some(direct) = &direct {
        assert_eq!(
            Some(direct),
            modelled(text).as_ref(),
            "read differently: {text}"
        );
    }
    direct.is_some()
}

fn fixture_requests() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if !text.contains("\"resourceSpans\"") && !text.contains("\"resource_spans\"") {
                continue;
            }
            let name = path.display().to_string();
            match name.ends_with(".jsonl") {
                true => found.extend(text.lines().map(|line| (name.clone(), line.to_owned()))),
                false => found.push((name, text)),
            }
        }
    }
    found
}

/// Every OTLP/JSON request among the fixtures (whole documents, pretty-printed ones too, and
/// each line of JSON-lines files) reads alike both ways, and the direct reader reads most of
/// them itself.
#[test]
fn fixture_requests_read_alike_both_ways() {
    let requests = fixture_requests();
    assert!(requests.len() > 40, "{} requests", requests.len());
    let read_directly = requests.iter().filter(|(_, text)| agrees(text)).count();
    assert!(
        read_directly * 2 > requests.len(),
        "{read_directly} of {} read directly",
        requests.len()
    );
    for (name, text) in &requests {
        if name.contains("otlp-python-sdk/otlp-json") || name.contains("plain.otlp") {
            assert!(spans_read_directly(text).is_some(), "{name}");
        }
    }
}

/// Shapes exporters do not write, each either read alike or left to serde.
#[test]
fn odd_shapes_are_read_alike_or_left_to_serde() {
    let span =
        r#"{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"s"}"#;
    let wrap =
        |spans: &str| format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{spans}]}}]}}]}}"#);
    let attr = |value: &str| {
        wrap(&format!(
            r#"{{"name":"a","attributes":[{{"key":"k","value":{value}}}]}}"#
        ))
    };
    let read_directly = [
        wrap(span),
        format!(" \n\t{} \r\n", wrap(span)),
        attr(r#"{"stringValue":"say \"hi\" \u00e9 \\ \/ \b\f\n\r\t"}"#),
        attr(r#"{"intValue":"42"}"#),
        attr(r#"{"intValue":42}"#),
        attr(r#"{"intValue":-42}"#),
        attr(r#"{"intValue":18446744073709551616}"#),
        attr(r#"{"doubleValue":0.95}"#),
        attr(r#"{"doubleValue":-0}"#),
        attr(r#"{"doubleValue":1e300}"#),
        attr(r#"{"boolValue":true}"#),
        attr(r#"{"boolValue":false}"#),
        attr(r#"{"bytesValue":"aGk="}"#),
        attr(r#"{"arrayValue":{"values":[{"stringValue":"x"},{"intValue":"1"}]}}"#),
        attr(r#"{"kvlistValue":{"values":[{"key":"n","value":{"kvlistValue":{"values":[]}}}]}}"#),
        attr(r#"{}"#),
        attr(r#" { "stringValue" : "spaced" } "#),
        wrap(r#"{"name":"a","attributes":[{"value":{"stringValue":"v"},"key":"k"},{ "key" : "k2" , "value" : {"intValue":"1"} }]}"#),
        wrap(r#"{"name":"a","attributes":[{"key":"k","value":{"stringValue":"v"},"extra":1}]}"#),
        attr(r#"{"stringValue":"x","unknown":{"a":[1,2,{"b":null}]}}"#),
        wrap(r#"{"name":"e","events":[{"timeUnixNano":"1","name":"exception","attributes":[{"key":"exception.message","value":{"stringValue":"boom"}}]}],"status":{"code":2,"message":"fail\nure"}}"#),
        wrap(r#"{"name":"esc\u0041ped","traceId":"\u0035b8efff798038103d269b633813fc60c","flags":256,"traceState":"","droppedAttributesCount":0,"links":[]}"#),
        r#"{"resourceSpans":[{"scopeSpans":[{"scope":{"name":"s","version":"1","attributes":[]},"spans":[{"name":"a"}]}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"late"}}]},"schemaUrl":"u"}]}"#.into(),
        r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}],"droppedAttributesCount":0},"scopeSpans":[{"spans":[{"name":"a"}]},{"spans":[{"name":"b"}]}]},{"scopeSpans":[{"spans":[{"name":"c"}]}]}]}"#.into(),
        r#"{"other":[1,"x",{"y":null}],"resourceSpans":[]}"#.into(),
        "{}".into(),
    ];
    for text in &read_directly {
        assert!(agrees(text), "not read directly: {text}");
    }
    let left_to_serde = [
        wrap(r#"{"trace_id":"5b8efff798038103d269b633813fc60c","name":"snake"}"#),
        r#"{"resource_spans":[]}"#.into(),
        r#"{"resourceSpans":[{"instrumentationLibrarySpans":[{"spans":[{"name":"old"}]}]}]}"#
            .into(),
        wrap(r#"{"name":"a","parentSpanId":null}"#),
        wrap(r#"{"name":"a","name":"b"}"#),
        wrap(r#"{"na\u006de":"a"}"#),
        attr(r#"{"stringValue":"bad \x escape"}"#),
        attr(r#"{"stringValue":"short \u12 escape"}"#),
        attr("{\"stringValue\":\"control \u{1} character\"}"),
        attr(r#"{"stringValue":5}"#),
        attr(r#"{"intValue":0042}"#),
        attr(r#"{"intValue":true}"#),
        attr(r#"{"boolValue":"true"}"#),
        attr(r#"{"stringValue":"x",}"#),
        wrap(&format!("{span},")),
        format!("{} trailing", wrap(span)),
        format!("[{}]", wrap(span)),
        String::new(),
    ];
    for text in &left_to_serde {
        assert!(!agrees(text), "read directly: {text}");
    }
    let mut deep = r#"{"stringValue":"bottom"}"#.to_owned();
    for _ in 0..=MAX_VALUE_DEPTH + 1 {
        deep = format!(r#"{{"arrayValue":{{"values":[{deep}]}}}}"#);
    }
    assert!(!agrees(&attr(&deep)), "deeper than the direct reader reads");
}

/// Requests damaged byte by byte (each byte dropped, or one of a few telling bytes put before
/// it) are read alike or left to serde: never read differently, never accepted when serde
/// refuses them.
#[test]
fn damaged_requests_are_read_alike_or_left_to_serde() {
    let requests = fixture_requests();
    let samples: Vec<&str> = requests
        .iter()
        .filter(|(_, text)| text.len() < 2000 && !text.contains('\n'))
        .map(|(_, text)| text.as_str())
        .take(3)
        .collect();
    assert!(!samples.is_empty());
    let mut read_directly = 0;
    for sample in samples {
        for at in (0..sample.len()).filter(|&at| sample.is_char_boundary(at)) {
            let next = sample[at..].chars().next().map_or(0, char::len_utf8);
            let dropped = format!("{}{}", &sample[..at], &sample[at + next..]);
            read_directly += usize::from(agrees(&dropped));
            for inserted in [
                " ", "\"", "\\", ",", "}", "]", "0", "-", "n", "_", "\u{1}", "{}",
            ] {
                let damaged = format!("{}{inserted}{}", &sample[..at], &sample[at..]);
                read_directly += usize::from(agrees(&damaged));
            }
        }
    }
    // Some damage leaves a readable request (a space, a digit in a string): those are read.
    assert!(read_directly > 0);
}

/// The sample requests, mutated a few thousand ways (bytes cut, repeated, swapped, replaced
/// by other JSON): whenever the direct reader takes a mutant, the model takes it too and reads
/// the same spans. (When it refuses one, the caller asks the model.)
#[test]
fn what_the_direct_reader_takes_the_model_takes_and_reads_alike() {
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
            match agrees(&mutant) {
                true => taken += 1,
                false => refused += 1,
            }
        }
    }
    // Both outcomes were exercised.
    assert!(
        taken > 100 && refused > 100,
        "{taken} taken, {refused} refused"
    );
}

/// The eight-at-a-time search stops where a byte-by-byte search stops, wherever the stop falls
/// in a word and whatever bytes surround it (non-ASCII bytes and DEL are plain content).
#[test]
fn plain_runs_end_at_the_first_quote_backslash_or_control_byte() {
    let naive = |bytes: &[u8]| {
        bytes
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            .unwrap_or(bytes.len())
    };
    let fillers = [b'a', 0x7f, 0x80, 0xff, 0x21, 0x5b, 0x5d];
    for len in 0..40 {
        for stop in [
            None,
            Some(b'"'),
            Some(b'\\'),
            Some(0x00),
            Some(0x1f),
            Some(b'\n'),
        ] {
            for stop_at in 0..len.max(1) {
                for filler in fillers {
                    let mut bytes = vec![filler; len];
                    if let Some(stop) = stop
                        && stop_at < len
                    {
                        bytes[stop_at] = stop;
                        // A second stop further on must not hide the first.
                        if stop_at + 3 < len {
                            bytes[stop_at + 3] = b'"';
                        }
                    }
                    assert_eq!(plain_run(&bytes), naive(&bytes), "{bytes:?}");
                }
            }
        }
    }
}

/// The length the reader counts while it checks a string's escapes is the length of the text
/// once decoded: for every escape kind, and for every string value of the fixtures. A
/// surrogate's escape is left uncounted, to be measured when asked.
#[test]
fn each_string_value_counted_is_as_long_as_its_decoded_text() {
    let values = [
        ("plain", "plain text", true),
        ("simple escapes", r#"say \"hi\"\n\\\/\b\f\r\t"#, true),
        ("one-byte unicode", r#"\u0041\u007f"#, true),
        ("two-byte unicode", r#"caf\u00e9 \u07ff"#, true),
        ("three-byte unicode", r#"\u2026 \uffff \u0800"#, true),
        ("raw non-ASCII", "caf\u{e9} \u{1F600}", true),
        ("surrogate pair", r#"smile \ud83d\ude00"#, false),
    ];
    let attributes: Vec<String> = values
        .iter()
        .map(|(key, value, _)| format!(r#"{{"key":"{key}","value":{{"stringValue":"{value}"}}}}"#))
        .collect();
    let request = format!(
        r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"s","attributes":[{}]}}]}}]}}]}}"#,
        attributes.join(",")
    );
    let mut requests = fixture_requests();
    requests.push(("crafted".into(), request));
    let mut counted = Vec::new();
    for (name, text) in &requests {
        let _ = for_each_span(text, &mut |_, _, span| {
            for pair in &span.attributes {
                let Some(text) = pair.value.as_ref().and_then(|v| v.string_value.as_ref()) else {
                    continue;
                };
                let Text::Json { decoded_len, .. } = text else {
                    continue;
                };
                assert_eq!(
                    text.decoded_len(),
                    text.decoded().len(),
                    "{name}: {}",
                    pair.key
                );
                if name == "crafted" {
                    counted.push((pair.key.to_string(), decoded_len.is_some()));
                }
            }
        });
    }
    let expected: Vec<(String, bool)> = values
        .iter()
        .map(|(key, _, counted)| (key.to_string(), *counted))
        .collect();
    assert_eq!(counted, expected);
}
