//! Gold trajectories and verdicts: gold sources, the metric engine against toolscore's own
//! output, `check` and `report` through the real binary, and the diff view's snapshots.
//!
//! One test binary for the family, so the library is linked once for all of it.

#[path = "../common/arksim_rerun.rs"]
mod arksim_rerun;
mod check_trust;
mod compare_runs;
mod gold_arksim;
mod gold_check_store;
mod gold_cli;
mod gold_diff_view;
mod gold_metrics;
mod gold_sources;
mod gold_toolscore;
#[path = "../common/inspect_fixtures.rs"]
mod inspect_fixtures;
mod report_summary;
mod toolscore_rules;
mod triage_report;
