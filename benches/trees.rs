//! Tree assembly cost against how spans are split across files (issue 13 item 5): 5,000
//! one-span files of one trace against 5,000 one-trace files, loaded the way `dump` loads
//! them. The mechanism (each span placed once) is tested in `tests/formats/store_split_files.rs`;
//! this measures the time.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn main() {
    divan::main();
}

const FILES: usize = 5_000;

fn otlp_line(trace: &str, span: &str, parent: Option<&str>, start: u64) -> String {
    let parent = parent
        .map(|p| format!(r#","parentSpanId":"{p}""#))
        .unwrap_or_default();
    format!(
        r#"{{"resourceSpans":[{{"resource":{{}},"scopeSpans":[{{"spans":[{{"traceId":"{trace}","spanId":"{span}"{parent},"name":"s","startTimeUnixNano":"{start}","endTimeUnixNano":"{}"}}]}}]}}]}}"#,
        start + 10
    ) + "\n"
}

fn write_files(dir: &Path, one_trace: bool) {
    std::fs::create_dir_all(dir).expect("bench dir");
    for i in 0..FILES {
        let (trace, parent) = if one_trace {
            (
                "0af7651916cd43dd8448eb211c80319c".to_owned(),
                (i > 0).then(|| format!("{:016x}", (i - 1) / 2 + 1)),
            )
        } else {
            (format!("{:032x}", i + 1), None)
        };
        let line = otlp_line(
            &trace,
            &format!("{:016x}", i + 1),
            parent.as_deref(),
            1_000 + i as u64,
        );
        std::fs::write(dir.join(format!("{:05}.otlp.jsonl", FILES - i)), line).expect("write");
    }
}

fn corpus() -> &'static (tempfile::TempDir, PathBuf, PathBuf) {
    static CORPUS: OnceLock<(tempfile::TempDir, PathBuf, PathBuf)> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let one = dir.path().join("one-trace");
        let many = dir.path().join("many-traces");
        write_files(&one, true);
        write_files(&many, false);
        (dir, one, many)
    })
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn files_5000_of_one_trace(bencher: divan::Bencher) {
    let path = corpus().1.clone();
    bencher.bench(|| toolcap::sources::load::load_store(std::slice::from_ref(&path)));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn files_5000_one_trace_each(bencher: divan::Bencher) {
    let path = corpus().2.clone();
    bencher.bench(|| toolcap::sources::load::load_store(std::slice::from_ref(&path)));
}

/// The TUI's way: a drain (settle) after every file.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn files_5000_of_one_trace_settled_per_file(bencher: divan::Bencher) {
    let path = corpus().1.clone();
    bencher.bench(|| {
        let mut store = toolcap::store::Store::new();
        for file in toolcap::sources::files::trace_files(&path).expect("files") {
            store.ingest(toolcap::sources::files::load_file(&file).batch);
        }
        store
    });
}

/// Issue 11 item 6: one drain that adds a span to an open run of 100,001 spans (a root with
/// 1,000 steps of 100 tool spans each, the worst case for the ordered tool calls) — the new
/// span joins the tree and the roll-ups along its path, nothing is rebuilt. Target: 5 ms.
#[divan::bench(sample_count = 20, sample_size = 10)]
fn drain_into_an_open_100001_span_run(bencher: divan::Bencher) {
    use toolcap::model::{Batch, Span, SpanKind};
    use toolcap::store::Store;
    let span = |id: String, parent: Option<String>, at: u64| Span {
        trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
        span_id: id.into(),
        parent_span_id: parent.map(Into::into),
        name: "step".into(),
        kind: SpanKind::Tool,
        start_unix_nano: at,
        end_unix_nano: at + 10,
        provenance: toolcap::model::Provenance::shared(None, None, "bench".into()),
        ..Span::default()
    };
    let mut spans = vec![span("root".into(), None, 0)];
    for step in 0..1_000u64 {
        spans.push(span(format!("s{step}"), Some("root".into()), step * 1_000));
        for leaf in 0..99u64 {
            let at = step * 1_000 + leaf;
            spans.push(span(
                format!("s{step}-{leaf}"),
                Some(format!("s{step}")),
                at,
            ));
        }
    }
    let mut store = Store::new();
    store.ingest(Batch {
        spans,
        ..Batch::default()
    });
    assert_eq!(store.stats().spans_kept, 100_001);
    let mut next = 0u64;
    bencher.bench_local(|| {
        next += 1;
        let parent = format!("s{}", next % 1_000);
        store.ingest(Batch {
            spans: vec![span(format!("new{next}"), Some(parent), 2_000_000 + next)],
            ..Batch::default()
        });
    });
}
