//! Long conversations in the detail pane and the transcript: one key and one frame drawn into
//! a TestBackend, on a model call given 2,000 messages and on one whose system prompt is 1 MB.
//! Budget (docs/PERFORMANCE.md): 16 ms per key and frame.

use divan::Bencher;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use toolcap::model::{Batch, Payload, Provenance, Span, SpanKind};
use toolcap::redact::Reveal;
use toolcap::store::Store;
use toolcap::tui::action::Action;
use toolcap::tui::app::{self, App};
use toolcap::tui::config;
use toolcap::tui::ui;

fn main() {
    divan::main();
}

const T0: u64 = 1_764_496_800_000_000_000;

/// 2,000 messages: a user question, then rounds of an assistant's tool call and its result.
fn long_conversation() -> String {
    let mut messages = vec![json!({"role": "system", "content": "You are a careful assistant."})];
    for n in 0..1_999 {
        messages.push(match n % 3 {
            0 => json!({"role": "user", "content": format!("Question {n}: what is the weather in city {n}, and why does it matter for the trip we are planning next week?")}),
            1 => json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{n}"), "type": "function", "function": {"name": "get_weather", "arguments": format!("{{\"city\": \"city {n}\"}}")}}]}),
            _ => json!({"role": "tool", "tool_call_id": format!("call_{}", n - 1), "content": "18 degrees and cloudy, light wind from the west, no rain expected until the evening"}),
        });
    }
    serde_json::Value::Array(messages).to_string()
}

/// A 1 MB system prompt of 80-character lines, then one question.
fn big_system_prompt() -> String {
    let line = "Follow the policy below in every answer, and cite the section you rely on. ....\n";
    let prompt = line.repeat((1 << 20) / line.len());
    json!([{"role": "system", "content": prompt}, {"role": "user", "content": "Summarise the policy."}])
        .to_string()
}

/// An app over one run whose model call was given `input`, that call selected and the detail
/// focused, the conversation shown as chat and revealed.
fn app_on(input: String) -> App {
    let span = |id: &str, parent: Option<&str>, kind| Span {
        trace_id: "conversation".into(),
        span_id: id.into(),
        parent_span_id: parent.map(Into::into),
        name: format!("{kind:?} span").into(),
        kind,
        start_unix_nano: T0,
        end_unix_nano: T0 + 1_000_000,
        provenance: Provenance::shared(None, None, "bench".into()),
        ..Default::default()
    };
    let mut llm = span("llm", Some("root"), SpanKind::Llm);
    llm.set_input(Payload::inline("gen_ai.input.messages", &input).into());
    let mut batch = Batch::default();
    batch.spans.push(span("root", None, SpanKind::Agent));
    batch.spans.push(llm);
    let mut store = Store::new();
    store.ingest(batch);
    let mut app = App::new(store, config::from_toml("", false), Reveal::Revealed);
    app::update(
        &mut app,
        Action::Resize {
            width: 160,
            height: 48,
        },
    );
    app::update(&mut app, Action::FocusNext);
    app::update(&mut app, Action::Down);
    app::update(&mut app, Action::FocusNext);
    app
}

fn key_and_frame(bencher: Bencher, mut app: App, keys: &[Action]) {
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).expect("test backend");
    let draw = |terminal: &mut Terminal<TestBackend>, app: &App| {
        terminal
            .draw(|frame| {
                ui::render(frame, app);
            })
            .expect("draw");
    };
    // The first frame builds the detail's lines; the keys after it scroll them.
    draw(&mut terminal, &app);
    let mut i = 0;
    bencher.bench_local(|| {
        app::update(&mut app, keys[i % keys.len()]);
        i += 1;
        draw(&mut terminal, &app);
    });
}

/// Scrolling a model call's 2,000 messages in the detail pane.
#[divan::bench(sample_count = 50)]
fn detail_2000_messages_scroll(bencher: Bencher) {
    key_and_frame(
        bencher,
        app_on(long_conversation()),
        &[Action::PageDown, Action::PageDown, Action::PageUp],
    );
}

/// Scrolling a model call whose system prompt is 1 MB, unfolded whole.
#[divan::bench(sample_count = 50)]
fn detail_1mb_system_prompt_scroll(bencher: Bencher) {
    let mut app = app_on(big_system_prompt());
    app::update(&mut app, Action::ToggleFold);
    key_and_frame(
        bencher,
        app,
        &[Action::PageDown, Action::PageDown, Action::PageUp],
    );
}

/// Stepping through the transcript of a run given 2,000 messages.
#[divan::bench(sample_count = 50)]
fn transcript_2000_messages_step(bencher: Bencher) {
    let mut app = app_on(long_conversation());
    app::update(&mut app, Action::ToggleTranscript);
    key_and_frame(
        bencher,
        app,
        &[Action::NextMessage, Action::NextMessage, Action::PageDown],
    );
}

/// Opening the detail on the 2,000-message call: reading the payload and laying out its chat.
#[divan::bench(sample_count = 10)]
fn detail_2000_messages_open(bencher: Bencher) {
    let input = long_conversation();
    bencher.bench_local(|| {
        let app = app_on(input.clone());
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).expect("test backend");
        terminal
            .draw(|frame| {
                ui::render(frame, &app);
            })
            .expect("draw");
    });
}
