//! The search index only narrows: on the fixture corpus and the samples, every query built from
//! text that really occurs in the spans (names, tools, models, services, error messages,
//! attribute values) gives the same runs and the same matched spans with the index as a scan of
//! every span without it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use toolcap::query::{Context, Query};
use toolcap::sources::load::load_into;
use toolcap::sources::remote::RemoteOptions;
use toolcap::store::Store;

/// Lower-case ASCII needles cut from the spans' own text, so most queries match something.
fn needles(store: &toolcap::store::Store) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut add = |text: &str| {
        let text = text.trim().to_lowercase();
        if !text.is_ascii() || text.is_empty() {
            return;
        }
        let cut = |from: usize, len: usize| text.get(from..(from + len).min(text.len()));
        for (from, len) in [(0, 6), (1, 4), (text.len() / 2, 5)] {
            if let Some(piece) = cut(from, len).map(str::trim).filter(|p| p.len() > 1) {
                found.insert(piece.replace('"', ""));
            }
        }
    };
    for inv in store.invocations() {
        for span in &inv.spans {
            add(&span.name);
            span.tool_name().map(&mut add);
            span.model().map(&mut add);
            if let Some(service) = span.service() {
                add(service);
            }
            span.error_message().map(&mut add);
            for (_, value) in &span.attributes {
                if let Some(s) = value.text() {
                    add(s);
                }
            }
        }
    }
    found
}

#[test]
fn indexed_queries_match_exactly_what_a_full_scan_matches() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (store, _) = load_into(
        Store::new(),
        &[
            root.join("tests/fixtures/corpus"),
            root.join("assets/sample-traces"),
        ],
        &RemoteOptions::default(),
    );
    assert!(
        store
            .invocations()
            .all(|inv| inv.spans.is_empty() || inv.search_index().shared_heap().is_some()),
        "every run is indexed"
    );
    let all = needles(&store);
    assert!(all.len() > 200, "{} needles", all.len());
    // An even sample of about 250, to keep the test quick in debug builds.
    let step = all.len().div_ceil(250);
    let needles: Vec<&String> = all.iter().step_by(step).collect();
    let ctx = Context::default();
    let runs: Vec<_> = store
        .invocations()
        .map(|inv| (inv, inv.without_search_index()))
        .collect();
    let mut matched = 0;
    let mut queries = 0;
    for needle in needles {
        let word: String = needle
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let mut texts = vec![
            format!("\"{needle}\""),
            format!("tool:\"{needle}\""),
            format!("name:\"{needle}\""),
            format!("model:\"{needle}\""),
            format!("service:\"{needle}\""),
            format!("provider:\"{needle}\""),
        ];
        if !word.is_empty() {
            // A fuzzy word that is not a substring: every other character, in order.
            let skipping: String = word.chars().step_by(2).collect();
            if skipping.len() >= 3 {
                texts.push(skipping);
            }
            texts.push(word);
        }
        for text in texts {
            let Ok(query) = Query::parse(&text) else {
                continue;
            };
            queries += 1;
            for (inv, unindexed) in &runs {
                let indexed = query.matches(inv, &ctx);
                let scanned = query.matches(unindexed, &ctx);
                assert_eq!(indexed, scanned, "{text} on {}", inv.id);
                matched += usize::from(indexed.is_some());
            }
        }
    }
    assert!(queries > 1000, "{queries} queries");
    assert!(
        matched > 500,
        "only {matched} matches: the needles found too little"
    );
}
