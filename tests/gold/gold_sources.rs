//! Gold sources: toolscore files, id maps, sidecars, arksim assertions; bad items reported.

use std::path::Path;

use serde_json::json;
use toolcap::gold::source::{
    GoldFile, load_gold_file, parse_arksim_assertion, parse_toolscore_gold, sidecar_candidates,
};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gold")
        .join(name)
}

#[test]
fn unusable_items_are_reported_not_silently_dropped() {
    let (file, problems) = load_gold_file(&fixture("dropped_items.gold.json")).expect("loads");
    let GoldFile::Shared(spec) = file else {
        panic!("a list is a shared gold");
    };
    // The fixture has 6 items: search and summarize are usable; 4 are not.
    let tools: Vec<&str> = spec.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, vec!["search", "summarize"]);
    assert_eq!(problems.len(), 4, "{problems:?}");
    assert!(
        problems[0].message.contains("gold item 1") && problems[0].message.contains("\"name\"")
    );
    assert!(problems[1].message.contains("gold item 2"));
    assert!(
        problems[3]
            .message
            .contains("\"args\" of fetch is not an object")
    );
    assert_eq!(spec.calls[0].description.as_deref(), Some("find docs"));
    assert_eq!(spec.calls[1].args, None, "absent args means don't check");
}

#[test]
fn args_null_and_empty_are_different() {
    let (spec, problems) = parse_toolscore_gold(
        &json!({"calls": [{"tool": "a", "args": null}, {"tool": "b", "args": {}}]}),
        "inline",
    )
    .expect("parses");
    assert!(problems.is_empty());
    assert_eq!(spec.calls[0].args, None);
    assert_eq!(spec.calls[1].args, Some(Default::default()));
    assert!(parse_toolscore_gold(&json!({"tool": "a"}), "inline").is_err());
}

#[test]
fn a_map_gives_one_gold_per_invocation() {
    let (file, problems) = load_gold_file(&fixture("map.gold.json")).expect("loads");
    assert!(file.for_invocation("inv-1").is_some());
    assert_eq!(file.for_invocation("inv-2").map(|s| s.calls.len()), Some(1));
    assert!(file.for_invocation("inv-3").is_none());
    assert!(file.for_invocation("other").is_none());
    // inv-2's `name` item and inv-3's non-list are both reported.
    assert_eq!(problems.len(), 2, "{problems:?}");
}

#[test]
fn sidecars_sit_beside_the_trace() {
    let names = sidecar_candidates(Path::new("/runs/a.otlp.jsonl"));
    assert!(names.contains(&Path::new("/runs/a.otlp.gold.json").to_path_buf()));
    assert!(names.contains(&Path::new("/runs/a.gold.json").to_path_buf()));
    assert!(sidecar_candidates(Path::new("/runs/a.gold.json")).is_empty());
}

#[test]
fn arksim_assertions_keep_modes() {
    let (spec, problems) = parse_arksim_assertion(
        &json!({"type": "tool_calls", "match_mode": "strict", "expected": [
            {"name": "get_weather", "arguments": {"city": "Paris"}, "arg_match_mode": "exact"},
            {"name": "get_weather"},
            {"arguments": {}}
        ]}),
        "scenario",
    )
    .expect("parses");
    assert_eq!(spec.match_mode.as_deref(), Some("strict"));
    assert_eq!(spec.calls.len(), 2);
    assert_eq!(spec.calls[0].arg_match_mode.as_deref(), Some("exact"));
    assert!(spec.calls[0].args.is_some());
    assert_eq!(spec.calls[1].args, None, "ignore mode is not checked");
    assert_eq!(problems.len(), 1);
    assert!(parse_arksim_assertion(&json!({"type": "llm_judge"}), "s").is_err());
}
