//! The one-way import rule, checked: every top-level module may import only the modules in the
//! layers below it (docs/ARCHITECTURE.md, "Module map"). Data flows from sources through
//! normalization and the store to the views; an import against that flow fails this test.

use std::collections::BTreeSet;
use std::path::Path;

/// Bottom to top. A module may import its own layer's modules only where listed as allowed.
const LAYERS: &[(&str, &[&str])] = &[
    ("system", &[]),
    ("machine", &[]),
    ("logging", &["system"]),
    ("model", &[]),
    ("redact", &["machine", "model"]),
    ("formats", &["machine", "model", "redact"]),
    ("store", &["machine", "model", "redact"]),
    ("gold", &["machine", "model", "redact", "formats", "store"]),
    (
        "triage",
        &["machine", "model", "redact", "formats", "store", "gold"],
    ),
    (
        "query",
        &[
            "machine", "model", "redact", "formats", "store", "gold", "triage",
        ],
    ),
    (
        "receiver",
        &["logging", "machine", "system", "model", "redact", "formats"],
    ),
    (
        "sources",
        &[
            "logging", "machine", "system", "model", "redact", "formats", "store", "receiver",
        ],
    ),
    (
        "views",
        &[
            "machine", "system", "model", "redact", "formats", "store", "gold", "triage", "query",
            "sources",
        ],
    ),
    (
        "fuzzing",
        &[
            "machine", "model", "redact", "formats", "store", "receiver", "sources",
        ],
    ),
    (
        "tui",
        &[
            "logging", "machine", "system", "model", "redact", "formats", "store", "gold",
            "triage", "query", "receiver", "sources", "views",
        ],
    ),
    (
        "commands",
        &[
            "logging", "machine", "system", "model", "redact", "formats", "store", "gold",
            "triage", "query", "receiver", "sources", "views", "tui",
        ],
    ),
];

/// The top-level module a file under `src/` belongs to (`src/gold/check.rs` → `gold`).
fn top_module(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_string_lossy();
    let name = first.strip_suffix(".rs").unwrap_or(&first);
    (!matches!(name, "lib" | "main" | "layering" | "test_layout")).then(|| name.to_owned())
}

/// Every `crate::NAME` a file's code (not its comments) names.
fn imported_modules(source: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in source.lines() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let preceded_by_ident = rest[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !preceded_by_ident && !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(file, imported module)` for every import that breaks the rule.
fn upward_imports(src: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut broken = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src).expect("under src/");
        let Some(module) = top_module(relative) else {
            continue;
        };
        let allowed = LAYERS
            .iter()
            .find(|(name, _)| *name == module)
            .map(|(_, allowed)| *allowed)
            .unwrap_or_else(|| panic!("src/{module} is not in LAYERS: give it a layer"));
        let source = std::fs::read_to_string(&file).expect("a readable source file");
        for imported in imported_modules(&source) {
            if imported != module && !allowed.contains(&imported.as_str()) {
                broken.push((relative.display().to_string(), imported));
            }
        }
    }
    broken
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let broken = upward_imports(&src);
    assert!(
        broken.is_empty(),
        "imports against the one-way rule (file → module):\n{}",
        broken
            .iter()
            .map(|(file, module)| format!("  src/{file} → crate::{module}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Inside the TUI, state does not import drawing: `app` (state and updates) and `layout` sit
/// below `ui`, which reads them.
#[test]
fn the_tui_state_never_imports_its_drawing() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("tui/app"), &mut files);
    files.push(src.join("tui/layout.rs"));
    let broken: Vec<String> = files
        .iter()
        .filter(|file| {
            let source = std::fs::read_to_string(file).expect("a readable source file");
            source
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .any(|l| {
                    l.contains("tui::ui")
                        || l.contains("super::ui")
                        || l.contains("super::super::ui")
                })
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(broken.is_empty(), "app or layout imports ui: {broken:?}");
}

#[test]
fn the_rule_sees_imports_and_skips_comments() {
    let source = "use crate::store::Store;\n// crate::tui in a comment\nlet x = crate::gold::f();\nlet y = my_crate::nope;";
    let found = imported_modules(source);
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        ["gold", "store"],
        "a path segment that merely ends in `crate` is not an import"
    );
}

#[test]
fn every_layer_only_allows_layers_below_it() {
    for (index, (name, allowed)) in LAYERS.iter().enumerate() {
        let below: Vec<&str> = LAYERS[..index].iter().map(|(n, _)| *n).collect();
        for module in *allowed {
            assert!(
                below.contains(module),
                "{name} allows {module}, which is not below it"
            );
        }
    }
}
