//! Trees are assembled in time linear in spans however the spans are split across files:
//! the store indexes by trace, not by file, and a trace that keeps growing is extended, not
//! rebuilt. The mechanism is asserted through the store's count of span placements; the
//! timing is in `benches/ingest.rs`.

use std::path::Path;

use toolcap::sources::files;
use toolcap::sources::load;
use toolcap::store::{SMALL_RUN_SPANS, Store};
use toolcap::views::dump;

fn otlp_line(trace: &str, span: &str, parent: Option<&str>, start: u64) -> String {
    let parent = parent
        .map(|p| format!(r#","parentSpanId":"{p}""#))
        .unwrap_or_default();
    format!(
        r#"{{"resourceSpans":[{{"resource":{{}},"scopeSpans":[{{"spans":[{{"traceId":"{trace}","spanId":"{span}"{parent},"name":"s","startTimeUnixNano":"{start}","endTimeUnixNano":"{}"}}]}}]}}]}}"#,
        start + 10
    ) + "\n"
}

const FILES: usize = 2_000;

/// `FILES` one-span files, all of one trace (a chain of parents, children written first) or
/// each of its own trace.
fn write_files(dir: &Path, one_trace: bool) {
    for i in 0..FILES {
        let (trace, parent) = if one_trace {
            (
                "0af7651916cd43dd8448eb211c80319c".to_owned(),
                (i > 0).then(|| format!("{:016x}", (i - 1) / 2 + 1)),
            )
        } else {
            (format!("{:032x}", i + 1), None)
        };
        let line = otlp_line(
            &trace,
            &format!("{:016x}", i + 1),
            parent.as_deref(),
            1_000 + i as u64,
        );
        // Reverse name order: children load before their parents.
        std::fs::write(dir.join(format!("{:05}.otlp.jsonl", FILES - i)), line).unwrap();
    }
}

#[test]
fn many_files_of_one_trace_cost_what_many_one_trace_files_cost() {
    let one = tempfile::tempdir().unwrap();
    let many = tempfile::tempdir().unwrap();
    write_files(one.path(), true);
    write_files(many.path(), false);

    let (headless_one, _) = load::load_store(&[one.path().to_path_buf()]);
    let (headless_many, _) = load::load_store(&[many.path().to_path_buf()]);
    assert_eq!(headless_one.len(), 1);
    assert_eq!(headless_many.len(), FILES);
    assert_eq!(headless_one.stats().spans_kept, FILES as u64);
    assert_eq!(headless_one.stats().tree_work, FILES as u64);
    assert_eq!(headless_many.stats().tree_work, FILES as u64);
    assert!(headless_one.problems().is_empty());

    // The TUI settles after every drain; with a drain per file it places each span once
    // when the run keeps its tree, and rebuilds it whole only while the run is small.
    let mut live_one = Store::new();
    let mut live_kept = Store::keeping_every_tree();
    for file in files::trace_files(one.path()).unwrap() {
        live_one.ingest(files::load_file(&file).batch);
        live_kept.ingest(files::load_file(&file).batch);
    }
    assert_eq!(live_kept.stats().tree_work, FILES as u64);
    let small = SMALL_RUN_SPANS as u64 + 1;
    let rebuilt_while_small = small * (small + 1) / 2;
    assert_eq!(
        live_one.stats().tree_work,
        rebuilt_while_small + FILES as u64 - small
    );
    let (a, b) = (
        live_one.get("0af7651916cd43dd8448eb211c80319c").unwrap(),
        headless_one
            .get("0af7651916cd43dd8448eb211c80319c")
            .unwrap(),
    );
    let ids = |inv: &toolcap::store::Invocation| -> Vec<(String, usize)> {
        inv.tree()
            .rows
            .iter()
            .map(|r| (inv.spans[r.span()].span_id.to_string(), r.depth()))
            .collect()
    };
    assert_eq!(ids(a), ids(b));
    assert!(a.tree().rows.iter().all(|r| !r.orphan));
}

#[test]
fn cycles_are_flagged_in_dump_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cycle.otlp.jsonl");
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let text = otlp_line(trace, "00000000000000a1", Some("00000000000000b2"), 1)
        + &otlp_line(trace, "00000000000000b2", Some("00000000000000a1"), 2);
    std::fs::write(&path, text).unwrap();
    let (store, _) = load::load_store(std::slice::from_ref(&path));
    let json = dump::to_json(&store, toolcap::redact::Reveal::Redacted);
    let spans = json["invocations"][0]["spans"].as_array().unwrap();
    assert_eq!(spans.len(), 2);
    assert!(
        spans
            .iter()
            .all(|s| s["cycle"] == true && s["orphan"] == false),
        "{spans:?}"
    );
    let problems = json["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0]["message"]
            .as_str()
            .unwrap()
            .contains("parent cycle")
    );
    let text = dump::to_text(&store, toolcap::redact::Reveal::Redacted);
    assert_eq!(text.matches("(cycle:").count(), 2, "{text}");
    assert!(!text.contains("parent missing"), "{text}");
}

#[test]
fn cycles_show_a_cycle_marker_in_the_tree() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use toolcap::tui::action::Action;
    use toolcap::tui::app::{self, App};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cycle.otlp.jsonl");
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let text = otlp_line(trace, "00000000000000a1", Some("00000000000000b2"), 1)
        + &otlp_line(trace, "00000000000000b2", Some("00000000000000a1"), 2);
    std::fs::write(&path, text).unwrap();
    let (store, _) = load::load_store(std::slice::from_ref(&path));
    let mut app = App::new(
        store,
        toolcap::tui::config::from_toml("", false),
        toolcap::redact::Reveal::Redacted,
    );
    app::update(
        &mut app,
        Action::Resize {
            width: 120,
            height: 30,
        },
    );
    let mut terminal = Terminal::new(TestBackend::new(120, 30)).unwrap();
    terminal
        .draw(|frame| {
            toolcap::tui::ui::render(frame, &app);
        })
        .unwrap();
    let screen: String = terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert_eq!(screen.matches("↻ cycle").count(), 2, "{screen}");
    assert!(!screen.contains("orphan"));
}
