//! Conformance cases for the owner-login port: clients expire and never collide, counters
//! count within a window and restart after it, login states are spent once, a code redeems
//! once and its replay revokes what it issued, a refresh token rotates once and its reuse
//! revokes the whole grant, console sessions end, purging keeps what is live, and of many
//! concurrent redemptions of one code exactly one wins.

use std::sync::Arc;

use capsid_core::ports::{
    CodeRow, ConsoleSessionRow, LoginStateRow, NewGrant, NewToken, OAuthClientRow, Redemption,
    Rotation, Store, StoreError, TokenKind,
};
use capsid_core::time::Timestamp;
use tokio::sync::Barrier;

use super::support::{at, audit, audit_count};

fn client(id: &str, expires: Timestamp) -> OAuthClientRow {
    OAuthClientRow {
        client_id: id.into(),
        client_name: Some("Claude \"quoted\" <b>".into()),
        redirect_uris: vec![
            "https://app.example/cb".into(),
            "http://127.0.0.1:3000/callback".into(),
        ],
        secret_hash: None,
        auth_method: "none".into(),
        created_at: at(0),
        expires_at: expires,
    }
}

fn code(hash: &str) -> CodeRow {
    CodeRow {
        code_hash: hash.into(),
        client_id: "c1".into(),
        redirect_uri: "https://app.example/cb".into(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
        resource: "https://capsid.example/mcp".into(),
        scope: "mcp".into(),
        login: "octo".into(),
        user_id: 42,
        created_at: at(0),
        expires_at: at(10),
        used_at: None,
    }
}

fn grant(id: &str, code_hash: &str) -> NewGrant {
    NewGrant {
        grant_id: id.into(),
        client_id: "c1".into(),
        login: "octo".into(),
        user_id: 42,
        resource: "https://capsid.example/mcp".into(),
        scope: "mcp".into(),
        code_hash: Some(code_hash.into()),
        created_at: at(1),
        expires_at: at(1000),
    }
}

fn pair(prefix: &str) -> Vec<NewToken> {
    vec![
        NewToken {
            token_hash: format!("{prefix}-access"),
            kind: TokenKind::Access,
            expires_at: at(61),
        },
        NewToken {
            token_hash: format!("{prefix}-refresh"),
            kind: TokenKind::Refresh,
            expires_at: at(1000),
        },
    ]
}

/// A live client reads back whole; an expired one is absent; an id is never registered twice;
/// a redemption renews the client.
pub async fn oauth_clients_expire_and_never_collide<S: Store>(store: &S) {
    store
        .insert_client(client("c1", at(100)))
        .await
        .expect("insert");
    let got = store
        .client("c1", at(5))
        .await
        .expect("read")
        .expect("live");
    assert_eq!(got, client("c1", at(100)));
    assert_eq!(
        store.client("c1", at(100)).await.expect("read"),
        None,
        "expired at its end"
    );
    assert_eq!(store.client("nobody", at(5)).await.expect("read"), None);
    assert!(matches!(
        store.insert_client(client("c1", at(200))).await,
        Err(StoreError::Conflict(_))
    ));
    store.insert_code(code("k1")).await.expect("code");
    let r = store
        .redeem_code("k1", at(2), grant("g1", "k1"), pair("t1"), at(500))
        .await
        .expect("redeem");
    assert_eq!(r, Redemption::Issued);
    assert!(
        store.client("c1", at(300)).await.expect("read").is_some(),
        "a redemption renews the client"
    );
}

/// A counter counts within its window and starts again at one after it.
pub async fn oauth_counters_count_and_restart<S: Store>(store: &S) {
    for expected in 1..=3 {
        assert_eq!(
            store
                .bump_counter("dcr:h:ip", at(0), at(60))
                .await
                .expect("bump"),
            expected
        );
    }
    assert_eq!(
        store
            .bump_counter("dcr:h:other", at(0), at(60))
            .await
            .expect("bump"),
        1
    );
    assert_eq!(
        store
            .bump_counter("dcr:h:ip", at(60), at(120))
            .await
            .expect("bump"),
        1,
        "a new window"
    );
    assert_eq!(
        store
            .bump_counter("dcr:h:ip", at(61), at(999))
            .await
            .expect("bump"),
        2
    );
    assert_eq!(
        store
            .bump_counter("dcr:h:ip", at(121), at(180))
            .await
            .expect("bump"),
        1,
        "the window kept its first end"
    );
}

/// A login state is read without being spent, spent exactly once, and never after expiry or
/// under another purpose; approvals expire.
pub async fn oauth_login_states_are_spent_once<S: Store>(store: &S) {
    let row = LoginStateRow {
        state_hash: "s1".into(),
        purpose: "authorize".into(),
        payload: r#"{"client_id":"c1"}"#.into(),
        created_at: at(0),
        expires_at: at(10),
    };
    store.put_login_state(row.clone()).await.expect("put");
    assert_eq!(
        store
            .login_state("s1", "console", at(1))
            .await
            .expect("peek"),
        None
    );
    assert_eq!(
        store
            .login_state("s1", "authorize", at(1))
            .await
            .expect("peek"),
        Some(row.clone())
    );
    assert_eq!(
        store
            .login_state("s1", "authorize", at(10))
            .await
            .expect("peek"),
        None,
        "expired"
    );
    assert_eq!(
        store
            .take_login_state("s1", "authorize", at(10))
            .await
            .expect("take"),
        None
    );
    assert_eq!(
        store
            .take_login_state("s1", "authorize", at(2))
            .await
            .expect("take"),
        Some(row)
    );
    assert_eq!(
        store
            .take_login_state("s1", "authorize", at(2))
            .await
            .expect("take"),
        None,
        "once"
    );
    store
        .approve_client("c1.abc", "c1", at(0), at(30))
        .await
        .expect("approve");
    assert!(store.approval("c1.abc", at(29)).await.expect("approval"));
    assert!(!store.approval("c1.abc", at(30)).await.expect("approval"));
    assert!(!store.approval("c1.other", at(1)).await.expect("approval"));
    store
        .approve_client("c1.abc", "c1", at(40), at(70))
        .await
        .expect("renew");
    assert!(store.approval("c1.abc", at(50)).await.expect("approval"));
}

/// A code redeems once; a replay issues nothing and revokes every token it issued.
pub async fn oauth_code_replay_revokes_what_it_issued<S: Store>(store: &S) {
    store
        .insert_client(client("c1", at(100)))
        .await
        .expect("client");
    store.insert_code(code("k1")).await.expect("code");
    assert!(matches!(
        store.insert_code(code("k1")).await,
        Err(StoreError::Conflict(_))
    ));
    let r = store
        .redeem_code("k1", at(2), grant("g1", "k1"), pair("t1"), at(500))
        .await
        .expect("redeem");
    assert_eq!(r, Redemption::Issued);
    let spent = store.code("k1").await.expect("code").expect("exists");
    assert_eq!(spent.used_at, Some(at(2)));
    let access = store
        .token("t1-access")
        .await
        .expect("token")
        .expect("issued");
    assert_eq!(access.kind, TokenKind::Access);
    assert_eq!(
        (
            access.login.as_str(),
            access.user_id,
            access.client_id.as_str()
        ),
        ("octo", 42, "c1")
    );
    assert_eq!(access.resource, "https://capsid.example/mcp");
    assert_eq!(access.grant_expires_at, at(1000));
    assert_eq!(access.revoked_at, None);
    let replay = store
        .redeem_code("k1", at(3), grant("g2", "k1"), pair("t2"), at(500))
        .await
        .expect("replay");
    assert_eq!(replay, Redemption::Replayed);
    assert_eq!(
        store.token("t2-access").await.expect("token"),
        None,
        "nothing issued"
    );
    for t in ["t1-access", "t1-refresh"] {
        let row = store.token(t).await.expect("token").expect("kept");
        assert_eq!(row.revoked_at, Some(at(3)), "{t} revoked by the replay");
    }
}

/// A refresh token rotates once; its reuse revokes the whole grant, new tokens included.
pub async fn oauth_refresh_reuse_revokes_the_grant<S: Store>(store: &S) {
    store
        .insert_client(client("c1", at(100)))
        .await
        .expect("client");
    store.insert_code(code("k1")).await.expect("code");
    store
        .redeem_code("k1", at(2), grant("g1", "k1"), pair("t1"), at(500))
        .await
        .expect("redeem");
    let r = store
        .rotate_refresh("t1-refresh", at(5), pair("t2"), at(600))
        .await
        .expect("rotate");
    assert_eq!(r, Rotation::Rotated);
    let old = store
        .token("t1-refresh")
        .await
        .expect("token")
        .expect("kept");
    assert_eq!(old.used_at, Some(at(5)));
    let new = store
        .token("t2-refresh")
        .await
        .expect("token")
        .expect("issued");
    assert_eq!(new.grant_id, "g1", "same grant");
    assert_eq!(new.revoked_at, None);
    let reuse = store
        .rotate_refresh("t1-refresh", at(6), pair("t3"), at(600))
        .await
        .expect("reuse");
    assert_eq!(reuse, Rotation::Reused);
    assert_eq!(store.token("t3-access").await.expect("token"), None);
    for t in ["t1-access", "t2-access", "t2-refresh"] {
        let row = store.token(t).await.expect("token").expect("kept");
        assert_eq!(row.revoked_at, Some(at(6)), "{t} revoked with its grant");
    }
    assert_eq!(
        store
            .rotate_refresh("t2-refresh", at(7), pair("t4"), at(600))
            .await
            .expect("rotate"),
        Rotation::Reused,
        "a revoked grant never rotates"
    );
    store.insert_code(code("k2")).await.expect("code");
    store
        .redeem_code("k2", at(8), grant("g2", "k2"), pair("t5"), at(500))
        .await
        .expect("redeem");
    assert_eq!(
        store
            .rotate_refresh("t5-refresh", at(1000), pair("t6"), at(600))
            .await
            .expect("rotate"),
        Rotation::Reused,
        "an ended grant never rotates"
    );
    store.revoke_grant("g2", at(9)).await.expect("revoke");
}

/// Console sessions are live until they expire or are ended; ending all ends every one.
pub async fn oauth_console_sessions_end<S: Store>(store: &S) {
    let session = |h: &str| ConsoleSessionRow {
        session_hash: h.into(),
        login: "octo".into(),
        user_id: 42,
        created_at: at(0),
        expires_at: at(720),
        ended_at: None,
    };
    for h in ["a", "b", "c"] {
        store
            .insert_console_session(session(h))
            .await
            .expect("insert");
    }
    assert_eq!(
        store.console_session("a", at(1)).await.expect("read"),
        Some(session("a"))
    );
    assert_eq!(
        store.console_session("a", at(720)).await.expect("read"),
        None,
        "expired"
    );
    assert!(store.end_console_session("a", at(2)).await.expect("end"));
    assert!(
        !store.end_console_session("a", at(3)).await.expect("end"),
        "already ended"
    );
    assert_eq!(store.console_session("a", at(3)).await.expect("read"), None);
    assert_eq!(store.end_console_sessions(at(4)).await.expect("end all"), 2);
    assert_eq!(store.console_session("b", at(5)).await.expect("read"), None);
}

/// Purging removes what expired and keeps what lives (a spent code while its grant lives).
pub async fn oauth_purge_keeps_what_is_live<S: Store>(store: &S) {
    store
        .insert_client(client("c1", at(2000)))
        .await
        .expect("client");
    store
        .insert_client(client("old", at(5)))
        .await
        .expect("client");
    store.insert_code(code("k1")).await.expect("code");
    store.insert_code(code("k-unused")).await.expect("code");
    store
        .redeem_code("k1", at(2), grant("g1", "k1"), pair("t1"), at(500))
        .await
        .expect("redeem");
    store.bump_counter("x", at(0), at(5)).await.expect("bump");
    let purged = store.purge_expired_oauth(at(20)).await.expect("purge");
    assert!(
        purged >= 3,
        "expired client, unused code and counter: {purged}"
    );
    assert!(store.client("c1", at(20)).await.expect("read").is_some());
    assert!(
        store.code("k1").await.expect("code").is_some(),
        "its grant lives"
    );
    assert_eq!(store.code("k-unused").await.expect("code"), None);
    assert!(store.token("t1-access").await.expect("token").is_some());
    store.purge_expired_oauth(at(1000)).await.expect("purge");
    assert_eq!(
        store.token("t1-access").await.expect("token"),
        None,
        "the grant ended"
    );
    assert_eq!(store.code("k1").await.expect("code"), None);
}

/// Sixteen concurrent redemptions of one code: exactly one issues.
pub async fn oauth_code_race_has_one_winner<S: Store + 'static>(store: Arc<S>) {
    store
        .insert_client(client("c1", at(100)))
        .await
        .expect("client");
    store.insert_code(code("race")).await.expect("code");
    let gate = Arc::new(Barrier::new(16));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (store, gate) = (store.clone(), gate.clone());
        tasks.push(tokio::spawn(async move {
            gate.wait().await;
            store
                .redeem_code(
                    "race",
                    at(1),
                    grant(&format!("g{i}"), "race"),
                    pair(&format!("r{i}")),
                    at(500),
                )
                .await
                .expect("redeem")
        }));
    }
    let mut issued = 0;
    for t in tasks {
        if t.await.expect("task") == Redemption::Issued {
            issued += 1;
        }
    }
    assert_eq!(issued, 1, "exactly one redemption wins");
}

/// The owner's "revoke every MCP client": every live grant and token is revoked, ended
/// grants are not counted, and remembered approvals are forgotten.
pub async fn oauth_revoke_all_grants_ends_every_client<S: Store>(store: &S) {
    store
        .insert_client(client("c1", at(100)))
        .await
        .expect("client");
    store
        .approve_client("c1.abc", "c1", at(0), at(90))
        .await
        .expect("approve");
    store.insert_code(code("k1")).await.expect("code");
    store
        .redeem_code("k1", at(2), grant("g1", "k1"), pair("t1"), at(500))
        .await
        .expect("redeem");
    store.insert_code(code("k2")).await.expect("code");
    store
        .redeem_code("k2", at(3), grant("g2", "k2"), pair("t2"), at(500))
        .await
        .expect("redeem");
    store.revoke_grant("g2", at(4)).await.expect("revoke one");
    let audits = audit_count(store).await;
    let row = |n: u64| {
        let mut entry = audit("github:owner", "console-revoke_grants", "-", "-", at(5));
        entry.params = serde_json::json!({ "grants_revoked": n });
        entry
    };
    assert_eq!(
        store
            .revoke_all_grants(at(5), &row)
            .await
            .expect("revoke all"),
        1,
        "only the live grant counts"
    );
    let newest = store
        .recent_audit(&Default::default(), 1)
        .await
        .expect("audit");
    assert_eq!(
        audit_count(store).await,
        audits + 1,
        "its audit row came with it"
    );
    assert_eq!(
        newest[0].params.as_deref(),
        Some(r#"{"grants_revoked":1}"#),
        "the row records the count the transaction saw"
    );
    for t in ["t1-access", "t1-refresh"] {
        let row = store.token(t).await.expect("token").expect("kept");
        assert_eq!(row.revoked_at, Some(at(5)), "{t}");
    }
    let earlier = store
        .token("t2-access")
        .await
        .expect("token")
        .expect("kept");
    assert_eq!(
        earlier.revoked_at,
        Some(at(4)),
        "an earlier revocation stands"
    );
    assert!(
        !store.approval("c1.abc", at(6)).await.expect("approval"),
        "approvals are forgotten"
    );
    assert_eq!(
        store.revoke_all_grants(at(7), &row).await.expect("again"),
        0,
        "nothing left"
    );
}
