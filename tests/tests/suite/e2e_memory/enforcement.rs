//! The one enforcement point as a real MCP client meets it: `tool.action` narrowing for every
//! action tool, asked before any handler (and before GitHub), and the document surfaces
//! (resources, prompts, completions) asking the same check as `read`.

use capsid_tests::e2e_cases;
use capsid_tests::server::TestServer;
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams,
    Reference,
};
use serde_json::json;

async fn a_narrowed_pr_commenter_cannot_close_before_github_is_asked(s: &TestServer) {
    s.namespace("alpha").await;
    let key = s
        .mint(
            "reviewer",
            "session",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"],
                   "tools": ["manage_pr", "manage_pr.comment"], "flags": {"can_comment_pr": true}}),
        )
        .await;
    let c = s.client(&key).await;
    for action in ["close", "merge"] {
        let err = c
            .err(
                "manage_pr",
                json!({"namespace": "alpha", "number": 7, "action": action}),
            )
            .await;
        assert!(
            err.contains(&format!("manage_pr.{action}")),
            "{action}: the refusal names the narrowed-away action: {err}"
        );
        assert!(
            !err.contains("GitHub App"),
            "{action}: refused by the scope check, before GitHub: {err}"
        );
    }
    // The action it holds passes the check and reaches the handler (which has no GitHub App).
    let err = c
        .err(
            "manage_pr",
            json!({"namespace": "alpha", "number": 7, "action": "comment", "body": "REVIEW: APPROVE"}),
        )
        .await;
    assert!(err.contains("GitHub App not configured"), "{err}");
}

async fn a_driver_narrowed_to_claim_cannot_control_the_loop(s: &TestServer) {
    s.namespace("alpha").await;
    let key = s
        .mint(
            "loop-driver",
            "driver",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"],
                   "tools": ["improve_run", "improve_run.claim"]}),
        )
        .await;
    let c = s.client(&key).await;
    for (action, extra) in [
        ("pause", json!({})),
        ("unpause", json!({})),
        ("budget", json!({"model_usd_month": 5})),
        ("mode", json!({"value": "off"})),
        ("run", json!({})),
    ] {
        let mut args = json!({"action": action, "namespace": "alpha"});
        args.as_object_mut()
            .expect("object")
            .extend(extra.as_object().cloned().unwrap_or_default());
        let err = c.err("improve_run", args).await;
        assert!(
            err.contains(&format!("improve_run.{action}")),
            "{action}: {err}"
        );
    }
    let paused = s
        .admin("improve_status", json!({"namespace": "alpha"}))
        .await;
    assert_eq!(
        paused["namespaces"][0]["paused"],
        json!(null),
        "nothing was paused: {paused}"
    );
    let claimed = c
        .ok(
            "improve_run",
            json!({"action": "claim", "namespace": "alpha"}),
        )
        .await;
    assert_eq!(claimed["ok"], true, "{claimed}");
}

async fn document_surfaces_ask_the_read_check(s: &TestServer) {
    s.namespace("alpha").await;
    s.admin(
        "write",
        json!({"namespace": "alpha", "path": "prompts/p.md", "title": "P", "type": "prompt",
               "body": "Say {{word}}."}),
    )
    .await;
    let key = s
        .mint(
            "poster",
            "session",
            json!({"namespaces": ["alpha"], "grants": ["read", "write"], "tools": ["jobs", "jobs.post"]}),
        )
        .await;
    let c = s.client(&key).await;
    let peer = c.inner.peer();
    let read = peer
        .read_resource(ReadResourceRequestParams::new(
            "capsid://alpha/prompts/p.md",
        ))
        .await;
    let text = format!("{read:?}");
    assert!(read.is_err(), "resources/read is refused: {text}");
    assert!(
        text.contains("read"),
        "the refusal names the read tool: {text}"
    );
    assert!(!text.contains("Say"), "no body leaks: {text}");

    let mut args = serde_json::Map::new();
    args.insert("word".into(), json!("hi"));
    let got = peer
        .get_prompt(GetPromptRequestParams::new("alpha/prompts/p").with_arguments(args))
        .await;
    let text = format!("{got:?}");
    assert!(got.is_err(), "prompts/get is refused: {text}");
    assert!(!text.contains("Say"), "{text}");

    for reference in [
        Reference::for_resource("capsid://{namespace}/{+path}"),
        Reference::for_prompt("alpha/prompts/p"),
    ] {
        let asked = peer
            .complete(CompleteRequestParams::new(
                reference.clone(),
                ArgumentInfo::new("namespace", "al"),
            ))
            .await;
        assert!(
            asked.is_err(),
            "completion/complete is refused for {reference:?}: {asked:?}"
        );
    }
    assert!(
        peer.list_all_resources()
            .await
            .expect("resources/list answers")
            .is_empty(),
        "resources/list shows a caller that may not read nothing"
    );
    assert!(
        peer.list_all_prompts()
            .await
            .expect("prompts/list answers")
            .is_empty()
    );

    // The same surfaces answer a caller whose tools include read.
    let reader = s
        .mint(
            "reader",
            "session",
            json!({"namespaces": ["alpha"], "tools": ["read"]}),
        )
        .await;
    let c = s.client(&reader).await;
    let peer = c.inner.peer();
    let read = peer
        .read_resource(ReadResourceRequestParams::new(
            "capsid://alpha/prompts/p.md",
        ))
        .await
        .expect("a reader may read");
    assert!(format!("{read:?}").contains("Say {{word}}."));
    let done = peer
        .complete(CompleteRequestParams::new(
            Reference::for_resource("capsid://{namespace}/{+path}"),
            ArgumentInfo::new("namespace", "al"),
        ))
        .await
        .expect("a reader may complete");
    assert_eq!(done.completion.values, vec!["alpha".to_owned()]);
}

e2e_cases!(crate::e2e_memory::options();
    a_narrowed_pr_commenter_cannot_close_before_github_is_asked,
    a_driver_narrowed_to_claim_cannot_control_the_loop,
    document_surfaces_ask_the_read_check,
);
