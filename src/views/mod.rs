//! Views: everything that presents the store. `dump` is headless; the TUI lives in `tui`.

pub mod dump;
