//! The loop's periodic task (reference 8.2 "Cadence", 8.4): every five minutes on the leader it
//! checks the month's budget (over a cap stops the loop: every live run pauses and the tick
//! says why), opens tonight's runs at 03:00 in the loop's time zone (once per namespace and
//! local date, by compare-and-set), and advances each live run one idempotent step. Each step
//! is one keyed conditional update through the `RunStore` (`improve::machine` decides it);
//! the repository work of an attempt is `attempts.rs`, finishing a run `finish.rs`.

use serde_json::{Value, json};

use super::ImproveCx;
use super::month_start;
use crate::autonomy::watcher::LOOP_PAUSE_PREFIX;
use crate::error::{Error, Result};
use crate::improve::budget::{BudgetCaps, MonthSpend, over_cap};
use crate::improve::judging::LOOP_ACTOR;
use crate::improve::keys::{BUDGET_KEY, IMPROVE_MODE_KEY, ROSTER_KEY, anchor_key, paused_key};
use crate::improve::machine::{
    AttemptEvent, RunEvent, RunStatus, attempt, run, run_expired, run_id, score_overdue,
};
use crate::improve::night::{Standing, may_run, opener_date};
use crate::improve::roster::{ImproveMode, Roster, RunCondition};
use crate::ports::{
    Advance, Advanced, AttemptUpdate, AuditEntry, Change, NewRun, RepoRef, RunOpened, RunRow,
    RunUpdate,
};
use crate::repos::{resolve_repo, stored_repos};
use crate::service::Area as _;
use crate::service::improve::score::SCORES_PATH;
use crate::time::Timestamp;

/// The settings key marking the local date the opener last opened (or refused) a namespace.
pub fn opener_key(namespace: &str) -> String {
    format!("improve:opened:{namespace}")
}

/// An audit row by the loop.
pub(crate) fn loop_audit(
    action: &str,
    ns: &str,
    path: Option<&str>,
    params: Value,
    at: Timestamp,
) -> AuditEntry {
    AuditEntry {
        actor: LOOP_ACTOR.to_owned(),
        action: action.to_owned(),
        namespace: Some(ns.to_owned()),
        path: path.map(str::to_owned),
        params,
        at,
    }
}

impl ImproveCx<'_> {
    /// The loop's mode as stored (unset or unreadable: off).
    pub(crate) async fn loop_mode(&self, now: Timestamp) -> Result<ImproveMode> {
        Ok(ImproveMode::from_setting(
            self.settings
                .setting(IMPROVE_MODE_KEY, now)
                .await?
                .as_deref(),
        ))
    }

    /// Why the month's spend stops the loop, if it does (reference 8.4).
    pub(crate) async fn over_budget(&self, now: Timestamp) -> Result<Option<String>> {
        let caps =
            BudgetCaps::from_setting(self.settings.setting(BUDGET_KEY, now).await?.as_deref());
        let totals = self.improve.run_totals(Some(month_start(now))).await?;
        let spend = MonthSpend {
            ci_minutes: totals.iter().map(|t| t.ci_minutes).sum(),
            cost_usd: totals.iter().map(|t| t.cost_usd).sum(),
        };
        Ok(over_cap(&caps, &spend))
    }

    /// Whether `ns` may run tonight under `mode`: its scores document, or why not.
    pub(crate) async fn standing(
        &self,
        ns: &str,
        mode: ImproveMode,
        now: Timestamp,
    ) -> Result<std::result::Result<crate::improve::ScoresDoc, String>> {
        let over = self.over_budget(now).await?;
        let roster = Roster::from_setting(self.settings.setting(ROSTER_KEY, now).await?.as_deref());
        let paused = self.settings.setting(&paused_key(ns), now).await?;
        let scores = self
            .docs
            .document(ns, SCORES_PATH)
            .await?
            .and_then(|d| d.body);
        let pin = self.settings.setting(&anchor_key(ns), now).await?;
        Ok(may_run(&Standing {
            namespace: ns,
            mode,
            on_roster: roster.contains(ns),
            paused: paused.as_deref(),
            scores_md: scores.as_deref(),
            pin: pin.as_deref(),
            over_budget: over.as_deref(),
        }))
    }

    /// The namespace's primary repository, if it maps one.
    pub(crate) async fn loop_repo(&self, ns: &str) -> Result<Option<RepoRef>> {
        let Some(row) = self.namespaces.namespace(ns).await? else {
            return Ok(None);
        };
        let list = stored_repos(ns, row.repos.as_deref()).unwrap_or_default();
        Ok(resolve_repo(ns, &list, None).ok())
    }

    /// The loop's turn of a tick: the budget, the opener, one step per live run.
    pub(crate) async fn improve_loop_tick(&self) -> Result<Value> {
        let now = self.now();
        let mode = self.loop_mode(now).await?;
        let mut report = json!({"mode": mode.name(), "zone": self.zone.name(),
            "opened": [], "refused": [], "advanced": [], "errors": []});
        if mode == ImproveMode::Off {
            report["loop"] = json!("off");
            return Ok(report);
        }
        let live = self.live_runs().await?;
        if let Some(over) = self.over_budget(now).await? {
            let mut paused = Vec::new();
            for run in live {
                if self
                    .pause_run(&run, &format!("budget: {over}"), now)
                    .await?
                {
                    paused.push(run.id);
                }
            }
            report["loop"] = json!(format!("stopped: {over}"));
            report["stopped"] = json!(over);
            report["paused_runs"] = json!(paused);
            return Ok(report);
        }
        report["loop"] = json!("on");
        if let Some(date) = opener_date(self.zone, now) {
            let roster =
                Roster::from_setting(self.settings.setting(ROSTER_KEY, now).await?.as_deref());
            for ns in roster.namespaces() {
                let key = opener_key(ns);
                let last = self.settings.setting(&key, now).await?;
                if last.as_deref() == Some(date.as_str()) {
                    continue;
                }
                if !self
                    .settings
                    .compare_and_set_setting(&key, last.as_deref(), Some(&date), None, now)
                    .await?
                {
                    continue;
                }
                match self.open_run(ns, mode, RunCondition::Full, now).await {
                    Ok(Ok(run)) => push(
                        &mut report["opened"],
                        json!({"namespace": ns, "run": run.id}),
                    ),
                    Ok(Err(why)) => push(
                        &mut report["refused"],
                        json!({"namespace": ns, "reason": why}),
                    ),
                    Err(e) => push(
                        &mut report["errors"],
                        json!({"namespace": ns, "error": e.to_string()}),
                    ),
                }
            }
        }
        for run in self.live_runs().await? {
            match self.advance_run(&run, mode, now).await {
                Ok(step) => push(&mut report["advanced"], step),
                Err(e) => push(
                    &mut report["errors"],
                    json!({"namespace": run.namespace, "run": run.id, "error": e.to_string()}),
                ),
            }
        }
        report["abstraction"] = self.abstraction_step(mode, now).await;
        // The skills evaluation cycle (`evaluate.rs`), gated on its own cadence.
        report["skills"] = self
            .skills_evaluate_tick(now)
            .await
            .unwrap_or_else(|e| json!({"error": e.to_string()}));
        Ok(report)
    }

    /// Every run that is neither done nor paused, one per namespace.
    async fn live_runs(&self) -> Result<Vec<RunRow>> {
        let mut out = Vec::new();
        for row in self.namespaces.namespaces().await? {
            if let Some(run) = self.runs.live_run(&row.namespace).await? {
                out.push(run);
            }
        }
        Ok(out)
    }

    /// Opens a run for `ns` now, or answers why it may not run (the refusal is audited).
    pub(crate) async fn open_run(
        &self,
        ns: &str,
        mode: ImproveMode,
        condition: RunCondition,
        now: Timestamp,
    ) -> Result<std::result::Result<RunRow, String>> {
        let refused = |why: String| -> Result<std::result::Result<RunRow, String>> { Ok(Err(why)) };
        let mut why = self.standing(ns, mode, now).await?.err();
        let repo = self.loop_repo(ns).await?;
        if why.is_none()
            && mode == ImproveMode::Subscription
            && self.config.signing_secret().is_none()
        {
            why = Some(
                "subscription mode signs its task document: CAPSID_SIGNING_SECRET is not set"
                    .into(),
            );
        }
        if why.is_none() && mode == ImproveMode::Api {
            why = if self.model.is_none() {
                Some("api mode needs the model API (CAPSID_ANTHROPIC_API_KEY)".into())
            } else if self.repo_host.is_none() {
                Some("api mode needs the GitHub App (CAPSID_GITHUB_APP_CLIENT_ID)".into())
            } else if repo.is_none() {
                Some(format!("{ns} maps no repository (namespaces update)"))
            } else {
                None
            };
        }
        if let Some(why) = why {
            self.audit_log
                .append_audit(loop_audit(
                    "improve-run-refused",
                    ns,
                    Some(SCORES_PATH),
                    json!({"reason": why, "mode": mode.name()}),
                    now,
                ))
                .await?;
            return refused(why);
        }
        let base_sha = match (&self.repo_host, &repo) {
            (Some(host), Some(repo)) => match self.default_head(host.as_ref(), repo).await {
                Ok((_, sha)) => Some(sha),
                Err(e) if mode == ImproveMode::Api => {
                    return refused(format!("the base commit of {repo} could not be read: {e}"));
                }
                Err(_) => None,
            },
            _ => None,
        };
        let id = run_id(ns, now).map_err(|e| Error::Invalid(e.to_string()))?;
        let new = NewRun {
            id: id.clone(),
            namespace: ns.to_owned(),
            mode: mode.name().to_owned(),
            condition: condition.name().to_owned(),
            base_sha: base_sha.clone(),
            started: now,
        };
        let audit = loop_audit(
            "improve-run-opened",
            ns,
            Some(SCORES_PATH),
            json!({"run": id, "mode": mode.name(), "condition": condition.name(), "base_sha": base_sha}),
            now,
        );
        match self.runs.open_run(new, audit).await? {
            RunOpened::Opened(row) => {
                let row = *row;
                if mode == ImproveMode::Subscription {
                    self.write_task_for(&row, now).await?;
                }
                Ok(Ok(row))
            }
            RunOpened::LiveRunExists => refused(format!("{ns} already has a live run")),
        }
    }

    /// One step of a live run.
    async fn advance_run(&self, run: &RunRow, mode: ImproveMode, now: Timestamp) -> Result<Value> {
        let mut out =
            json!({"namespace": run.namespace, "run": run.id, "from": run.status.as_str()});
        let did = if run.status != RunStatus::Finalizing && run_expired(run.started, now) {
            self.expire_run(run, now).await?
        } else {
            match run.status {
                RunStatus::Opening => self.walk_run(run, &[RunEvent::Begin], None, now).await?,
                RunStatus::Attempting => match run.tally.stop_reason() {
                    Some(stop) => {
                        self.walk_run(run, &[RunEvent::Conclude], Some(stop.to_string()), now)
                            .await?
                    }
                    None if run.tally.outstanding() > 0 => self.dispatch_pending(run, now).await?,
                    None if mode == ImproveMode::Api => self.make_attempt(run, now).await?,
                    None => "waiting for the subscription driver to report an attempt".into(),
                },
                RunStatus::AwaitingScore => self.check_score_deadline(run, now).await?,
                RunStatus::Judging => {
                    self.walk_run(run, &[run.tally.after_judging()], None, now)
                        .await?
                }
                RunStatus::Finalizing => self.finish_run(run, now).await?,
                RunStatus::Done | RunStatus::Paused => "nothing: the run is over".into(),
            }
        };
        let after = self.runs.run(&run.id).await?;
        out["to"] = json!(after.map(|r| r.status.as_str()));
        out["did"] = json!(did);
        Ok(out)
    }

    /// Walks `events` from the run's status as one keyed update, with an audit row per step.
    pub(crate) async fn walk_run(
        &self,
        run: &RunRow,
        events: &[RunEvent],
        note: Option<String>,
        now: Timestamp,
    ) -> Result<String> {
        let steps = chain(run.status, events)?;
        let at = steps.last().map_or(run.status, |s| s.to);
        let Some(mut update) = RunUpdate::walk(&run.id, &steps, now) else {
            return Ok("nothing to do".into());
        };
        update.tally_before = Some(run.tally);
        if let Some(n) = &note {
            update.note = Change::Set(n.clone());
        }
        let audits = step_audits(run, &steps, note.as_deref(), now);
        let advance = Advance {
            run: Some(update),
            audits,
            ..Advance::default()
        };
        Ok(match self.runs.advance(advance).await? {
            Advanced::Applied => format!("{} → {}", run.status, at),
            Advanced::Lost => "another tick moved the run first".into(),
        })
    }

    /// Pauses a live run (the budget, the drift gate); `false` when it moved first.
    pub(crate) async fn pause_run(&self, run: &RunRow, why: &str, now: Timestamp) -> Result<bool> {
        let said = self
            .walk_run(run, &[RunEvent::Pause], Some(why.to_owned()), now)
            .await?;
        Ok(!said.starts_with("another"))
    }

    /// Pauses the namespace itself (the drift gate), with its audit row.
    pub(crate) async fn pause_namespace(&self, ns: &str, why: &str, now: Timestamp) -> Result<()> {
        let reason = format!("{LOOP_PAUSE_PREFIX} {why}");
        let audit = loop_audit("improve-pause", ns, None, json!({"reason": reason}), now);
        self.settings
            .change_settings(
                &[crate::ports::SettingChange::put(paused_key(ns), reason)],
                audit,
                now,
            )
            .await?;
        Ok(())
    }

    /// The six-hour cap: the run finalizes wherever it is; an attempt still waiting for its
    /// score times out with it.
    async fn expire_run(&self, run: &RunRow, now: Timestamp) -> Result<String> {
        if let (RunStatus::AwaitingScore, Some(current)) =
            (run.status, run.current_attempt.as_deref())
        {
            return self.time_out(run, current, true, now).await;
        }
        self.walk_run(
            run,
            &[RunEvent::Expire],
            Some("the run passed its six-hour cap".into()),
            now,
        )
        .await
    }

    /// The 20-minute score deadline of the attempt in flight.
    async fn check_score_deadline(&self, run: &RunRow, now: Timestamp) -> Result<String> {
        let Some(current) = run.current_attempt.as_deref() else {
            return self
                .walk_run(
                    run,
                    &[RunEvent::ScoreTimeout, run.tally.after_judging()],
                    None,
                    now,
                )
                .await;
        };
        let Some(a) = self.runs.attempt(current).await? else {
            return Ok(format!("the attempt in flight ({current}) is missing"));
        };
        match a.dispatched_at {
            Some(at) if score_overdue(at, now) => self.time_out(run, current, false, now).await,
            _ => Ok(format!("waiting for the score of {current}")),
        }
    }

    /// Times the attempt in flight out (reverted): with `expire`, the run then finalizes;
    /// otherwise it continues or concludes as its counters say. Its branch is deleted.
    async fn time_out(
        &self,
        run: &RunRow,
        current: &str,
        expire: bool,
        now: Timestamp,
    ) -> Result<String> {
        let Some(a) = self.runs.attempt(current).await? else {
            return Ok(format!("the attempt in flight ({current}) is missing"));
        };
        let params = json!({"run": run.id, "attempt": a.id,
                            "dispatched_at": a.dispatched_at.map(|t| t.to_string())});
        let closing = Closing {
            event: AttemptEvent::Timeout,
            run_event: if expire {
                RunEvent::Expire
            } else {
                RunEvent::ScoreTimeout
            },
            reason: format!(
                "no score arrived within {} minutes of the dispatch",
                crate::improve::machine::SCORE_DEADLINE_MS / crate::time::MINUTE_MS
            ),
            flag_reason: None,
            params,
        };
        self.close_attempt(run, &a, closing, now).await
    }

    /// Closes `a` with a verdict the loop reaches itself (timed out, flagged) and moves the
    /// run on in the same keyed unit of work: `run_event` (then, unless it is the six-hour
    /// cap, on to attempting or finalizing as the counters say); the branch is deleted.
    pub(crate) async fn close_attempt(
        &self,
        run: &RunRow,
        a: &crate::ports::AttemptRow,
        c: Closing,
        now: Timestamp,
    ) -> Result<String> {
        let a_step = attempt::step(a.status, c.event).map_err(|e| Error::Invalid(e.to_string()))?;
        let mut tally = run.tally;
        tally
            .record(a_step.to)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let expire = c.run_event == RunEvent::Expire;
        let events = if expire {
            vec![RunEvent::Expire]
        } else {
            vec![c.run_event, tally.after_judging()]
        };
        let steps = chain(run.status, &events)?;
        let Some(mut update) = RunUpdate::walk(&run.id, &steps, now) else {
            return Ok("nothing to do".into());
        };
        update.tally_before = Some(run.tally);
        update.tally = Some(tally);
        update.current_attempt = Change::Clear;
        let note = if expire {
            Some("the run passed its six-hour cap".to_owned())
        } else {
            tally.stop_reason().map(|s| s.to_string())
        };
        if let Some(n) = &note {
            update.note = Change::Set(n.clone());
        }
        let mut attempt_update = AttemptUpdate::step(&a.id, a_step);
        attempt_update.reason = Change::Set(c.reason);
        attempt_update.flag_reason = c.flag_reason;
        let mut audits = vec![loop_audit(
            a_step.audit_action(),
            &run.namespace,
            a.diff_ref.as_deref(),
            c.params,
            now,
        )];
        audits.extend(step_audits(run, &steps, note.as_deref(), now));
        let advance = Advance {
            attempt: Some(attempt_update),
            run: Some(update),
            audits,
            ..Advance::default()
        };
        if self.runs.advance(advance).await? == Advanced::Lost {
            return Ok("another writer moved the run first".into());
        }
        self.discard_branch(&run.namespace, a.branch.as_deref().unwrap_or_default())
            .await;
        let to = steps.last().map_or(run.status, |s| s.to);
        Ok(format!("{} {}; {} → {to}", a.id, a_step.to, run.status))
    }
}

/// How the loop closes an attempt itself.
pub(crate) struct Closing {
    /// The attempt's event (timeout or flag).
    pub(crate) event: AttemptEvent,
    /// The run's first event (score timeout, flag, or the six-hour cap).
    pub(crate) run_event: RunEvent,
    /// Why, on the attempt.
    pub(crate) reason: String,
    /// The monitor's reason, for a flag.
    pub(crate) flag_reason: Option<String>,
    /// The attempt's audit parameters.
    pub(crate) params: Value,
}

/// The steps `events` take from `from`, each as the core's table allows it.
pub(crate) fn chain(
    from: RunStatus,
    events: &[RunEvent],
) -> Result<Vec<crate::improve::machine::RunStep>> {
    let mut steps = Vec::new();
    let mut at = from;
    for e in events {
        let s = run::step(at, *e).map_err(|e| Error::Invalid(e.to_string()))?;
        at = s.to;
        steps.push(s);
    }
    Ok(steps)
}

/// One audit row per run step.
pub(crate) fn step_audits(
    run: &RunRow,
    steps: &[crate::improve::machine::RunStep],
    note: Option<&str>,
    now: Timestamp,
) -> Vec<AuditEntry> {
    steps
        .iter()
        .map(|s| {
            loop_audit(
                s.audit_action(),
                &run.namespace,
                None,
                json!({"run": run.id, "from": s.from.as_str(), "to": s.to.as_str(),
                       "condition": run.condition, "note": note}),
                now,
            )
        })
        .collect()
}

fn push(list: &mut Value, item: Value) {
    if let Some(items) = list.as_array_mut() {
        items.push(item);
    }
}

impl ImproveCx<'_> {
    /// The model a stage asks, from its setting.
    pub(crate) async fn stage_model(
        &self,
        stage: crate::improve::models::Stage,
        now: Timestamp,
    ) -> Result<String> {
        let stored = self.settings.setting(&stage.setting_key(), now).await?;
        Ok(crate::improve::models::model_for(stage, stored.as_deref()))
    }

    /// Subscription mode: the signed task document of a run just opened.
    async fn write_task_for(&self, run: &RunRow, now: Timestamp) -> Result<()> {
        let (date, _) = self.zone.local(now);
        self.write_task_document(run, &date).await?;
        Ok(())
    }
}
