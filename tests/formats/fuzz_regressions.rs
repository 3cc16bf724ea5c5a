//! Replays every input the fuzzer ever broke a target with (tests/fixtures/fuzz/TARGET/*), plus
//! every target once on a few fixture seeds so a target that stopped being wired fails here.
//! The fuzzer itself (scripts/fuzz.sh) never runs in CI.

use std::path::Path;

use toolcap::fuzzing;

#[test]
fn every_saved_fuzz_finding_runs_to_completion() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz");
    let targets = fuzzing::targets();
    let mut replayed = 0;
    for entry in std::fs::read_dir(&root).expect("tests/fixtures/fuzz") {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let target = targets
            .iter()
            .find(|target| target.name == name)
            .unwrap_or_else(|| panic!("{}: no fuzz target named {name}", dir.display()));
        for input in std::fs::read_dir(&dir).unwrap() {
            let path = input.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            // A panic fails the test and names the input through the panic message's context.
            eprintln!("replaying {}", path.display());
            target.run(&data);
            replayed += 1;
        }
    }
    eprintln!("{replayed} saved findings replayed");
}

#[test]
fn every_target_runs_on_fixture_seeds() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus");
    let targets = fuzzing::targets();
    assert!(
        targets.len() >= toolcap::formats::REGISTRY.len() + 5,
        "one target per format, plus load-bytes, gzip and the receiver decoders"
    );
    for target in &targets {
        let seeds = fuzzing::seeds(&fixtures, target.seed_encoding);
        assert!(!seeds.is_empty(), "{} has seeds", target.name);
        for seed in seeds.iter().take(5) {
            target.run(seed);
        }
    }
}
