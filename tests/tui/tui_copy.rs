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

/// A key the masking pass finds (after a space, as every version of it does).
const PLANTED_KEY: &str = "sk-proj-PLANTEDabcdefghijklmnop0123456789";

/// An OpenAI chat log whose id is its path (it has no id of its own): the path carries an
/// escape sequence, a bell, a line break and a key; the tool's result carries `result`.
fn hostile_log(dir: &Path, result: &str) -> App {
    let run_dir = dir.join(format!(
        "run \u{1b}]0;pwned\u{7}\u{1b}[2J\nkey {PLANTED_KEY} end"
    ));
    std::fs::create_dir(&run_dir).expect("a directory named with escapes");
    let log = serde_json::json!([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": result},
    ]);
    let file = run_dir.join("chat.json");
    std::fs::write(&file, log.to_string()).expect("the log");
    let (store, _) = toolcap::sources::load::load_store(&[file]);
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

/// Focuses the detail of the tool call whose result was planted.
fn onto_the_tool_result(app: &mut App) {
    app.focus = Pane::Tree;
    for _ in 0..10 {
        let span = &app.invocation().expect("a run").spans[app.selected_span_index().unwrap()];
        if span.name.contains("get_weather") && span.output().is_captured() {
            app.focus = Pane::Detail;
            return;
        }
        press(app, "j");
    }
    panic!("no tool call with a captured result");
}

#[test]
fn y_copies_a_path_id_as_the_list_shows_it_inert_and_masked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut app = hostile_log(dir.path(), "sunny");
    let id = app.selected_invocation.clone().expect("the run is listed");
    assert!(id.contains('\u{1b}') && id.contains(PLANTED_KEY), "{id:?}");
    press(&mut app, "y");
    let copied = app.clipboard.take().expect("copied");
    for raw in ['\u{1b}', '\u{7}', '\n', '\r'] {
        assert!(!copied.contains(raw), "{raw:?} copied: {copied:?}");
    }
    assert!(!copied.contains(PLANTED_KEY), "{copied:?}");
    assert!(
        copied.contains("␛]0;pwned␇␛[2J⏎key ••••••"),
        "the path shows as on screen: {copied:?}"
    );
    // Revealed, the key stays masked and the escapes inert.
    press(&mut app, "r");
    press(&mut app, "y");
    let revealed = app.clipboard.take().expect("copied");
    assert!(!revealed.contains(PLANTED_KEY) && !revealed.contains('\u{1b}'));
}

#[test]
fn y_copies_a_revealed_text_payload_with_its_escapes_inert() {
    let dir = tempfile::tempdir().expect("temp dir");
    let result = format!("\u{1b}]52;c;cHduZWQ=\u{7}line one\u{9b}2J\nline two {PLANTED_KEY}");
    let mut app = hostile_log(dir.path(), &result);
    onto_the_tool_result(&mut app);
    press(&mut app, "r");
    press(&mut app, "y");
    let copied = app.clipboard.take().expect("copied");
    for raw in ['\u{1b}', '\u{7}', '\u{9b}'] {
        assert!(!copied.contains(raw), "{raw:?} copied: {copied:?}");
    }
    assert!(!copied.contains(PLANTED_KEY), "{copied:?}");
    // A payload's own line breaks are its content: kept, as the detail pane shows them.
    assert!(copied.contains("line one"), "{copied:?}");
    assert!(copied.contains("\nline two ••••••"), "{copied:?}");
}

#[test]
fn a_copy_over_1_mib_is_refused_with_a_message_and_never_sent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut app = hostile_log(dir.path(), &"a".repeat(3 << 19));
    onto_the_tool_result(&mut app);
    press(&mut app, "r");
    press(&mut app, "y");
    assert_eq!(
        app.clipboard.as_ref().map(String::len),
        None,
        "nothing goes to the terminal"
    );
    assert_eq!(
        app.message.as_deref(),
        Some("copy too large: 1.5 MiB > 1 MiB; use x to export")
    );
    // One byte under the cap still copies.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut app = hostile_log(dir.path(), &"a".repeat(app::export::OSC52_MAX_TEXT));
    onto_the_tool_result(&mut app);
    press(&mut app, "r");
    press(&mut app, "y");
    assert_eq!(
        app.clipboard.as_ref().map(String::len),
        Some(app::export::OSC52_MAX_TEXT)
    );
}

/// The files `x`/`X` wrote in `dir` (`toolcap-report-…`), by name.
fn reports_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the export directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.starts_with("toolcap-report-"))
        .collect();
    names.sort();
    names
}

#[cfg(unix)]
#[test]
fn an_export_skips_planted_symlinks_writes_0600_and_is_redacted_unless_asked() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    // The export's name at this time, and the JSON of its first alternative, are links.
    let at = time::OffsetDateTime::from_unix_timestamp(1_796_523_300).unwrap();
    let stem = "toolcap-report-20261206T021500Z";
    for planted in [format!("{stem}.md"), format!("{stem}-2.json")] {
        std::os::unix::fs::symlink(&victim, dir.path().join(planted)).unwrap();
    }
    let mut app = app();
    press(&mut app, "r");
    assert_eq!(app.reveal, Reveal::Revealed);
    app::export::export_into(&mut app, dir.path(), at, Reveal::Redacted);
    let message = app.message.clone().unwrap_or_default();
    assert!(message.contains(&format!("{stem}-3.md")), "{message}");
    assert!(!message.contains("REVEALED"), "{message}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let redacted_json = std::fs::read_to_string(dir.path().join(format!("{stem}-3.json"))).unwrap();
    assert!(redacted_json.contains("lookup_order"), "the runs are in it");
    assert!(
        !redacted_json.contains("PLANTED-PII-7731"),
        "revealed on screen, yet the export is redacted"
    );
    // Asked for explicitly (`X`), the export is revealed, secrets still masked, and says so.
    app::export::export_into(&mut app, dir.path(), at, Reveal::Revealed);
    let message = app.message.clone().unwrap_or_default();
    assert!(
        message.contains("REVEALED") && message.contains(&format!("{stem}-4.md")),
        "{message}"
    );
    let revealed_json = std::fs::read_to_string(dir.path().join(format!("{stem}-4.json"))).unwrap();
    assert!(revealed_json.contains("PLANTED-PII-7731"));
    assert!(!revealed_json.contains(SECRET));
    assert_eq!(
        reports_in(dir.path()),
        [
            format!("{stem}-2.json"),
            format!("{stem}-3.json"),
            format!("{stem}-3.md"),
            format!("{stem}-4.json"),
            format!("{stem}-4.md"),
            format!("{stem}.md"),
        ]
    );
    for n in [3, 4] {
        for ext in ["md", "json"] {
            let path = dir.path().join(format!("{stem}-{n}.{ext}"));
            let meta = std::fs::symlink_metadata(&path).unwrap();
            assert!(meta.is_file());
            assert_eq!(
                meta.permissions().mode() & 0o777,
                0o600,
                "{}",
                path.display()
            );
        }
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn x_exports_redacted_and_capital_x_revealed_in_the_default_keymap() {
    use toolcap::tui::action::Action;
    let app = app();
    let keymap = &app.config.keymap;
    let action_of = |key: char| {
        let event = crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(key),
            crossterm::event::KeyModifiers::NONE,
        );
        keymap.lookup(&app.key_scopes(), &event)
    };
    assert_eq!(action_of('x'), Some(Action::Export));
    assert_eq!(action_of('X'), Some(Action::ExportRevealed));
    assert!(
        Action::ExportRevealed
            .description()
            .is_some_and(|d| d.contains("REVEALED")),
        "the help says what X writes"
    );
}
