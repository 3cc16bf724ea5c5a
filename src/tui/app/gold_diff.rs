//! The gold-vs-actual overlay (`d`): which gold applies, the report, and the keys inside it.
//! The view itself is drawn by [`crate::tui::diff`].

use crossterm::event::KeyCode;

use super::{App, Pane, nav};
use crate::gold::check::{SidecarCache, report_for};
use crate::gold::report::{CheckOptions, DiffReport};
use crate::gold::source::GoldFile;
use crate::tui::diff::{DiffAction, DiffViewState, handle_key};

/// How many visible list rows get a gold score computed per refresh: scores need payloads
/// (arguments), so only what is on screen is scored, and each again only when it changed.
const SCORED_ROWS: usize = 200;

/// Everything the overlay needs; dropped when it closes.
#[derive(Debug)]
pub struct DiffOverlay {
    pub invocation: String,
    pub report: DiffReport,
    pub state: DiffViewState,
}

/// Golds the TUI knows about: `--gold`, sidecars, and those the traces carry.
#[derive(Debug, Default)]
pub struct GoldContext {
    pub file: Option<GoldFile>,
    sidecars: SidecarCache,
    /// Invocation id → (its content version, its score and pass/fail if it has a gold).
    scores: std::collections::HashMap<String, (ContentVersion, Option<(f64, bool)>)>,
    /// Bumped whenever a score changes, so views built from scores know to rebuild.
    version: u64,
}

impl GoldContext {
    pub fn new(file: Option<GoldFile>) -> Self {
        GoldContext {
            file,
            ..Default::default()
        }
    }

    /// Score and pass/fail of an invocation's last computed report, if it has a gold.
    pub fn score(&self, invocation: &str) -> Option<(f64, bool)> {
        self.scores.get(invocation).and_then(|&(_, scored)| scored)
    }

    pub fn version(&self) -> u64 {
        self.version
    }
}

pub(super) fn report(app: &mut App, id: &str) -> Option<DiffReport> {
    let inv = app.store.get(id)?;
    let mut problems = Vec::new();
    let report = report_for(
        inv,
        app.gold.file.as_ref(),
        CheckOptions::default(),
        &mut app.gold.sidecars,
        &mut problems,
    );
    if let Some(problem) = problems.first() {
        app.message = Some(crate::redact::sanitize_line(&problem.to_string()));
    }
    report
}

pub(super) fn open(app: &mut App) {
    let Some(id) = app.selected_invocation.clone() else {
        app.message = Some("no invocation selected".into());
        return;
    };
    match report(app, &id) {
        Some(report) => {
            let state = DiffViewState::new(&report);
            app.diff = Some(DiffOverlay {
                invocation: id,
                report,
                state,
            });
        }
        None => app.message = Some(
            "no gold for this invocation: pass --gold FILE or put NAME.gold.json beside the trace"
                .into(),
        ),
    }
}

pub(super) fn key(app: &mut App, code: KeyCode) {
    if code == KeyCode::Char('r') {
        app.reveal = app.reveal.toggled();
        return;
    }
    let Some(overlay) = app.diff.as_mut() else {
        return;
    };
    match handle_key(&mut overlay.state, &mut overlay.report, code) {
        DiffAction::None => {}
        DiffAction::Close => app.diff = None,
        DiffAction::JumpToSpan(span) => {
            let row = app
                .store
                .get(&overlay.invocation)
                .and_then(|inv| inv.tree().row_of_span.get(span).copied());
            app.diff = None;
            if let Some(row) = row {
                nav::reveal_row(app, row);
                nav::select_row(app, row);
                app.focus = Pane::Tree;
            }
        }
    }
}

/// What a run's score depends on: its spans (which only grow or get re-read) and its gold.
/// A live source touching *other* runs must not make every visible row re-read payloads.
type ContentVersion = (usize, bool);

fn content_version(app: &App, id: &str) -> Option<ContentVersion> {
    let inv = app.store.get(id)?;
    Some((inv.spans.len(), inv.gold.is_some()))
}

/// Scores the visible list rows that have a gold (again only when a run's content changed).
pub(super) fn refresh_scores(app: &mut App) {
    let start = app.list.offset;
    let ids: Vec<String> = app
        .list
        .ids
        .iter()
        .skip(start)
        .take(SCORED_ROWS)
        .filter(|id| {
            app.gold
                .scores
                .get(*id)
                .is_none_or(|&(version, _)| Some(version) != content_version(app, id))
        })
        .cloned()
        .collect();
    for id in ids {
        let Some(version) = content_version(app, &id) else {
            continue;
        };
        let scored = report(app, &id).map(|r| (r.metrics.score, r.passed()));
        let previous = app.gold.scores.insert(id, (version, scored));
        if previous.map(|(_, s)| s) != Some(scored) {
            app.gold.version += 1;
        }
    }
}
