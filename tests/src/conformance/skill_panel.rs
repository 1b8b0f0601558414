//! What the skills panel reads: a namespace's newest evaluation, and the skill lists of its
//! job outcomes that were offered skills, newest first and bounded.

use capsid_core::jobs::state::JobStatus;
use capsid_core::ports::{ClaimTarget, OutcomeRecord, SkillEvaluationRow, Store};

use super::jobs_claim::{claimed, post};
use super::support::{Toward, at, audit, complete_patch, job_id, outcome_row, transition};

fn evaluation(skill: &str, namespace: &str, minute: i64) -> SkillEvaluationRow {
    SkillEvaluationRow {
        skill: skill.into(),
        version: 1,
        namespace: namespace.into(),
        probe_set_version: "3".into(),
        delta: 0.25,
        runs: 4,
        verdict: "positive".into(),
        evaluated_at: at(minute),
    }
}

/// The newest evaluation of one namespace's probe set, whichever skill it measured; another
/// namespace's are not its; none yet is `None`.
pub async fn last_evaluation_of_a_namespace<S: Store>(store: &S) {
    assert_eq!(store.last_evaluation("proj").await.expect("last"), None);
    for (skill, ns, minute) in [("s1", "proj", 5), ("s2", "proj", 9), ("s1", "other", 12)] {
        store
            .record_evaluation(
                evaluation(skill, ns, minute),
                audit("improve-loop", "skill-evaluated", ns, skill, at(minute)),
            )
            .await
            .expect("record");
    }
    assert_eq!(
        store.last_evaluation("proj").await.expect("last"),
        Some(evaluation("s2", "proj", 9))
    );
    assert_eq!(
        store.last_evaluation("other").await.expect("last"),
        Some(evaluation("s1", "other", 12))
    );
}

/// Only outcomes that were offered skills come back, newest first, at most `limit`, with the
/// used list as written (NULL when the driver did not report).
pub async fn skill_offers_newest_first<S: Store>(store: &S) {
    let rows = [
        (Some(r#"["a","b"]"#), Some(r#"["a"]"#)),
        (None, None),
        (Some(r#"["c"]"#), None),
    ];
    for (i, (offered, used)) in rows.into_iter().enumerate() {
        let n = i as u64 + 1;
        post(
            store,
            &job_id(n),
            "proj",
            &format!("Job {n}"),
            0,
            at(n as i64),
        )
        .await;
        let holder = format!("agent:{n}");
        let job = claimed(store, &holder, ClaimTarget::Id(job_id(n)), at(10)).await;
        let mut row = outcome_row(&job, &holder, at(20 + n as i64));
        row.skill_ids_offered = offered.map(str::to_owned);
        row.skill_ids_used = used.map(str::to_owned);
        let mut done = transition(
            &job.id,
            "proj",
            JobStatus::Claimed,
            &holder,
            complete_patch(),
            at(20 + n as i64),
        )
        .toward(JobStatus::Done);
        done.outcome = Some(OutcomeRecord {
            reported_call: None,
            row,
            pr_urls: vec![],
        });
        store
            .transition_job(done)
            .await
            .expect("complete")
            .expect("applied");
    }
    let got = store.skill_offers("proj", 10).await.expect("offers");
    let lists: Vec<(&str, Option<&str>)> = got
        .iter()
        .map(|o| (o.offered.as_str(), o.used.as_deref()))
        .collect();
    assert_eq!(
        lists,
        [(r#"["c"]"#, None), (r#"["a","b"]"#, Some(r#"["a"]"#))]
    );
    assert_eq!(
        store.skill_offers("proj", 1).await.expect("offers").len(),
        1
    );
    assert!(
        store
            .skill_offers("other", 10)
            .await
            .expect("offers")
            .is_empty()
    );
}
