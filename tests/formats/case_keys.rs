//! `dump --json` names the evaluation case each run is (`case: {id, index}`): the key that
//! pairs a run with its rerun, which gets fresh simulation, conversation and trace ids.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/arksim-two-turn"
);

fn dump_json(path: &Path, reveal: bool) -> Value {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"));
    command.arg("dump").arg("--json").arg(path);
    if reveal {
        command.arg("--reveal");
    }
    let output = command.output().expect("run dump");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("a JSON document")
}

/// (case id, case index, run id) of every run, sorted by case.
fn cases(document: &Value) -> Vec<(String, u64, String)> {
    let mut cases: Vec<_> = document["invocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            let case = &run["case"];
            (
                case["id"]
                    .as_str()
                    .expect("every arksim turn has a case")
                    .to_owned(),
                case["index"].as_u64().unwrap(),
                run["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    cases.sort();
    cases
}

/// The simulation again as a rerun writes it: every simulation and conversation id new.
fn rerun_of(dir: &Path, replacing: &mut Vec<(String, String)>) {
    for name in ["simulation.json", "scenarios.json", "evaluation.json"] {
        let mut text = std::fs::read_to_string(Path::new(FIXTURE).join(name)).unwrap();
        for (old, new) in replacing.iter() {
            text = text.replace(old.as_str(), new);
        }
        std::fs::write(dir.join(name), text).unwrap();
    }
    replacing.clear();
}

#[test]
fn an_arksim_turn_is_keyed_by_scenario_and_turn_whatever_its_ids() {
    let first = dump_json(Path::new(FIXTURE), true);
    let simulation: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(FIXTURE).join("simulation.json")).unwrap(),
    )
    .unwrap();
    let mut replacing = vec![(
        simulation["simulation_id"].as_str().unwrap().to_owned(),
        "11111111-2222-4333-8444-555555555555".to_owned(),
    )];
    for conversation in simulation["conversations"].as_array().unwrap() {
        let id = conversation["conversation_id"].as_str().unwrap().to_owned();
        replacing.push((id, "99999999-8888-4777-8666-rerun-conv".to_owned()));
    }
    let dir = tempfile::tempdir().unwrap();
    rerun_of(dir.path(), &mut replacing);
    let rerun = dump_json(dir.path(), true);

    let (a, b) = (cases(&first), cases(&rerun));
    assert_eq!(
        a.iter()
            .map(|(id, index, _)| (id, index))
            .collect::<Vec<_>>(),
        [
            (&"refund_two_turns".to_owned(), &0),
            (&"refund_two_turns".to_owned(), &1)
        ]
    );
    for ((case_a, index_a, run_a), (case_b, index_b, run_b)) in a.iter().zip(&b) {
        assert_eq!(
            (case_a, index_a),
            (case_b, index_b),
            "same case in the rerun"
        );
        assert_ne!(run_a, run_b, "the rerun's runs have new ids");
    }
}

/// A case id is trace text: masked by the one pass, a provider key even with `--reveal`.
#[test]
fn a_case_id_is_masked_like_every_other_text() {
    let planted = "refund_sk-proj-Q7vX2mK9pL4nR8sT1wY6zB3c";
    let dir = tempfile::tempdir().unwrap();
    let mut replacing = vec![("refund_two_turns".to_owned(), planted.to_owned())];
    rerun_of(dir.path(), &mut replacing);
    for reveal in [false, true] {
        let document = dump_json(dir.path(), reveal);
        let text = serde_json::to_string(&document).unwrap();
        assert!(!text.contains("Q7vX2mK9pL4nR8sT1wY6zB3c"), "{text}");
        for run in document["invocations"].as_array().unwrap() {
            let shown = run["case"]["id"].as_str().unwrap();
            assert!(shown.starts_with("refund_") && shown != planted, "{shown}");
            assert!(
                run["name"].as_str().unwrap().starts_with(shown),
                "the case id is masked as the run's name is"
            );
        }
    }
}
