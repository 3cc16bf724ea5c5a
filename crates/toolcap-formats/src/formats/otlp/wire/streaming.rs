//! Reading a request's spans one at a time: each span is handed on as soon as it is read, so a
//! batched line of 500 spans never holds more than one of them decoded (the whole decoded
//! request would be held by every parser thread at once, at the load's peak).
//!
//! It accepts a subset of what [`Request::parse`] accepts and reads the same spans in the same
//! order from it. The request must be an object (not an array standing for one), a field may
//! not appear twice, and every field the model knows is decoded as the model decodes it (then
//! dropped when it is not a span), so a request that the model refuses fails here too; the
//! caller then reads it with [`Request::parse`] for its verdict. Sequences are charged to the
//! decode budget as the model's vectors would be ([`Growth`]).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{Budget, Resource, ResourceSpans, Scope, ScopeSpans, Span, count_request_decoded};
use crate::formats::otlp::decode_budget::Growth;

/// Takes each span with the position of the resource it is under and that resource.
pub type EachSpan<'f, 'a> = dyn FnMut(usize, Option<&Resource<'a>>, &Span<'a>) + 'f;

/// Reads the request in `bytes`, handing each span to `each` in request order. On an error,
/// `each` may have taken some spans already: the caller drops them and reads the request with
/// [`Request::parse`](super::Request::parse), whose error is the one to report.
pub fn for_each_span<'a>(
    bytes: &'a [u8],
    each: &mut EachSpan<'_, 'a>,
) -> Result<(), serde_json::Error> {
    let _budget = Budget::for_input(bytes.len());
    // Bytes that are not UTF-8 are left to the model's byte parser, which says where.
    let text = std::str::from_utf8(bytes).map_err(de::Error::custom)?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let request = RequestSeed { each, resources: 0 };
    request
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end())?;
    count_request_decoded();
    Ok(())
}

/// A field name, borrowed from the input unless it holds an escape (serde reads a
/// `Cow<str>` as an owned copy, an allocation per field of every request).
struct Key<'a>(Cow<'a, str>);

impl<'a> Deserialize<'a> for Key<'a> {
    fn deserialize<D: Deserializer<'a>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'a> Visitor<'a> for KeyVisitor {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'a str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

fn over_budget<E: de::Error>(e: impl fmt::Display) -> E {
    E::custom(e)
}

/// Errs on a field met twice, as the model's derived readers do.
fn first_time<E: de::Error>(seen: &mut bool, field: &'static str) -> Result<(), E> {
    if std::mem::replace(seen, true) {
        return Err(E::duplicate_field(field));
    }
    Ok(())
}

struct RequestSeed<'f, 'g, 'a> {
    each: &'g mut EachSpan<'f, 'a>,
    resources: usize,
}

impl<'a> DeserializeSeed<'a> for RequestSeed<'_, '_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'a>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'a> Visitor<'a> for RequestSeed<'_, '_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OTLP request object")
    }
    fn visit_map<M: MapAccess<'a>>(mut self, mut map: M) -> Result<(), M::Error> {
        let mut seen = false;
        while let Some(key) = map.next_key::<Key<'a>>()? {
            match key.0.as_ref() {
                "resourceSpans" | "resource_spans" => {
                    first_time(&mut seen, "resourceSpans")?;
                    map.next_value_seed(ResourceList(&mut self))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct ResourceList<'r, 'f, 'g, 'a>(&'r mut RequestSeed<'f, 'g, 'a>);

impl<'a> DeserializeSeed<'a> for ResourceList<'_, '_, '_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'a>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'a> Visitor<'a> for ResourceList<'_, '_, '_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<S: SeqAccess<'a>>(self, mut seq: S) -> Result<(), S::Error> {
        let mut growth = Growth::of::<ResourceSpans>();
        loop {
            let index = self.0.resources;
            let element = ResourceSpansSeed {
                each: &mut *self.0.each,
                index,
            };
            if seq.next_element_seed(element)?.is_none() {
                break;
            }
            self.0.resources += 1;
            growth.add().map_err(over_budget)?;
        }
        growth.finish().map_err(over_budget)
    }
}

/// Where a scope's spans go: on at once when the resource is known, or kept until the end of
/// the resource's object when its spans come before it.
enum Sink<'s, 'f, 'a> {
    Now {
        each: &'s mut EachSpan<'f, 'a>,
        index: usize,
        resource: Option<&'s Resource<'a>>,
    },
    Later(&'s mut Vec<Span<'a>>),
}

impl<'a> Sink<'_, '_, 'a> {
    fn take(&mut self, span: Span<'a>) {
        match self {
            Sink::Now {
                each,
                index,
                resource,
            } => each(*index, *resource, &span),
            Sink::Later(kept) => kept.push(span),
        }
    }
}

struct ResourceSpansSeed<'s, 'f, 'a> {
    each: &'s mut EachSpan<'f, 'a>,
    index: usize,
}

impl<'a> DeserializeSeed<'a> for ResourceSpansSeed<'_, '_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'a>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'a> Visitor<'a> for ResourceSpansSeed<'_, '_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OTLP resource object")
    }
    fn visit_map<M: MapAccess<'a>>(self, mut map: M) -> Result<(), M::Error> {
        let mut resource: Option<Option<Resource<'a>>> = None;
        let mut kept: Vec<Span<'a>> = Vec::new();
        let mut seen_scopes = false;
        while let Some(key) = map.next_key::<Key<'a>>()? {
            match key.0.as_ref() {
                "resource" => {
                    let mut seen = resource.is_some();
                    first_time(&mut seen, "resource")?;
                    resource = Some(map.next_value()?);
                }
                "scopeSpans"
                | "scope_spans"
                | "instrumentationLibrarySpans"
                | "instrumentation_library_spans" => {
                    first_time(&mut seen_scopes, "scopeSpans")?;
                    let sink = match &resource {
                        Some(resource) => Sink::Now {
                            each: &mut *self.each,
                            index: self.index,
                            resource: resource.as_ref(),
                        },
                        None => Sink::Later(&mut kept),
                    };
                    map.next_value_seed(ScopeList(sink))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let resource = resource.flatten();
        for span in &kept {
            (self.each)(self.index, resource.as_ref(), span);
        }
        Ok(())
    }
}

struct ScopeList<'s, 'f, 'a>(Sink<'s, 'f, 'a>);

impl<'a> DeserializeSeed<'a> for ScopeList<'_, '_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'a>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'a> Visitor<'a> for ScopeList<'_, '_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<S: SeqAccess<'a>>(mut self, mut seq: S) -> Result<(), S::Error> {
        let mut growth = Growth::of::<ScopeSpans>();
        while seq
            .next_element_seed(ScopeSpansSeed(&mut self.0))?
            .is_some()
        {
            growth.add().map_err(over_budget)?;
        }
        growth.finish().map_err(over_budget)
    }
}

struct ScopeSpansSeed<'k, 's, 'f, 'a>(&'k mut Sink<'s, 'f, 'a>);

impl<'a> DeserializeSeed<'a> for ScopeSpansSeed<'_, '_, '_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'a>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'a> Visitor<'a> for ScopeSpansSeed<'_, '_, '_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OTLP scope object")
    }
    fn visit_map<M: MapAccess<'a>>(self, mut map: M) -> Result<(), M::Error> {
        let (mut seen_scope, mut seen_spans) = (false, false);
        while let Some(key) = map.next_key::<Key<'a>>()? {
            match key.0.as_ref() {
                "scope" => {
                    first_time(&mut seen_scope, "scope")?;
                    // Read as the model reads it, so a scope it refuses fails here too.
                    map.next_value::<Option<Scope<'a>>>()?;
                }
                "spans" => {
                    first_time(&mut seen_spans, "spans")?;
                    map.next_value_seed(SpanList(&mut *self.0))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct SpanList<'k, 's, 'f, 'a>(&'k mut Sink<'s, 'f, 'a>);

impl<'a> DeserializeSeed<'a> for SpanList<'_, '_, '_, 'a> {
    type Value = ();
    fn deserialize<D: Deserializer<'a>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'a> Visitor<'a> for SpanList<'_, '_, '_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<S: SeqAccess<'a>>(self, mut seq: S) -> Result<(), S::Error> {
        let mut growth = Growth::of::<Span>();
        while let Some(span) = seq.next_element::<Span<'a>>()? {
            growth.add().map_err(over_budget)?;
            self.0.take(span);
        }
        growth.finish().map_err(over_budget)
    }
}
