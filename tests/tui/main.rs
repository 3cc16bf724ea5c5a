//! The terminal UI: state transitions and whole screens driven by real key events, rebound keys,
//! search, triage (and its agreement with `dump` and `report`), the gold diff overlay, copying
//! and export, the memory budget, redaction with no side doors, `compare`'s interactive view,
//! and the real binary in a real pseudo-terminal (tmux), including against a real Arize Phoenix.
//!
//! One test binary for the family, so the library is linked once for all of it.

#[path = "../common/arksim_rerun.rs"]
mod arksim_rerun;
mod compare_view;
mod gold_trust;
#[path = "../common/inspect_fixtures.rs"]
mod inspect_fixtures;
mod phoenix_source;
mod planted_every_output;
mod redaction_hostile;
mod support;
mod tmux;
mod triage_agreement;
mod tui_budget;
mod tui_chat;
mod tui_config;
mod tui_copy;
mod tui_copy_export_e2e;
mod tui_e2e;
mod tui_gold_diff;
mod tui_keymap_rebind;
mod tui_notes;
mod tui_offscreen_gold;
mod tui_screens;
mod tui_search;
mod tui_search_worker;
mod tui_state;
mod tui_summary;
mod tui_triage;
