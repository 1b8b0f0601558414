//! `checkmarks` answer and resume: a person (or another agent) answers the open question of
//! an agent's latest entry, once, and may ask for the agent to be resumed with it; the asking
//! agent itself does neither (`rules::may_answer`). Each is one
//! keyed conditional update with its audit row; a lost race (the agent checkpointed again,
//! somebody else answered) writes nothing and is refused.

use serde_json::{Value, json};

use super::args::CheckmarksArgs;
use super::read::{AnswerGiven, ResumeAsked, no_checkmark};
use super::{CheckmarksCx, required};
use crate::caller::Caller;
use crate::checkmarks::rules::{Answered, Waiting, answer_step, may_answer, resume_step};
use crate::checkmarks::view::{checkmark_view, entry_view};
use crate::checkmarks::{Step, audit_path};
use crate::error::{Error, Result};
use crate::ports::{AnswerFill, CheckmarkTransition, CheckmarkView};
use crate::service::{Area, require_namespace};

/// What the rules read of a checkmark.
fn waiting(v: &CheckmarkView) -> Waiting<'_> {
    Waiting {
        status: v.checkmark.status,
        question: v.entry.question.as_deref(),
        answered: match (&v.entry.answered_by, v.entry.answered_at) {
            (Some(by), Some(at)) => Some(Answered { by, at: Some(at) }),
            _ if v.entry.answer.is_some() => Some(Answered {
                by: "somebody",
                at: None,
            }),
            _ => None,
        },
    }
}

impl CheckmarksCx<'_> {
    pub(crate) async fn answer(&self, caller: &Caller, a: &CheckmarksArgs) -> Result<AnswerGiven> {
        let ns = required(
            "namespace",
            "answer",
            a.namespace.as_ref().map(|n| n.as_str()),
        )?;
        let agent = required("agent", "answer", a.agent.as_ref().map(|n| n.as_str()))?;
        let answer = a
            .answer
            .as_ref()
            .map(|t| t.as_str().trim())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| Error::Invalid("checkmarks answer: answer is required".into()))?
            .to_owned();
        let resume = a.resume == Some(true);
        may_answer(&caller.holder_actor(), agent)
            .map_err(|e| Error::Forbidden(format!("checkmarks answer: {e}")))?;
        require_namespace(self.namespaces, ns).await?;
        let view = self.current(ns, agent).await?;
        let step = answer_step(&waiting(&view), resume)
            .map_err(|e| Error::Conflict(format!("checkmarks answer: {e}")))?;
        let actor = caller.actor();
        let params = json!({
            "agent": agent,
            "log_entry_id": view.entry.id,
            "resume": resume,
            "answer_chars": answer.chars().count(),
        });
        let fill = AnswerFill {
            answer,
            by: actor.clone(),
        };
        let done = self
            .apply(caller, &view, step, Some(fill), resume, params)
            .await?;
        Ok(AnswerGiven {
            action: "answer",
            resumed: resume,
            checkmark: checkmark_view(&done),
            log_entry: entry_view(&done.entry),
        })
    }

    /// Answers `agent`'s open question with `answer` and asks for it to resume, when its
    /// latest entry is about `job_id` (a raise of the job's cap answering its budget gate);
    /// `Ok(false)`, writing nothing, when no such question is open or `caller` may not
    /// answer it.
    pub(crate) async fn answer_for_job(
        &self,
        caller: &Caller,
        ns: &str,
        agent: &str,
        job_id: &str,
        answer: String,
    ) -> Result<bool> {
        let Some(view) = self.checkmarks.checkmark(ns, agent).await? else {
            return Ok(false);
        };
        if view.entry.job_id.as_deref() != Some(job_id)
            || may_answer(&caller.holder_actor(), agent).is_err()
        {
            return Ok(false);
        }
        let Ok(step) = answer_step(&waiting(&view), true) else {
            return Ok(false);
        };
        let params = json!({
            "agent": agent,
            "log_entry_id": view.entry.id,
            "resume": true,
            "answer_chars": answer.chars().count(),
            "job_id": job_id,
        });
        let fill = AnswerFill {
            answer,
            by: caller.actor(),
        };
        match self
            .apply(caller, &view, step, Some(fill), true, params)
            .await
        {
            Ok(_) => Ok(true),
            // The agent checkpointed again or somebody answered first: nothing was written.
            Err(Error::Conflict(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn resume(&self, caller: &Caller, a: &CheckmarksArgs) -> Result<ResumeAsked> {
        let ns = required(
            "namespace",
            "resume",
            a.namespace.as_ref().map(|n| n.as_str()),
        )?;
        let agent = required("agent", "resume", a.agent.as_ref().map(|n| n.as_str()))?;
        if a.answer.is_some() {
            return Err(Error::Invalid(
                "checkmarks resume: takes no answer; use action answer with resume: true".into(),
            ));
        }
        may_answer(&caller.holder_actor(), agent)
            .map_err(|e| Error::Forbidden(format!("checkmarks resume: {e}")))?;
        require_namespace(self.namespaces, ns).await?;
        let view = self.current(ns, agent).await?;
        let step = resume_step(&waiting(&view))
            .map_err(|e| Error::Conflict(format!("checkmarks resume: {e}")))?;
        let params =
            json!({ "agent": agent, "log_entry_id": view.entry.id, "from": step.from.as_str() });
        let done = self.apply(caller, &view, step, None, true, params).await?;
        let checkmark = checkmark_view(&done);
        Ok(ResumeAsked {
            action: "resume",
            resume: checkmark.resume.clone(),
            checkmark,
        })
    }

    async fn current(&self, ns: &str, agent: &str) -> Result<CheckmarkView> {
        self.checkmarks
            .checkmark(ns, agent)
            .await?
            .ok_or_else(|| no_checkmark(ns, agent))
    }

    /// Runs the keyed update of `step` on `view`'s checkmark and entry with its audit row.
    async fn apply(
        &self,
        caller: &Caller,
        view: &CheckmarkView,
        step: Step,
        answer: Option<AnswerFill>,
        resume: bool,
        params: Value,
    ) -> Result<CheckmarkView> {
        let c = &view.checkmark;
        let transition = CheckmarkTransition {
            namespace: c.namespace.clone(),
            agent: c.agent.clone(),
            step,
            entry_id: view.entry.id,
            answer,
            resume_by: resume.then(|| caller.actor()),
            at: self.now(),
            audit: self.audit(
                caller,
                step.audit_action(),
                Some(&c.namespace),
                Some(&audit_path(&c.agent)),
                params,
            ),
        };
        self.checkmarks
            .transition_checkmark(transition)
            .await?
            .ok_or_else(|| {
                Error::Conflict(format!(
                    "{}'s checkmark in {} changed meanwhile (it checkpointed again, or somebody else answered first); nothing was written. Read it again and retry.",
                    c.agent, c.namespace
                ))
            })
    }
}
