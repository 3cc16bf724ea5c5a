//! The receiver's log is an output like any other: what a client sends (a header quoted in a
//! refusal) is masked before it is logged.

use crate::support::{Serve, raw_http};

#[test]
fn a_key_in_a_content_type_header_is_masked_in_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("serve.log");
    let serve = Serve::start(
        &tmp.path().join("spool"),
        &["--log-file", &log.display().to_string()],
    );
    let key = "AIzaSyD4k9Lm2Nq7Rs1Tv6Wx3Yz8Ab5Cd0Ef2Gh";
    let content_type = format!(
        "text/x-before; key={key}; auth=sk-proj-Q7vX2mLp9RtY4wZ8nB3kJ6hF1dS5aG0c; by=jane.roe@example.org"
    );
    let response = raw_http(
        &serve.http,
        "POST",
        "/v1/traces",
        &[("Content-Type", &content_type)],
        b"{}",
    )
    .expect("the receiver answers");
    assert_eq!(response.status, 415);
    // The refusal is logged before the answer is sent: the line is in the file by now.
    let logged = std::fs::read_to_string(&log).expect("the log file");
    let line = logged
        .lines()
        .find(|l| l.contains("refused with 415"))
        .unwrap_or_else(|| panic!("no line for the refusal in:\n{logged}"));
    assert!(line.contains("text/x-before; key="), "{line}");
    for secret in [key, "Q7vX2mLp9", "jane.roe"] {
        assert!(!line.contains(secret), "{secret} logged: {line}");
    }
}
