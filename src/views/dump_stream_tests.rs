//! The streamed `dump --json` is byte for byte the document `selection_json` builds.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::dump::{Selection, selection_json, write_selection_json};
use crate::query::Query;
use crate::redact::{self, Reveal};
use crate::sources::load::load_store;
use crate::store::Store;

fn streamed(
    store: &Store,
    selection: &Selection,
    mode: Reveal,
    extra: Vec<(&str, Value)>,
) -> String {
    let mut out = Vec::new();
    write_selection_json(&mut out, store, selection, mode, extra).expect("writing to memory");
    String::from_utf8(out).expect("UTF-8")
}

fn built(store: &Store, selection: &Selection, mode: Reveal, extra: Vec<(&str, Value)>) -> String {
    let mut doc = selection_json(store, selection, mode);
    for (key, value) in extra {
        doc[key] = value;
    }
    redact::escape_json_text(&serde_json::to_string_pretty(&doc).expect("JSON")).into_owned() + "\n"
}

#[test]
fn the_streamed_document_is_the_built_one_on_every_fixture() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let sources = [
        root.join("tests/fixtures/corpus"),
        root.join("assets/sample-traces"),
        root.join("tests/fixtures/hostile"),
        root.join("tests/fixtures/inspect-ai"),
    ];
    let failing = Query::parse("is:failing").expect("a query");
    let nothing = Query::parse("name:\"no run has this name\"").expect("a query");
    for source in &sources {
        let (store, _) = load_store(std::slice::from_ref(source));
        for mode in [Reveal::Redacted, Reveal::Revealed] {
            let selections = [
                Selection::all(&store),
                Selection::filtered(&store, &failing, mode),
                Selection::filtered(&store, &nothing, mode),
            ];
            for selection in &selections {
                let extra = || vec![("sources", json!([{"source": "x\ny", "spans": 3}]))];
                assert_eq!(
                    streamed(&store, selection, mode, extra()),
                    built(&store, selection, mode, extra()),
                    "{} {mode:?} {:?}",
                    source.display(),
                    selection.query
                );
                assert_eq!(
                    streamed(&store, selection, mode, Vec::new()),
                    built(&store, selection, mode, Vec::new())
                );
            }
        }
    }
    let empty = Store::new();
    assert_eq!(
        streamed(
            &empty,
            &Selection::all(&empty),
            Reveal::Redacted,
            Vec::new()
        ),
        built(
            &empty,
            &Selection::all(&empty),
            Reveal::Redacted,
            Vec::new()
        )
    );
}
