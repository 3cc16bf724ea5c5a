//! The user's config file: theme and key overrides in TOML, found in the user's config
//! directory (`$XDG_CONFIG_HOME/toolcap-tui/config.toml` on Linux) or at `$TOOLCAP_TUI_CONFIG`.
//!
//! ```toml
//! [theme]
//! "span.llm" = "magenta bold"
//! "status.error" = "white on red"
//!
//! [keys.global]
//! "x" = "quit"          # any action name in snake_case
//! "d" = "none"          # unbind
//! [keys.tree]
//! "<ctrl-e>" = "expand_all"
//! [keys.diff]           # overlays too: help, problems, diff, search
//! "<f5>" = "next_difference"
//! [presets]             # list-search queries on number keys 1-9, in name order
//! failing = "is:failing"
//! [notes]               # the labels triage notes take (`a` in the list, `annotate`)
//! labels = ["tool-bug", "model-error", "gold-wrong", "flaky", "known"]
//! ```
//!
//! A bad entry is skipped and reported in the status bar; it never stops the app.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::action::Action;
use super::keymap::{KeySpec, Keymap, Scope};
use super::theme::{Role, Theme, parse_style};

pub const CONFIG_ENV: &str = "TOOLCAP_TUI_CONFIG";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    theme: BTreeMap<String, String>,
    #[serde(default)]
    keys: BTreeMap<String, BTreeMap<String, String>>,
    /// Named list-search queries, on number keys in name order: `failing = "is:failing"`.
    #[serde(default)]
    presets: BTreeMap<String, String>,
    #[serde(default)]
    notes: NotesTable,
}

/// `[notes]`: the labels a triage note may carry.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NotesTable {
    labels: Option<Vec<String>>,
}

/// The resolved configuration.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub keymap: Keymap,
    pub theme: Theme,
    /// Entries that were skipped, for the status bar.
    pub warnings: Vec<String>,
    /// The file it was read from (or would be), shown in the help.
    pub path: Option<PathBuf>,
    /// List-search presets (name, query), in name order; key 1 applies the first.
    pub presets: Vec<(String, String)>,
    /// The labels a triage note may carry, in the order the note prompt offers them.
    pub note_labels: Vec<String>,
}

impl Config {
    /// The labels a note may carry: the configured ones, the default set when there are none
    /// (a `Config::default()` has none).
    pub fn labels_for_notes(&self) -> Vec<String> {
        if self.note_labels.is_empty() {
            crate::notes::DEFAULT_LABELS.map(String::from).to_vec()
        } else {
            self.note_labels.clone()
        }
    }
}

/// Where the config file is looked for.
pub fn config_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(CONFIG_ENV) {
        return Some(PathBuf::from(path));
    }
    directories::ProjectDirs::from("", "", "toolcap-tui")
        .map(|dirs| dirs.config_dir().join("config.toml"))
}

/// Whether colours are off (<https://no-color.org>: set and non-empty).
pub fn no_color_requested() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Reads the config file if there is one; a missing file is the defaults.
pub fn load(no_color: bool) -> Config {
    let Some(path) = config_path() else {
        return from_toml("", no_color);
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let mut config = from_toml(&text, no_color);
            config.path = Some(path.clone());
            for w in &mut config.warnings {
                *w = format!("{}: {w}", path.display());
            }
            config
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config {
            path: Some(path),
            ..from_toml("", no_color)
        },
        Err(e) => {
            let mut config = from_toml("", no_color);
            config.path = Some(path.clone());
            config.warnings.push(format!("{}: {e}", path.display()));
            config
        }
    }
}

/// Applies a config file's text to the defaults.
pub fn from_toml(text: &str, no_color: bool) -> Config {
    let mut warnings = Vec::new();
    let file: ConfigFile = toml::from_str(text).unwrap_or_else(|e| {
        warnings.push(format!("config ignored: {}", e.message()));
        ConfigFile::default()
    });
    let mut theme = Theme::default();
    for (key, value) in &file.theme {
        match (Role::from_key(key), parse_style(value)) {
            (Some(role), Ok(style)) => theme.set(role, style),
            (None, _) => warnings.push(format!("unknown theme slot {key:?}")),
            (_, Err(e)) => warnings.push(format!("theme {key}: {e}")),
        }
    }
    if no_color {
        theme = theme.without_colour();
    }
    let mut keymap = Keymap::default();
    let mut presets = Vec::new();
    for (name, query) in file.presets {
        match crate::query::Query::parse(&query) {
            Ok(_) if presets.len() < 9 => presets.push((name, query)),
            Ok(_) => warnings.push(format!(
                "preset {name:?}: only 9 presets fit on number keys"
            )),
            Err(e) => warnings.push(format!("preset {name:?}: {e}")),
        }
    }
    // Number keys in the list apply the presets: real bindings, so the help and footer list
    // them, and `[keys.list]` below can take a digit back.
    for n in 1..=presets.len() {
        if let Ok(key) = KeySpec::parse(&n.to_string()) {
            keymap.bind(Scope::List, key, Some(Action::Preset(n as u8)));
        }
    }
    for (scope_name, table) in &file.keys {
        let Some(scope) = Scope::from_key(scope_name) else {
            warnings.push(format!("unknown key scope {scope_name:?}"));
            continue;
        };
        for (key, action_name) in table {
            let action = if action_name == "none" {
                Ok(None)
            } else {
                serde_json::from_value::<Action>(serde_json::Value::String(action_name.clone()))
                    .map(Some)
                    .map_err(|_| crate::Error::UnknownAction {
                        name: action_name.clone(),
                    })
            };
            match (KeySpec::parse(key), action) {
                (Ok(spec), Ok(action)) => keymap.bind(scope, spec, action),
                (Err(e), _) | (_, Err(e)) => warnings.push(format!("keys.{scope_name}: {e}")),
            }
        }
    }
    let note_labels = note_labels(file.notes.labels, &mut warnings);
    Config {
        keymap,
        theme,
        warnings,
        path: None,
        presets,
        note_labels,
    }
}

/// The configured labels that can be labels ([`crate::notes::check_label`]), each once; the
/// default set when none is configured or none can be.
fn note_labels(configured: Option<Vec<String>>, warnings: &mut Vec<String>) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for label in configured.unwrap_or_default() {
        match crate::notes::check_label(&label) {
            Ok(()) if label.is_empty() || labels.contains(&label) => {}
            Ok(()) => labels.push(label),
            Err(e) => warnings.push(format!("notes.labels: {e}")),
        }
    }
    if labels.is_empty() {
        labels = crate::notes::DEFAULT_LABELS.map(String::from).to_vec();
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ratatui::style::Color;

    #[test]
    fn overrides_apply_and_bad_entries_are_reported() {
        let text = r#"
            [theme]
            "span.llm" = "red"
            "span.nope" = "blue"
            [keys.global]
            "x" = "quit"
            "q" = "none"
            "z" = "fly"
        "#;
        let config = from_toml(text, false);
        assert_eq!(config.theme.style(Role::SpanLlm).fg, Some(Color::Red));
        let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        assert_eq!(
            config.keymap.lookup(&[Scope::Global], &key('x')),
            Some(Action::Quit)
        );
        assert_eq!(config.keymap.lookup(&[Scope::Global], &key('q')), None);
        assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
    }

    #[test]
    fn note_labels_are_configured_checked_and_default_to_the_five() {
        assert_eq!(
            from_toml("", false).note_labels,
            ["tool-bug", "model-error", "gold-wrong", "flaky", "known"]
        );
        let config = from_toml(
            "[notes]\nlabels = [\"infra\", \"Bad Label\", \"infra\", \"prompt-bug\"]",
            false,
        );
        assert_eq!(config.note_labels, ["infra", "prompt-bug"]);
        assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
        assert!(config.warnings[0].contains("Bad Label"));
    }

    #[test]
    fn invalid_toml_falls_back_to_defaults() {
        let config = from_toml("[theme", false);
        assert_eq!(config.warnings.len(), 1);
        assert!(config.keymap.is_bound(Action::Quit));
    }

    #[test]
    fn presets_are_list_bindings_on_number_keys_that_the_keys_table_can_take_back() {
        let text = r#"
            [presets]
            failing = "is:failing"
            llm = "kind:llm"
            slow = "dur>2s"
            [keys.list]
            "2" = "none"
        "#;
        let config = from_toml(text, false);
        assert!(config.warnings.is_empty(), "{:?}", config.warnings);
        let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        let list = [Scope::List, Scope::Global];
        assert_eq!(
            config.keymap.lookup(&list, &key('1')),
            Some(Action::Preset(1))
        );
        assert_eq!(config.keymap.lookup(&list, &key('2')), None, "rebound");
        assert_eq!(
            config.keymap.lookup(&list, &key('3')),
            Some(Action::Preset(3))
        );
        assert_eq!(
            config.keymap.lookup(&list, &key('4')),
            None,
            "no 4th preset"
        );
        // Only the list: in the tree a digit is not a preset.
        let tree = [Scope::Tree, Scope::Global];
        assert_eq!(config.keymap.lookup(&tree, &key('1')), None);
        let hints = config.keymap.hints(Scope::List);
        let presets: Vec<(Vec<String>, Action)> = hints
            .into_iter()
            .filter(|h| matches!(h.action, Action::Preset(_)))
            .map(|h| (h.keys, h.action))
            .collect();
        assert_eq!(
            presets,
            [
                (vec!["1".to_owned()], Action::Preset(1)),
                (vec!["3".to_owned()], Action::Preset(3))
            ]
        );
        assert!(
            from_toml("", false)
                .keymap
                .hints(Scope::List)
                .iter()
                .all(|h| !matches!(h.action, Action::Preset(_)))
        );
    }
}
