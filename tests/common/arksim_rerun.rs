//! The arksim two-turn fixture (`tests/fixtures/arksim-two-turn`) and a rerun of it, for the
//! test families that compare two runs.

use std::path::Path;

use serde_json::Value;

pub const ARKSIM_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/arksim-two-turn"
);
const FILES: [&str; 3] = ["simulation.json", "scenarios.json", "evaluation.json"];

/// The fixture as a rerun writes it into `dir`: new simulation and conversation ids; with
/// `fail_turn_1` the evaluator fails turn 1; `scenario` renames the scenario.
pub fn rerun(dir: &Path, fail_turn_1: bool, scenario: &str) {
    for name in FILES {
        let text = std::fs::read_to_string(Path::new(ARKSIM_FIXTURE).join(name))
            .unwrap()
            .replace(
                "5d1e0c2a-0000-4000-8000-two-turn-conv",
                "0e0e0e0e-1111-4222-8333-rerun-conv",
            )
            .replace(
                "7a6b0000-0000-4000-8000-000000000002",
                "7a6b0000-0000-4000-8000-00000000aaaa",
            )
            .replace("refund_two_turns", scenario);
        let mut document: Value = serde_json::from_str(&text).unwrap();
        if fail_turn_1 && name == "evaluation.json" {
            let turn = &mut document["conversations"][0]["turn_scores"][1];
            turn["turn_behavior_failure"] = "false information".into();
            turn["turn_behavior_failure_reason"] = "made up a refund policy".into();
            turn["turn_score"] = 1.0.into();
        }
        std::fs::write(dir.join(name), document.to_string()).unwrap();
    }
}
