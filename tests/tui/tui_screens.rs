//! Snapshot tests of whole screens at 80x24 and 120x40, driven by key presses.

use insta::assert_snapshot;

use crate::support::{draw, press, sample_app};

fn screens(name: &str, keys: &str) {
    for (w, h) in [(80, 24), (120, 40)] {
        let mut app = sample_app(w, h);
        press(&mut app, keys);
        assert_snapshot!(format!("{name}_{w}x{h}"), draw(&app).backend());
    }
}

#[test]
fn invocation_list() {
    screens("list", "");
}

#[test]
fn tree_with_failing_tool_selected() {
    // Tab into the tree, then `n` to the first failed span.
    screens("tree_failing_tool", "<tab>n");
}

#[test]
fn detail_redacted() {
    screens("detail_redacted", "<tab>n<tab>");
}

#[test]
fn detail_revealed() {
    screens("detail_revealed", "<tab>n<tab>r");
}

#[test]
fn help_overlay() {
    screens("help", "?");
}

#[test]
fn full_screen_payload() {
    screens("fullscreen_payload", "<tab>nf");
}
