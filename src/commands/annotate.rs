//! `toolcap-tui annotate SOURCE --id ID --label L [--note TEXT]`: a triage note on one run,
//! appended to the notes sidecar; the traces are never written.

use std::path::PathBuf;

use clap::Args;

use super::RemoteArgs;
use crate::notes::{Note, NoteCase};
use crate::redact;
use crate::sources::load::load_into;
use crate::store::{Invocation, Store};

#[derive(Debug, Args, Clone, Default)]
pub struct AnnotateArgs {
    /// Trace files or directories, read as `dump` reads them, to find the run in.
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// The run: its `id` as `dump --json` gives it, or its `case` id.
    #[arg(long, value_name = "ID")]
    pub id: String,
    /// Which of the runs of a case id (its epoch or turn) when the case has several.
    #[arg(long, value_name = "N")]
    pub index: Option<u64>,
    /// One of the configured labels (default: tool-bug, model-error, gold-wrong, flaky, known).
    #[arg(long, value_name = "LABEL", required_unless_present = "clear")]
    pub label: Option<String>,
    /// Free text (masked like every other text while output is redacted).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub note: String,
    /// Take the run's note away (a line with no label and no text; the history stays).
    #[arg(long, conflicts_with_all = ["label", "note"])]
    pub clear: bool,
    #[command(flatten)]
    pub notes: super::NotesArgs,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Runs `annotate`: exit 0 when the note is on disk, 2 otherwise.
pub fn run(args: &AnnotateArgs) -> i32 {
    match annotate(args) {
        Ok(said) => {
            eprintln!("toolcap-tui annotate: {said}");
            0
        }
        Err(why) => {
            eprintln!("toolcap-tui annotate: {why}");
            2
        }
    }
}

fn annotate(args: &AnnotateArgs) -> Result<String, String> {
    let label = args.label.clone().unwrap_or_default();
    if !args.clear {
        let labels = crate::tui::config::load(false).labels_for_notes();
        if !labels.contains(&label) {
            return Err(format!(
                "label {:?} is not one of the configured labels: {} (the config file's [notes] labels sets them)",
                redact::sanitize_line(&label),
                labels.join(", ")
            ));
        }
    }
    let Some(path) = args.notes.path(&args.sources) else {
        return Err("no local SOURCE to keep notes beside: pass --notes FILE".into());
    };
    let remote = args.remote.options().map_err(|e| e.to_string())?;
    let (store, _) = load_into(Store::unindexed(), &args.sources, &remote);
    let run = find_run(&store, &args.id, args.index)?;
    let case = run.case().map(|case| NoteCase {
        id: case.id.clone(),
        index: case.index,
    });
    let run_id = run.id.to_string();
    let note = Note::new(&run_id, case, &label, &args.note);
    crate::notes::append(&path, &note).map_err(|e| e.to_string())?;
    let what = if args.clear {
        "note cleared".to_owned()
    } else {
        format!("noted [{label}]")
    };
    Ok(format!(
        "{} {what} → {}",
        redact::sanitize_line(&run_id),
        redact::sanitize_line(&path.display().to_string())
    ))
}

/// The run `id` names: a run id exactly, else the runs of a case id (narrowed by `index`);
/// refused when none or several match, naming the candidates.
pub fn find_run<'s>(
    store: &'s Store,
    id: &str,
    index: Option<u64>,
) -> Result<&'s Invocation, String> {
    if let Some(run) = store.get(id) {
        return Ok(run);
    }
    let of_case: Vec<&Invocation> = store
        .oldest_first()
        .into_iter()
        .filter(|inv| inv.case().is_some_and(|case| case.id == id))
        .collect();
    let chosen: Vec<&Invocation> = of_case
        .iter()
        .copied()
        .filter(|inv| index.is_none_or(|n| inv.case().is_some_and(|case| case.index == n)))
        .collect();
    match chosen.as_slice() {
        [run] => Ok(run),
        [] if of_case.is_empty() => Err(format!(
            "no run with id or case id {:?} in {} loaded runs (ids as `dump --json` gives them)",
            redact::sanitize_line(id),
            store.len()
        )),
        [] => Err(format!(
            "case {:?} has no run of index {}; its runs: {}",
            redact::sanitize_line(id),
            index.unwrap_or_default(),
            candidates(&of_case)
        )),
        several => Err(format!(
            "case {:?} has {} runs: choose one with --index N or --id RUN_ID: {}",
            redact::sanitize_line(id),
            several.len(),
            candidates(several)
        )),
    }
}

/// Runs as `index N (run RUN_ID)`, comma-separated; an Inspect run's task before its index,
/// since two tasks' samples can share an id.
fn candidates(runs: &[&Invocation]) -> String {
    runs.iter()
        .map(|inv| {
            let task = inv
                .case()
                .and_then(|case| case.task.as_deref())
                .map(|task| format!("task {} ", redact::sanitize_line(task)))
                .unwrap_or_default();
            format!(
                "{task}index {} (run {})",
                inv.case().map_or(0, |case| case.index),
                redact::sanitize_line(&inv.id.text())
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
