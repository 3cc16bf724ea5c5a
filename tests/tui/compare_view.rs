//! The interactive `compare A B` (issue 41): the cases of two runs grouped by class with exact
//! counts, `n` through the newly failing cases one key each, a case's two runs side by side with
//! their tool calls aligned, redaction until `r`, the gold diffs on `d`, the Markdown export
//! through the safe writer, and the real binary in tmux keeping the gate's exit code.

use std::path::{Path, PathBuf};

use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::compare::keys::{self, Action, BINDINGS, GOLD_BINDINGS};
use toolcap::tui::compare::state::{ListRow, Overlay};
use toolcap::tui::compare::{CompareState, export, render, update};
use toolcap::tui::config;
use toolcap::views::compare::{KeyRule, compare, markdown};

use crate::arksim_rerun::{ARKSIM_FIXTURE, rerun};
use crate::inspect_fixtures::{inspect_epochs_log, inspect_log};
use crate::support::key_events;
use crate::tmux::{Tmux, WAIT, shell_quote};

fn leaked_store(source: &Path) -> &'static Store {
    let (store, _) = toolcap::sources::load::load_store(&[source.to_path_buf()]);
    assert!(!store.is_empty(), "{} loads", source.display());
    Box::leak(Box::new(store))
}

/// The view over runs A and B at `width` x `height`, redacted, colours off, the sources named
/// `A` and `B` so screens do not depend on where the checkout is.
pub fn view(a: &Path, b: &Path, rule: KeyRule, width: u16, height: u16) -> CompareState {
    let stores = [leaked_store(a), leaked_store(b)];
    let comparison = compare(stores[0], stores[1], &rule, Reveal::Revealed);
    let mut state = CompareState::new(
        comparison,
        stores,
        ["runs/A".into(), "runs/B".into()],
        rule,
        Reveal::Redacted,
        config::from_toml("", true),
    );
    update(&mut state, Action::Resize { width, height });
    state
}

/// The Inspect AI pair of the fixture corpus (tests/fixtures/inspect-ai/SOURCES.md).
fn inspect_view(width: u16, height: u16) -> CompareState {
    view(
        &inspect_log("A", "json"),
        &inspect_log("B", "json"),
        KeyRule::Case,
        width,
        height,
    )
}

/// The three-epoch Inspect pair (tests/fixtures/inspect-ai/epochs/SOURCES.md).
fn epochs_view(width: u16, height: u16) -> CompareState {
    view(
        &inspect_epochs_log("A"),
        &inspect_epochs_log("B"),
        KeyRule::Case,
        width,
        height,
    )
}

/// Selects the list row of case `id` `#index` with `j` from the top.
pub fn select_case(state: &mut CompareState, id: &str, index: u64) {
    let row = state
        .rows
        .iter()
        .position(|&row| {
            state
                .entry(row)
                .is_some_and(|entry| entry.case.id == id && entry.case.index == index)
        })
        .unwrap_or_else(|| panic!("no row for {id}#{index}"));
    press(state, &format!("g{}", "j".repeat(row)));
    assert_eq!(
        selected_case(state).as_deref(),
        Some(format!("{id}#{index}").as_str())
    );
}

/// The arksim fixture against a rerun whose evaluator fails turn 1, as
/// `tests/gold/compare_runs.rs` builds it; the directory lives as long as the view.
fn arksim_view(width: u16, height: u16) -> (CompareState, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    rerun(dir.path(), true, "refund_two_turns");
    let state = view(
        Path::new(ARKSIM_FIXTURE),
        dir.path(),
        KeyRule::Case,
        width,
        height,
    );
    (state, dir)
}

pub fn press(state: &mut CompareState, keys: &str) {
    for event in key_events(keys) {
        if let Some(action) = keys::action_for_event(state.key_scope(), &event) {
            update(state, action);
        }
    }
}

fn draw(state: &CompareState) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(state.size.0, state.size.1)).unwrap();
    terminal.draw(|frame| render::render(frame, state)).unwrap();
    terminal
}

/// The screen as text, one line per row, argument fingerprints (keyed per process, see
/// `gold::fingerprint`) written `·####` so screens compare across runs.
pub fn screen(state: &CompareState) -> String {
    let terminal = draw(state);
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    regex::Regex::new("·[0-9a-f]{4}")
        .unwrap()
        .replace_all(&out, "·####")
        .into_owned()
}

/// The case the selection is on, as `id#index`.
fn selected_case(state: &CompareState) -> Option<String> {
    let entry = state.entry(state.rows[state.selected])?;
    Some(format!("{}#{}", entry.case.id, entry.case.index))
}

#[test]
fn each_class_is_titled_with_its_exact_count() {
    let state = inspect_view(120, 40);
    let shown = screen(&state);
    for title in [
        "newly failing (3)",
        "fixed (2)",
        "still failing (2)",
        "still passing (1)",
        "only in A (0)",
        "only in B (0)",
    ] {
        assert!(shown.contains(title), "{title}:\n{shown}");
    }
    assert!(shown.contains("Cases (8)"), "{shown}");
    // Newly failing first, each class's cases under its title, in case order.
    let listed: Vec<String> = state
        .rows
        .iter()
        .map(|&row| match (row, state.entry(row)) {
            (ListRow::Case { .. }, Some(entry)) => entry.case.id.clone(),
            _ => format!("[{}]", state.comparison.classes()[row.class()].0),
        })
        .collect();
    assert_eq!(
        listed,
        [
            "[newly failing]",
            "geo-03",
            "geo-04",
            "geo-06",
            "[fixed]",
            "geo-02",
            "geo-07",
            "[still failing]",
            "geo-05",
            "geo-08",
            "[still passing]",
            "geo-01",
            "[only in A]",
            "[only in B]",
        ]
    );

    let (arksim, _dir) = arksim_view(120, 40);
    let shown = screen(&arksim);
    for title in [
        "newly failing (1)",
        "fixed (0)",
        "still failing (0)",
        "still passing (1)",
    ] {
        assert!(shown.contains(title), "{title}:\n{shown}");
    }
}

#[test]
fn n_from_the_top_reaches_each_newly_failing_case_with_one_key() {
    let mut state = inspect_view(120, 40);
    assert_eq!(
        selected_case(&state),
        None,
        "the top is the first class's title"
    );
    for want in ["geo-03#1", "geo-04#1", "geo-06#1"] {
        press(&mut state, "n");
        assert_eq!(selected_case(&state).as_deref(), Some(want));
        let shown = screen(&state);
        assert!(
            shown.contains(&format!("{} · 1 · newly failing", &want[..6])),
            "{shown}"
        );
    }
    press(&mut state, "n");
    assert_eq!(
        selected_case(&state).as_deref(),
        Some("geo-03#1"),
        "n goes round"
    );
    press(&mut state, "N");
    assert_eq!(selected_case(&state).as_deref(), Some("geo-06#1"));
    // From elsewhere in the list, n comes back to the first newly failing case.
    press(&mut state, "G");
    assert_eq!(
        selected_case(&state),
        None,
        "the last row is a class's title"
    );
    press(&mut state, "n");
    assert_eq!(selected_case(&state).as_deref(), Some("geo-03#1"));
}

#[test]
fn tab_and_brackets_jump_between_classes_that_have_cases() {
    let mut state = inspect_view(120, 40);
    let mut visited = Vec::new();
    for key in ["<tab>", "<tab>", "]", "<tab>", "[", "<s-tab>"] {
        press(&mut state, key);
        visited.push(selected_case(&state).unwrap());
    }
    // The empty classes (only in A, only in B) are passed over; the jumps go round.
    assert_eq!(
        visited,
        [
            "geo-02#1", "geo-05#1", "geo-01#1", "geo-03#1", "geo-01#1", "geo-05#1"
        ]
    );
}

#[test]
fn the_detail_shows_both_verdicts_and_the_tool_calls_aligned() {
    let mut state = inspect_view(120, 40);
    press(&mut state, "n");
    let shown = screen(&state);
    assert!(shown.contains("A ✓ passing"), "{shown}");
    assert!(shown.contains("B ✗ failing"), "{shown}");
    assert!(
        shown.contains("eval    ✗ expected_tools=I includes=I"),
        "{shown}"
    );
    // A called population for Tokyo, B the wrong tool: one row, A's call left of B's, marked
    // as where the runs part ways.
    let row = shown
        .lines()
        .find(|line| line.contains("population("))
        .unwrap_or_else(|| panic!("A's call:\n{shown}"));
    let (left, right) = row.split_once(" │ ").expect("two columns");
    assert!(
        left.contains("▶ 1") && left.contains("population("),
        "{row}"
    );
    assert!(right.contains("country_capital("), "{row}");
    assert!(shown.contains("· other tool"), "{shown}");
    assert!(
        shown.contains("tool calls · A 1 → B 1 · first divergence ▶ row 1"),
        "{shown}"
    );
    assert_snapshot!("compare_inspect_geo_03_120x40", shown);

    // geo-06 made the same failing call in both runs: no divergence in the calls.
    press(&mut state, "nn");
    let shown = screen(&state);
    assert!(
        shown.contains("tool calls · A 1 → B 1 · the same calls"),
        "{shown}"
    );
    assert!(!shown.contains('▶'), "{shown}");
}

#[test]
fn a_small_terminal_shows_the_same_case() {
    let mut state = inspect_view(80, 24);
    press(&mut state, "n");
    let shown = screen(&state);
    assert_snapshot!("compare_inspect_geo_03_80x24", shown);
    // The detail is longer than the pane: a page down scrolls it, a page up comes back.
    let top = shown.clone();
    press(&mut state, "<pgdn>");
    assert!(state.detail_scroll > 0);
    assert_ne!(screen(&state), top);
    press(&mut state, "<pgup>");
    assert_eq!(screen(&state), top);
}

/// A value the Inspect runs pass as an argument and that no reason or name repeats: A's
/// calculator call for geo-04.
const HIDDEN_ARGUMENT: &str = "17 * 23";

#[test]
fn arguments_are_redacted_until_r_and_secrets_stay_masked() {
    // Wide enough that the revealed call fits one line.
    let mut state = inspect_view(160, 40);
    press(&mut state, "nn");
    assert_eq!(selected_case(&state).as_deref(), Some("geo-04#1"));
    let redacted = screen(&state);
    assert!(
        redacted.contains("calculator(") && redacted.contains("expression=str(7)·####)"),
        "{redacted}"
    );
    assert!(!redacted.contains(HIDDEN_ARGUMENT), "{redacted}");
    assert!(redacted.contains(" REDACTED "), "{redacted}");
    press(&mut state, "r");
    let revealed = screen(&state);
    assert!(revealed.contains(HIDDEN_ARGUMENT), "{revealed}");
    assert!(revealed.contains("REVEALED · secrets masked"), "{revealed}");
    press(&mut state, "r");
    assert!(!screen(&state).contains(HIDDEN_ARGUMENT));

    // The arksim runs pass an order id and an API key: the id shows once revealed, the key
    // never.
    let (mut arksim, _dir) = arksim_view(140, 40);
    let secret = "sk-PLANTEDSECRETabcdef0123456789";
    for key in ["", "j"] {
        press(&mut arksim, key);
        let shown = screen(&arksim);
        assert!(!shown.contains("ORD-1"), "{shown}");
        assert!(!shown.contains(secret), "{shown}");
    }
    press(&mut arksim, "gj");
    let case = selected_case(&arksim).unwrap();
    assert_eq!(case, "refund_two_turns#1", "the newly failing turn");
    press(&mut arksim, "r");
    let revealed = screen(&arksim);
    assert!(revealed.contains("ORD-1"), "{revealed}");
    assert!(
        !revealed.contains(secret) && !revealed.contains("PLANTEDSECRET"),
        "{revealed}"
    );
    assert!(revealed.contains("B ✗ failing"), "{revealed}");
    assert!(revealed.contains("made up a refund policy"), "{revealed}");
}

/// B's geo-05 fails on `includes`, whose explanation repeats the completion: the verdict's
/// reason shows its length until `r`, as the completion does.
#[test]
fn a_reason_quoting_the_completion_shows_only_once_revealed() {
    let mut state = inspect_view(160, 48);
    select_case(&mut state, "geo-05", 1);
    let redacted = screen(&state);
    assert!(redacted.contains("reason"), "{redacted}");
    assert!(redacted.contains("text (46 chars)"), "{redacted}");
    assert!(!redacted.contains("Atlantis City"), "{redacted}");
    press(&mut state, "r");
    let revealed = screen(&state);
    // Wrapped in the half-width column.
    assert!(
        revealed.contains("reason  includes: Atlantis's capital is Atlantis"),
        "{revealed}"
    );
}

#[test]
fn the_arksim_pair_shows_its_gold_and_d_opens_both_diffs() {
    let (mut state, _dir) = arksim_view(140, 40);
    press(&mut state, "n");
    assert_eq!(selected_case(&state).as_deref(), Some("refund_two_turns#1"));
    let shown = screen(&state);
    // The scenario asserts the conversation's calls: each run is held against that gold.
    assert_eq!(
        shown.matches("gold    ✓ matches").count(),
        2,
        "A's and B's:\n{shown}"
    );
    assert!(
        shown.contains("tool calls · A 1 → B 1 · gold 2 · the same calls"),
        "{shown}"
    );
    // The gold is the third column, its call beside the runs' (the conversation's other gold
    // call belongs to its first turn, which both runs made).
    let row = shown
        .lines()
        .find(|line| line.contains("  1   refund_order("))
        .unwrap_or_else(|| panic!("no first row:\n{shown}"));
    assert_eq!(row.matches("refund_order(").count(), 3, "{row}");
    assert!(!shown.contains("not called"), "{shown}");
    assert_snapshot!("compare_arksim_newly_failing_140x40", shown);

    press(&mut state, "d");
    assert!(matches!(state.overlay, Some(Overlay::Gold(_))));
    let overlay = screen(&state);
    assert!(overlay.contains("A against its gold"), "{overlay}");
    assert!(overlay.contains("B against its gold"), "{overlay}");
    assert!(overlay.contains("toolcap gold: ✓ matches"), "{overlay}");
    assert!(
        !overlay.contains("ORD-1"),
        "redacted in the overlay too:\n{overlay}"
    );
    press(&mut state, "r");
    assert!(screen(&state).contains("ORD-1"));
    press(&mut state, "<esc>");
    assert!(state.overlay.is_none());
    assert!(!state.should_quit, "Esc closes the overlay, not the view");

    // The Inspect runs carry no gold: `d` says so and opens nothing.
    let mut inspect = inspect_view(120, 40);
    press(&mut inspect, "nd");
    assert!(inspect.overlay.is_none());
    assert!(screen(&inspect).contains("no gold for either run"));
}

#[test]
fn the_help_lists_every_key_and_esc_then_q_quits() {
    let mut state = inspect_view(120, 40);
    press(&mut state, "?");
    let help = screen(&state);
    for binding in BINDINGS.iter().chain(GOLD_BINDINGS) {
        assert!(help.contains(binding.keys), "{}:\n{help}", binding.keys);
        assert!(help.contains(binding.what), "{}:\n{help}", binding.what);
    }
    press(&mut state, "<esc>");
    assert!(state.overlay.is_none() && !state.should_quit);
    let footer = screen(&state);
    let footer = footer.lines().last().unwrap();
    for binding in BINDINGS.iter().filter(|b| b.footer.is_some()) {
        assert!(footer.contains(binding.keys), "{footer}");
    }
    press(&mut state, "<esc>");
    assert!(state.should_quit, "Esc with nothing open quits");
    let mut state = inspect_view(120, 40);
    press(&mut state, "q");
    assert!(state.should_quit);
}

#[test]
fn x_writes_the_markdown_and_never_through_a_planted_link() {
    let mut state = inspect_view(120, 40);
    let dir = tempfile::tempdir().unwrap();
    let at = time::OffsetDateTime::from_unix_timestamp(1_796_523_300).unwrap();
    let name = "toolcap-compare-20261206T021500Z";
    let target = dir.path().join("precious.txt");
    std::fs::write(&target, "keep").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join(format!("{name}.md"))).unwrap();

    export::export_into(&mut state, dir.path(), at);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    let written: PathBuf = dir.path().join(format!("{name}-2.md"));
    let text = std::fs::read_to_string(&written).expect("written beside the link");
    let expected = markdown(
        &compare(
            state.stores[0],
            state.stores[1],
            &KeyRule::Case,
            Reveal::Redacted,
        ),
        "runs/A",
        "runs/B",
    );
    assert_eq!(text, expected);
    assert!(text.contains("| newly failing | 3 |"), "{text}");
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::symlink_metadata(&written).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let message = state.message.clone().unwrap_or_default();
    assert!(
        message.contains("3 newly failing of 8 cases") && message.contains(&format!("{name}-2.md")),
        "{message}"
    );
    assert!(screen(&state).contains("comparison (redacted)"));

    // Revealed on screen, the file is still the redacted one.
    update(&mut state, Action::ToggleReveal);
    export::export_into(&mut state, dir.path(), at);
    let again = std::fs::read_to_string(dir.path().join(format!("{name}-3.md"))).unwrap();
    assert_eq!(again, expected);
}

/// An OTLP run whose example ids, run name, tool name, arguments and answer carry terminal
/// escapes.
fn hostile_run(dir: &Path, run: u8) -> PathBuf {
    let path = dir.join(format!("hostile-{run}.otlp.jsonl"));
    let attr =
        |key: &str, value: &str| serde_json::json!({"key": key, "value": {"stringValue": value}});
    let trace = format!("{run:02x}{:030x}", 7);
    let span = |id: u64,
                parent: Option<u64>,
                name: &str,
                attributes: Vec<serde_json::Value>,
                status: u8| {
        let mut span = serde_json::json!({
            "traceId": trace,
            "spanId": format!("{id:016x}"),
            "name": name,
            "startTimeUnixNano": format!("{}", 1_764_496_800_000_000_000u64 + id),
            "endTimeUnixNano": format!("{}", 1_764_496_801_000_000_000u64 + id),
            "attributes": attributes,
            "status": {"code": status, "message": "boom \u{1b}[2J gone"},
        });
        if let Some(parent) = parent {
            span["parentSpanId"] = format!("{parent:016x}").into();
        }
        span
    };
    let spans = vec![
        span(
            1,
            None,
            "invoke_agent evil\u{1b}[31mname",
            vec![
                attr("gen_ai.operation.name", "invoke_agent"),
                attr("dataset.example.id", "ex\u{1b}[2J-1"),
            ],
            if run == 1 { 1 } else { 2 },
        ),
        span(
            2,
            Some(1),
            "execute_tool paste",
            vec![
                attr("gen_ai.operation.name", "execute_tool"),
                attr("gen_ai.tool.name", "paste\u{1b}]52;c;SGVsbG8=\u{7}"),
                attr(
                    "gen_ai.tool.call.arguments",
                    "{\"clip\":\"\\u001b[2J wipe\"}",
                ),
            ],
            1,
        ),
        span(
            3,
            Some(1),
            "chat model",
            vec![
                attr("gen_ai.operation.name", "chat"),
                attr(
                    "gen_ai.output.messages",
                    "[{\"role\":\"assistant\",\"parts\":[{\"type\":\"text\",\"content\":\"done \\u001b[2J\"}]}]",
                ),
            ],
            1,
        ),
    ];
    let line = serde_json::json!({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", "agent")]},
        "scopeSpans": [{"spans": spans}]
    }]});
    std::fs::write(&path, format!("{line}\n")).unwrap();
    path
}

#[test]
fn trace_text_reaches_the_screen_inert() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (hostile_run(dir.path(), 1), hostile_run(dir.path(), 2));
    let rule = KeyRule::Attribute("dataset.example.id".into());
    let mut state = view(&a, &b, rule, 140, 40);
    press(&mut state, "n");
    assert!(
        selected_case(&state).is_some(),
        "the failing run in B is newly failing"
    );
    for keys in ["", "r", "?", "<esc>"] {
        press(&mut state, keys);
        let terminal = draw(&state);
        let symbols: String = terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|cell| cell.symbol())
            .collect();
        assert!(
            !symbols.chars().any(|c| c.is_control()),
            "a control character reached the screen after {keys:?}:\n{}",
            screen(&state)
        );
    }
    let shown = screen(&state);
    assert!(shown.contains("ex␛[2J-1 · 0"), "{shown}");
    assert!(shown.contains("paste"), "the call is drawn:\n{shown}");
}

#[test]
fn the_real_binary_opens_the_view_on_a_terminal_and_exits_as_the_gate_says() {
    let binary = env!("CARGO_BIN_EXE_toolcap-tui");
    let dir = tempfile::tempdir().unwrap();
    let exit_path = dir.path().join("exit-status.txt");
    let stderr_path = dir.path().join("stderr.txt");
    let command = format!(
        "env TERM=xterm-256color TOOLCAP_TUI_CONFIG=/nonexistent/toolcap.toml {} compare {} {} 2>{}; echo $? >{}",
        shell_quote(binary),
        shell_quote(&inspect_log("A", "json").display().to_string()),
        shell_quote(&inspect_log("B", "json").display().to_string()),
        shell_quote(&stderr_path.display().to_string()),
        shell_quote(&exit_path.display().to_string())
    );
    let tmux = Tmux::start(&command);
    tmux.wait_for("the comparison", |s| {
        s.contains("newly failing (3)") && s.contains(" REDACTED ")
    });
    tmux.send(&["n"]);
    let case = tmux.wait_for("the first newly failing case", |s| {
        s.contains("geo-03 · 1 · newly failing") && s.contains("first divergence")
    });
    assert!(!case.contains(HIDDEN_ARGUMENT), "{case}");
    tmux.send(&["q"]);
    let deadline = std::time::Instant::now() + WAIT;
    let status = loop {
        let written = std::fs::read_to_string(&exit_path).unwrap_or_default();
        if written.ends_with('\n') {
            break written.trim().to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no exit after q; screen:\n{}",
            tmux.screen()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert_eq!(status, "1", "three cases newly fail; stderr:\n{stderr}");

    // `--text` prints the plain comparison on the same terminal.
    let text = tmux.run(&[
        "respawn-pane",
        "-k",
        "-t",
        "e2e",
        &format!(
            "{} compare --text {} {}",
            shell_quote(binary),
            shell_quote(&inspect_log("A", "json").display().to_string()),
            shell_quote(&inspect_log("B", "json").display().to_string()),
        ),
    ]);
    assert!(text.status.success());
    let printed = tmux.wait_for("the text comparison", |s| s.contains("newly failing: 3"));
    assert!(
        printed.contains("newly failing  geo-03 #1  A: passing"),
        "{printed}"
    );
}

/// A case's detail shows each side's epochs of it as a strip, the epoch shown in brackets, and
/// the list marks each side where the case is flaky with `~`.
#[test]
fn a_flaky_case_shows_each_sides_epochs_with_this_one_marked() {
    let mut state = epochs_view(120, 40);
    select_case(&mut state, "cap-05", 2);
    let shown = screen(&state);
    assert!(
        shown.contains("── the case's epochs in order · [ ] is this one ──"),
        "{shown}"
    );
    let row = shown
        .lines()
        .find(|line| line.contains("A  ✓[✗]✗"))
        .unwrap_or_else(|| panic!("A's strip:\n{shown}"));
    let (left, right) = row.split_once(" │ ").expect("two columns");
    assert!(left.contains("A  ✓[✗]✗  1 of 3 pass · flaky"), "{row}");
    assert!(right.contains("B  ✗[✓]✓  2 of 3 pass · flaky"), "{row}");
    assert_snapshot!("compare_inspect_epochs_cap_05_2_120x40", shown);

    // In the list (the left 40 columns), `~` follows the verdict of each side where the case is
    // flaky.
    let list_row = |shown: &str, case: &str| -> String {
        shown
            .lines()
            .map(|line| line.chars().take(40).collect::<String>())
            .find(|row| row.contains(case))
            .unwrap_or_else(|| panic!("{case}:\n{shown}"))
    };
    assert!(
        list_row(&shown, "cap-05 · 2").contains("cap-05 · 2 ✗~ ✓~"),
        "{shown}"
    );
    assert!(
        list_row(&shown, "cap-02 · 2").contains("cap-02 · 2 ✗~ ✓  "),
        "{shown}"
    );
    assert!(
        list_row(&shown, "cap-04 · 2").contains("cap-04 · 2 ✗  ✓~"),
        "{shown}"
    );

    // A steady case: its strips, no flaky mark; the first epoch is the one shown.
    select_case(&mut state, "cap-01", 1);
    let shown = screen(&state);
    let row = shown
        .lines()
        .find(|line| line.contains("A  [✓]✓✓"))
        .unwrap_or_else(|| panic!("A's strip:\n{shown}"));
    assert!(
        row.contains("A  [✓]✓✓  3 of 3 pass") && row.contains("B  [✓]✓✓  3 of 3 pass"),
        "{row}"
    );
    assert!(!row.contains("flaky"), "{row}");
    assert!(
        list_row(&shown, "cap-01 · 1").contains("cap-01 · 1 ✓  ✓  "),
        "{shown}"
    );

    // Revealed, the strips are the same.
    press(&mut state, "r");
    assert!(screen(&state).contains("A  [✓]✓✓  3 of 3 pass"));

    // Runs of one epoch have no strip to show.
    let mut single = inspect_view(120, 40);
    press(&mut single, "n");
    assert!(!screen(&single).contains("epochs in order"));
}

/// An OTLP run of one trace per `(example, failing)` in start order, each root carrying
/// `dataset.example.id`.
fn example_runs(dir: &Path, run: u8, runs: &[(&str, bool)]) -> PathBuf {
    let path = dir.join(format!("examples-{run}.otlp.jsonl"));
    let mut lines = String::new();
    for (n, (example, failing)) in runs.iter().enumerate() {
        let start = 1_764_496_800_000_000_000u64 + n as u64 * 1_000;
        let line = serde_json::json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
            "scopeSpans": [{"spans": [{
                "traceId": format!("{run:02x}{n:030x}"),
                "spanId": format!("{:016x}", 1),
                "name": "invoke_agent",
                "startTimeUnixNano": start.to_string(),
                "endTimeUnixNano": (start + 500).to_string(),
                "attributes": [{"key": "dataset.example.id", "value": {"stringValue": example}}],
                "status": {"code": if *failing { 2 } else { 1 }}
            }]}]
        }]});
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(&path, lines).unwrap();
    path
}

/// A case run in A only still shows B's runs of its example, without a bracket: the repeat
/// shown is not among them.
#[test]
fn a_case_run_on_one_side_shows_the_other_sides_repeats_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = example_runs(
        dir.path(),
        1,
        &[("ex-1", false), ("ex-1", true), ("ex-1", false)],
    );
    let b = example_runs(dir.path(), 2, &[("ex-1", false), ("ex-1", false)]);
    let mut state = view(&a, &b, KeyRule::Case, 120, 40);
    select_case(&mut state, "ex-1", 2);
    let shown = screen(&state);
    assert!(shown.contains("ex-1 · 2 · only in A"), "{shown}");
    let row = shown
        .lines()
        .find(|line| line.contains("A  ✓✗[✓]"))
        .unwrap_or_else(|| panic!("A's strip:\n{shown}"));
    assert!(row.contains("A  ✓✗[✓]  2 of 3 pass · flaky"), "{row}");
    assert!(row.contains("B  ✓✓  2 of 2 pass"), "{row}");
    assert!(
        shown.contains("paired by attribute dataset.example.id"),
        "{shown}"
    );
}
