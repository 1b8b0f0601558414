//! Judging one score report (reference 8.3 and 8.2): the attempt it names must be waiting for
//! its score in a run that is waiting too; the verdict is the core's keep/revert over the
//! pinned anchors and the weighted secondary score against the best record (or, before there
//! is one, the run's baseline); the result is one unit of work for the `RunStore`: the
//! attempt's step, the run's steps (scored, then continue or conclude), the metrics, the best
//! record on a keep, and an audit row per step. Pure: rows, report and time are handed in.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::machine::{
    AttemptEvent, AttemptStatus, RunEvent, RunStatus, SCORE_DEADLINE_MS, archive_path, attempt,
    run, score_overdue,
};
use super::report::ScoreReport;
use super::scores::ScoresDoc;
use super::verdict::{MetricMap, Verdict, judge};
use crate::ports::{
    Advance, AttemptRow, AttemptUpdate, AuditEntry, Change, RunRow, RunUpdate, ScoreRow,
};
use crate::time::Timestamp;

/// The actor of the loop's own audit rows.
pub const LOOP_ACTOR: &str = "improve-loop";
/// The metric the server computes from the holdout manifest (a report cannot set it).
pub const HOLDOUT_METRIC: &str = "holdout_pass_rate";

/// `improve:best:<ns>`: the best known commit and the scores that made it best.
#[derive(
    Clone, Debug, Default, PartialEq, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
)]
pub struct BestRecord {
    /// The commit.
    pub sha: String,
    /// Its run.
    pub run_id: String,
    /// Its attempt.
    pub attempt_id: String,
    /// When it became best.
    pub recorded_at: String,
    /// Its anchor metrics.
    pub anchors: MetricMap,
    /// Its secondary metrics.
    pub secondary: MetricMap,
    /// Its holdout pass rate.
    pub score: f64,
}

impl BestRecord {
    /// The stored record, if it reads as one.
    pub fn from_setting(raw: Option<&str>) -> Option<BestRecord> {
        raw.and_then(|r| serde_json::from_str(r).ok())
    }

    fn metrics(&self) -> MetricMap {
        let mut all = self.secondary.clone();
        all.extend(self.anchors.clone());
        all
    }
}

/// Why a report cannot be judged; nothing changes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JudgeRefusal {
    /// No such attempt in this namespace (409, as every report the loop cannot take).
    #[error("no attempt '{0}' in namespace '{1}'")]
    NoAttempt(String, String),
    /// The attempt is not waiting for a score, or its run is not (409).
    #[error("{0}")]
    NotAwaiting(String),
}

/// What the report decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    /// The unit of work to apply.
    pub advance: Advance,
    /// `kept` or `reverted`.
    pub verdict: AttemptStatus,
    /// Why it was reverted, if it was.
    pub reason: Option<String>,
    /// The weighted secondary delta.
    pub delta: f64,
    /// How many secondary metrics were compared.
    pub compared: usize,
    /// The run's status after the report.
    pub run_status: RunStatus,
}

fn audit(action: &str, ns: &str, path: &str, params: Value, at: Timestamp) -> AuditEntry {
    AuditEntry {
        actor: LOOP_ACTOR.to_owned(),
        action: action.to_owned(),
        namespace: Some(ns.to_owned()),
        path: Some(path.to_owned()),
        params,
        at,
    }
}

/// Checks that `attempt` (looked up by the report's `attempt_id`) and `run` may take this
/// report at `now`: same namespace and run, both waiting for the score, the commit the one
/// dispatched, and inside the 20-minute score deadline (a late score is the tick's timeout).
pub fn check_waiting(
    report: &ScoreReport,
    attempt: Option<&AttemptRow>,
    run: Option<&RunRow>,
    now: Timestamp,
) -> Result<(), JudgeRefusal> {
    let missing = || JudgeRefusal::NoAttempt(report.attempt_id.clone(), report.namespace.clone());
    let attempt = attempt
        .filter(|a| a.namespace == report.namespace)
        .ok_or_else(missing)?;
    if attempt.run_id != report.run_id {
        return Err(JudgeRefusal::NotAwaiting(format!(
            "attempt '{}' belongs to run '{}', not '{}'",
            attempt.id, attempt.run_id, report.run_id
        )));
    }
    if attempt.status != AttemptStatus::AwaitingScore {
        return Err(JudgeRefusal::NotAwaiting(format!(
            "attempt '{}' is {}, not awaiting-score: nothing changed",
            attempt.id, attempt.status
        )));
    }
    if let Some(sha) = attempt
        .head_sha
        .as_deref()
        .filter(|s| *s != report.head_sha)
    {
        return Err(JudgeRefusal::NotAwaiting(format!(
            "attempt '{}' was dispatched at {sha}, the report scored {}",
            attempt.id, report.head_sha
        )));
    }
    if let Some(at) = attempt.dispatched_at.filter(|at| score_overdue(*at, now)) {
        return Err(JudgeRefusal::NotAwaiting(format!(
            "attempt '{}' was dispatched at {at}: its score was due within {} minutes and it times out instead",
            attempt.id,
            SCORE_DEADLINE_MS / crate::time::MINUTE_MS
        )));
    }
    let run = run.ok_or_else(missing)?;
    if run.status != RunStatus::AwaitingScore || run.current_attempt.as_deref() != Some(&attempt.id)
    {
        return Err(JudgeRefusal::NotAwaiting(format!(
            "run '{}' is {} and not waiting for attempt '{}'",
            run.id, run.status, attempt.id
        )));
    }
    Ok(())
}

/// Everything a verdict is made of.
#[derive(Clone, Copy, Debug)]
pub struct Case<'a> {
    /// The parsed, authenticated report.
    pub report: &'a ScoreReport,
    /// The holdout pass rate, from the manifest's total.
    pub pass_rate: f64,
    /// The namespace's pinned scores document.
    pub doc: &'a ScoresDoc,
    /// The best record, if any.
    pub best: Option<&'a BestRecord>,
    /// The run's baseline metrics (used when there is no best record).
    pub baseline: &'a MetricMap,
    /// The attempt scored.
    pub attempt: &'a AttemptRow,
    /// Its run.
    pub run: &'a RunRow,
}

/// Judges a report already checked by [`check_waiting`]: the base is the best record (or
/// the run's own baseline metrics when there is none).
pub fn judge_report(case: Case<'_>, now: Timestamp) -> Result<Judged, JudgeRefusal> {
    let Case {
        report,
        pass_rate,
        doc,
        best,
        baseline,
        attempt: attempt_row,
        run: run_row,
    } = case;
    let refuse = |e: String| JudgeRefusal::NotAwaiting(e);
    let mut after = report.secondary.clone();
    after.extend(report.anchors.clone());
    after.insert(HOLDOUT_METRIC.to_owned(), Some(pass_rate));
    let before = best.map_or_else(|| baseline.clone(), BestRecord::metrics);
    let judgement = judge(&doc.anchors, &doc.secondary, &before, &after);
    let (event, reason) = match &judgement.verdict {
        Verdict::Keep => (AttemptEvent::Keep, None),
        Verdict::Revert(why) => (AttemptEvent::Revert, Some(why.to_string())),
    };
    let a_step = attempt::step(attempt_row.status, event).map_err(|e| refuse(e.to_string()))?;
    let mut tally = run_row.tally;
    tally.record(a_step.to).map_err(|e| refuse(e.to_string()))?;
    let scored = run::step(run_row.status, RunEvent::Score).map_err(|e| refuse(e.to_string()))?;
    let next = run::step(scored.to, tally.after_judging()).map_err(|e| refuse(e.to_string()))?;
    let mut run_update =
        RunUpdate::walk(&run_row.id, &[scored, next], now).ok_or_else(|| refuse("steps".into()))?;
    run_update.tally_before = Some(run_row.tally);
    run_update.tally = Some(tally);
    run_update.current_attempt = Change::Clear;
    run_update.add_ci_minutes = report.ci_minutes;
    if let Some(stop) = tally.stop_reason() {
        run_update.note = Change::Set(stop.to_string());
    }
    let metrics_json = |m: &MetricMap| serde_json::to_string(m).unwrap_or_else(|_| "{}".into());
    let mut attempt_update = AttemptUpdate::step(&attempt_row.id, a_step);
    attempt_update.head_sha = Change::Set(report.head_sha.clone());
    attempt_update.score_after = Some(judgement.comparison.delta);
    attempt_update.reason = match &reason {
        Some(r) => Change::Set(r.clone()),
        None => Change::Set("anchors hold and the secondary score improved".to_owned()),
    };
    attempt_update.anchors_json = Some(metrics_json(&report.anchors));
    attempt_update.secondary_json = Some(metrics_json(&report.secondary));
    let mut rows: BTreeMap<&str, Option<f64>> = BTreeMap::new();
    for (k, v) in &after {
        rows.insert(k, *v);
    }
    let scores = rows
        .into_iter()
        .map(|(metric, value)| ScoreRow {
            namespace: report.namespace.clone(),
            run_id: run_row.id.clone(),
            attempt_id: Some(attempt_row.id.clone()),
            metric: metric.to_owned(),
            value,
            ts: now,
        })
        .collect();
    let setting = (a_step.to == AttemptStatus::Kept).then(|| {
        let record = BestRecord {
            sha: report.head_sha.clone(),
            run_id: run_row.id.clone(),
            attempt_id: attempt_row.id.clone(),
            recorded_at: now.to_string(),
            anchors: report.anchors.clone(),
            secondary: report.secondary.clone(),
            score: pass_rate,
        };
        (
            super::keys::best_key(&report.namespace),
            serde_json::to_string(&record).unwrap_or_default(),
        )
    });
    let archive = archive_path(&run_row.id, &attempt_row.id);
    let params = json!({
        "run": run_row.id, "attempt": attempt_row.id, "head_sha": report.head_sha,
        "verdict": a_step.to.as_str(), "reason": reason, "delta": judgement.comparison.delta,
        "compared": judgement.comparison.compared, "holdout_pass_rate": pass_rate,
        "jti": report.jti, "ci_minutes": report.ci_minutes, "condition": run_row.condition,
    });
    let mut audits = vec![audit(
        a_step.audit_action(),
        &report.namespace,
        &archive,
        params,
        now,
    )];
    for step in [scored, next] {
        audits.push(audit(
            step.audit_action(),
            &report.namespace,
            &archive,
            json!({"run": run_row.id, "from": step.from.as_str(), "to": step.to.as_str(),
                   "condition": run_row.condition}),
            now,
        ));
    }
    Ok(Judged {
        advance: Advance {
            attempt: Some(attempt_update),
            run: Some(run_update),
            scores,
            setting,
            audits,
        },
        verdict: a_step.to,
        reason,
        delta: judgement.comparison.delta,
        compared: judgement.comparison.compared,
        run_status: next.to,
    })
}

#[cfg(test)]
mod tests;
