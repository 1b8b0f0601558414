//! Agents (collisions named, keyed revoke and re-scope), settings with expiry and
//! compare-and-set, the replay cache, leader leases, skills and improve totals.

use crate::common::{at, audit, store};
use capsid_core::ports::{
    AgentStore, ImproveStore, LeaderLease, NewAgent, SettingsStore, SkillEvaluationRow, SkillRow,
    SkillStore, StoreError,
};

fn agent(id: &str, name: &str, key: &str) -> NewAgent {
    NewAgent {
        id: id.to_owned(),
        name: name.to_owned(),
        kind: capsid_core::caller::AgentKind::Driver,
        key_hash: key.to_owned(),
        scopes: r#"{"grant":"read"}"#.to_owned(),
        created_by: "github:owner".to_owned(),
        at: at(0),
    }
}

#[tokio::test]
async fn agents_mint_revoke_and_rescope() {
    let (_dir, store) = store().await;
    let minted = store
        .mint_agent(
            agent("agent_1", "d1", "k1"),
            audit("agent-minted", "agents", "d1", at(0)),
        )
        .await;
    assert_eq!(minted.unwrap().revoked_at, None);
    let same_name = store
        .mint_agent(
            agent("agent_2", "d1", "k2"),
            audit("m", "agents", "d1", at(0)),
        )
        .await;
    assert!(
        matches!(same_name, Err(StoreError::Conflict(ref m)) if m.contains("named 'd1'")),
        "{same_name:?}"
    );
    let same_key = store
        .mint_agent(
            agent("agent_3", "d3", "k1"),
            audit("m", "agents", "d3", at(0)),
        )
        .await;
    assert!(
        matches!(same_key, Err(StoreError::Conflict(ref m)) if m.contains("key")),
        "{same_key:?}"
    );

    let rescoped = store.rescope_agent(
        "agent_1",
        r#"{"grant":"read"}"#,
        r#"{"grant":"write"}"#,
        audit("r", "agents", "d1", at(1)),
    );
    assert_eq!(
        rescoped.await.unwrap().unwrap().scopes,
        r#"{"grant":"write"}"#
    );
    let stale = store
        .rescope_agent(
            "agent_1",
            r#"{"grant":"read"}"#,
            "{}",
            audit("r", "agents", "d1", at(1)),
        )
        .await;
    assert_eq!(stale.unwrap(), None);

    store.touch_agent("agent_1", at(5)).await.unwrap();
    store.touch_agent("agent_1", at(4)).await.unwrap();
    store.touch_agent("agent_missing", at(4)).await.unwrap();
    assert_eq!(
        store
            .agent_by_key_hash("k1")
            .await
            .unwrap()
            .unwrap()
            .last_seen,
        Some(at(5))
    );

    let revoked = store
        .revoke_agent(
            "agent_1",
            at(6),
            audit("agent-revoked", "agents", "d1", at(6)),
        )
        .await
        .unwrap();
    assert_eq!(revoked.unwrap().revoked_at, Some(at(6)));
    assert_eq!(
        store
            .revoke_agent("agent_1", at(7), audit("x", "agents", "d1", at(7)))
            .await
            .unwrap(),
        None
    );
    assert!(
        store
            .agent_by_name("d1")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_some()
    );
    let newer = NewAgent {
        at: at(9),
        ..agent("agent_4", "d4", "k4")
    };
    store
        .mint_agent(newer, audit("m", "agents", "d4", at(9)))
        .await
        .unwrap();
    let names: Vec<_> = store
        .agents()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, ["d4", "d1"]);
}

#[tokio::test]
async fn settings_expire_and_compare_and_set() {
    let (_dir, store) = store().await;
    store.put_setting("mode", "on", Some(at(10))).await.unwrap();
    assert_eq!(
        store.setting("mode", at(9)).await.unwrap().as_deref(),
        Some("on")
    );
    assert_eq!(
        store.setting("mode", at(10)).await.unwrap(),
        None,
        "expired at its expiry"
    );
    // An expired value is absent for compare-and-set too.
    assert!(
        !store
            .compare_and_set_setting("mode", Some("on"), Some("off"), None, at(11))
            .await
            .unwrap()
    );
    assert!(
        store
            .compare_and_set_setting("mode", None, Some("off"), None, at(11))
            .await
            .unwrap()
    );
    assert!(
        !store
            .compare_and_set_setting("mode", None, Some("x"), None, at(12))
            .await
            .unwrap()
    );
    assert!(
        store
            .compare_and_set_setting("mode", Some("off"), None, None, at(12))
            .await
            .unwrap()
    );
    assert_eq!(store.setting("mode", at(12)).await.unwrap(), None);
    store.put_setting("k", "v", None).await.unwrap();
    store.delete_setting("k").await.unwrap();
    assert_eq!(store.setting("k", at(0)).await.unwrap(), None);

    assert!(store.claim_nonce("ns", "jti-1", at(0)).await.unwrap());
    assert!(!store.claim_nonce("ns", "jti-1", at(1)).await.unwrap());
    assert!(store.claim_nonce("backup", "jti-1", at(1)).await.unwrap());
}

#[tokio::test]
async fn leader_leases_go_to_one_holder_at_a_time() {
    let (_dir, store) = store().await;
    assert!(
        store
            .acquire_lease("tick", "a", at(0), at(60))
            .await
            .unwrap()
    );
    assert!(
        !store
            .acquire_lease("tick", "b", at(30), at(90))
            .await
            .unwrap()
    );
    assert!(
        store
            .acquire_lease("tick", "a", at(30), at(90))
            .await
            .unwrap(),
        "renewal"
    );
    assert!(
        !store
            .acquire_lease("tick", "b", at(89), at(120))
            .await
            .unwrap()
    );
    assert!(
        store
            .acquire_lease("tick", "b", at(90), at(120))
            .await
            .unwrap(),
        "expired at its expiry"
    );
    store.release_lease("tick", "a").await.unwrap();
    assert!(
        !store
            .acquire_lease("tick", "a", at(91), at(120))
            .await
            .unwrap(),
        "a released nothing it held"
    );
    store.release_lease("tick", "b").await.unwrap();
    assert!(
        store
            .acquire_lease("tick", "a", at(91), at(120))
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn skills_and_improve_totals() {
    let (_dir, store) = store().await;
    let skill = SkillRow {
        id: "sk1".into(),
        source_namespace: "n".into(),
        title: "Skill".into(),
        body_ref: "improve/skills/sk1.md".into(),
        version: 1,
        status: "candidate".into(),
        wins: 0,
        losses: 0,
        trigger_condition: None,
        namespaces: None,
    };
    store
        .insert_skill(skill.clone(), at(0), audit("skill", "n", "x", at(0)))
        .await
        .unwrap();
    let twice = store
        .insert_skill(skill.clone(), at(0), audit("skill", "n", "x", at(0)))
        .await;
    assert!(matches!(twice, Err(StoreError::Conflict(_))), "{twice:?}");
    assert_eq!(store.skills(Some("candidate")).await.unwrap(), [skill]);
    assert!(
        store
            .set_skill_status(
                "sk1",
                "candidate",
                "live",
                at(1),
                audit("s", "n", "x", at(1))
            )
            .await
            .unwrap()
    );
    assert!(
        !store
            .set_skill_status(
                "sk1",
                "candidate",
                "retired",
                at(2),
                audit("s", "n", "x", at(2))
            )
            .await
            .unwrap()
    );
    assert!(store.skills(Some("candidate")).await.unwrap().is_empty());
    for (version, when) in [
        (1, "2026-01-01T00:00:00.000Z"),
        (2, "2026-02-01T00:00:00.000Z"),
    ] {
        let evaluation = SkillEvaluationRow {
            skill: "sk1".into(),
            version,
            namespace: "n".into(),
            probe_set_version: "p1".into(),
            delta: 0.5,
            runs: 3,
            verdict: "positive".into(),
            evaluated_at: capsid_core::time::Timestamp::parse(when).expect("instant"),
        };
        store
            .record_evaluation(evaluation, audit("s", "n", "x", at(3)))
            .await
            .unwrap();
    }
    let versions: Vec<_> = store
        .evaluations("sk1")
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.version)
        .collect();
    assert_eq!(versions, [2, 1]);
    assert!(store.run_totals(None).await.unwrap().is_empty());
    assert!(store.run_totals(Some(at(0))).await.unwrap().is_empty());
}
