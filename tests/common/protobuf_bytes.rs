//! Hand-written protobuf for hostile bodies no client library would build (millions of empty
//! messages): used by the test binaries that include it with `#[path]`.

/// A length-delimited protobuf field: its tag byte, the length as a varint, the bytes.
pub fn length_delimited(tag: u8, inner: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let mut len = inner.len();
    while len >= 0x80 {
        out.push((len as u8) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(inner);
    out
}

/// An `ExportTraceServiceRequest` of one resource holding `count` empty spans (field 2, length
/// 0, two bytes each), which would decode to 264 bytes each.
pub fn request_of_empty_spans(count: usize) -> Vec<u8> {
    let resource_spans = length_delimited(0x12, &[0x12, 0x00].repeat(count));
    length_delimited(0x0a, &resource_spans)
}
