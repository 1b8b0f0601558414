//! Subscription mode: only the holder of a driver lease proposes a bounded edit
//! (`improve_run` action `propose_edit`); an out-of-bound one is recorded as rejected, an
//! in-bound one is kept pending (one per skill) and probed and judged like an api-mode edit.

use serde_json::json;

use super::{Env, NS, dispatch_of, failure, row, score, skill, tick};

pub(crate) async fn the_lease_holder_proposes_an_edit(env: &Env) {
    let s = &env.s;
    let mode = s
        .admin(
            "improve_run",
            json!({"action": "mode", "value": "subscription"}),
        )
        .await;
    assert_eq!(mode["mode"], "subscription", "{mode}");
    skill(s, "sk-s", None).await;
    failure(s, "sk-s", "step four was ambiguous").await;
    let axes = json!({"namespaces": [NS], "grants": ["read", "write"]});
    let a = s
        .client(&s.mint("driver-a", "driver", axes.clone()).await)
        .await;
    let b = s.client(&s.mint("driver-b", "driver", axes).await).await;
    let good = json!([{"op": "replace", "line": 4, "text": "Step four: name the file."}]);
    let unleased = b
        .ok(
            "improve_run",
            json!({"action": "propose_edit", "namespace": NS, "skill": "sk-s", "ops": good}),
        )
        .await;
    assert_eq!(unleased["ok"], false, "{unleased}");
    assert!(
        unleased["refusal"].to_string().contains("driver lease"),
        "{unleased}"
    );
    let took = a
        .ok("improve_run", json!({"action": "claim", "namespace": NS}))
        .await;
    assert_eq!(took["ok"], true, "{took}");
    let wide = json!([{"op": "delete", "line": 1}, {"op": "delete", "line": 2}]);
    let over = a
        .ok(
            "improve_run",
            json!({"action": "propose_edit", "namespace": NS, "skill": "sk-s", "ops": wide}),
        )
        .await;
    assert_eq!(over["ok"], false, "{over}");
    assert!(over["refusal"].to_string().contains("bound is 1"), "{over}");
    let kept = s.store.skill_edits("sk-s", 10).await.expect("edits");
    assert_eq!(kept.len(), 1);
    assert!(!kept[0].accepted);
    let pending = a
        .ok(
            "improve_run",
            json!({"action": "propose_edit", "namespace": NS, "skill": "sk-s", "ops": good}),
        )
        .await;
    assert_eq!(pending["pending"], true, "{pending}");
    let again = a
        .ok(
            "improve_run",
            json!({"action": "propose_edit", "namespace": NS, "skill": "sk-s", "ops": good}),
        )
        .await;
    assert!(
        again["refusal"]
            .to_string()
            .contains("already has a pending edit"),
        "{again}"
    );
    // The cycle probes both; no model is asked in subscription mode.
    assert_eq!(tick(s).await["cycle"], "ran");
    assert!(env.model.requests().is_empty());
    score(env, &dispatch_of(env, "sk-s", false), 0.6, 0.5, "s-1").await;
    let judged = score(env, &dispatch_of(env, "sk-s", true), 0.9, 0.5, "s-2").await;
    assert_eq!(judged["outcome"], "edit-accepted", "{judged}");
    assert_eq!(row(s, "sk-s").await.version, 2);
    let edits = s.store.skill_edits("sk-s", 10).await.expect("edits");
    assert_eq!(edits.len(), 2);
    assert!(edits[0].accepted && !edits[1].accepted, "{edits:?}");
}
