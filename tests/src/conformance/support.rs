//! Shared builders for the conformance cases: instants, audit rows, document writes, links,
//! signed jobs, mirrors (the core's renderer) and claim deciders (the core's signature check).

use capsid_core::docs::document::Document;
use capsid_core::docs::kinds::LinkType;
use capsid_core::docs::links::Link;
use capsid_core::jobs::mirror::mirror_doc;
use capsid_core::jobs::outcome::{OutcomeRow, ResultKind};
use capsid_core::jobs::signature::{JobTerms, seal_job, seal_task, verify_job};
use capsid_core::jobs::state::{JobEvent, JobStatus, Step};
use capsid_core::jobs::{AUDIT_JOB_CLAIMED, AUDIT_JOB_SIGNATURE_REFUSED, Job, job_doc_path};
use capsid_core::paths::{DocPath, Namespace};
use capsid_core::ports::{
    AuditEntry, AuditFilter, Change, ClaimDecider, ClaimRequest, ClaimTarget, ClaimVerdict,
    DocumentStore, DocumentWrite, JobPatch, JobTransition, MirrorFn, NewJob, OutcomeRecord, Store,
    WriteGuard, WriteReceipt,
};
use capsid_core::time::{MINUTE_MS, Timestamp};
use serde_json::json;

/// The signing secret every job of the suite is sealed with.
pub const SECRET: &str = "capsid-conformance-secret";

/// The suite's epoch: 2026-03-01T09:00:00.000Z.
pub fn t0() -> Timestamp {
    Timestamp::parse("2026-03-01T09:00:00.000Z").expect("valid instant")
}

/// `minutes` after [`t0`].
pub fn at(minutes: i64) -> Timestamp {
    t0().plus_millis(minutes * MINUTE_MS)
}

/// An audit row by `actor` for `action` on `(namespace, path)`.
pub fn audit(
    actor: &str,
    action: &str,
    namespace: &str,
    path: &str,
    when: Timestamp,
) -> AuditEntry {
    AuditEntry {
        actor: actor.to_owned(),
        action: action.to_owned(),
        namespace: Some(namespace.to_owned()),
        path: Some(path.to_owned()),
        params: json!({ "case": action, "path": path }),
        at: when,
    }
}

/// A write of title and body only (every other field kept or defaulted).
pub fn write(
    namespace: &str,
    path: &str,
    title: Option<&str>,
    body: Option<&str>,
    when: Timestamp,
) -> DocumentWrite {
    DocumentWrite {
        namespace: namespace.to_owned(),
        path: path.to_owned(),
        title: title.map(str::to_owned),
        body: body.map(str::to_owned),
        doc_type: None,
        status: None,
        tags: None,
        links: None,
        at: when,
    }
}

/// A typed write: title, body, type and status.
pub fn typed(
    namespace: &str,
    path: &str,
    doc_type: &str,
    status: &str,
    body: &str,
    when: Timestamp,
) -> DocumentWrite {
    DocumentWrite {
        doc_type: Some(doc_type.to_owned()),
        status: Some(status.to_owned()),
        ..write(
            namespace,
            path,
            Some(&format!("Title of {path}")),
            Some(body),
            when,
        )
    }
}

/// One outgoing edge.
pub fn link(link_type: LinkType, to_ns: &str, to_path: &str) -> Link {
    Link {
        link_type,
        to_ns: Namespace::parse(to_ns).expect("valid namespace"),
        to_path: DocPath::parse(to_path).expect("valid path"),
    }
}

/// Writes `change` as an upsert by `agent:writer`, panicking on failure.
pub async fn put<S: DocumentStore + ?Sized>(store: &S, change: DocumentWrite) -> WriteReceipt {
    let entry = audit(
        "agent:writer",
        "write",
        &change.namespace,
        &change.path,
        change.at,
    );
    let what = format!("{}/{}", change.namespace, change.path);
    store
        .write_document(change, WriteGuard::Upsert, vec![entry])
        .await
        .unwrap_or_else(|e| panic!("writing {what}: {e}"))
}

/// The document at `(namespace, path)`, which must exist.
pub async fn doc<S: DocumentStore + ?Sized>(store: &S, namespace: &str, path: &str) -> Document {
    store
        .document(namespace, path)
        .await
        .expect("read document")
        .unwrap_or_else(|| panic!("{namespace}/{path} should exist"))
}

/// How many audit rows the store holds (up to 100,000).
pub async fn audit_count<S: Store + ?Sized>(store: &S) -> usize {
    store
        .recent_audit(&AuditFilter::default(), 100_000)
        .await
        .expect("recent audit")
        .len()
}

/// A job id from a number: `job_` + 12 hex.
pub fn job_id(n: u64) -> String {
    format!("job_{n:012x}")
}

/// A queued job with a sealed body.
pub fn new_job(id: &str, namespace: &str, title: &str, priority: i64, when: Timestamp) -> NewJob {
    NewJob {
        id: id.to_owned(),
        namespace: namespace.to_owned(),
        title: title.to_owned(),
        body: seal_task(
            SECRET,
            &format!("Do the work of {title}.\n\nThen open a PR.\n"),
        ),
        priority,
        posted_by: "github:owner".to_owned(),
        gate_required: false,
        review_required: false,
        required_scopes: None,
        min_record: None,
        at: when,
        dispatch: None,
        max_cost_usd: None,
        runtime: None,
        role: None,
        paths: None,
    }
}

/// A queued job that works on `paths` (signed with its body).
pub fn new_job_on(
    id: &str,
    namespace: &str,
    title: &str,
    paths: &[&str],
    when: Timestamp,
) -> NewJob {
    let paths: Vec<String> = paths.iter().map(|p| (*p).to_owned()).collect();
    let mut job = new_job(id, namespace, title, 0, when);
    job.body = seal_job(
        SECRET,
        &format!("Do the work of {title}.\n\nThen open a PR.\n"),
        &JobTerms {
            role: None,
            paths: Some(&paths),
        },
    );
    job.paths = Some(paths);
    job
}

/// The mirror renderer: the core's [`mirror_doc`] as a document write at `when`.
pub fn mirror(when: Timestamp) -> MirrorFn {
    Box::new(move |job: &Job| {
        let m = mirror_doc(job);
        DocumentWrite {
            namespace: m.namespace,
            path: m.path,
            title: Some(m.title),
            body: Some(m.body),
            doc_type: Some(m.doc_type.to_owned()),
            status: Some(m.status.to_owned()),
            tags: Some(m.tags.to_owned()),
            links: None,
            at: when,
        }
    })
}

/// The audit row of a job event.
pub fn job_audit(
    actor: &str,
    action: &str,
    job: &str,
    namespace: &str,
    when: Timestamp,
) -> AuditEntry {
    AuditEntry {
        actor: actor.to_owned(),
        action: action.to_owned(),
        namespace: Some(namespace.to_owned()),
        path: Some(job_doc_path(job)),
        params: json!({ "job_id": job }),
        at: when,
    }
}

/// Decides as the service does about the signature: a body that verifies is claimed, one that
/// does not is failed with an outcome row.
pub struct SignatureDecider {
    /// The claimer.
    pub actor: String,
    /// The claim time.
    pub now: Timestamp,
}

impl ClaimDecider for SignatureDecider {
    fn decide(&self, job: &Job) -> ClaimVerdict {
        match verify_job(SECRET, &job.body, &job.terms()) {
            Ok(_) => ClaimVerdict::Claim(job_audit(
                &self.actor,
                AUDIT_JOB_CLAIMED,
                &job.id,
                &job.namespace,
                self.now,
            )),
            Err(e) => ClaimVerdict::Fail {
                summary: e.to_string(),
                audit: job_audit(
                    &self.actor,
                    AUDIT_JOB_SIGNATURE_REFUSED,
                    &job.id,
                    &job.namespace,
                    self.now,
                ),
                outcome: Some(OutcomeRecord {
                    reported_call: None,
                    row: outcome_row(job, "unattributed", self.now),
                    pr_urls: vec![],
                }),
            },
        }
    }
}

/// Refuses every candidate with a fixed reason.
pub struct RefuseDecider(pub &'static str);

impl ClaimDecider for RefuseDecider {
    fn decide(&self, _job: &Job) -> ClaimVerdict {
        ClaimVerdict::Refuse(self.0.to_owned())
    }
}

/// Asks for the claimer's track record about every candidate.
pub struct NeedsRecordDecider;

impl ClaimDecider for NeedsRecordDecider {
    fn decide(&self, _job: &Job) -> ClaimVerdict {
        ClaimVerdict::NeedsRecord
    }
}

/// A claim request with a four-hour lease.
pub fn claim<'a>(target: ClaimTarget, decider: &'a SignatureDecider) -> ClaimRequest<'a> {
    ClaimRequest {
        target,
        actor: decider.actor.clone(),
        now: decider.now,
        lease_expires: decider.now.plus_millis(240 * MINUTE_MS),
        driven: false,
        writes_nothing: &[],
        decider,
        mirror: mirror(decider.now),
    }
}

/// The best queued job of `namespace`.
pub fn best(namespace: &str) -> ClaimTarget {
    ClaimTarget::Best {
        namespace: namespace.to_owned(),
    }
}

/// An outcome row with every count NULL.
pub fn outcome_row(job: &Job, agent: &str, when: Timestamp) -> OutcomeRow {
    OutcomeRow {
        job_id: job.id.clone(),
        agent: agent.to_owned(),
        namespace: job.namespace.clone(),
        prs_opened: None,
        prs_merged: None,
        commits: None,
        files_changed: None,
        tests_added: None,
        ci_green: None,
        blocked_count: job.blocked_count,
        resumed_count: job.resumed_count,
        duration_minutes: None,
        result_kind: ResultKind::None,
        verified: r#"{"prs_opened":false,"prs_merged":false,"commits":false,"files_changed":false,"ci_green":false}"#
            .to_owned(),
        recorded_at: when,
        reviewed_by: None,
        skill_ids_offered: None,
        skill_ids_used: None,
        skill_verdict: None,
        cost_usd: None,
        turns: None,
        duration_ms: None,
    }
}

/// A keyed transition of `id` from `from` held by `holder`, applying `patch` and keeping the
/// status; [`Toward::toward`] changes it. (The store enforces the keyed update, not which
/// steps are legal, so its conformance cases may build any step.)
pub fn transition(
    id: &str,
    namespace: &str,
    from: JobStatus,
    holder: &str,
    patch: JobPatch,
    when: Timestamp,
) -> JobTransition {
    JobTransition {
        expected: None,
        id: id.to_owned(),
        step: Step {
            from,
            to: from,
            event: JobEvent::Heartbeat,
        },
        holder: Some(holder.to_owned()),
        corrections: None,
        patch,
        at: when,
        audit: job_audit(holder, "job-transition", id, namespace, when),
        outcome: None,
        mirror: mirror(when),
    }
}

/// A transition that moves the job to another status.
pub trait Toward {
    /// The same transition, setting `to`.
    fn toward(self, to: JobStatus) -> Self;
}

impl Toward for JobTransition {
    fn toward(mut self, to: JobStatus) -> Self {
        self.step.to = to;
        self
    }
}

/// The patch of `complete` (toward done): lease cleared, a result.
pub fn complete_patch() -> JobPatch {
    JobPatch {
        lease_expires: Change::Clear,
        result_ref: Change::Set("notes/result.md".to_owned()),
        result_summary: Change::Set("finished".to_owned()),
        ..JobPatch::default()
    }
}

/// The patch of `fail` (toward failed): lease cleared, a reason.
pub fn fail_patch(reason: &str) -> JobPatch {
    JobPatch {
        lease_expires: Change::Clear,
        result_summary: Change::Set(reason.to_owned()),
        ..JobPatch::default()
    }
}

/// Checks that the mirror document of `job` is exactly what the core renders.
pub async fn assert_mirror<S: DocumentStore + ?Sized>(store: &S, job: &Job, when: Timestamp) {
    let want = mirror_doc(job);
    let got = doc(store, &job.namespace, &want.path).await;
    assert_eq!(
        got.title.as_deref(),
        Some(want.title.as_str()),
        "mirror title of {}",
        job.id
    );
    assert_eq!(
        got.body.as_deref(),
        Some(want.body.as_str()),
        "mirror body of {}",
        job.id
    );
    assert_eq!(
        (
            got.doc_type.as_str(),
            got.status.as_str(),
            got.tags.as_deref()
        ),
        (want.doc_type, want.status, Some(want.tags)),
        "mirror metadata of {}",
        job.id
    );
    assert_eq!(got.updated_at, when, "mirror updated_at of {}", job.id);
}
