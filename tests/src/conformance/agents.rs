//! Conformance cases for agent credentials: mint, lookups by key hash and name (revoked
//! too), names never reused, keyed revoke and re-scope, each audited with its change.

use capsid_core::caller::AgentKind;
use capsid_core::ports::{AgentRow, NewAgent, Store, StoreError};

use super::support::{at, audit, audit_count};

fn new_agent(n: u8, name: &str, when: i64) -> NewAgent {
    NewAgent {
        id: format!("agent_{n:012x}"),
        name: name.into(),
        kind: AgentKind::Driver,
        key_hash: format!("ab{n:02x}").repeat(16),
        scopes: format!(r#"{{"namespaces":["proj"],"n":{n}}}"#),
        created_by: "github:owner".into(),
        at: at(when),
    }
}

/// Mint, lookups (revoked too), names never reused, keyed revoke and re-scope.
pub async fn agents_mint_lookup_revoke_rescope<S: Store>(store: &S) {
    let first = new_agent(1, "proj-driver", 0);
    let row = store
        .mint_agent(
            first.clone(),
            audit(
                "github:owner",
                "agent-minted",
                "agents",
                "proj-driver",
                at(0),
            ),
        )
        .await
        .expect("mint");
    let want = AgentRow {
        id: first.id.clone(),
        name: first.name.clone(),
        kind: AgentKind::Driver,
        key_hash: first.key_hash.clone(),
        scopes: first.scopes.clone(),
        created_by: "github:owner".into(),
        created_at: at(0),
        revoked_at: None,
        last_seen: None,
    };
    assert_eq!(row, want);
    assert_eq!(
        store
            .agent_by_key_hash(&first.key_hash)
            .await
            .expect("lookup"),
        Some(want.clone())
    );
    assert_eq!(
        store.agent_by_name("proj-driver").await.expect("lookup"),
        Some(want.clone())
    );
    assert_eq!(
        store
            .agent_by_key_hash(&"ff".repeat(32))
            .await
            .expect("lookup"),
        None
    );
    assert!(first.key_hash.chars().any(|c| c.is_ascii_lowercase()));
    assert_eq!(
        store
            .agent_by_key_hash(&first.key_hash.to_uppercase())
            .await
            .expect("lookup"),
        None
    );

    let audits = audit_count(store).await;
    for clash in [
        new_agent(2, "proj-driver", 1),
        NewAgent {
            key_hash: first.key_hash.clone(),
            ..new_agent(3, "other", 1)
        },
        NewAgent {
            id: first.id.clone(),
            ..new_agent(4, "fresh", 1)
        },
    ] {
        let err = store
            .mint_agent(
                clash.clone(),
                audit("github:owner", "agent-minted", "agents", &clash.name, at(1)),
            )
            .await
            .expect_err("clash");
        assert!(matches!(err, StoreError::Conflict(_)), "{clash:?}: {err:?}");
    }
    assert_eq!(
        audit_count(store).await,
        audits,
        "refused mints are not audited"
    );

    store
        .mint_agent(
            new_agent(5, "b-seat", 2),
            audit("github:owner", "agent-minted", "agents", "b-seat", at(2)),
        )
        .await
        .expect("mint");
    store
        .mint_agent(
            new_agent(6, "a-seat", 2),
            audit("github:owner", "agent-minted", "agents", "a-seat", at(2)),
        )
        .await
        .expect("mint");
    let names: Vec<String> = store
        .agents()
        .await
        .expect("agents")
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(
        names,
        ["a-seat", "b-seat", "proj-driver"],
        "newest first, then by name"
    );

    store.touch_agent(&first.id, at(3)).await.expect("touch");
    assert_eq!(
        store
            .agent_by_name("proj-driver")
            .await
            .expect("lookup")
            .expect("row")
            .last_seen,
        Some(at(3))
    );

    let rescoped = store
        .rescope_agent(
            &first.id,
            &first.scopes,
            r#"{"namespaces":["*"]}"#,
            audit(
                "github:owner",
                "agent-rescoped",
                "agents",
                "proj-driver",
                at(4),
            ),
        )
        .await
        .expect("rescope");
    assert_eq!(
        rescoped.map(|a| a.scopes),
        Some(r#"{"namespaces":["*"]}"#.to_owned())
    );
    let audits = audit_count(store).await;
    let stale = store
        .rescope_agent(
            &first.id,
            &first.scopes,
            r#"{"namespaces":[]}"#,
            audit(
                "github:owner",
                "agent-rescoped",
                "agents",
                "proj-driver",
                at(5),
            ),
        )
        .await
        .expect("rescope");
    assert_eq!(stale, None, "keyed on the expected scopes");
    assert_eq!(
        audit_count(store).await,
        audits,
        "a lost re-scope is not audited"
    );

    let revoked = store
        .revoke_agent(
            &first.id,
            at(6),
            audit(
                "github:owner",
                "agent-revoked",
                "agents",
                "proj-driver",
                at(6),
            ),
        )
        .await
        .expect("revoke");
    let revoked = revoked.expect("first revoke wins");
    assert_eq!(
        (revoked.revoked_at, revoked.scopes.as_str()),
        (Some(at(6)), r#"{"namespaces":["*"]}"#)
    );
    let audits = audit_count(store).await;
    assert_eq!(
        store
            .revoke_agent(
                &first.id,
                at(7),
                audit(
                    "github:owner",
                    "agent-revoked",
                    "agents",
                    "proj-driver",
                    at(7)
                )
            )
            .await
            .expect("revoke"),
        None
    );
    assert_eq!(
        audit_count(store).await,
        audits,
        "a lost revoke is not audited"
    );
    assert_eq!(
        store
            .agent_by_key_hash(&first.key_hash)
            .await
            .expect("lookup")
            .and_then(|a| a.revoked_at),
        Some(at(6))
    );
    let after_revoke = store
        .rescope_agent(
            &first.id,
            r#"{"namespaces":["*"]}"#,
            "{}",
            audit(
                "github:owner",
                "agent-rescoped",
                "agents",
                "proj-driver",
                at(8),
            ),
        )
        .await
        .expect("rescope");
    assert_eq!(after_revoke, None, "a revoked agent is never re-scoped");
    let again = store
        .mint_agent(
            new_agent(7, "proj-driver", 9),
            audit(
                "github:owner",
                "agent-minted",
                "agents",
                "proj-driver",
                at(9),
            ),
        )
        .await;
    assert!(
        matches!(again, Err(StoreError::Conflict(_))),
        "a revoked name is never reused: {again:?}"
    );
    assert_eq!(
        store
            .revoke_agent(
                "agent_ffffffffffff",
                at(9),
                audit("github:owner", "agent-revoked", "agents", "x", at(9))
            )
            .await
            .expect("revoke"),
        None
    );
    assert_eq!(store.agents().await.expect("agents").len(), 3);
}
