//! Where the integration tests live, checked: `cargo test` links one binary per family
//! (`tests/FAMILY/main.rs`, CONTRIBUTING.md "Where the tests are"), each linking the whole
//! library. A file directly in `tests/` would be a binary of its own again, and a file in a
//! family's directory that no `mod` declares would never be compiled, its tests silently gone:
//! both fail here.

use std::path::{Path, PathBuf};

/// Directories under `tests/` that hold data and scripts, not test code.
const NOT_TEST_CODE: &[&str] = &["fixtures", "python"];

/// Helpers more than one family uses, each file included by a family's `main.rs` with
/// `#[path = "../common/NAME.rs"]`.
const COMMON: &str = "common";

/// Few binaries keep `cargo test`'s link time down; a new family needs a reason.
const MOST_FAMILIES: usize = 6;

fn rust_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            found.extend(rust_files_under(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
    found
}

/// Whether `source` declares `mod NAME;` (possibly `pub`), outside comments.
fn declares_module(source: &str, name: &str) -> bool {
    let wanted = format!("mod {name};");
    source.lines().any(|line| {
        let line = line.trim();
        let line = line.strip_prefix("pub ").unwrap_or(line);
        line == wanted
    })
}

#[test]
fn tests_are_family_binaries_whose_files_are_all_declared() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut families = Vec::new();
    let mut strays = Vec::new();
    let mut common = Vec::new();
    for entry in std::fs::read_dir(&tests).expect("tests/") {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && name == COMMON {
            common.extend(rust_files_under(&path));
        } else if path.is_dir() && !NOT_TEST_CODE.contains(&name.as_str()) {
            if path.join("main.rs").is_file() {
                families.push(path);
            } else {
                strays.extend(rust_files_under(&path));
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            strays.push(path);
        }
    }
    assert!(
        strays.is_empty(),
        "move these into a family (tests/FAMILY/NAME.rs, declared with `mod NAME;` in its \
         main.rs): {strays:?}"
    );
    assert!(
        (1..=MOST_FAMILIES).contains(&families.len()),
        "{} test binaries: {families:?}",
        families.len()
    );

    let mut undeclared = Vec::new();
    for family in &families {
        for file in rust_files_under(family) {
            let dir = file.parent().unwrap();
            if file == family.join("main.rs") {
                continue;
            }
            // A file in the family's directory is declared by main.rs; `a/b.rs` by `a.rs`.
            let parent = if dir == family.as_path() {
                family.join("main.rs")
            } else {
                dir.with_extension("rs")
            };
            let name = file.file_stem().unwrap().to_string_lossy();
            let declared = std::fs::read_to_string(&parent)
                .is_ok_and(|source| declares_module(&source, &name));
            if !declared {
                undeclared.push(file);
            }
        }
    }
    assert!(
        undeclared.is_empty(),
        "never compiled: no `mod` declares {undeclared:?}"
    );

    let mains: Vec<String> = families
        .iter()
        .filter_map(|family| std::fs::read_to_string(family.join("main.rs")).ok())
        .collect();
    let unused: Vec<&PathBuf> = common
        .iter()
        .filter(|file| {
            let name = file.file_name().unwrap().to_string_lossy();
            let include = format!("#[path = \"../{COMMON}/{name}\"]");
            !mains.iter().any(|main| main.contains(&include))
        })
        .collect();
    assert!(
        unused.is_empty(),
        "never compiled: no family's main.rs includes {unused:?}"
    );
}

#[test]
fn a_declaration_is_a_whole_mod_line() {
    let source = "mod alpha;\n    pub mod beta;\n// mod gamma;\nmod alphabet;\nmod delta {";
    assert!(declares_module(source, "alpha"));
    assert!(declares_module(source, "beta"));
    assert!(
        !declares_module(source, "gamma"),
        "a comment declares nothing"
    );
    assert!(!declares_module(source, "alphabe"));
    assert!(
        !declares_module(source, "delta"),
        "an inline module has no file"
    );
}
