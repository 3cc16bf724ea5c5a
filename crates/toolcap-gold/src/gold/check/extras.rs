//! What `check --json` adds beside the diff: toolscore's own reading of each trace, the calls as read, secrets and policy findings.

use super::*;

/// toolscore's readings of trace files, one per file (a file with several runs is read once).
#[derive(Debug, Default)]
pub struct ReadingCache {
    pub(super) by_file: HashMap<PathBuf, Option<Arc<ToolscoreReading>>>,
}

impl ReadingCache {
    pub(super) fn reading(&mut self, file: &Path, format: &str) -> Option<Arc<ToolscoreReading>> {
        self.by_file
            .entry(file.to_path_buf())
            .or_insert_with(|| {
                let len = std::fs::metadata(file).ok()?.len();
                if len > crate::gold::source::MAX_GOLD_BYTES {
                    return None;
                }
                let bytes = std::fs::read(file).ok()?;
                let doc = match serde_json::from_slice::<Value>(&bytes) {
                    Ok(doc) => doc,
                    Err(why) => {
                        return Some(Arc::new(ToolscoreReading {
                            adapter: "none",
                            why: "toolscore reads one JSON document".into(),
                            calls: Vec::new(),
                            refused: Some(format!("not a JSON document: {why}")),
                        }));
                    }
                };
                Some(Arc::new(toolscore_reading::read(&doc, format)))
            })
            .clone()
    }
}

/// What `check` adds to a report: forbidden calls, side-effect checks it does not run, and
/// toolscore's own reading of the trace file.
pub struct Extras {
    pub(super) violations: Vec<crate::gold::policy::Violation>,
    pub(super) policy: Option<Policy>,
    pub(super) reading: Option<(Arc<ToolscoreReading>, DiffReport)>,
}

/// The calls as the JSON report lists them (toolscore's `trace_calls` fields).
pub(super) fn calls_json(calls: &[ActualCall], reveal: Reveal) -> Value {
    calls
        .iter()
        .map(|c| {
            let args = Value::Object(c.scored_args().clone());
            json!({
                "tool": c.name,
                "args": match reveal {
                    Reveal::Redacted => redact::shape(&args),
                    Reveal::Revealed => {
                        let mut masked = args;
                        redact::mask_secrets(&mut masked);
                        masked
                    }
                },
                "is_error": c.failed,
                "error": c.shown_error(reveal),
                "duration": c.duration_s,
                "id": c.call_id,
            })
        })
        .collect()
}

/// A call list's identity for comparing two readings: names, arguments, failures.
pub(super) fn reading_key(calls: &[ActualCall]) -> Vec<(&str, &Args, bool)> {
    calls
        .iter()
        .map(|c| (c.name.as_str(), c.scored_args(), c.failed))
        .collect()
}

impl Extras {
    pub fn of(
        report: &mut DiffReport,
        file: Option<&Path>,
        policy: Option<&Policy>,
        format: &str,
        readings: &mut ReadingCache,
    ) -> Self {
        let violations = policy
            .map(|p| p.violations(&report.actual))
            .unwrap_or_default();
        let secrets = report.secrets();
        if !secrets.is_empty() {
            let places: Vec<String> = secrets
                .iter()
                .map(|s| {
                    format!(
                        "call {} {} at {}",
                        s["index"].as_u64().map_or(0, |i| i + 1),
                        s["tool"].as_str().unwrap_or(""),
                        s["path"].as_str().unwrap_or("")
                    )
                })
                .collect();
            report.notes.push(format!(
                "secrets: {} secret-looking value(s) in tool arguments ({})",
                secrets.len(),
                places.join("; ")
            ));
        }
        if let Some(policy) = policy {
            let mut line = format!(
                "forbidden: {} of {} call(s) break a rule ({} rule(s))",
                violations.len(),
                report.actual.len(),
                policy.rules.len()
            );
            for v in &violations {
                line.push_str(&format!(
                    "; call {} {} matches rule {}{}",
                    v.index + 1,
                    v.tool,
                    v.rule + 1,
                    v.reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                ));
            }
            report.notes.push(line);
        }
        for (index, call) in report.gold.calls.iter().enumerate() {
            let Some(Value::Object(checks)) = &call.side_effects else {
                continue;
            };
            for name in checks.keys() {
                report.notes.push(format!(
                    "side effect {name} of gold call {} ({}): not evaluated (check does not run side-effect validators)",
                    index + 1,
                    call.tool
                ));
            }
        }
        let reading = file
            .and_then(|f| readings.reading(f, format))
            .map(|reading| {
                let mut theirs = DiffReport::build(
                    report.invocation.clone(),
                    report.gold.clone(),
                    reading.calls.clone(),
                    report.options,
                );
                theirs.name = report.name.clone();
                (reading, theirs)
            });
        Extras {
            violations,
            policy: policy.cloned(),
            reading,
        }
    }

    pub(super) fn side_effects_json(report: &DiffReport) -> Vec<Value> {
        report
            .gold
            .calls
            .iter()
            .enumerate()
            .flat_map(|(index, call)| {
                let checks = match &call.side_effects {
                    Some(Value::Object(checks)) => checks.keys().cloned().collect(),
                    _ => Vec::new(),
                };
                checks.into_iter().map(move |check| {
                    json!({
                        "gold_index": index, "tool": call.tool, "check": check,
                        "status": "not_evaluated",
                        "reason": "check does not run side-effect validators (http_ok, file_exists, sql_rows)",
                    })
                })
            })
            .collect()
    }

    pub fn extend_json(&self, doc: &mut Value, report: &DiffReport, reveal: Reveal) {
        doc["trace_calls"] = calls_json(&report.actual, reveal);
        doc["summary"]["policy_violations"] = json!(self.violations.len());
        if let Some(policy) = &self.policy {
            doc["metrics"]["policy_metrics"] = policy.metrics_json(&self.violations);
        }
        doc["side_effects"] = Value::Array(Self::side_effects_json(report));
        if let Some((reading, theirs)) = &self.reading {
            let mut their_doc = theirs.to_json(reveal);
            let their_violations = self
                .policy
                .as_ref()
                .map(|p| p.violations(&theirs.actual))
                .unwrap_or_default();
            their_doc["summary"]["policy_violations"] = json!(their_violations.len());
            if let Some(policy) = &self.policy {
                their_doc["metrics"]["policy_metrics"] = policy.metrics_json(&their_violations);
            }
            doc["toolscore_reading"] = json!({
                "adapter": reading.adapter,
                "why": reading.why,
                "refused": reading.refused,
                "agrees": reading_key(&reading.calls) == reading_key(&report.actual),
                "trace_calls": calls_json(&reading.calls, reveal),
                "summary": their_doc["summary"],
                "metrics": their_doc["metrics"],
            });
        }
    }

    /// `check --explain`: toolscore's reading of the trace file, and where it differs from ours.
    pub fn explain_text(&self, report: &DiffReport, reveal: Reveal) -> String {
        let Some((reading, theirs)) = &self.reading else {
            return "  toolscore 1.10.0: no reading (the run did not come from one JSON file)\n"
                .into();
        };
        let names = |calls: &[ActualCall]| {
            let names: Vec<String> = calls
                .iter()
                .map(|c| {
                    let mut name = redact::shown_line(&c.name, reveal);
                    if c.failed {
                        name.push_str(" (failed)");
                    }
                    name
                })
                .collect();
            if names.is_empty() {
                "no calls".to_string()
            } else {
                names.join(", ")
            }
        };
        let mut out = format!(
            "  toolscore 1.10.0 would use its {} adapter ({})",
            reading.adapter,
            redact::shown_line(&reading.why, reveal)
        );
        if let Some(refused) = &reading.refused {
            out.push_str(&format!(
                " and refuse the file: {}\n",
                redact::shown_line(refused, reveal)
            ));
            return out;
        }
        if reading_key(&reading.calls) == reading_key(&report.actual) {
            out.push_str(": same calls as ours\n");
            return out;
        }
        out.push_str(&format!(
            "\n    toolscore reads: {}\n    we read:         {}\n    toolscore's score on its reading: {:.2} ({}), ours {:.2} ({})\n",
            names(&reading.calls),
            names(&report.actual),
            theirs.metrics.score,
            theirs.metrics.grade,
            report.metrics.score,
            report.metrics.grade,
        ));
        out
    }
}
