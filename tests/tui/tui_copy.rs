//! `y` copies the focused thing (issue 9 item 7): the run id from the list, the span as JSON
//! from the tree, the payload from the detail — redacted unless revealed, a planted secret
//! never copied — and the OSC 52 sequence decodes to exactly that text.

use std::path::Path;

use base64::Engine as _;
use toolcap::redact::Reveal;
use toolcap::tui::app::{self, App, Pane};

use crate::support::press;

fn app() -> App {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/arksim-two-turn");
    let (store, _) = toolcap::sources::load::load_store(&[dir]);
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

const SECRET: &str = "sk-PLANTEDSECRETabcdef0123456789";

#[test]
fn y_copies_the_id_the_span_and_the_payload_as_shown() {
    let mut app = app();
    while !app
        .selected_invocation
        .as_deref()
        .unwrap_or("")
        .ends_with("turn-0")
    {
        press(&mut app, "j");
    }
    press(&mut app, "y");
    let id = app.clipboard.take().expect("copied");
    assert_eq!(Some(id.as_str()), app.selected_invocation.as_deref());
    assert!(app.message.as_deref().unwrap_or("").contains("trace id"));
    // Tree: the lookup_order tool span as JSON.
    app.focus = Pane::Tree;
    while app.invocation().unwrap().spans[app.selected_span_index().unwrap()].name != "lookup_order"
    {
        press(&mut app, "j");
    }
    press(&mut app, "y");
    let span: serde_json::Value =
        serde_json::from_str(&app.clipboard.take().expect("copied")).expect("span JSON");
    assert_eq!(span["name"], "lookup_order");
    assert!(!span.to_string().contains(SECRET));
    // Detail: the payload, redacted then revealed (secret still masked).
    app.focus = Pane::Detail;
    press(&mut app, "y");
    let redacted = app.clipboard.take().expect("copied");
    assert!(
        !redacted.contains("ORD-1") && !redacted.contains(SECRET),
        "{redacted}"
    );
    press(&mut app, "r");
    press(&mut app, "y");
    let revealed = app.clipboard.take().expect("copied");
    assert!(!revealed.contains(SECRET), "{revealed}");
    let message = app.message.clone().unwrap_or_default();
    assert!(
        message.contains("payload") && message.contains("bytes"),
        "{message}"
    );
    // What reaches the terminal is OSC 52 carrying exactly that text.
    let seq = app::export::osc52(&revealed);
    let body = seq
        .strip_prefix("\x1b]52;c;")
        .and_then(|s| s.strip_suffix('\x07'))
        .expect("OSC 52 framing");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), revealed);
}
