//! Conformance cases for checkmarks, the log and the shared context: the checkpoint upsert
//! keyed by (namespace, agent) with its log entry and audit row in one transaction, the log
//! insert-only and paged newest first, global entries alone in the feed, an answer filling the
//! asking entry once (keyed on the checkmark's status and entry, all or nothing), resumes, and
//! the shared context last writer wins with an audit row per change.

use std::sync::Arc;

use capsid_core::checkmarks::{
    AgentStatus, CheckmarkEvent, CiStatus, GateStatus, Step, Visibility,
};
use capsid_core::ports::{
    AnswerFill, AuditEntry, AuditFilter, CheckmarkTransition, CheckmarkView, CheckpointAuditFn,
    LogEntryRow, NewCheckpoint, SharedEntry, Store,
};
use capsid_core::time::Timestamp;
use serde_json::json;
use tokio::sync::Barrier;

use super::support::{at, audit_count};

/// A checkpoint of `agent` in `namespace` with `status` at minute `when`.
pub(crate) fn cp(namespace: &str, agent: &str, status: AgentStatus, when: i64) -> NewCheckpoint {
    let asks = status.waits_on_a_human();
    NewCheckpoint {
        namespace: namespace.to_owned(),
        agent: agent.to_owned(),
        at: at(when),
        status,
        where_it_stopped: Some(format!("stopped at minute {when}")),
        next_steps: vec![format!("step after {when}"), "then the next".to_owned()],
        question: asks.then(|| format!("question at minute {when}?")),
        tests_status: GateStatus::Unknown,
        tested_at: None,
        build_status: GateStatus::Unknown,
        built_at: None,
        job_id: None,
        session_id: None,
        summary: Some(format!("summary {when}")),
        decisions: None,
        visibility: Visibility::Project,
        push_sha: None,
        ci_status: CiStatus::NotApplicable,
        cost_usd: None,
        turns: None,
    }
}

fn checkpoint_audit(agent: &str, namespace: &str, when: Timestamp) -> CheckpointAuditFn {
    let (agent, namespace) = (agent.to_owned(), namespace.to_owned());
    Box::new(move |e: &LogEntryRow| AuditEntry {
        actor: format!("agent:{agent}"),
        action: "checkpoint".into(),
        namespace: Some(namespace.clone()),
        path: Some(format!("checkmarks/{agent}")),
        params: json!({ "log_entry_id": e.id }),
        at: when,
    })
}

pub(crate) async fn record<S: Store + ?Sized>(store: &S, c: NewCheckpoint) -> CheckmarkView {
    let audit = checkpoint_audit(&c.agent, &c.namespace, c.at);
    let what = format!("{}/{}", c.namespace, c.agent);
    store
        .checkpoint(c, audit)
        .await
        .unwrap_or_else(|e| panic!("checkpoint {what}: {e}"))
}

pub(crate) fn plain_audit(
    action: &str,
    namespace: Option<&str>,
    path: &str,
    when: Timestamp,
) -> AuditEntry {
    AuditEntry {
        actor: "github:owner".into(),
        action: action.into(),
        namespace: namespace.map(str::to_owned),
        path: Some(path.to_owned()),
        params: json!({ "case": action }),
        at: when,
    }
}

/// An answer (and resume, when `resume`) of `view`'s entry, stepping from `from`.
pub(crate) fn answer(
    view: &CheckmarkView,
    from: AgentStatus,
    text: &str,
    resume: bool,
    when: i64,
) -> CheckmarkTransition {
    let event = if resume {
        CheckmarkEvent::AnswerAndResume
    } else {
        CheckmarkEvent::Answer
    };
    let to = if resume { AgentStatus::Working } else { from };
    CheckmarkTransition {
        namespace: view.checkmark.namespace.clone(),
        agent: view.checkmark.agent.clone(),
        step: Step { from, to, event },
        entry_id: view.entry.id,
        answer: Some(AnswerFill {
            answer: text.to_owned(),
            by: "github:owner".into(),
        }),
        resume_by: resume.then(|| "github:owner".to_owned()),
        at: at(when),
        audit: plain_audit(
            "checkmark-answered",
            Some(&view.checkmark.namespace),
            "checkmarks/x",
            at(when),
        ),
    }
}

/// Checkpoints upsert one checkmark per (namespace, agent), each with a new log entry and its
/// audit row naming that entry.
pub async fn checkpoint_upserts_one_checkmark_per_namespace_and_agent<S: Store>(store: &S) {
    let audits = audit_count(store).await;
    let first = record(store, cp("alpha", "d1", AgentStatus::Working, 0)).await;
    assert_eq!(first.checkmark.namespace, "alpha");
    assert_eq!(first.checkmark.agent, "d1");
    assert_eq!(first.checkmark.status, AgentStatus::Working);
    assert_eq!(first.checkmark.checkpoint_at, at(0));
    assert_eq!(first.checkmark.log_entry_id, first.entry.id);
    assert_eq!(
        first.checkmark.next_steps,
        ["step after 0".to_owned(), "then the next".to_owned()]
    );
    assert_eq!(first.checkmark.open_question, None);
    assert_eq!(first.entry.summary.as_deref(), Some("summary 0"));
    assert_eq!(first.entry.ci_status, CiStatus::NotApplicable);
    assert_eq!(first.entry.visibility, Visibility::Project);
    assert_eq!((first.entry.cost_usd, first.entry.turns), (None, None));

    let mut paused = cp("alpha", "d1", AgentStatus::PausedForInput, 1);
    paused.tests_status = GateStatus::Pass;
    paused.tested_at = Some(at(1));
    paused.build_status = GateStatus::Fail;
    paused.built_at = Some(at(1));
    paused.session_id = Some("session-42".into());
    paused.push_sha = Some("0123456789abcdef".into());
    paused.ci_status = CiStatus::Pending;
    paused.cost_usd = Some(1.25);
    paused.turns = Some(7);
    paused.job_id = Some("job_000000000001".into());
    paused.next_steps = Vec::new();
    let second = record(store, paused).await;
    assert_eq!(
        second.checkmark.id, first.checkmark.id,
        "the same checkmark, overwritten"
    );
    assert!(second.entry.id > first.entry.id, "a new entry");
    assert_eq!(second.checkmark.log_entry_id, second.entry.id);
    assert_eq!(second.checkmark.status, AgentStatus::PausedForInput);
    assert_eq!(
        second.checkmark.open_question.as_deref(),
        Some("question at minute 1?")
    );
    assert_eq!(second.entry.question, second.checkmark.open_question);
    assert!(second.checkmark.next_steps.is_empty());
    assert_eq!(
        (second.checkmark.tests_status, second.checkmark.tested_at),
        (GateStatus::Pass, Some(at(1)))
    );
    assert_eq!(second.checkmark.build_status, GateStatus::Fail);
    assert_eq!(second.checkmark.job_id.as_deref(), Some("job_000000000001"));
    assert_eq!(second.entry.session_id.as_deref(), Some("session-42"));
    assert_eq!(second.entry.push_sha.as_deref(), Some("0123456789abcdef"));
    assert_eq!(second.entry.ci_status, CiStatus::Pending);
    assert_eq!(
        (second.entry.cost_usd, second.entry.turns),
        (Some(1.25), Some(7))
    );
    assert_eq!(second.entry.answer, None);

    let beta = record(store, cp("beta", "d1", AgentStatus::Working, 2)).await;
    assert_ne!(
        beta.checkmark.id, first.checkmark.id,
        "the same agent in two namespaces"
    );
    record(store, cp("alpha", "a0", AgentStatus::Done, 3)).await;

    assert_eq!(
        store.checkmark("alpha", "d1").await.expect("read"),
        Some(second.clone())
    );
    assert_eq!(
        store.checkmark("alpha", "nobody").await.expect("read"),
        None
    );
    assert_eq!(store.checkmark("gamma", "d1").await.expect("read"), None);
    let listed = store.checkmarks("alpha", 10).await.expect("list");
    let agents: Vec<&str> = listed.iter().map(|v| v.checkmark.agent.as_str()).collect();
    assert_eq!(agents, ["a0", "d1"], "by agent name, one namespace only");
    assert_eq!(listed[1], second);
    assert_eq!(store.checkmarks("alpha", 1).await.expect("list").len(), 1);

    assert_eq!(
        audit_count(store).await,
        audits + 4,
        "one audit row per checkpoint"
    );
    let rows = store
        .recent_audit(
            &AuditFilter {
                namespace: Some("alpha".into()),
                actor: None,
            },
            10,
        )
        .await
        .expect("audit");
    let newest_d1 = rows
        .iter()
        .find(|r| r.path.as_deref() == Some("checkmarks/d1"))
        .expect("d1's audit row");
    let params: serde_json::Value =
        serde_json::from_str(newest_d1.params.as_deref().unwrap_or("null")).expect("params");
    assert_eq!(
        params["log_entry_id"], second.entry.id,
        "the audit row names its entry"
    );
}

/// The log is insert-only and pages newest first; the feed holds global entries alone.
pub async fn log_pages_newest_first_and_the_feed_is_global_only<S: Store>(store: &S) {
    let mut ids = Vec::new();
    for minute in 0..5 {
        let mut c = cp("alpha", "d1", AgentStatus::Working, minute);
        if minute % 2 == 1 {
            c.visibility = Visibility::Global;
        }
        ids.push(record(store, c).await.entry.id);
    }
    let mut other = cp("beta", "b1", AgentStatus::Working, 9);
    other.visibility = Visibility::Global;
    let beta_global = record(store, other).await.entry.id;
    record(store, cp("alpha", "d2", AgentStatus::Working, 10)).await;

    let page = store
        .log_entries("alpha", "d1", None, 3)
        .await
        .expect("log");
    let got: Vec<i64> = page.iter().map(|e| e.id).collect();
    assert_eq!(got, [ids[4], ids[3], ids[2]], "newest first");
    let rest = store
        .log_entries("alpha", "d1", Some(ids[2]), 3)
        .await
        .expect("log");
    let got: Vec<i64> = rest.iter().map(|e| e.id).collect();
    assert_eq!(
        got,
        [ids[1], ids[0]],
        "the next page starts below the cursor"
    );
    assert!(
        store
            .log_entries("alpha", "nobody", None, 3)
            .await
            .expect("log")
            .is_empty()
    );
    assert!(
        store
            .log_entries("beta", "d1", None, 3)
            .await
            .expect("log")
            .is_empty()
    );

    let oldest = rest.last().expect("oldest").clone();
    assert_eq!(
        oldest.summary.as_deref(),
        Some("summary 0"),
        "entries never change"
    );

    let feed = store.global_entries(None, None, 10).await.expect("feed");
    let got: Vec<(String, i64)> = feed.iter().map(|e| (e.namespace.clone(), e.id)).collect();
    assert_eq!(
        got,
        [
            ("beta".to_owned(), beta_global),
            ("alpha".into(), ids[3]),
            ("alpha".into(), ids[1])
        ]
    );
    assert!(feed.iter().all(|e| e.visibility == Visibility::Global));
    let alpha_only = store
        .global_entries(Some("alpha"), None, 10)
        .await
        .expect("feed");
    assert_eq!(
        alpha_only.iter().map(|e| e.id).collect::<Vec<_>>(),
        [ids[3], ids[1]]
    );
    let below = store
        .global_entries(None, Some(ids[3]), 10)
        .await
        .expect("feed");
    assert_eq!(below.iter().map(|e| e.id).collect::<Vec<_>>(), [ids[1]]);
    assert_eq!(
        store
            .global_entries(None, None, 1)
            .await
            .expect("feed")
            .len(),
        1
    );
}

/// An answer fills the asking entry once, keyed on the checkmark's status and entry; a lost
/// guard writes nothing at all; a resume is keyed the same way and a checkpoint clears it.
pub async fn answers_fill_the_asking_entry_once_and_resumes_are_keyed<S: Store>(store: &S) {
    let asked = record(store, cp("alpha", "d1", AgentStatus::PausedForInput, 0)).await;
    let audits = audit_count(store).await;
    let answered = store
        .transition_checkmark(answer(
            &asked,
            AgentStatus::PausedForInput,
            "use Postgres",
            false,
            1,
        ))
        .await
        .expect("answer")
        .expect("the first answer stands");
    assert_eq!(answered.checkmark.status, AgentStatus::PausedForInput);
    assert_eq!(answered.entry.answer.as_deref(), Some("use Postgres"));
    assert_eq!(answered.entry.answered_by.as_deref(), Some("github:owner"));
    assert_eq!(answered.entry.answered_at, Some(at(1)));
    assert_eq!(
        answered.checkmark.resume_requested_at, None,
        "answered, not resumed"
    );
    assert_eq!(audit_count(store).await, audits + 1);

    let again = store
        .transition_checkmark(answer(
            &asked,
            AgentStatus::PausedForInput,
            "use SQLite",
            false,
            2,
        ))
        .await
        .expect("answer");
    assert_eq!(again, None, "an entry is answered once");
    let kept = store
        .checkmark("alpha", "d1")
        .await
        .expect("read")
        .expect("mark");
    assert_eq!(kept.entry.answer.as_deref(), Some("use Postgres"));
    assert_eq!(audit_count(store).await, audits + 1, "nothing written");

    let resume = |from: AgentStatus, when: i64| CheckmarkTransition {
        namespace: "alpha".into(),
        agent: "d1".into(),
        step: Step {
            from,
            to: AgentStatus::Working,
            event: CheckmarkEvent::Resume,
        },
        entry_id: asked.entry.id,
        answer: None,
        resume_by: Some("agent:b2".into()),
        at: at(when),
        audit: plain_audit(
            "checkmark-resume-requested",
            Some("alpha"),
            "checkmarks/d1",
            at(when),
        ),
    };
    let resumed = store
        .transition_checkmark(resume(AgentStatus::PausedForInput, 3))
        .await
        .expect("resume")
        .expect("resumed");
    assert_eq!(resumed.checkmark.status, AgentStatus::Working);
    assert_eq!(resumed.checkmark.resume_requested_at, Some(at(3)));
    assert_eq!(
        resumed.checkmark.resume_requested_by.as_deref(),
        Some("agent:b2")
    );
    assert_eq!(
        resumed.entry.answer.as_deref(),
        Some("use Postgres"),
        "with its answer"
    );
    assert_eq!(
        store
            .transition_checkmark(resume(AgentStatus::PausedForInput, 4))
            .await
            .expect("resume"),
        None,
        "keyed on the status it left"
    );
    assert_eq!(audit_count(store).await, audits + 2);

    // The checkmark moved on: an answer to the old entry fills nothing (the entry guard
    // passes but the checkmark's does not, so the whole unit rolls back).
    let old = record(store, cp("alpha", "d1", AgentStatus::Blocked, 5)).await;
    assert_eq!(
        old.checkmark.resume_requested_at, None,
        "a checkpoint clears the resume"
    );
    record(store, cp("alpha", "d1", AgentStatus::PausedForInput, 6)).await;
    let audits = audit_count(store).await;
    let stale = store
        .transition_checkmark(answer(&old, AgentStatus::Blocked, "too late", false, 7))
        .await
        .expect("answer");
    assert_eq!(stale, None);
    let entries = store
        .log_entries("alpha", "d1", None, 10)
        .await
        .expect("log");
    let old_entry = entries
        .iter()
        .find(|e| e.id == old.entry.id)
        .expect("old entry");
    assert_eq!(
        old_entry.answer, None,
        "all or nothing: the entry was not filled"
    );
    assert_eq!(audit_count(store).await, audits);

    // An entry that asked nothing takes no answer.
    let silent = record(store, cp("alpha", "d2", AgentStatus::Working, 8)).await;
    let none = store
        .transition_checkmark(answer(&silent, AgentStatus::Working, "unasked", false, 9))
        .await
        .expect("answer");
    assert_eq!(none, None);

    // Answer and resume in one step.
    let current = store
        .checkmark("alpha", "d1")
        .await
        .expect("read")
        .expect("mark");
    let both = store
        .transition_checkmark(answer(
            &current,
            AgentStatus::PausedForInput,
            "go on",
            true,
            10,
        ))
        .await
        .expect("answer")
        .expect("answered and resumed");
    assert_eq!(both.checkmark.status, AgentStatus::Working);
    assert_eq!(both.entry.answer.as_deref(), Some("go on"));
    assert_eq!(
        both.checkmark.resume_requested_by.as_deref(),
        Some("github:owner")
    );
}

/// Two people answer the same question at once: exactly one answer lands.
pub async fn answer_race_has_one_winner<S: Store + 'static>(store: Arc<S>) {
    for round in 0..10 {
        let agent = format!("r{round}");
        let asked = record(
            &*store,
            cp("alpha", &agent, AgentStatus::PausedForInput, round),
        )
        .await;
        let audits = audit_count(&*store).await;
        let gate = Arc::new(Barrier::new(2));
        let mut tasks = Vec::new();
        for who in 0..2 {
            let (store, gate) = (store.clone(), gate.clone());
            let t = answer(
                &asked,
                AgentStatus::PausedForInput,
                &format!("answer {who}"),
                who == 1,
                100,
            );
            tasks.push(tokio::spawn(async move {
                gate.wait().await;
                store.transition_checkmark(t).await.expect("answer")
            }));
        }
        let mut landed = Vec::new();
        for task in tasks {
            if let Some(v) = task.await.expect("answerer") {
                landed.push(v.entry.answer.clone());
            }
        }
        assert_eq!(landed.len(), 1, "round {round}: one answer lands");
        let now = store
            .checkmark("alpha", &agent)
            .await
            .expect("read")
            .expect("mark");
        assert_eq!(now.entry.answer, landed[0]);
        assert_eq!(audit_count(&*store).await, audits + 1);
    }
}

/// The shared context: last writer wins, each set and delete audited, a missing key deleted
/// writes nothing.
pub async fn shared_context_last_writer_wins_with_audit<S: Store>(store: &S) {
    let audits = audit_count(store).await;
    let entry = |key: &str, value: &str, by: &str, when: i64| SharedEntry {
        key: key.into(),
        value: value.into(),
        set_by: by.into(),
        updated_at: at(when),
    };
    let first = store
        .set_shared(
            entry("staging-url", "https://a", "agent:a", 0),
            plain_audit("shared-set", None, "staging-url", at(0)),
        )
        .await
        .expect("set");
    assert_eq!(first, None);
    let previous = store
        .set_shared(
            entry("staging-url", "https://b", "agent:b", 1),
            plain_audit("shared-set", None, "staging-url", at(1)),
        )
        .await
        .expect("set");
    assert_eq!(
        previous,
        Some(entry("staging-url", "https://a", "agent:a", 0))
    );
    store
        .set_shared(
            entry("schema.version", "5", "agent:a", 2),
            plain_audit("shared-set", None, "schema.version", at(2)),
        )
        .await
        .expect("set");
    assert_eq!(
        store.shared_entry("staging-url").await.expect("get"),
        Some(entry("staging-url", "https://b", "agent:b", 1)),
        "the last writer wins"
    );
    assert_eq!(store.shared_entry("missing").await.expect("get"), None);
    let keys: Vec<String> = store
        .shared_entries(10)
        .await
        .expect("list")
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(keys, ["schema.version", "staging-url"], "in key order");
    assert_eq!(store.shared_entries(1).await.expect("list").len(), 1);
    let gone = store
        .delete_shared(
            "staging-url",
            plain_audit("shared-delete", None, "staging-url", at(3)),
        )
        .await
        .expect("delete");
    assert_eq!(gone, Some(entry("staging-url", "https://b", "agent:b", 1)));
    assert_eq!(audit_count(store).await, audits + 4);
    let none = store
        .delete_shared(
            "staging-url",
            plain_audit("shared-delete", None, "staging-url", at(4)),
        )
        .await
        .expect("delete");
    assert_eq!(none, None);
    assert_eq!(
        audit_count(store).await,
        audits + 4,
        "nothing to delete, nothing audited"
    );
    assert_eq!(store.shared_entry("staging-url").await.expect("get"), None);
}
