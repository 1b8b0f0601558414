//! Conformance cases for settings (expiry by the passed `now`, compare-and-set), the replay
//! cache, the leader lease, the improve and skill tables, and the health probes.

use capsid_core::ports::{Expect, SettingChange, SkillEvaluationRow, SkillRow, Store};

use super::support::{at, audit, audit_count, put, write};

/// A change someone asked for: every expectation holds, then every change and the audit row
/// commit together; one failed expectation writes nothing at all (no value, no row).
pub async fn settings_change_with_its_audit_row<S: Store>(store: &S) {
    store
        .put_setting("lease", "agent:a", None)
        .await
        .expect("put");
    let audits = audit_count(store).await;
    let refused = [
        SettingChange::put("pause:x", "holiday"),
        SettingChange {
            key: "lease".into(),
            expected: Expect::Value(Some("agent:b".into())),
            value: Some("agent:c".into()),
            expires_at: Some(at(60)),
        },
    ];
    let applied = store
        .change_settings(
            &refused,
            audit("agent:c", "improve-claim", "x", "-", at(1)),
            at(1),
        )
        .await
        .expect("change");
    assert!(!applied, "the lease is agent:a's, not agent:b's");
    assert_eq!(
        store.setting("pause:x", at(1)).await.expect("get"),
        None,
        "nothing applied"
    );
    assert_eq!(
        store.setting("lease", at(1)).await.expect("get").as_deref(),
        Some("agent:a")
    );
    assert_eq!(
        audit_count(store).await,
        audits,
        "no audit row for a change that did not happen"
    );

    let taken = [
        SettingChange::put("pause:x", "holiday"),
        SettingChange::delete("pause:y"),
        SettingChange {
            key: "lease".into(),
            expected: Expect::Value(Some("agent:a".into())),
            value: Some("agent:c".into()),
            expires_at: Some(at(60)),
        },
        SettingChange {
            key: "fresh".into(),
            expected: Expect::Value(None),
            value: Some("v".into()),
            expires_at: None,
        },
    ];
    assert!(
        store
            .change_settings(
                &taken,
                audit("agent:c", "improve-claim", "x", "-", at(2)),
                at(2)
            )
            .await
            .expect("change")
    );
    assert_eq!(
        store
            .setting("pause:x", at(2))
            .await
            .expect("get")
            .as_deref(),
        Some("holiday")
    );
    assert_eq!(
        store
            .setting("lease", at(59))
            .await
            .expect("get")
            .as_deref(),
        Some("agent:c")
    );
    assert_eq!(
        store.setting("lease", at(60)).await.expect("get"),
        None,
        "it expires"
    );
    assert_eq!(
        store.setting("fresh", at(2)).await.expect("get").as_deref(),
        Some("v")
    );
    assert_eq!(
        audit_count(store).await,
        audits + 1,
        "one row for the whole change"
    );
}

/// Put, get, expiry judged at the passed `now`, delete.
pub async fn settings_put_get_expire_delete<S: Store>(store: &S) {
    assert_eq!(store.setting("k", at(0)).await.expect("get"), None);
    store.put_setting("k", "v1", None).await.expect("put");
    assert_eq!(
        store.setting("k", at(0)).await.expect("get").as_deref(),
        Some("v1")
    );
    assert_eq!(
        store.setting("K", at(0)).await.expect("get"),
        None,
        "keys are case-sensitive"
    );
    store
        .put_setting("k", "v2", Some(at(10)))
        .await
        .expect("put");
    assert_eq!(
        store.setting("k", at(9)).await.expect("get").as_deref(),
        Some("v2")
    );
    assert_eq!(
        store.setting("k", at(11)).await.expect("get"),
        None,
        "expired reads as absent"
    );
    store.put_setting("k", "v3", None).await.expect("put");
    assert_eq!(
        store
            .setting("k", at(1_000_000))
            .await
            .expect("get")
            .as_deref(),
        Some("v3"),
        "a put without expiry clears it"
    );
    store.put_setting("other", "x", None).await.expect("put");
    store.delete_setting("k").await.expect("delete");
    assert_eq!(store.setting("k", at(0)).await.expect("get"), None);
    assert_eq!(
        store.setting("other", at(0)).await.expect("get").as_deref(),
        Some("x")
    );
    store
        .delete_setting("never-set")
        .await
        .expect("deleting an absent key is fine");
    let long = "x".repeat(100_000);
    store.put_setting("long", &long, None).await.expect("put");
    assert_eq!(store.setting("long", at(0)).await.expect("get"), Some(long));
}

/// Compare-and-set against absent, present and expired values.
pub async fn settings_compare_and_set<S: Store>(store: &S) {
    let cas = |expected: Option<&'static str>,
               new: Option<&'static str>,
               expires: Option<i64>,
               now: i64| async move {
        store
            .compare_and_set_setting("lease", expected, new, expires.map(at), at(now))
            .await
            .expect("cas")
    };
    assert!(
        !cas(Some("a"), Some("b"), None, 0).await,
        "expected a value, found none"
    );
    assert_eq!(store.setting("lease", at(0)).await.expect("get"), None);
    assert!(
        cas(None, Some("a"), Some(10), 0).await,
        "absent matches None"
    );
    assert!(
        !cas(None, Some("b"), Some(10), 1).await,
        "present does not match None"
    );
    assert!(
        !cas(Some("A"), Some("b"), Some(10), 1).await,
        "values compare exactly"
    );
    assert_eq!(
        store.setting("lease", at(1)).await.expect("get").as_deref(),
        Some("a")
    );
    assert!(cas(Some("a"), Some("b"), Some(20), 2).await);
    assert_eq!(
        store.setting("lease", at(2)).await.expect("get").as_deref(),
        Some("b")
    );
    assert!(
        !cas(Some("b"), Some("c"), None, 21).await,
        "an expired value does not match itself"
    );
    assert!(
        cas(None, Some("c"), None, 21).await,
        "an expired value is absent"
    );
    assert_eq!(
        store
            .setting("lease", at(500))
            .await
            .expect("get")
            .as_deref(),
        Some("c")
    );
    assert!(cas(Some("c"), None, None, 22).await, "None deletes");
    assert_eq!(store.setting("lease", at(22)).await.expect("get"), None);
    assert!(!cas(Some("c"), Some("d"), None, 23).await);
}

/// The replay cache answers `true` once per `(scope, jti)`.
pub async fn nonce_is_claimed_once<S: Store>(store: &S) {
    assert!(
        store
            .claim_nonce("proj", "jti-1", at(0))
            .await
            .expect("claim")
    );
    assert!(
        !store
            .claim_nonce("proj", "jti-1", at(1))
            .await
            .expect("claim")
    );
    assert!(
        !store
            .claim_nonce("proj", "jti-1", at(100_000))
            .await
            .expect("claim")
    );
    assert!(
        store
            .claim_nonce("backup", "jti-1", at(1))
            .await
            .expect("claim"),
        "scopes are separate"
    );
    assert!(
        store
            .claim_nonce("proj", "JTI-1", at(1))
            .await
            .expect("claim"),
        "jtis are case-sensitive"
    );
}

/// A lease is taken when free or expired, renewed by its holder, refused to others, released.
pub async fn leader_lease_acquire_renew_release<S: Store>(store: &S) {
    assert!(
        store
            .acquire_lease("tick", "replica-a", at(0), at(5))
            .await
            .expect("acquire")
    );
    assert!(
        !store
            .acquire_lease("tick", "replica-b", at(1), at(6))
            .await
            .expect("acquire"),
        "held by another"
    );
    assert!(
        store
            .acquire_lease("tick", "replica-a", at(4), at(9))
            .await
            .expect("renew"),
        "the holder renews"
    );
    assert!(
        !store
            .acquire_lease("tick", "replica-b", at(8), at(13))
            .await
            .expect("acquire"),
        "renewed until 9"
    );
    assert!(
        store
            .acquire_lease("backup", "replica-b", at(8), at(13))
            .await
            .expect("acquire"),
        "leases are per name"
    );
    assert!(
        store
            .acquire_lease("tick", "replica-b", at(10), at(15))
            .await
            .expect("acquire"),
        "expired at 10"
    );
    assert!(
        !store
            .acquire_lease("tick", "replica-a", at(11), at(16))
            .await
            .expect("acquire")
    );
    store
        .release_lease("tick", "replica-a")
        .await
        .expect("release by a non-holder is a no-op");
    assert!(
        !store
            .acquire_lease("tick", "replica-a", at(11), at(16))
            .await
            .expect("acquire"),
        "still b's"
    );
    store
        .release_lease("tick", "replica-b")
        .await
        .expect("release");
    assert!(
        store
            .acquire_lease("tick", "replica-a", at(11), at(16))
            .await
            .expect("acquire"),
        "free after release"
    );
}

fn skill(id: &str, status: &str) -> SkillRow {
    SkillRow {
        id: id.into(),
        source_namespace: "proj".into(),
        title: format!("Skill {id}"),
        body_ref: format!("improve/skills/{id}.md"),
        version: 1,
        status: status.into(),
        wins: 0,
        losses: 0,
        trigger_condition: None,
        namespaces: None,
    }
}

/// Skills: insert, list by status, keyed status change, evaluations newest first; run totals.
pub async fn skills_and_improve_totals<S: Store>(store: &S) {
    assert_eq!(store.run_totals(None).await.expect("totals"), vec![]);
    assert_eq!(store.run_totals(Some(at(0))).await.expect("totals"), vec![]);
    for id in ["s1", "s2", "s3"] {
        store
            .insert_skill(
                skill(id, "candidate"),
                at(0),
                audit("improve-loop", "skill-added", "proj", id, at(0)),
            )
            .await
            .expect("insert");
    }
    assert_eq!(audit_count(store).await, 3);
    let mut all = store.skills(None).await.expect("skills");
    all.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(
        all,
        vec![
            skill("s1", "candidate"),
            skill("s2", "candidate"),
            skill("s3", "candidate")
        ]
    );
    assert!(
        store
            .set_skill_status(
                "s2",
                "candidate",
                "live",
                at(1),
                audit("improve-loop", "skill-live", "proj", "s2", at(1))
            )
            .await
            .expect("status")
    );
    assert!(
        !store
            .set_skill_status(
                "s2",
                "candidate",
                "retired",
                at(2),
                audit("improve-loop", "skill-retired", "proj", "s2", at(2))
            )
            .await
            .expect("status"),
        "keyed on the old status"
    );
    assert!(
        !store
            .set_skill_status(
                "nope",
                "candidate",
                "live",
                at(2),
                audit("improve-loop", "skill-live", "proj", "nope", at(2))
            )
            .await
            .expect("status")
    );
    let live = store.skills(Some("live")).await.expect("skills");
    assert_eq!(live, vec![skill("s2", "live")]);
    assert_eq!(
        store.skills(Some("candidate")).await.expect("skills").len(),
        2
    );
    assert_eq!(store.skills(Some("retired")).await.expect("skills"), vec![]);
    // Several statuses in one read: grouped in the order asked, newest first (then by id)
    // within each.
    for (statuses, want) in [
        (&["live", "candidate"][..], &["s2", "s1", "s3"][..]),
        (&["candidate", "live"][..], &["s1", "s3", "s2"][..]),
        (&["retired", "live"][..], &["s2"][..]),
    ] {
        let got: Vec<String> = store
            .skills_in(statuses)
            .await
            .expect("skills")
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(got, want, "skills_in({statuses:?})");
    }
    assert_eq!(store.skills_in(&[]).await.expect("skills"), vec![]);

    for (i, verdict) in ["neutral", "positive", "negative"].into_iter().enumerate() {
        store
            .record_evaluation(
                SkillEvaluationRow {
                    skill: "s2".into(),
                    version: 1,
                    namespace: "proj".into(),
                    probe_set_version: "p1".into(),
                    delta: 0.25 * i as f64 - 0.125,
                    runs: 3 + i as i64,
                    verdict: verdict.into(),
                    evaluated_at: at(10 + i as i64),
                },
                audit(
                    "improve-loop",
                    "skill-evaluated",
                    "proj",
                    "s2",
                    at(10 + i as i64),
                ),
            )
            .await
            .expect("evaluation");
    }
    let evals = store.evaluations("s2").await.expect("evaluations");
    let got: Vec<(&str, f64, i64)> = evals
        .iter()
        .map(|e| (e.verdict.as_str(), e.delta, e.runs))
        .collect();
    assert_eq!(
        got,
        [
            ("negative", 0.375, 5),
            ("positive", 0.125, 4),
            ("neutral", -0.125, 3)
        ],
        "newest first"
    );
    assert_eq!(evals[0].evaluated_at, at(12));
    assert_eq!(store.evaluations("s1").await.expect("evaluations"), vec![]);
}

/// Ping, the newest migration name, and the full-text probe.
pub async fn health_probes<S: Store>(store: &S) {
    store.ping().await.expect("ping");
    assert_eq!(
        store.schema_version().await.expect("schema version"),
        Some(crate::harness::newest_migration())
    );
    assert_eq!(
        store.newest_migration(),
        Some(crate::harness::newest_migration()),
        "the newest migration this build carries is the one applied"
    );
    assert_eq!(store.fts_probe("capybara").await.expect("probe"), 0);
    for (i, body) in [
        "a capybara",
        "two capybara friends",
        "none here",
        "Capybara!",
    ]
    .into_iter()
    .enumerate()
    {
        put(
            store,
            write("proj", &format!("{i}.md"), None, Some(body), at(i as i64)),
        )
        .await;
    }
    put(
        store,
        write(
            "other",
            "t.md",
            Some("Capybara facts"),
            Some("title only"),
            at(9),
        ),
    )
    .await;
    assert_eq!(store.fts_probe("capybara").await.expect("probe"), 4);
}

/// The server's own decisions (a tick's audit rows with the list they explain): every row and
/// every change in one transaction; a failed expectation writes no row and no change; no
/// changes at all still appends the rows.
pub async fn settings_change_with_many_audit_rows<S: Store>(store: &S) {
    let audits = audit_count(store).await;
    let rows = [
        audit("improve-loop", "auto-merged", "alpha", "pulls/1", at(1)),
        audit(
            "improve-loop",
            "auto-merge-declined",
            "alpha",
            "pulls/2",
            at(1),
        ),
    ];
    let stale = [SettingChange {
        key: "improve:awaiting-seat".into(),
        expected: Expect::Value(Some("[]".into())),
        value: Some("[{}]".into()),
        expires_at: None,
    }];
    assert!(
        !store
            .change_settings_audited(&stale, &rows, at(1))
            .await
            .expect("change"),
        "the list was never []"
    );
    assert_eq!(
        audit_count(store).await,
        audits,
        "no row without its change"
    );
    let fresh = [SettingChange {
        key: "improve:awaiting-seat".into(),
        expected: Expect::Value(None),
        value: Some("[]".into()),
        expires_at: None,
    }];
    assert!(
        store
            .change_settings_audited(&fresh, &rows, at(2))
            .await
            .expect("change")
    );
    assert_eq!(audit_count(store).await, audits + 2);
    assert_eq!(
        store
            .setting("improve:awaiting-seat", at(2))
            .await
            .expect("get")
            .as_deref(),
        Some("[]")
    );
    assert!(
        store
            .change_settings_audited(&[], &rows[..1], at(3))
            .await
            .expect("rows alone")
    );
    assert_eq!(audit_count(store).await, audits + 3);
}
