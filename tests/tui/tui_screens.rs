//! Snapshot tests of whole screens at 80x24 and 120x40, driven by key presses.

use insta::assert_snapshot;

use crate::support::{draw, press, sample_app};

fn screens(name: &str, keys: &str) {
    for (w, h) in [(80, 24), (120, 40)] {
        let mut app = sample_app(w, h);
        press(&mut app, keys);
        assert_snapshot!(format!("{name}_{w}x{h}"), draw(&app).backend());
    }
}

#[test]
fn invocation_list() {
    screens("list", "");
}

#[test]
fn tree_with_failing_tool_selected() {
    // Tab into the tree, then `n` to the first failed span.
    screens("tree_failing_tool", "<tab>n");
}

#[test]
fn detail_redacted() {
    screens("detail_redacted", "<tab>n<tab>");
}

#[test]
fn detail_revealed() {
    screens("detail_revealed", "<tab>n<tab>r");
}

#[test]
fn help_overlay() {
    screens("help", "?");
}

#[test]
fn full_screen_payload() {
    screens("fullscreen_payload", "<tab>nf");
}

/// The problems overlay wraps what it lists instead of cutting it: a running Inspect log's
/// coverage note reads whole on an 80-column screen, under a heading that does not call it a
/// skipped file.
#[test]
fn the_problems_overlay_wraps_a_long_note_whole() {
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inspect-running/geo-tools-3-of-8.eval");
    let mut app = crate::support::app_over_source(&log, 80, 24);
    press(&mut app, "p");
    let screen = crate::support::screen_text(&app);
    // The overlay's text, its lines joined: what a reader gets from the wrapped note.
    let text: String = screen
        .lines()
        .filter_map(|line| line.split('│').nth(2))
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("notes (1), not counted as problems"),
        "{screen}"
    );
    assert!(
        text.contains("(eval in progress: 3 of 8 written): 3 samples, 3 scored, 0 errored, 0 neither (errored samples count as failing)"),
        "{screen}"
    );
}

/// The sample traces' Inspect log: 8 one-epoch runs of the geo task.
fn sample_traces_log() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/sample-traces/inspect-geo-tools.eval")
}

/// The list's pane as drawn: the screen's lines down to its bottom border.
fn list_pane(app: &toolcap::tui::app::App) -> String {
    crate::support::screen_text(app)
        .lines()
        .take_while(|line| !line.starts_with('└'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The list's row that shows `text`.
fn row_with<'a>(list: &'a str, text: &str) -> &'a str {
    list.lines()
        .find(|line| line.contains(text))
        .unwrap_or_else(|| panic!("no row with {text}\n{list}"))
}

/// The list's name tells runs apart, so it is the last column to give way: from 86 columns on,
/// where the narrow layout leaves it 28, it keeps at least those 28 at every width, and every
/// Inspect run's whole name shows. The start's date and the verdict's full label take only the
/// room beyond that.
#[test]
fn the_list_keeps_28_columns_of_name_at_every_width_from_86() {
    for width in 86..=160 {
        let list = list_pane(&crate::support::app_over_source(
            &sample_traces_log(),
            width,
            60,
        ));
        // The header's labels start where their columns do (one column of space between).
        let header = list.lines().nth(1).expect("header row");
        let column = |label: &str| {
            header.chars().count() - header[header.find(label).unwrap()..].chars().count()
        };
        let name_width = column("start") - column("name") - 1;
        assert!(
            name_width >= 28,
            "{width} columns: name {name_width}\n{list}"
        );
        for sample in 1..=8 {
            let name = format!("geo_tools · geo-0{sample}");
            assert!(list.contains(&name), "{width} columns: {name} cut\n{list}");
        }
        // The room beyond the names goes to the verdict's label first, then to the date.
        assert_eq!(
            list.contains("expected_tools=C includes=I"),
            width >= 104,
            "{width} columns\n{list}"
        );
        assert_eq!(list.contains("start (UTC)"), width >= 115, "{width}");
    }
}

/// A narrow verdict column names the scorers that failed the run, not the whole label: cut to
/// its 12 columns, "expected_tools=C includes=I" read "✗ expected_t", naming a scorer that
/// passed. Under `--scorer` it names the chosen scorers that failed.
#[test]
fn a_narrow_verdict_column_names_the_scorers_that_failed() {
    use toolcap::model::{ScorerChoice, ScorerRule};
    use toolcap::store::Store;
    let list_by = |rule: ScorerRule| {
        let (store, _) = toolcap::sources::load::load_into(
            Store::new().deciding_by(rule),
            &[sample_traces_log()],
            &toolcap::sources::remote::RemoteOptions::default(),
        );
        list_pane(&crate::support::app_over_store(store, 80, 60))
    };
    // Every scorer decides: geo-05 failed on includes only, geo-02 on both.
    let list = list_by(ScorerRule::default());
    assert!(row_with(&list, "geo-05").contains("✗ includes=I"), "{list}");
    assert!(row_with(&list, "geo-02").contains("✗ expected_t"), "{list}");
    assert!(!list.contains("✗ expected_tools=C"), "{list}");
    // Only includes decides: geo-02 names it alone.
    let includes = ScorerRule {
        deciding: vec!["includes".parse::<ScorerChoice>().unwrap()],
    };
    let list = list_by(includes);
    assert!(row_with(&list, "geo-02").contains("✗ includes=I"), "{list}");
    // Wide, the whole label: every scorer's value.
    let list = list_pane(&crate::support::app_over_source(
        &sample_traces_log(),
        120,
        60,
    ));
    assert!(
        row_with(&list, "geo-05").contains("✗ expected_tools=C includes=I"),
        "{list}"
    );
}

/// The wide verdict column (30 columns) names the failed scorers too when the whole label does
/// not fit: four scorers' "exact=I expected_tools=C includes=C match=I" cut to 30 columns named
/// two scorers that passed. The log is Inspect's own, with four scorers (`exact` fails every
/// sample, the others some).
#[test]
fn a_wide_verdict_column_too_narrow_for_four_scorers_names_the_failed_ones() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inspect-ai/four-scorers");
    let list = list_pane(&crate::support::app_over_source(&dir, 120, 60));
    let verdict_of = |sample: u32| {
        let row = row_with(&list, &format!("geo-0{sample}"));
        let at = row
            .rfind("✗ ")
            .unwrap_or_else(|| panic!("geo-0{sample}: no verdict\n{list}"));
        row[at..].trim_end_matches(['│', ' ']).to_owned()
    };
    for sample in 1..=8 {
        let label = verdict_of(sample);
        assert!(label.starts_with("✗ exact=I"), "{label}\n{list}");
        assert!(
            !label.contains("=C"),
            "a passed scorer named: {label}\n{list}"
        );
    }
    // Samples that failed `exact` alone name that scorer alone.
    for sample in [1, 4, 6] {
        assert_eq!(verdict_of(sample), "✗ exact=I", "{list}");
    }
}

/// On 80 columns a two-epoch Inspect run's name (`capital_epochs · cap-01 · epoch 1`) is wider
/// than the name column: it gives up the task the parts start with, not the sample and epoch
/// that tell its runs apart.
#[test]
fn a_name_too_wide_keeps_the_sample_and_epoch() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inspect-ai/epochs/A");
    let list = list_pane(&crate::support::app_over_source(&dir, 80, 60));
    for sample in 1..=5 {
        for epoch in 1..=2 {
            let tail = format!("… · cap-0{sample} · epoch {epoch}");
            assert!(list.contains(&tail), "{tail}\n{list}");
        }
    }
}
