//! A private tmux server with a fixed window size, for end-to-end tests of the real binary in a
//! real pseudo-terminal: keys go in with `send-keys`, the screen comes back with `capture-pane`,
//! and every wait polls a condition against a deadline.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub const WAIT: Duration = Duration::from_secs(30);

pub struct Tmux {
    /// The server's socket, in a directory of its own: tmux leaves its socket file behind when
    /// the server exits, and the directory goes with the `Tmux`.
    socket: std::path::PathBuf,
    _socket_dir: tempfile::TempDir,
}

impl Tmux {
    pub fn start(command: &str) -> Tmux {
        let socket_dir = tempfile::Builder::new()
            .prefix("toolcap-e2e-")
            .tempdir()
            .expect("a directory for the tmux socket");
        let tmux = Tmux {
            socket: socket_dir.path().join("tmux"),
            _socket_dir: socket_dir,
        };
        // remain-on-exit keeps the pane after the app quits, so the restored screen can be read.
        let out = tmux.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "40",
            "-s",
            "e2e",
            command,
            ";",
            "set-option",
            "-w",
            "remain-on-exit",
            "on",
        ]);
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux
    }

    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux is installed")
    }

    pub fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).status.success());
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "e2e"]).stdout).into_owned()
    }

    /// Polls the screen until `check` holds; panics with the last screen after the deadline.
    pub fn wait_for(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The bundled sample traces, as an absolute path the app and `dump` both report sources by.
pub fn samples() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/sample-traces")
        .canonicalize()
        .expect("the bundled samples")
}

/// `toolcap-tui dump --json ARGS… SAMPLES`, parsed.
pub fn dump_samples_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcap-tui"))
        .arg("dump")
        .arg("--json")
        .args(args)
        .arg(samples())
        .output()
        .expect("dump runs");
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice(&out.stdout).expect("dump prints JSON")
}
