//! The command line around the views: shell completions and the man page are generated from
//! the same definitions as `--help`; `--listen` takes an address only as `--listen=ADDR`;
//! without a terminal the TUI refuses in one line instead of panicking or drawing into a pipe.

use std::process::{Command, Stdio};

use clap::Parser as _;
use toolcap::commands::Cli;

fn toolcap(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run toolcap-tui")
}

#[test]
fn completions_are_generated_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _toolcap__tui"),
        ("zsh", "#compdef toolcap-tui"),
        ("fish", "complete -c toolcap-tui"),
    ] {
        let out = toolcap(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains(marker), "{shell}: {script}");
        // Subcommands and options come from the same definitions as --help.
        assert!(script.contains("dump"), "{shell}");
        assert!(script.contains("--reveal"), "{shell}");
    }
    assert_ne!(
        toolcap(&["completions", "no-such-shell"]).status.code(),
        Some(0)
    );
}

#[test]
fn the_man_page_is_roff_with_every_subcommand() {
    let out = toolcap(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.starts_with(".ie \\n(.g .ds Aq"),
        "{}",
        &page[..80.min(page.len())]
    );
    assert!(page.contains(".TH toolcap-tui 1"), "{page}");
    for word in ["dump", "check", "serve", "completions", "\\-\\-listen"] {
        assert!(page.contains(word), "{word} missing");
    }
}

#[test]
fn listen_takes_its_address_only_after_an_equals_sign() {
    let cli = Cli::try_parse_from(["toolcap-tui", "--listen", "./traces"]).unwrap();
    assert_eq!(cli.ui.listen.as_deref(), Some("127.0.0.1:4318"));
    assert_eq!(cli.ui.sources, ["./traces"]);
    let cli = Cli::try_parse_from(["toolcap-tui", "--listen=127.0.0.1:9318", "a.jsonl"]).unwrap();
    assert_eq!(cli.ui.listen.as_deref(), Some("127.0.0.1:9318"));
    assert_eq!(cli.ui.sources, ["a.jsonl"]);
    let cli = Cli::try_parse_from(["toolcap-tui", "x"]).unwrap();
    assert_eq!(cli.ui.listen, None);
}

#[test]
fn without_a_terminal_the_tui_exits_2_and_points_at_dump() {
    let dir = tempfile::tempdir().unwrap();
    // stdin /dev/null, stdout a pipe: the case `toolcap-tui DIR </dev/null | cat`.
    let out = toolcap(&[dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing is drawn into the pipe");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("needs a terminal"), "{stderr}");
    assert!(stderr.contains("toolcap-tui dump"), "{stderr}");

    // stdout to a file, as `toolcap-tui DIR > out.txt` would: same refusal.
    let file = std::fs::File::create(dir.path().join("out.txt")).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
    assert!(
        std::fs::read(dir.path().join("out.txt"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn dump_stats_breaks_the_store_memory_down_on_stderr_and_leaves_stdout_alone() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/sample-traces");
    let plain = toolcap(&["dump", "--json", samples]);
    let with_stats = toolcap(&["dump", "--json", "--stats", samples]);
    assert_eq!(with_stats.status.code(), Some(0));
    assert_eq!(
        plain.stdout, with_stats.stdout,
        "--stats changed the document"
    );
    let stats = String::from_utf8(with_stats.stderr).unwrap();
    // The store it measures holds what the document lists.
    let document: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    let runs = document["invocations"].as_array().unwrap();
    let spans: usize = runs
        .iter()
        .map(|r| r["spans"].as_array().unwrap().len())
        .sum();
    assert!(
        stats.starts_with(&format!(
            "memory of {} invocations, {spans} spans",
            runs.len()
        )),
        "{stats}"
    );
    let mib = |name: &str| -> f64 {
        let line = stats
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line: {stats}"));
        line[name.len() + 2..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    // Each structure's share of the total, the last column.
    let share = |name: &str| -> f64 {
        let line = stats
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line: {stats}"));
        line.trim_end_matches('%')
            .split_whitespace()
            .last()
            .unwrap()
            .parse()
            .unwrap()
    };
    for row in ["span records", "attributes", "runs"] {
        assert!(share(row) > 1.0, "{row}: {stats}");
    }
    // Small runs keep no tree once settled: what is left is their summaries.
    assert!(share("trees and summaries") > 0.0, "{stats}");
    // `dump` reads its store once: it builds no search index (a filter tests every span).
    assert_eq!(mib("search index"), 0.0, "{stats}");
    // The rows add up to the total (each rounded to 0.1 MiB).
    let rows: f64 = stats
        .lines()
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("total"))
        .map(|l| {
            l.split_whitespace()
                .rev()
                .nth(2)
                .unwrap()
                .parse::<f64>()
                .unwrap()
        })
        .sum();
    assert!(
        (rows - mib("total")).abs() < 0.1 * 14.0,
        "{rows} vs {stats}"
    );
    assert!(mib("process peak resident size") > mib("total"), "{stats}");
    // What the breakdown leaves out, as the allocator counts it.
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        let in_use = mib("heap in use (allocator)");
        assert!(in_use > 0.0, "{stats}");
        assert!(mib("heap held from the system") >= in_use, "{stats}");
    }
}

/// `dump` grows the pipe it writes into (a pipe's size belongs to the pipe, so the reading
/// end sees it): its output is about as big as the file it read.
#[cfg(target_os = "linux")]
#[test]
fn dump_writes_into_a_pipe_it_has_widened_to_a_mebibyte() {
    use std::io::Read;
    use std::os::fd::AsFd;
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/sample-traces");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .args(["dump", "--json", fixture])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run toolcap-tui");
    let mut stdout = child.stdout.take().expect("piped");
    let mut json = String::new();
    stdout.read_to_string(&mut json).expect("read the output");
    assert!(child.wait().expect("wait").success());
    assert!(json.contains("\"invocations\""), "{json}");
    let size = toolcap::system::pipe_size(stdout.as_fd()).expect("a pipe");
    let ceiling: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .map_or(1 << 20, |text| text.trim().parse().unwrap_or(1 << 20));
    if ceiling >= 1 << 20 {
        assert_eq!(size, 1 << 20, "the pipe's size after dump");
    }
}
