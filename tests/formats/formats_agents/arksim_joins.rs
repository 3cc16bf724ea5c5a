//! arksim joins told honestly: the same call seen in simulation.json and in the agent's spans
//! is one call (no warning), a real contradiction is one warning whose place names its line
//! once, two runs of one simulation stay apart, and a turn's synthesized root spans its
//! children's time.

use super::*;

const RUN: &str = "corpus/arksim/run-direct";

/// The run-direct files copied into a fresh directory, `simulation.json` and
/// `evaluation.json` changed by `edit_simulation` and `edit_evaluation`.
fn copy_run(
    edit_simulation: impl FnOnce(&mut Value),
    edit_evaluation: impl FnOnce(&mut Value),
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["agent_spans.jsonl", "scenarios.json"] {
        std::fs::copy(fixture(&format!("{RUN}/{name}")), dir.path().join(name)).expect("copy");
    }
    for (name, edit) in [
        (
            "simulation.json",
            Box::new(edit_simulation) as Box<dyn FnOnce(&mut Value)>,
        ),
        ("evaluation.json", Box::new(edit_evaluation)),
    ] {
        let text = std::fs::read_to_string(fixture(&format!("{RUN}/{name}"))).expect("read");
        let mut doc: Value = serde_json::from_str(&text).expect("json");
        edit(&mut doc);
        std::fs::write(dir.path().join(name), doc.to_string()).expect("write");
    }
    dir
}

fn counted_problems(store: &Store) -> Vec<String> {
    store
        .problems()
        .iter()
        .filter(|p| p.is_counted())
        .map(|p| p.to_string())
        .collect()
}

// arksim writes each traced tool call to simulation.json (id = the SDK span id) and the agent's
// side processor writes the same span to agent_spans.jsonl: 9 calls, each one call.
#[test]
fn a_clean_arksim_run_joins_its_files_without_warnings() {
    let (store, _) = load(&[RUN]);
    assert_eq!(counted_problems(&store), Vec::<String>::new());
    let tools: usize = store
        .oldest_first()
        .iter()
        .map(|inv| inv.summary().tool_calls.len())
        .sum();
    assert_eq!(tools, 9, "each call counted once");
}

#[test]
fn a_call_whose_arguments_contradict_its_span_is_one_warning_placed_once() {
    let dir = copy_run(
        |sim| {
            let call = &mut sim["conversations"][0]["conversation_history"][1]["tool_calls"][0];
            assert_eq!(call["id"], "span_70d6815966d143d099305056");
            call["arguments"] = serde_json::json!({"order_id": "ORD-1234"});
        },
        |_| {},
    );
    let (store, _) = load::load_store(&[dir.path().to_path_buf()]);
    let problems = counted_problems(&store);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let problem = &problems[0];
    assert!(
        problem.contains("span_70d6815966d143d099305056") && problem.contains("arguments"),
        "{problem}"
    );
    // Printed as `warning: <file>:<line>: …`, the line once.
    let spans = dir.path().join("agent_spans.jsonl").display().to_string();
    let line = problem
        .strip_prefix(&format!("warning: {spans}:"))
        .and_then(|rest| rest.split_once(": "))
        .map(|(line, _)| line.to_owned())
        .unwrap_or_else(|| panic!("{problem}"));
    assert!(line.parse::<u64>().is_ok(), "{problem}");
}

#[test]
fn a_span_read_twice_with_different_content_names_its_line_once() {
    let text = std::fs::read_to_string(fixture(&format!("{RUN}/agent_spans.jsonl"))).expect("read");
    let first = text.lines().next().expect("a line");
    let mut changed: Value = serde_json::from_str(first).expect("json");
    changed["ended_at"] = Value::from("2026-11-30T12:50:10.000000+00:00");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.jsonl"), format!("{first}\n")).expect("write");
    std::fs::write(dir.path().join("b.jsonl"), format!("{changed}\n")).expect("write");
    let (store, _) = load::load_store(&[dir.path().to_path_buf()]);
    let problem = store
        .problems()
        .iter()
        .find(|p| p.message.contains("appears twice"))
        .expect("the conflict is reported");
    assert_eq!(problem.line, Some(1));
    assert!(!problem.source.ends_with(":1"), "{}", problem.source);
    assert!(
        problem.to_string().starts_with("warning: ") && !problem.to_string().contains(":1:1"),
        "{problem}"
    );
}

// cancel_order turn 0: every span ok, arksim's label `disobey user request` (evaluation.json),
// and scenarios.json's strict assertion it breaks with an extra get_weather.
#[test]
fn dump_text_heads_a_run_with_its_verdict_and_says_the_label_once() {
    let (store, _) = load(&[RUN]);
    let text = dump::to_text(&store, toolcap::redact::Reveal::Redacted);
    let block: Vec<&str> = text
        .split("\n\n")
        .find(|b| b.contains("cancel_order · turn 0"))
        .expect("the run is printed")
        .lines()
        .collect();
    assert!(
        block[0].starts_with("⚑≠ cancel_order · turn 0 [eval-failed+gold-mismatch] "),
        "{}",
        block[0]
    );
    assert!(block[1].starts_with("  eval: FAIL disobey user request — "));
    let said = block
        .iter()
        .filter(|l| l.contains("disobey user request"))
        .count();
    assert_eq!(said, 1, "{block:#?}");
    let passed = text
        .lines()
        .find(|l| l.contains("weather_ok · turn 0"))
        .expect("the run is printed");
    assert!(
        passed.starts_with("✓ weather_ok · turn 0 [ok] "),
        "{passed}"
    );
}

const RERUN_SIMULATION: &str = "5f0c7a52-93d1-4b0e-8c4e-2b7d9e61a0f3";
const RERUN_EVALUATION: &str = "c2e4b8a1-7d35-4f6a-9e02-6a1f3b5c8d47";

/// run-direct again under a new simulation and evaluation id, every verdict flipped: what a
/// second evaluation run of the same conversations looks like.
fn rerun() -> tempfile::TempDir {
    copy_run(
        |sim| sim["simulation_id"] = Value::from(RERUN_SIMULATION),
        |eval| {
            eval["simulation_id"] = Value::from(RERUN_SIMULATION);
            eval["evaluation_id"] = Value::from(RERUN_EVALUATION);
            for conversation in eval["conversations"].as_array_mut().expect("list") {
                for turn in conversation["turn_scores"].as_array_mut().expect("list") {
                    let passed = matches!(
                        turn["turn_behavior_failure"].as_str(),
                        Some("no failure" | "skipped_good_performance")
                    );
                    turn["turn_behavior_failure"] =
                        Value::from(if passed { "repetition" } else { "no failure" });
                    turn["turn_behavior_failure_reason"] = Value::from("flipped in the rerun");
                }
            }
        },
    )
}

#[test]
fn two_runs_of_one_simulation_stay_apart() {
    let rerun = rerun();
    let (store, _) = load::load_store(&[fixture(RUN), rerun.path().to_path_buf()]);
    assert_eq!(store.len(), 14, "7 turns in each run");
    let first = "d0340109-c769-4444-a824-63e9fd117ab7";
    for inv in store.oldest_first() {
        let id = inv.id.text();
        let (run, _) = id.split_once('/').expect("a run-scoped id");
        assert!(run == first || run == RERUN_SIMULATION, "{id}");
        let root = inv
            .spans
            .iter()
            .find(|s| s.name.starts_with("arksim turn"))
            .expect("the turn's root");
        assert_eq!(
            root.attr("arksim.simulation_id")
                .and_then(|v| v.text().map(str::to_owned)),
            Some(run.to_owned()),
            "{id}"
        );
        let verdict = inv.eval().expect("each turn was evaluated");
        let evaluations: Vec<_> = inv
            .spans
            .iter()
            .filter(|s| s.name == "arksim evaluation")
            .collect();
        assert_eq!(evaluations.len(), 1, "{id}: one evaluation span");
        let span_label = evaluations[0]
            .attr("arksim.turn_behavior_failure")
            .and_then(|v| v.text().map(str::to_owned));
        assert_eq!(span_label.as_deref(), Some(verdict.label.as_str()), "{id}");
        assert_eq!(evaluations[0].status.is_error(), !verdict.passed, "{id}");
        let flipped = verdict.reason == "flipped in the rerun";
        assert_eq!(flipped, run == RERUN_SIMULATION, "{id}: {}", verdict.reason);
    }
    let counted: Vec<_> = store.problems().iter().filter(|p| p.is_counted()).collect();
    assert!(counted.is_empty(), "{counted:#?}");
}

// Each turn's root is synthesized from simulation.json, which has no timing; its agent trace
// (agent_spans.jsonl) hangs a timed `task` span under it.
#[test]
fn a_synthesized_turn_spans_its_children_in_any_load_order() {
    let names = ["simulation.json", "evaluation.json", "agent_spans.jsonl"];
    for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
        let mut store = Store::new();
        for i in order {
            let path = fixture(&format!("{RUN}/{}", names[i]));
            store.ingest(toolcap::sources::files::load_file(&path).batch);
        }
        assert_eq!(store.len(), 7);
        for inv in store.oldest_first() {
            let root = inv
                .spans
                .iter()
                .find(|s| s.name.starts_with("arksim turn"))
                .expect("the turn's root");
            let task = inv
                .spans
                .iter()
                .find(|s| s.name == "task" && s.parent_span_id.as_ref() == Some(&root.span_id))
                .expect("the agent trace hangs under the turn");
            assert!(task.start_unix_nano > 0);
            assert_eq!(
                (root.start_unix_nano, root.end_unix_nano),
                (task.start_unix_nano, task.end_unix_nano),
                "{} (order {order:?})",
                inv.id
            );
            assert_eq!(inv.summary().start_unix_nano, root.start_unix_nano);
        }
    }
}

// A second evaluation of the same simulation (same simulation id, a new evaluation id) that
// flips every verdict: each turn holds both evaluation spans, the failing verdict is the one
// shown, and each disagreement is one warning naming both verdicts.
#[test]
fn two_evaluations_of_one_simulation_are_both_kept_and_the_failing_verdict_wins() {
    let second = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(fixture(&format!("{RUN}/evaluation.json"))).expect("read");
    let mut doc: Value = serde_json::from_str(&text).expect("json");
    doc["evaluation_id"] = Value::from(RERUN_EVALUATION);
    let mut flipped = 0;
    for conversation in doc["conversations"].as_array_mut().expect("list") {
        for turn in conversation["turn_scores"].as_array_mut().expect("list") {
            let passed = matches!(
                turn["turn_behavior_failure"].as_str(),
                Some("no failure" | "skipped_good_performance")
            );
            turn["turn_behavior_failure"] =
                Value::from(if passed { "repetition" } else { "no failure" });
            flipped += 1;
        }
    }
    std::fs::write(second.path().join("evaluation.json"), doc.to_string()).expect("write");
    let (store, _) = load::load_store(&[fixture(RUN), second.path().to_path_buf()]);
    assert_eq!(store.len(), 7, "one simulation: 7 turns");
    for inv in store.oldest_first() {
        let id = inv.id.text();
        let evaluations: Vec<_> = inv
            .spans
            .iter()
            .filter(|s| s.name == "arksim evaluation")
            .collect();
        assert_eq!(evaluations.len(), 2, "{id}: both evaluations' spans");
        assert!(
            evaluations.iter().any(|s| s.status.is_error()),
            "{id}: one of the two failed it"
        );
        assert!(
            !inv.eval().expect("evaluated").passed,
            "{id}: the failing verdict is shown"
        );
    }
    let disagreements = store
        .problems()
        .iter()
        .filter(|p| {
            p.message
                .contains("two evaluations judged this run differently")
        })
        .count();
    assert_eq!(disagreements, flipped, "one warning per flipped turn");
}
