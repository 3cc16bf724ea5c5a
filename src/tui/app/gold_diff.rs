//! Golds for the gold-vs-actual overlay (`d`) and the list's scores: which gold applies to a
//! run, its report, and opening the overlay. The overlay itself (its state, keys and drawing)
//! is [`crate::tui::overlays::diff`].

use super::App;
use crate::gold::check::{SidecarCache, origin_file, report_in};
use crate::gold::conversation::{Conversations, conversation_of, passes_for};
use crate::gold::report::{CheckOptions, DiffReport};
use crate::gold::source::GoldFile;
use crate::model::{AsId, Id};
use crate::tui::overlays::Overlay;
use crate::tui::overlays::diff::DiffOverlay;

/// How many visible list rows get a gold score computed per refresh: scores need payloads
/// (arguments), so only what is on screen is scored, and each again only when it changed.
const SCORED_ROWS: usize = 200;

/// Golds the TUI knows about: `--gold`, sidecars, and those the traces carry.
#[derive(Debug, Default)]
pub struct GoldContext {
    pub file: Option<GoldFile>,
    sidecars: SidecarCache,
    /// Turns of each conversation (whole-conversation golds), rebuilt when the store changes.
    conversations: Conversations,
    /// Invocation id → (its content version, its score and pass/fail if it has a gold). Once
    /// some gold can apply ([`gold_can_apply`]), every listed run gets an entry (most saying it
    /// has no gold): keyed by the compact id and the rare score boxed, an entry is 40 bytes.
    scores: std::collections::HashMap<Id, (ContentVersion, Option<Box<Scored>>)>,
    /// Bumped whenever a score changes, so views built from scores know to rebuild. A run
    /// found to have no gold changes nothing: the views already took it for gold-less.
    version: u64,
    /// Entries of `scores` that hold a score.
    with_gold: usize,
    offscreen: OffscreenScan,
    /// Whether the store, at this generation, has a run some gold could apply to (see
    /// [`gold_can_apply`]).
    store_can_have_gold: Option<(u64, bool)>,
}

/// A list row's gold outcome and which gold produced it.
#[derive(Debug, Clone, PartialEq)]
struct Scored {
    score: f64,
    passed: bool,
    /// Where the gold came from (`--gold`, a sidecar, a scenario), as the report names it.
    source: String,
}

impl GoldContext {
    pub fn new(file: Option<GoldFile>) -> Self {
        GoldContext {
            file,
            ..Default::default()
        }
    }

    /// Whether any run has a gold score yet (most stores have no gold at all).
    pub fn has_scores(&self) -> bool {
        self.with_gold > 0
    }

    /// Score and pass/fail of an invocation's last computed report, if it has a gold.
    pub fn score(&self, invocation: &(impl AsId + ?Sized)) -> Option<(f64, bool)> {
        self.scores
            .get(&*invocation.as_id())
            .and_then(|(_, scored)| scored.as_ref())
            .map(|s| (s.score, s.passed))
    }

    /// Where the gold of an invocation's last computed report came from, if it has one.
    pub fn source(&self, invocation: &(impl AsId + ?Sized)) -> Option<&str> {
        self.scores
            .get(&*invocation.as_id())
            .and_then(|(_, scored)| scored.as_ref())
            .map(|s| s.source.as_str())
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// Runs looked at for a gold so far, with one or without.
    pub fn scored_runs(&self) -> usize {
        self.scores.len()
    }

    /// Every gold outcome known so far, by run id: what a query evaluated on another thread
    /// sees of `is:gold-mismatch` and `is:failing`.
    pub fn outcomes(&self) -> std::collections::HashMap<String, crate::triage::GoldOutcome> {
        self.scores
            .iter()
            .filter_map(|(id, (_, scored))| {
                let s = scored.as_ref()?;
                Some((
                    id.to_string(),
                    crate::triage::GoldOutcome::from_score(Some((s.score, s.passed))),
                ))
            })
            .collect()
    }
}

pub(super) fn report(app: &mut App, id: &str) -> Option<DiffReport> {
    app.gold.conversations.refresh(&app.store);
    let inv = app.store.get(id)?;
    let mut problems = Vec::new();
    let mut report = report_in(
        &app.store,
        &app.gold.conversations,
        inv,
        app.gold.file.as_ref(),
        CheckOptions::default(),
        &mut app.gold.sidecars,
        &mut problems,
    );
    if let Some(problem) = problems.first() {
        app.message = Some(crate::redact::shown_line(&problem.to_string(), app.reveal));
    }
    if let Some(scope) = report.as_mut().and_then(|r| r.conversation.as_mut()) {
        scope.focus = scope.turns.iter().position(|t| t == id);
    }
    report
}

/// A list row's gold outcome: the report's score, and whether this invocation's part passes.
fn outcome(report: &DiffReport, id: &str) -> (f64, bool) {
    (report.metrics.score, passes_for(report, id))
}

pub(super) fn open(app: &mut App) {
    let Some(id) = app.selected_invocation.clone() else {
        app.message = Some("no invocation selected".into());
        return;
    };
    match report(app, &id) {
        Some(report) => {
            app.message = report
                .conversation
                .as_ref()
                .filter(|scope| scope.turns.len() > 1)
                .map(|scope| {
                    format!(
                        "gold of the whole conversation ({} turns); rows of this turn are marked ▸",
                        scope.turns.len()
                    )
                });
            app.overlay = Some(Overlay::GoldDiff(Box::new(DiffOverlay::new(id, report))));
        }
        None => app.message = Some(
            "no gold for this invocation: pass --gold FILE or put NAME.gold.json or gold.json beside the trace"
                .into(),
        ),
    }
}

/// What a run's score depends on: its spans (which only grow or get re-read) and its gold.
/// A live source touching *other* runs must not make every visible row re-read payloads.
type ContentVersion = (usize, bool);

fn content_version(app: &App, id: &Id) -> Option<ContentVersion> {
    let inv = app.store.get(id)?;
    // A turn is judged with its whole conversation: any of its turns changing changes it.
    if let Some(conversation) = conversation_of(inv) {
        let turns = app.gold.conversations.turns(conversation);
        if turns.len() > 1 {
            let (spans, gold) = turns
                .iter()
                .filter_map(|t| app.store.get(t))
                .fold((0, false), |(n, g), t| {
                    (n + t.spans.len(), g || t.gold().is_some())
                });
            return Some((spans, gold));
        }
    }
    Some((inv.spans.len(), inv.gold().is_some()))
}

fn needs_score(app: &App, id: &Id) -> bool {
    app.gold
        .scores
        .get(id)
        .is_none_or(|&(version, _)| Some(version) != content_version(app, id))
}

/// Scores the visible list rows that have a gold (again only when a run's content changed).
/// The rest of the list is scored between events ([`score_offscreen`]).
pub(super) fn refresh_scores(app: &mut App) {
    if !gold_can_apply(app) {
        return;
    }
    app.gold.conversations.refresh(&app.store);
    let start = app.list.offset;
    let ids: Vec<Id> = app
        .list
        .runs()
        .iter()
        .skip(start)
        .take(SCORED_ROWS)
        .filter(|inv| needs_score(app, &inv.id))
        .map(|inv| inv.id.clone())
        .collect();
    for id in ids {
        score_one(app, id);
    }
}

fn score_one(app: &mut App, id: Id) {
    let Some(version) = content_version(app, &id) else {
        return;
    };
    let text = id.to_string();
    let scored = report(app, &text).map(|r| {
        let (score, passed) = outcome(&r, &text);
        Box::new(Scored {
            score,
            passed,
            source: r.gold.source.clone(),
        })
    });
    let outcome_of = |s: &Option<Box<Scored>>| s.as_ref().map(|s| (s.score, s.passed));
    let now = outcome_of(&scored);
    let gained = usize::from(scored.is_some());
    let previous = app
        .gold
        .scores
        .insert(id, (version, scored))
        .and_then(|(_, old)| old);
    app.gold.with_gold = app.gold.with_gold + gained - usize::from(previous.is_some());
    if outcome_of(&previous) != now {
        app.gold.version += 1;
    }
}

/// Whether some gold may apply to some run: `--gold`, a run's own gold, a sidecar beside its
/// trace file, its arksim conversation's. Live data alone has none of these, and then nothing
/// is scored: no entry per run saying it has no gold, no walk over
/// the list after every drain. Known per store generation.
fn gold_can_apply(app: &mut App) -> bool {
    if app.gold.file.is_some() {
        return true;
    }
    let generation = app.store.generation();
    if let Some((known_at, can)) = app.gold.store_can_have_gold
        && known_at == generation
    {
        return can;
    }
    let can = app.store.invocations().any(|inv| {
        inv.gold().is_some() || origin_file(inv).is_some() || conversation_of(inv).is_some()
    });
    app.gold.store_can_have_gold = Some((generation, can));
    can
}

/// Runs scored per step between events: a report may read payloads, so a step stays short and
/// keys are handled between steps.
const OFFSCREEN_SCORED: usize = 50;
/// List rows looked at per step (most need nothing: scored already, or no gold applies).
const OFFSCREEN_LOOKED_AT: usize = 2_000;

/// How far the scoring of rows off screen has come through the list as it is now.
#[derive(Debug, Default)]
pub(super) struct OffscreenScan {
    /// The store generation and list length the scan walks; either changing starts it again.
    list: Option<(u64, usize)>,
    next: usize,
}

/// Whether rows off screen may still lack a score: a failure anywhere counts in the status
/// bar, the queue and `is:` filters, not only on the rows drawn so far.
pub fn scoring_pending(app: &App) -> bool {
    let known_without_gold = app.gold.file.is_none()
        && app.gold.store_can_have_gold == Some((app.store.generation(), false));
    if known_without_gold {
        return false;
    }
    let list = Some((app.store.generation(), app.list.len()));
    app.gold.offscreen.list != list || app.gold.offscreen.next < app.list.len()
}

/// One bounded step of scoring the list's rows in order; returns whether a score changed.
pub(super) fn score_offscreen(app: &mut App) -> bool {
    if !gold_can_apply(app) {
        return false;
    }
    let list = Some((app.store.generation(), app.list.len()));
    if app.gold.offscreen.list != list {
        app.gold.offscreen = OffscreenScan { list, next: 0 };
    }
    let version = app.gold.version;
    app.gold.conversations.refresh(&app.store);
    let start = app.gold.offscreen.next;
    let end = (start + OFFSCREEN_LOOKED_AT).min(app.list.len());
    let mut scored = 0;
    let mut next = start;
    while next < end && scored < OFFSCREEN_SCORED {
        let id = app.list.runs()[next].id.clone();
        next += 1;
        if needs_score(app, &id) {
            score_one(app, id);
            scored += 1;
        }
    }
    app.gold.offscreen.next = next;
    app.gold.version != version
}
