//! Abstraction on the tick (issue 17, reference 9): the last step of the loop's tick takes at
//! most [`SOURCES_PER_TICK`] unspent sources (kept attempts, jobs done `verified-success`) of
//! roster namespaces. In `api` mode it asks the `ModelClient` (stage `abstract`) for a skill
//! or a decline, charges the estimated cost to a run of the namespace with its audit row (so
//! the budget counts it), and stores a proposal as a `candidate` with its body document
//! `improve/skills/<id>.md` in one store transaction (row, document and audit rows commit
//! together or not at all); a decline or an answer that does not validate spends the source
//! with its reason audited. In `subscription` mode it writes a signed task document
//! `improve/abstract-<date>.md` listing the sources, and the driver-lease holder reports each
//! with `improve_run` action `propose_skill`, through the same validation and insert.

use serde_json::{Value, json};

use super::ImproveCx;
use super::night::loop_audit;
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::improve::keys::ROSTER_KEY;
use crate::improve::machine::AttemptStatus;
use crate::improve::models::{Stage, estimate_usd};
use crate::improve::roster::{ImproveMode, Roster};
use crate::jobs::JobStatus;
use crate::jobs::signature::seal_task;
use crate::ports::{
    Advance, Advanced, DocumentWrite, ModelMessage, ModelRequest, ModelRole, Proposed,
    ProposedSkill, RunUpdate, SettingChange, SkillRow, SkillSource, WriteGuard,
};
use crate::service::Area as _;
use crate::skills::SkillStatus;
use crate::skills::abstraction::{
    ABSTRACT_MAX_TOKENS, REASON_MAX_CHARS, SOURCE_JOB_VERDICT, SOURCES_PER_TASK, SOURCES_PER_TICK,
    SkillProposal, SourceBrief, SourceKind, TaskSource, abstract_prompt, abstract_task_body,
    abstract_task_path, new_skill_id, parse_answer, read_proposal, skill_body_path, spent_key,
    spent_prefix,
};
use crate::time::Timestamp;

/// How many unspent sources of each kind one step reads before keeping the roster's.
const SOURCES_SCANNED: usize = 50;

fn short(reason: &str) -> String {
    reason.chars().take(REASON_MAX_CHARS).collect()
}

impl ImproveCx<'_> {
    /// Unspent sources of roster namespaces, oldest first: kept attempts, then verified jobs;
    /// with `only`, that one source (if it qualifies).
    async fn skill_sources(
        &self,
        kind: Option<SourceKind>,
        only: Option<&str>,
        limit: usize,
        now: Timestamp,
    ) -> Result<Vec<SkillSource>> {
        let roster = Roster::from_setting(self.settings.setting(ROSTER_KEY, now).await?.as_deref());
        let mut out = Vec::new();
        if kind != Some(SourceKind::Job) {
            out.extend(
                self.skill_sources
                    .kept_attempt_sources(
                        AttemptStatus::Kept.as_str(),
                        &spent_prefix(SourceKind::Attempt),
                        only,
                        SOURCES_SCANNED,
                    )
                    .await?,
            );
        }
        if kind != Some(SourceKind::Attempt) {
            out.extend(
                self.skill_sources
                    .verified_job_sources(
                        JobStatus::Done.as_str(),
                        SOURCE_JOB_VERDICT,
                        &spent_prefix(SourceKind::Job),
                        only,
                        SOURCES_SCANNED,
                    )
                    .await?,
            );
        }
        out.retain(|s| roster.contains(&s.namespace));
        out.truncate(limit);
        Ok(out)
    }

    /// The tick's abstraction step (its report); a failure is reported, never raised.
    pub(crate) async fn abstraction_step(&self, mode: ImproveMode, now: Timestamp) -> Value {
        let result = match mode {
            ImproveMode::Off => Ok(json!({"did": "nothing: the loop is off"})),
            ImproveMode::Api => self.abstract_by_model(now).await,
            ImproveMode::Subscription => self.write_abstract_tasks(now).await,
        };
        result.unwrap_or_else(|e| json!({"error": e.to_string()}))
    }

    /// `api` mode: one model call per source, at most [`SOURCES_PER_TICK`].
    async fn abstract_by_model(&self, now: Timestamp) -> Result<Value> {
        let mut out = json!({"proposed": [], "declined": [], "waiting": []});
        let Some(model) = &self.model else {
            out["did"] = json!("api mode needs the model API (CAPSID_ANTHROPIC_API_KEY)");
            return Ok(out);
        };
        for source in self
            .skill_sources(None, None, SOURCES_PER_TICK, now)
            .await?
        {
            let tag = json!({"namespace": source.namespace, "source_kind": source.kind, "source_id": source.id});
            // The cost lands on a run of the namespace, so the month's budget counts it.
            let Some(run) = self.runs.runs(Some(&source.namespace), 1).await?.pop() else {
                push(&mut out["waiting"], tag);
                continue;
            };
            let text = match &source.document {
                Some(path) => self
                    .docs
                    .document(&source.namespace, path)
                    .await?
                    .and_then(|d| d.body),
                None => source.body.clone(),
            };
            let (system, user) = abstract_prompt(&SourceBrief {
                kind: source.kind,
                id: &source.id,
                namespace: &source.namespace,
                title: source.title.as_deref(),
                summary: source.summary.as_deref(),
                text: text.as_deref(),
            });
            let model_name = self.stage_model(Stage::Abstract, now).await?;
            let request = ModelRequest {
                model: model_name.clone(),
                system: Some(system),
                messages: vec![ModelMessage {
                    role: ModelRole::User,
                    content: user,
                }],
                max_tokens: ABSTRACT_MAX_TOKENS,
            };
            let reply = match model.complete(request).await {
                Ok(r) => r,
                Err(e) => {
                    out["did"] = json!(format!(
                        "the model call failed ({e}); the next tick tries again"
                    ));
                    break;
                }
            };
            let cost = estimate_usd(&model_name, reply.usage);
            let mut spend = RunUpdate::within(&run.id, run.status, now);
            spend.add_cost_usd = cost;
            let spent = Advance {
                run: Some(spend),
                audits: vec![loop_audit(
                    "improve-model-call",
                    &source.namespace,
                    None,
                    json!({"run": run.id, "stage": Stage::Abstract.name(), "model": model_name,
                           "source_kind": source.kind, "source_id": source.id,
                           "input_tokens": reply.usage.input_tokens,
                           "output_tokens": reply.usage.output_tokens, "cost_usd": cost}),
                    now,
                )],
                ..Advance::default()
            };
            if self.runs.advance(spent).await? == Advanced::Lost {
                // The run moved between the read and the charge: charge it again next tick.
                push(&mut out["waiting"], tag);
                continue;
            }
            let decided = match parse_answer(&reply.text) {
                Ok(Some(p)) => {
                    self.insert_candidate(&source, &p, crate::improve::judging::LOOP_ACTOR, now)
                        .await?
                }
                Ok(None) => Err("the model declined: no reusable idea".to_owned()),
                Err(why) => Err(format!("the model's answer is not a skill: {why}")),
            };
            match decided {
                Ok(id) => push(&mut out["proposed"], json!({"source": tag, "skill": id})),
                Err(why) => {
                    self.decline_source(&source, &why, crate::improve::judging::LOOP_ACTOR, now)
                        .await?;
                    push(
                        &mut out["declined"],
                        json!({"source": tag, "reason": short(&why)}),
                    );
                }
            }
        }
        Ok(out)
    }

    /// Stores `p` as a candidate of `source` with its body document, as one unit of work:
    /// the skill's id, or why not (the source is spent).
    async fn insert_candidate(
        &self,
        source: &SkillSource,
        p: &SkillProposal,
        by: &str,
        now: Timestamp,
    ) -> Result<std::result::Result<String, String>> {
        let id = new_skill_id(self.entropy);
        let path = skill_body_path(&id);
        let params = json!({"skill": id, "source_kind": source.kind, "source_id": source.id,
                            "title": p.title, "by": by});
        let proposal = ProposedSkill {
            row: SkillRow {
                id: id.clone(),
                source_namespace: source.namespace.clone(),
                title: p.title.clone(),
                body_ref: path.clone(),
                version: 1,
                status: SkillStatus::Candidate.name().to_owned(),
                wins: 0,
                losses: 0,
                trigger_condition: Some(p.trigger_condition.clone()),
                namespaces: p.namespaces_json(),
            },
            source_attempt: (source.kind == SourceKind::Attempt).then(|| source.id.clone()),
            source_job: (source.kind == SourceKind::Job).then(|| source.id.clone()),
            termination_test: p.termination_test.clone(),
            composition_interface: p.composition_interface.clone(),
            body: DocumentWrite {
                namespace: source.namespace.clone(),
                path: path.clone(),
                title: Some(p.title.clone()),
                body: Some(p.body.clone()),
                doc_type: None,
                status: None,
                tags: None,
                links: None,
                at: now,
            },
            spent_key: spent_key(source.kind, &source.id),
            spent_value: None,
            audits: vec![loop_audit(
                "skill-proposed",
                &source.namespace,
                Some(&path),
                params,
                now,
            )],
        };
        Ok(
            match self.skill_sources.insert_proposed_skill(proposal).await? {
                Proposed::Inserted => Ok(id),
                Proposed::Spent => Err(format!(
                    "{} {} was already abstracted or declined",
                    source.kind.name(),
                    source.id
                )),
            },
        )
    }

    /// Spends `source`: its marker set with the reason, audited in the same transaction.
    async fn decline_source(
        &self,
        source: &SkillSource,
        why: &str,
        by: &str,
        now: Timestamp,
    ) -> Result<()> {
        let key = spent_key(source.kind, &source.id);
        let audit = loop_audit(
            "skill-source-declined",
            &source.namespace,
            None,
            json!({"source_kind": source.kind, "source_id": source.id, "reason": short(why), "by": by}),
            now,
        );
        self.settings
            .change_settings(&[SettingChange::put(key, short(why))], audit, now)
            .await?;
        Ok(())
    }

    /// `subscription` mode: per namespace with sources, the signed task document listing
    /// them (rewritten only when its body changes).
    async fn write_abstract_tasks(&self, now: Timestamp) -> Result<Value> {
        let sources = self.skill_sources(None, None, SOURCES_SCANNED, now).await?;
        let mut out = json!({"tasks": []});
        if sources.is_empty() {
            return Ok(out);
        }
        let Some(secret) = self.config.signing_secret() else {
            out["did"] = json!(
                "subscription mode signs its task document: CAPSID_SIGNING_SECRET is not set"
            );
            return Ok(out);
        };
        let (date, _) = self.zone.local(now);
        let mut namespaces: Vec<&str> = sources.iter().map(|s| s.namespace.as_str()).collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        for ns in namespaces {
            let listed: Vec<TaskSource> = sources
                .iter()
                .filter(|s| s.namespace == ns)
                .take(SOURCES_PER_TASK)
                .map(|s| TaskSource {
                    kind: s.kind,
                    id: s.id.clone(),
                    label: s
                        .title
                        .clone()
                        .or_else(|| s.summary.clone())
                        .unwrap_or_default(),
                })
                .collect();
            let path = abstract_task_path(&date);
            let sealed = seal_task(secret, &abstract_task_body(ns, &date, &listed));
            let stored = self.docs.document(ns, &path).await?;
            if stored.as_ref().is_some_and(|d| d.body_text() == sealed) {
                push(
                    &mut out["tasks"],
                    json!({"namespace": ns, "path": path, "sources": listed.len(), "written": false}),
                );
                continue;
            }
            let audit = loop_audit(
                "improve-abstract-task-written",
                ns,
                Some(&path),
                json!({"date": date, "sources": listed.len(), "sha256": crate::crypto::sha256_hex(&sealed)}),
                now,
            );
            let write = DocumentWrite {
                namespace: ns.to_owned(),
                path: path.clone(),
                title: Some(format!("Skills to abstract {date}")),
                body: Some(sealed),
                doc_type: None,
                status: None,
                tags: None,
                links: None,
                at: now,
            };
            self.docs
                .write_document(write, WriteGuard::Upsert, vec![audit])
                .await?;
            push(
                &mut out["tasks"],
                json!({"namespace": ns, "path": path, "sources": listed.len(), "written": true}),
            );
        }
        Ok(out)
    }

    /// `improve_run` action `propose_skill` (subscription mode): the driver-lease holder of
    /// `ns` reports on one source: a proposal (`proposal`, the skill's fields) becomes a
    /// candidate; `{"skill": null}` declines it. A spent source, a source of another
    /// namespace, an invalid proposal or a caller without the lease is refused, and nothing
    /// is written.
    pub(crate) async fn propose_skill(
        &self,
        caller: &Caller,
        a: &super::RunArgs,
    ) -> Result<super::ImproveRunAnswer> {
        let ns = a.namespace.as_ref().map(|n| n.as_str());
        let kind = a.source_kind.as_ref().map(|k| k.as_str());
        let id = a.source_id.as_ref().map(|i| i.as_str());
        let proposal = a.proposal.clone().map(Value::Object);
        let proposal = proposal.as_ref();
        let name = "propose_skill";
        let refuse = |why: String| Ok(super::refuse(name, why));
        let now = self.now();
        let Some(ns) = ns else {
            return refuse("propose_skill needs a namespace".into());
        };
        let Some(kind) = kind.and_then(SourceKind::parse) else {
            return refuse("propose_skill needs source_kind: attempt or job".into());
        };
        let Some(id) = id.map(str::trim).filter(|i| !i.is_empty()) else {
            return refuse("propose_skill needs source_id, the attempt's or the job's id".into());
        };
        let Some(proposal) = proposal else {
            return refuse(
                "propose_skill needs proposal: the skill's fields, or {\"skill\": null} to decline"
                    .into(),
            );
        };
        if let Some(why) = self.not_the_driver(caller, ns, name, now).await? {
            return refuse(why);
        }
        let read = read_proposal(proposal).map_err(|e| Error::Invalid(format!("proposal: {e}")));
        let Some(source) = self
            .skill_sources(Some(kind), Some(id), 1, now)
            .await?
            .pop()
            .filter(|s| s.namespace == ns)
        else {
            return refuse(format!(
                "{} {id} is not an unspent source of {ns} (a kept attempt or a job done verified-success that no skill names and nobody declined)",
                kind.name()
            ));
        };
        let by = caller.actor();
        match read? {
            Some(p) => match self.insert_candidate(&source, &p, &by, now).await? {
                Ok(skill) => Ok(super::SkillProposed {
                    ok: true,
                    action: name,
                    namespace: ns.to_owned(),
                    source_kind: kind,
                    source_id: id.to_owned(),
                    body_ref: skill_body_path(&skill),
                    skill,
                    status: SkillStatus::Candidate.name(),
                }
                .into()),
                Err(why) => refuse(why),
            },
            None => {
                self.decline_source(&source, "the driver declined: no reusable idea", &by, now)
                    .await?;
                Ok(super::SourceDeclined {
                    ok: true,
                    action: name,
                    namespace: ns.to_owned(),
                    source_kind: kind,
                    source_id: id.to_owned(),
                    declined: true,
                }
                .into())
            }
        }
    }
}

fn push(list: &mut Value, item: Value) {
    if let Some(items) = list.as_array_mut() {
        items.push(item);
    }
}
