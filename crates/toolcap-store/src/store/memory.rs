//! Where the store's memory goes, structure by structure (`dump --stats`, the benches). Heap
//! sizes are counted from capacities; a shared allocation (a service name, an attribute key, a
//! file path, the search indexes' table of texts) is counted once, by its address. Allocator
//! overhead is not counted, so the total is below the process's resident size.

use std::collections::HashSet;
use std::mem::size_of;

use super::{Invocation, Store};
use crate::model::{
    ArcStr, AttrValue, Attributes, Id, Origin, Payload, PayloadBody, Span, file_numbers, interner,
    thin_vec_bytes,
};

/// Bytes per structure, largest first.
#[derive(Debug, Clone, Default)]
pub struct MemoryBreakdown {
    pub rows: Vec<(&'static str, u64)>,
}

impl MemoryBreakdown {
    pub fn total(&self) -> u64 {
        self.rows.iter().map(|(_, b)| b).sum()
    }

    /// Bytes counted for `name` (0 when absent).
    pub fn get(&self, name: &str) -> u64 {
        self.rows
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, b)| *b)
    }
}

#[derive(Default)]
struct Tally {
    span_records: u64,
    ids: u64,
    names: u64,
    facts: u64,
    attributes: u64,
    events: u64,
    payloads_in_memory: u64,
    shared: u64,
    trees_and_summaries: u64,
    id_maps: u64,
    search_index: u64,
    runs: u64,
    seen: HashSet<usize>,
}

fn string(s: &String) -> u64 {
    s.capacity() as u64
}

fn opt(s: &Option<String>) -> u64 {
    s.as_ref().map_or(0, string)
}

impl Tally {
    /// `bytes` the first time the allocation at `address` is met, 0 after: every count of a
    /// shared allocation (texts, ids, payloads, origins) goes through here.
    fn once_at(&mut self, address: usize, bytes: usize) -> u64 {
        match self.seen.insert(address) {
            true => bytes as u64,
            false => 0,
        }
    }

    /// An allocation shared by many owners, counted the first time it is met.
    fn shared_str(&mut self, s: &ArcStr) {
        self.shared += self.once(s);
    }

    /// The bytes of a shared string the first time it is met, 0 after.
    fn once(&mut self, s: &str) -> u64 {
        self.once_at(s.as_ptr() as usize, s.len() + 16)
    }

    fn attr(&mut self, value: &AttrValue) -> u64 {
        match value {
            AttrValue::Str(s) => self.once(s),
            // Bytes are a boxed `Vec`: its header, then its buffer.
            AttrValue::Bytes(b) => (size_of::<Vec<u8>>() + b.capacity()) as u64,
            AttrValue::List(items) => {
                let own = thin_vec_bytes(items.capacity(), size_of::<AttrValue>());
                own + items.iter().map(|v| self.attr(v)).sum::<u64>()
            }
            AttrValue::Map(items) => {
                let own = thin_vec_bytes(items.capacity(), size_of::<(String, AttrValue)>());
                own + items
                    .iter()
                    .map(|(k, v)| string(k) + self.attr(v))
                    .sum::<u64>()
            }
            AttrValue::Payload(p) => self.shared_payload(p),
            AttrValue::Int(_) | AttrValue::Float(_) | AttrValue::Bool(_) | AttrValue::Null => 0,
        }
    }

    /// A list's own bytes and its held values'. Stored lists are packed: their keys and
    /// shared texts are in the shared table, counted once with the shared names.
    fn attribute_list(&mut self, attributes: &Attributes) -> u64 {
        let mut bytes = attributes.own_heap_bytes();
        for value in attributes.held_values() {
            bytes += self.attr(value);
        }
        bytes
    }

    /// A payload's allocation (with the `Arc`'s two counts) the first time it is met, 0 after:
    /// a span's input or output is often one of its attributes too.
    fn shared_payload(&mut self, payload: &std::sync::Arc<Payload>) -> u64 {
        let bytes = self.once_at(
            std::sync::Arc::as_ptr(payload) as usize,
            size_of::<Payload>() + 16,
        );
        if bytes > 0 {
            self.payload(payload);
        }
        bytes
    }

    fn payload(&mut self, payload: &Payload) {
        if let Some(field) = &payload.field {
            self.shared_str(field);
        }
        match &payload.body {
            PayloadBody::Inline(text) => self.payloads_in_memory += text.len() as u64 + 16,
            PayloadBody::InRecord { locator, .. } => {
                self.payloads_in_memory += locator.len() as u64
            }
            PayloadBody::Range(_) | PayloadBody::Absent => {}
        }
    }

    /// The bytes of an id's allocation the first time it is met, 0 after: the spans of a
    /// trace share one.
    fn id(&mut self, id: &Id) -> u64 {
        id.allocation()
            .map_or(0, |(address, bytes)| self.once_at(address, bytes))
    }

    fn span(&mut self, span: &Span) {
        self.ids += self.id(&span.trace_id.id()) + self.id(&span.span_id.id());
        if let Some(parent) = &span.parent_span_id {
            self.ids += self.id(&parent.id());
        }
        self.names += self.once(&span.name);
        if let Some(service) = span.service() {
            self.shared_str(service);
        }
        if let Some(e) = span.error() {
            let texts = [&e.error_type, &e.message].into_iter().flatten();
            self.facts += texts.map(|t| self.once(t)).sum::<u64>();
        }
        if !span.extras.is_unset() {
            self.facts += size_of::<crate::model::SpanExtras>() as u64;
        }
        // The kind facts' one block: one kind's facts, or several together.
        self.facts += span.facts.block_bytes() as u64;
        if let Some(l) = span.llm() {
            // Read from the attributes (see `KeyedLlmFacts`), the names are theirs: counted once.
            for name in [l.provider, l.model, l.response_model]
                .into_iter()
                .flatten()
            {
                self.facts += self.once(name);
            }
            // Keyed facts name a list the process holds once (a handful in all): not theirs.
            let keyed = matches!(
                span.facts.view(),
                Some(crate::model::KindFactsView::LlmByKeys(_))
            );
            let own_list = if keyed {
                0
            } else {
                l.finish_reasons.own_heap_bytes()
            };
            let reasons = own_list + l.finish_reasons.iter().map(|r| self.once(r)).sum::<u64>();
            let calls = &l.requested_tool_calls;
            self.facts += reasons
                + calls.own_heap_bytes()
                + calls
                    .iter()
                    .map(|c| c.id.as_ref().map_or(0, |id| self.once(id)) + self.once(&c.name))
                    .sum::<u64>();
        }
        if let Some(t) = span.tool() {
            // Read from the attributes (see `ToolKeys`), the texts are theirs: met again there,
            // they are counted once.
            for text in [t.name, t.call_id].into_iter().flatten() {
                self.facts += self.once(text);
            }
        }
        if let Some(r) = span.retrieval() {
            // Most often the query attribute's own text: met again there, counted once.
            if let Some(query) = &r.query {
                self.facts += self.once(query);
            }
        }
        {
            // Inline in the extras block, counted above.
            let i = span.identity();
            let node = &*i.node;
            if !i.node.is_unset() {
                self.facts += size_of_val(node) as u64;
            }
            let texts = [
                &i.invocation_id,
                &i.correlation_id,
                &node.node_name,
                &node.namespace,
                &node.branch_name,
            ];
            for text in texts.into_iter().flatten() {
                self.facts += self.once(text);
            }
        }
        for payload in [span.input_slot(), span.output_slot()] {
            // Out of line when set: part of the span's record. Its attribute, met after, shares it.
            if let Some(held) = payload.holder() {
                self.span_records += self.shared_payload(held);
            }
        }
        self.attributes += self.attribute_list(&span.attributes);
        self.events += thin_vec_bytes(
            span.extras.events.capacity(),
            size_of::<crate::model::SpanEvent>(),
        );
        for event in span.events() {
            self.events += self.once(&event.name) + self.attribute_list(&event.attributes);
        }
        // The provenance block is shared by the spans of one resource in one parse, the
        // origin's own allocation by the spans of one parse, and what it names by every parse
        // of its file or endpoint.
        if let Some(provenance) = &span.provenance {
            let own = std::sync::Arc::as_ptr(provenance) as usize;
            self.shared += self.once_at(own, size_of::<crate::model::Provenance>() + 16);
        }
        if let Some(origin) = span.provenance.as_deref().and_then(|p| p.origin.as_ref()) {
            let own = std::sync::Arc::as_ptr(origin) as usize;
            self.shared += self.once_at(own, size_of::<Origin>() + 16);
            self.shared += match &**origin {
                Origin::File(path) => self.once_at(
                    std::sync::Arc::as_ptr(path) as usize,
                    path.as_os_str().len(),
                ),
                Origin::Endpoint(name) => {
                    self.once_at(std::sync::Arc::as_ptr(name) as usize, name.capacity())
                }
            };
        }
    }

    fn invocation(&mut self, inv: &Invocation) {
        self.runs += size_of::<Invocation>() as u64
            + self.id(&inv.id)
            + inv.display_name().map_or(0, |n| n.len() as u64)
            + inv
                .case()
                .map_or(0, |case| (size_of_val(case) + case.id.capacity()) as u64);
        if let Some(extras) = &inv.extras {
            self.runs += size_of_val(extras.as_ref()) as u64;
        }
        if let Some(eval) = inv.eval() {
            self.runs +=
                (size_of_val(eval) + eval.label.capacity()) as u64 + eval.reason.capacity() as u64;
        }
        if let Some(gold) = inv.gold() {
            // The calls' expected arguments (JSON trees) are not counted.
            self.runs += (size_of_val(gold) + gold.source.capacity()) as u64
                + opt(&gold.match_mode)
                + opt(&gold.arg_match_mode)
                + (gold.calls.capacity() * size_of::<crate::model::GoldCall>()) as u64;
        }
        self.span_records += thin_vec_bytes(inv.spans.capacity(), size_of::<Span>());
        for span in &inv.spans {
            self.span(span);
        }
        let vec_bytes = thin_vec_bytes;
        if let Some(tree) = &inv.tree {
            self.trees_and_summaries += (size_of::<super::Tree>()
                + tree.places_heap_bytes() as usize) as u64
                + vec_bytes(tree.rows.capacity(), size_of::<super::TreeRow>())
                + vec_bytes(tree.roots.capacity(), 8);
        }
        self.trees_and_summaries += self.once(&inv.summary.name);
        let summary = &inv.summary;
        self.trees_and_summaries += vec_bytes(
            summary.tool_calls.capacity(),
            size_of::<super::ToolCallRef>(),
        ) + summary.formats.heap_bytes()
            + summary
                .conversation
                .as_ref()
                .map_or(0, |conversation| self.once(conversation));
        // A hash map entry: key, value and a control byte; keys own their strings.
        let map_entry =
            |key: &String, value: usize| (key.capacity() + size_of::<String>() + value + 1) as u64;
        // The same, keyed by a shared text (counted once, apart).
        let id_entry =
            |key_bytes: u64, value: usize| key_bytes + (size_of::<Id>() + value + 1) as u64;
        if inv.span_index.has_map() {
            self.id_maps += size_of::<foldhash::HashMap<Id, usize>>() as u64;
            for key in inv.span_index.keys() {
                self.id_maps += id_entry(self.id(key), 8);
            }
        }
        if let Some(links) = inv.links() {
            self.id_maps += size_of_val(links) as u64
                + links
                    .waiting
                    .iter()
                    .map(|(k, v)| id_entry(self.id(k), 24) + v.capacity() as u64 * 8)
                    .sum::<u64>();
        }
        if let Some(cycles) = inv.extras.as_ref().and_then(|e| e.reported_cycles.as_ref()) {
            self.id_maps += size_of_val(cycles.as_ref()) as u64
                + cycles.iter().map(|k| map_entry(k, 0)).sum::<u64>();
        }
        self.search_index += inv.search_index().heap_bytes() as u64;
        // The texts are shared by many runs: counted once.
        if let Some((address, bytes)) = inv.search_index().shared_heap() {
            self.search_index += self.once_at(address, bytes);
        }
    }
}

impl Store {
    /// The store's memory, structure by structure.
    pub fn memory_breakdown(&self) -> MemoryBreakdown {
        let mut tally = Tally::default();
        for inv in self.invocations.values() {
            tally.invocation(inv);
        }
        let problems: u64 = self
            .problems
            .iter()
            .map(|p| (size_of_val(p) + p.source.capacity() + p.message.capacity()) as u64)
            .sum();
        let mut rows = vec![
            ("span records", tally.span_records),
            ("ids (trace, span, parent)", tally.ids),
            ("span names", tally.names),
            ("facts (model, tool, error, identity)", tally.facts),
            ("attributes", tally.attributes),
            ("events", tally.events),
            ("payloads held in memory", tally.payloads_in_memory),
            (
                "shared names, keys and paths",
                tally.shared + interner::heap_bytes() + file_numbers::heap_bytes(),
            ),
            ("trees and summaries", tally.trees_and_summaries),
            ("span id maps", tally.id_maps),
            ("search index", tally.search_index),
            ("runs", tally.runs),
            ("problems", problems),
        ];
        rows.sort_by_key(|row| std::cmp::Reverse(row.1));
        MemoryBreakdown { rows }
    }
}
