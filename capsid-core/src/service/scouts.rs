//! The `scouts` task (issue 55, item 3): every signed, enabled scout schedule
//! (`capsid/policy/scouts/<namespace>/<name>.md`, see [`crate::jobs::scout`]) posts its
//! window's `scout` job once, as the `scheduler` caller (scoped to `jobs.post` in that
//! namespace), through the jobs area's `post` (so the job is signed, capped by the scout role
//! and audited like any other). A schedule unsigned, edited after signing, unparseable or
//! disabled posts nothing and says why in the report; a window whose job exists (another
//! replica or an earlier tick posted it) or whose schedule's earlier scout is still open posts
//! nothing.

use serde::Serialize;
use serde_json::json;

use super::Service;
use super::autonomy::{PolicyState, signed_policy_body};
use super::jobs::JobsArgs;
use crate::autonomy::policy::POLICY_NAMESPACE;
use crate::caller::Caller;
use crate::error::Result;
use crate::jobs::scout::{SCOUT_SCHEDULE_DIR, ScoutSchedule, parse_schedule};
use crate::scope::{Grant, Need, check_scope};

/// The most schedules one pass reads.
const SCHEDULES_MAX: usize = 200;

/// One schedule's turn in a pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ScoutTurn {
    /// The schedule's document (`policy/scouts/<namespace>/<name>.md`).
    pub schedule: String,
    /// The job of this window, when there is one.
    pub job_id: Option<String>,
    /// `posted`, `posted_already` (this window's job exists), `still_open` (an earlier scout
    /// of this schedule holds the title) or `not_posted` (why is in `note`).
    pub outcome: &'static str,
    /// What stopped it, when something did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScoutReport {
    /// When.
    pub at: String,
    /// Every schedule document found, with what became of it.
    pub schedules: Vec<ScoutTurn>,
    /// Schedules that post nothing (unsigned, edited, unparseable, disabled), with why.
    pub inert: Vec<String>,
}

impl Service {
    /// One pass over the scout schedules (what the `scouts` task runs).
    pub async fn scout_pass(&self) -> Result<ScoutReport> {
        let now = self.now();
        let mut report = ScoutReport {
            at: now.to_string(),
            ..ScoutReport::default()
        };
        let glob = format!("{SCOUT_SCHEDULE_DIR}*");
        let docs = self
            .store
            .find_documents(Some(POLICY_NAMESPACE), &glob, SCHEDULES_MAX)
            .await?;
        for doc in docs {
            match self.scout_schedule(&doc.path).await? {
                Ok(schedule) => report
                    .schedules
                    .push(self.post_scout(&schedule, &doc.path).await?),
                Err(why) => report.inert.push(format!("{}: {why}", doc.path)),
            }
        }
        Ok(report)
    }

    /// The schedule at `path` when it is signed, readable and enabled; otherwise why not.
    async fn scout_schedule(
        &self,
        path: &str,
    ) -> Result<std::result::Result<ScoutSchedule, String>> {
        let mut state = PolicyState::default();
        let Some(body) = signed_policy_body(
            &*self.store,
            &*self.store,
            &self.config,
            path,
            "the scout schedule",
            "it posts nothing",
            &mut state,
        )
        .await?
        else {
            return Ok(Err(state.note.unwrap_or_else(|| "not signed".into())));
        };
        Ok(match parse_schedule(path, &body) {
            Ok(s) if s.enabled => Ok(s),
            Ok(s) => Err(format!(
                "the scout schedule (version {}) is disabled: it posts nothing",
                s.version
            )),
            Err(e) => Err(format!("{e}; it posts nothing")),
        })
    }

    /// Posts `schedule`'s job for the window now falls in, unless it exists or an earlier one
    /// is still open.
    async fn post_scout(&self, schedule: &ScoutSchedule, path: &str) -> Result<ScoutTurn> {
        let window = schedule.window(self.now());
        let id = schedule.job_id(window);
        let turn = |outcome, note: Option<String>| ScoutTurn {
            schedule: path.to_owned(),
            job_id: Some(id.clone()),
            outcome,
            note,
        };
        if self.store.job(&id).await?.is_some() {
            return Ok(turn("posted_already", None));
        }
        let args = json!({"action": "post", "namespace": schedule.namespace,
                          "title": schedule.title(), "body": schedule.job_body(window),
                          "role": "scout"});
        let args: JobsArgs = match serde_json::from_value(args) {
            Ok(a) => a,
            Err(e) => return Ok(turn("not_posted", Some(e.to_string()))),
        };
        let caller = Caller::scheduler(&schedule.namespace);
        let need = Need {
            tool: "jobs",
            action: Some("post"),
            namespace: Some(&schedule.namespace),
            repo: None,
            grant: Some(Grant::Write),
            flags: Vec::new(),
        };
        if let Err(refusal) = check_scope(&caller.scopes, &need) {
            return Ok(turn("not_posted", Some(refusal.to_string())));
        }
        let answer = super::to_json(self.jobs().post_job_as(&caller, args, id.clone()).await?)?;
        if answer["ok"] == json!(true) {
            return Ok(turn("posted", None));
        }
        // Another replica's pass posted this window's job first: one job either way.
        if self.store.job(&id).await?.is_some() {
            return Ok(turn("posted_already", None));
        }
        let refusal = answer["refusal"].as_str().unwrap_or("refused").to_owned();
        if refusal.contains("already has an open job titled") {
            return Ok(turn("still_open", Some(refusal)));
        }
        Ok(turn("not_posted", Some(refusal)))
    }
}
