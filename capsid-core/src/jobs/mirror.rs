//! The mirror document (reference 6.9): every transition rewrites `<ns>/jobs/<id>.md`, so
//! brief and search see the queue. The table is the source of truth and the document says
//! so; its prompt section is the signed body verbatim, so a driver reading the document
//! verifies the same bytes.

use super::model::{Job, job_doc_path};
use super::state::JobStatus;

/// The mirror's document type.
pub const MIRROR_TYPE: &str = "task";
/// The mirror's tags.
pub const MIRROR_TAGS: &str = "jobs";

/// A job's mirror document, ready for the document writer (snapshot, upsert, audit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MirrorDoc {
    /// The namespace: the job's.
    pub namespace: String,
    /// `jobs/<id>.md`.
    pub path: String,
    /// `Job: <title>`.
    pub title: String,
    /// Always `task`.
    pub doc_type: &'static str,
    /// `closed` once done, `active` otherwise.
    pub status: &'static str,
    /// Always `jobs`.
    pub tags: &'static str,
    /// The rendered body.
    pub body: String,
}

/// Renders the mirror document of `job` as it stands.
pub fn mirror_doc(job: &Job) -> MirrorDoc {
    MirrorDoc {
        namespace: job.namespace.clone(),
        path: job_doc_path(&job.id),
        title: format!("Job: {}", job.title),
        doc_type: MIRROR_TYPE,
        status: if job.status == JobStatus::Done {
            "closed"
        } else {
            "active"
        },
        tags: MIRROR_TAGS,
        body: mirror_body(job),
    }
}

/// The mirror's body: heading, projection note, fact lines, then the prompt.
pub fn mirror_body(job: &Job) -> String {
    let mut lines = vec![
        format!("# {}", job.title),
        String::new(),
        format!(
            "Job `{}` in `{}`. This document is a PROJECTION of the jobs",
            job.id, job.namespace
        ),
        "table, which is the source of truth for status. Rewritten on every transition.".to_owned(),
        String::new(),
        format!("- status: **{}**", job.status),
        format!("- priority: {}", job.priority),
        format!(
            "- gate required: {}",
            if job.gate_required { "yes" } else { "no" }
        ),
        format!("- posted by: {}", job.posted_by),
        format!(
            "- claimed by: {}",
            job.claimed_by.as_deref().unwrap_or("(unclaimed)")
        ),
        format!(
            "- lease expires: {}",
            job.lease_expires
                .map_or_else(|| "(no lease)".to_owned(), |t| t.to_string())
        ),
    ];
    // Only once it has happened: a job that never hit a gate carries no line of zeroes.
    if job.blocked_count > 0 {
        lines.push(format!(
            "- gates hit: {}, resumed: {}",
            job.blocked_count, job.resumed_count
        ));
    }
    if let Some(summary) = job.result_summary.as_deref().filter(|s| !s.is_empty()) {
        lines.push(format!("- result: {summary}"));
    }
    if let Some(reference) = job.result_ref.as_deref().filter(|r| !r.is_empty()) {
        lines.push(format!("- result ref: {reference}"));
    }
    lines.extend([
        String::new(),
        "## The prompt".to_owned(),
        String::new(),
        job.body.clone(),
    ]);
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::model::tests::sample_job;

    #[test]
    fn a_claimed_job_renders_exactly() {
        let doc = mirror_doc(&sample_job());
        assert_eq!(doc.namespace, "capsid");
        assert_eq!(doc.path, "jobs/job_0123456789ab.md");
        assert_eq!(doc.title, "Job: Fix the flaky test");
        assert_eq!(
            (doc.doc_type, doc.status, doc.tags),
            ("task", "active", "jobs")
        );
        let want = "# Fix the flaky test\n\
            \n\
            Job `job_0123456789ab` in `capsid`. This document is a PROJECTION of the jobs\n\
            table, which is the source of truth for status. Rewritten on every transition.\n\
            \n\
            - status: **claimed**\n\
            - priority: 2\n\
            - gate required: yes\n\
            - posted by: github:DrDustinEdwards\n\
            - claimed by: agent:capsid-driver\n\
            - lease expires: 2026-09-12T04:00:00.000Z\n\
            \n\
            ## The prompt\n\
            \n\
            ---\ncapsid-task-signature: abc\n---\nRun it.\n";
        assert_eq!(doc.body, want);
    }

    #[test]
    fn optional_lines_appear_once_set() {
        let mut job = sample_job();
        job.status = JobStatus::Done;
        job.gate_required = false;
        job.claimed_by = None;
        job.lease_expires = None;
        job.blocked_count = 2;
        job.resumed_count = 1;
        job.result_summary = Some("merged".into());
        job.result_ref = Some("https://github.com/acme/api/pull/3".into());
        let doc = mirror_doc(&job);
        assert_eq!(doc.status, "closed");
        for line in [
            "- gate required: no",
            "- claimed by: (unclaimed)",
            "- lease expires: (no lease)",
            "- gates hit: 2, resumed: 1",
            "- result: merged",
            "- result ref: https://github.com/acme/api/pull/3",
        ] {
            assert!(
                doc.body.lines().any(|l| l == line),
                "missing {line:?} in\n{}",
                doc.body
            );
        }
        let facts: Vec<&str> = doc.body.lines().filter(|l| l.starts_with("- ")).collect();
        assert_eq!(
            facts.last(),
            Some(&"- result ref: https://github.com/acme/api/pull/3")
        );
    }

    #[test]
    fn no_gate_line_before_the_first_block_and_every_status_but_done_is_active() {
        let job = sample_job();
        assert!(!mirror_body(&job).contains("gates hit"));
        for status in [
            JobStatus::Queued,
            JobStatus::Claimed,
            JobStatus::Failed,
            JobStatus::Blocked,
        ] {
            assert_eq!(
                mirror_doc(&Job {
                    status,
                    ..sample_job()
                })
                .status,
                "active"
            );
        }
    }

    #[test]
    fn the_prompt_is_the_signed_body_verbatim() {
        let mut job = sample_job();
        job.body = "---\ncapsid-task-signature: ff\n---\n  spaced\n\n\ttabbed  ".into();
        let body = mirror_body(&job);
        let (_, prompt) = body.split_once("## The prompt\n\n").unwrap();
        assert_eq!(prompt, job.body);
    }
}
