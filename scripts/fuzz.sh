#!/usr/bin/env bash
# Runs the structured mutation fuzzer (examples/fuzz.rs) over every target for a set time each.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [extra args for the runner, e.g. --target load-bytes]
#
# Findings land in target/fuzz/{crashes,hangs}/TARGET/. Turn each into a regression test by
# copying it to tests/fixtures/fuzz/TARGET/ (tests/formats/fuzz_regressions.rs replays them in CI);
# CI never runs the fuzzer itself. FUZZ_PROFILE=release builds optimised (more executions,
# but no overflow checks); the default dev profile keeps debug assertions and overflow checks.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
profile="${FUZZ_PROFILE:-dev}"
cargo build --profile "$profile" --example fuzz
dir=debug
[ "$profile" = dev ] || dir="$profile"
exec "target/$dir/examples/fuzz" --seconds "$seconds" --out target/fuzz "$@"
