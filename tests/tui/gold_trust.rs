//! A gold diff that can be trusted (issue 9 items 5 and 6): redacted values keep a keyed
//! fingerprint, the verdict never depends on the alignment and always agrees with the rows,
//! argument counts never read `0/0` beside real calls, and an arksim assertion is judged over
//! its whole conversation, in `check` and in the TUI alike.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use toolcap::gold::align::Alignment;
use toolcap::gold::check::check_store;
use toolcap::gold::compare::CompareMode;
use toolcap::gold::conversation::turn_share;
use toolcap::gold::metrics::Weights;
use toolcap::gold::report::{CheckOptions, DiffReport};
use toolcap::gold::{ActualCall, GoldCall, GoldSpec};
use toolcap::redact::Reveal;
use toolcap::tui::app::{self, App};

use crate::support::{press, screen_text};

fn args(v: Value) -> toolcap::gold::Args {
    v.as_object().cloned().unwrap_or_default()
}

fn gold(calls: &[(&str, Value)]) -> GoldSpec {
    GoldSpec {
        calls: calls
            .iter()
            .map(|(tool, a)| GoldCall {
                tool: tool.to_string(),
                args: a.as_object().cloned(),
                ..Default::default()
            })
            .collect(),
        source: "test".into(),
        ..Default::default()
    }
}

fn actual(calls: &[(&str, Value)]) -> Vec<ActualCall> {
    calls
        .iter()
        .map(|(tool, a)| ActualCall::new(*tool, args(a.clone())))
        .collect()
}

fn report(g: &GoldSpec, a: Vec<ActualCall>, alignment: Alignment) -> DiffReport {
    DiffReport::build(
        "run",
        g.clone(),
        a,
        CheckOptions {
            mode: CompareMode::Lenient,
            alignment,
            weights: Weights::default(),
        },
    )
}

type Calls = Vec<(&'static str, Value)>;

fn fetches(ids: &[i64]) -> Vec<(&'static str, Value)> {
    ids.iter()
        .map(|id| ("fetch", json!({ "id": id })))
        .collect()
}

#[test]
fn a_tool_repeated_three_times_in_another_order_differs_under_every_alignment() {
    let g = gold(&fetches(&[1, 2, 3]));
    let a = actual(&fetches(&[3, 1, 2]));
    let mut verdicts = Vec::new();
    for alignment in Alignment::ALL {
        let r = report(&g, a.clone(), alignment);
        // toolscore's metrics are untouched: names and best-paired arguments all agree.
        assert_eq!(r.metrics.grade, "A", "{alignment:?}");
        assert!(!r.passed(), "{alignment:?}: calls out of order");
        assert!(
            !r.differing_rows().is_empty(),
            "{alignment:?}: a ✗ verdict has a row that says why"
        );
        verdicts.push(r.passed());
    }
    // Edit alignment pairs each call with the one that has its arguments: two matches and a
    // move, not three "argument mismatch" rows.
    let r = report(&g, a.clone(), Alignment::Edit);
    let kinds: Vec<&str> = r.rows.iter().map(|row| row.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["match", "match", "moved"],
        "{}",
        r.to_text(Reveal::Revealed)
    );
    // `check` exits by the verdict: the same for every alignment.
    assert!(verdicts.iter().all(|v| !v));
}

#[test]
fn the_headline_follows_from_the_rows_for_every_alignment() {
    let cases: Vec<(Calls, Calls)> = vec![
        (fetches(&[1, 2, 3]), fetches(&[1, 2, 3])),
        (fetches(&[1, 2, 3]), fetches(&[3, 1, 2])),
        (fetches(&[1, 1, 2]), fetches(&[1, 2, 1])),
        (fetches(&[1, 2]), fetches(&[1, 2, 2])),
        (fetches(&[1, 2]), fetches(&[2])),
        (
            vec![("a", json!({"x": 1})), ("b", json!({}))],
            vec![("b", json!({})), ("a", json!({"x": 1}))],
        ),
        (
            vec![("a", json!({"x": 1})), ("a", json!({"x": 1}))],
            vec![("a", json!({"x": 1})), ("a", json!({"x": 1}))],
        ),
        (vec![("a", json!({"x": 1}))], vec![("a", json!({"x": 1.0}))]),
        (vec![], vec![("a", json!({}))]),
        (vec![], vec![]),
    ];
    for (g, a) in &cases {
        let g = gold(g);
        let first = report(&g, actual(a), Alignment::Edit).passed();
        for alignment in Alignment::ALL {
            let r = report(&g, actual(a), alignment);
            assert_eq!(
                r.passed(),
                first,
                "{alignment:?}: verdict depends on alignment"
            );
            assert_eq!(
                r.passed(),
                r.differing_rows().is_empty(),
                "{alignment:?}: headline and rows disagree\n{}",
                r.to_text(Reveal::Revealed)
            );
        }
    }
}

#[test]
fn redacted_rows_say_whether_values_are_equal_without_showing_them() {
    // Values longer than a fingerprint (4 hex digits), so none can appear in one by chance.
    let g = gold(&[("fetch", json!({"id": 4100017, "q": "alpha"}))]);
    let a = actual(&[("fetch", json!({"id": 4200017, "q": "alpha"}))]);
    let text = report(&g, a, Alignment::Edit).to_text(Reveal::Redacted);
    assert!(
        !text.contains("4100017") && !text.contains("4200017") && !text.contains("alpha"),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("id:"))
        .unwrap_or_else(|| panic!("an id line: {text}"));
    // `id: int·abcd → int·wxyz  differs`: same shape, different fingerprints.
    let prints: Vec<&str> = line
        .split_whitespace()
        .filter(|w| w.starts_with("int·"))
        .collect();
    assert_eq!(prints.len(), 2, "{line}");
    assert_ne!(prints[0], prints[1], "{line}");
    // The equal `q` shows one fingerprint on both sides of the row.
    let row = text.lines().find(|l| l.contains("fetch(")).expect("row");
    let q: Vec<&str> = row.matches("q=str(5)·").collect();
    let at: Vec<usize> = row.match_indices("q=str(5)·").map(|(i, _)| i).collect();
    assert_eq!(q.len(), 2, "{row}");
    let print = |i: usize| &row[i + "q=str(5)·".len()..i + "q=str(5)·".len() + 4];
    assert_eq!(print(at[0]), print(at[1]), "{row}");
}

#[test]
fn argument_counts_never_read_zero_of_zero_beside_a_call() {
    let cases = [
        (gold(&[]), actual(&[("lookup", json!({"id": 1}))])),
        (
            GoldSpec {
                calls: vec![GoldCall {
                    tool: "lookup".into(),
                    args: None,
                    ..Default::default()
                }],
                ..Default::default()
            },
            actual(&[("lookup", json!({"id": 1}))]),
        ),
        (gold(&[("now", json!({}))]), actual(&[("now", json!({}))])),
        (
            gold(&[("a", json!({"k": 1}))]),
            actual(&[("b", json!({"k": 1}))]),
        ),
    ];
    for (g, a) in cases {
        let r = report(&g, a, Alignment::Edit);
        let text = r.to_text(Reveal::Redacted);
        assert!(!text.contains("P 0/0"), "{text}");
        assert!(!text.contains("R 0/0"), "{text}");
    }
    // The metric values stay toolscore's: an unexpected call scores precision 0.
    let r = report(
        &gold(&[]),
        actual(&[("lookup", json!({"id": 1}))]),
        Alignment::Edit,
    );
    assert_eq!(r.metrics.arguments.precision, 0.0);
    assert!(r.to_text(Reveal::Redacted).contains("none expected"));
}

fn two_turn() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/arksim-two-turn")
}

#[test]
fn a_conversation_assertion_met_across_two_turns_passes_in_check() {
    let (store, _) = toolcap::sources::load::load_store(&[two_turn()]);
    let mut problems = Vec::new();
    let reports = check_store(&store, None, CheckOptions::default(), &mut problems);
    assert_eq!(
        reports.len(),
        1,
        "one report for the conversation, not one per turn"
    );
    let r = &reports[0];
    assert!(r.passed(), "{}", r.to_text(Reveal::Redacted));
    assert_eq!(r.actual.len(), 2, "both turns' calls");
    let scope = r.conversation.as_ref().expect("whole-conversation scope");
    assert_eq!(scope.turns.len(), 2);
    for turn in &scope.turns {
        let share = turn_share(r, turn).expect("each turn has a share");
        assert_eq!((share.rows, share.differing), (1, 0), "{turn}");
    }
    let text = r.to_text(Reveal::Redacted);
    assert!(text.contains("toolcap gold: ✓ MATCHES"), "{text}");
    assert!(
        text.contains("arksim said (evaluation.json, conversation): evaluation_status Done"),
        "{text}"
    );
    assert!(
        !text.contains("Expected 2 tool calls"),
        "arksim's words only where arksim wrote them"
    );
}

#[test]
fn check_with_the_scenarios_file_as_gold_judges_whole_conversations() {
    let bin = env!("CARGO_BIN_EXE_toolcap-tui");
    let dir = two_turn();
    let out = Command::new(bin)
        .arg("check")
        .arg("--gold")
        .arg(dir.join("scenarios.json"))
        .arg(dir.join("simulation.json"))
        .arg(dir.join("evaluation.json"))
        .output()
        .expect("run check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("over all 2 turn(s)"), "{stdout}");
    // The bundled arksim run: toolcap agrees with what arksim recorded on every conversation
    // (weather_ok's strict assertion spans two turns and passes; arksim said Done).
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/arksim/run-direct");
    let out = Command::new(bin)
        .arg("check")
        .arg("--gold")
        .arg(run.join("scenarios.json"))
        .arg(&run)
        .output()
        .expect("run check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for block in stdout.split("━━ ").skip(1) {
        let ours_pass = block.contains("toolcap gold: ✓ MATCHES");
        let arksim_failed_trajectory = block.contains("[Trajectory]");
        assert_eq!(ours_pass, !arksim_failed_trajectory, "{block}");
    }
    assert!(stdout.contains("2 of 4"), "{stdout}");
}

fn two_turn_app() -> App {
    let (store, _) = toolcap::sources::load::load_store(&[two_turn()]);
    let mut app = App::new(
        store,
        toolcap::tui::config::from_toml("", false),
        Reveal::Redacted,
    );
    app::update(
        &mut app,
        toolcap::tui::action::Action::Resize {
            width: 140,
            height: 40,
        },
    );
    app
}

#[test]
fn d_on_any_turn_finds_the_conversations_gold_and_the_tui_agrees_with_check() {
    let mut app = two_turn_app();
    let turns: Vec<String> = app
        .list
        .ids()
        .into_iter()
        .filter(|id| id.contains("/turn-"))
        .collect();
    assert_eq!(turns.len(), 2, "{:?}", app.list.ids());
    for turn in &turns {
        let (_, passed) = app.gold.score(turn).expect("each turn shows its share");
        assert!(passed, "{turn}: its share of a met assertion passes");
    }
    while app.selected_invocation.as_deref() != Some(turns[0].as_str())
        && app.selected_invocation.as_deref() != Some(turns[1].as_str())
    {
        press(&mut app, "j");
    }
    press(&mut app, "d");
    let overlay = app.gold_diff().expect("the conversation's gold opens");
    assert!(overlay.report.passed());
    assert_eq!(overlay.report.actual.len(), 2);
    let screen = screen_text(&app);
    assert!(screen.contains("toolcap gold: ✓ matches"), "{screen}");
    assert!(screen.contains("this turn's share"), "{screen}");
    assert!(!screen.contains("no gold for this invocation"), "{screen}");
}

/// The planted fixture of `check`'s redaction tests (`tests/gold/check_trust.rs`).
const PLANTED: &str = "tests/fixtures/hostile/check-planted";
const PLANTED_SECRETS: &[&str] = &[
    "sk-proj-Plant3d",
    "Plant3dKey0abcdefghijklmnopqrstuvwxyz0123",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "PRIVATE KEY",
    "Passw0rdPlanted",
];
const PLANTED_PERSONAL: &[&str] = &[
    "planted.person@example.com",
    "4111 1111 1111 1111",
    "4155550123",
];

/// An app over the planted trace with the planted gold, wide enough that no planted field is
/// cut off, with the gold diff open.
fn planted_diff_app() -> App {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(PLANTED);
    let (store, _) = toolcap::sources::load::load_store(&[root.join("check-planted.otlp.jsonl")]);
    let (gold, _) =
        toolcap::gold::source::load_gold_file(&root.join("gold.json")).expect("the gold loads");
    let mut app = App::new(
        store,
        toolcap::tui::config::from_toml("", false),
        Reveal::Redacted,
    );
    app.gold = app::GoldContext::new(Some(gold));
    app::update(
        &mut app,
        toolcap::tui::action::Action::Resize {
            width: 1200,
            height: 60,
        },
    );
    press(&mut app, "d");
    assert!(app.gold_diff().is_some(), "the planted run has a gold");
    app
}

#[test]
fn the_gold_diff_masks_planted_values_in_its_title_rows_and_detail() {
    let mut app = planted_diff_app();
    let screen = screen_text(&app);
    // The planted fields are drawn at all: the title, both cells, the failure, the arguments.
    for shown in [
        "before agent",
        "before_gold",
        "before_lookup",
        "FAILED",
        "before tool failed",
    ] {
        assert!(screen.contains(shown), "{shown:?} is drawn:\n{screen}");
    }
    for never in PLANTED_SECRETS.iter().chain(PLANTED_PERSONAL) {
        assert!(
            !screen.contains(never),
            "redacted diff shows {never:?}:\n{screen}"
        );
    }
    press(&mut app, "r");
    assert!(app.gold_diff().is_some(), "r keeps the overlay open");
    let revealed = screen_text(&app);
    assert!(
        revealed.contains("planted.person@example.com"),
        "revealed, personal data shows:\n{revealed}"
    );
    for never in PLANTED_SECRETS {
        assert!(
            !revealed.contains(never),
            "revealed diff shows {never:?}:\n{revealed}"
        );
    }
}

#[test]
fn a_sidecar_golds_problem_is_masked_in_the_status_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(PLANTED);
    let trace = dir.path().join("run.otlp.jsonl");
    std::fs::copy(root.join("check-planted.otlp.jsonl"), &trace).expect("copy");
    let bad = "before_bad planted.person@example.com card 4111 1111 1111 1111";
    let sidecar = json!([{"tool": "lookup"}, {"tool": bad, "args": "not an object"}]);
    std::fs::write(dir.path().join("run.gold.json"), sidecar.to_string()).expect("write");
    let (store, _) = toolcap::sources::load::load_store(&[trace]);
    let mut app = App::new(
        store,
        toolcap::tui::config::from_toml("", false),
        Reveal::Redacted,
    );
    app::update(
        &mut app,
        toolcap::tui::action::Action::Resize {
            width: 1200,
            height: 60,
        },
    );
    // Scoring the list reads the sidecar once and tells its problem.
    let message = app.message.clone().unwrap_or_default();
    assert!(
        message.contains("before_bad"),
        "the problem is told: {message}"
    );
    for never in PLANTED_PERSONAL {
        assert!(!message.contains(never), "{never:?} in {message}");
    }
}

#[test]
fn the_gold_diffs_verdict_column_masks_the_match_mode_it_quotes() {
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus/arksim/run-direct");
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["agent_spans.jsonl", "evaluation.json", "simulation.json"] {
        std::fs::copy(run.join(name), dir.path().join(name)).expect("copy");
    }
    let mode = "contains before planted.person@example.com card 4111 1111 1111 1111";
    let scenarios = std::fs::read_to_string(run.join("scenarios.json")).expect("scenarios");
    let planted = scenarios.replace(
        r#""match_mode": "contains""#,
        &format!(r#""match_mode": "{mode}""#),
    );
    assert_ne!(planted, scenarios, "the fixture has a contains assertion");
    std::fs::write(dir.path().join("scenarios.json"), planted).expect("write");
    let (store, _) = toolcap::sources::load::load_store(&[dir.path().to_path_buf()]);
    let mut app = App::new(
        store,
        toolcap::tui::config::from_toml("", false),
        Reveal::Redacted,
    );
    app::update(
        &mut app,
        toolcap::tui::action::Action::Resize {
            width: 1200,
            height: 60,
        },
    );
    let mut seen = Vec::new();
    for _ in 0..app.list.ids().len() {
        press(&mut app, "d");
        if app.gold_diff().is_some() {
            seen.push(screen_text(&app));
            press(&mut app, "<esc>");
        }
        press(&mut app, "j");
    }
    let quoted: Vec<&String> = seen
        .iter()
        .filter(|s| s.contains("call errors not checked in contains before"))
        .collect();
    assert!(!quoted.is_empty(), "a failed row quotes the mode");
    for screen in quoted {
        for never in PLANTED_PERSONAL {
            assert!(!screen.contains(never), "{never:?} in:\n{screen}");
        }
    }
}
