//! `POST /csp-report` and the security headers of each route class.

use serde_json::json;

use crate::env::*;

#[tokio::test]
async fn csp_reports_are_bounded_typed_shaped_and_limited() {
    let env = Env::start().await;
    let url = env.url("/csp-report");
    let good = json!({"csp-report": {"document-uri": "http://x/console", "violated-directive": "style-src"}}).to_string();
    assert_eq!(
        raw_post(&url, "application/csp-report", good.clone(), &[])
            .await
            .status,
        204
    );
    assert_eq!(
        raw_post(&url, "text/plain", good.clone(), &[]).await.status,
        415
    );
    assert_eq!(
        raw_post(&url, "application/csp-report", "x".repeat(20_000), &[])
            .await
            .status,
        413
    );
    assert_eq!(
        raw_post(&url, "application/csp-report", "{\"a\":1}".into(), &[])
            .await
            .status,
        400
    );
    assert_eq!(
        raw_post(&url, "application/reports+json", "nope".into(), &[])
            .await
            .status,
        400
    );
    let mut last = 0;
    for _ in 0..300 {
        last = raw_post(&url, "application/csp-report", good.clone(), &[])
            .await
            .status;
    }
    assert_eq!(last, 429);
    let r = raw_post(&url, "application/csp-report", good, &[]).await;
    assert!(!r.header("retry-after").is_empty());
}

#[tokio::test]
async fn security_headers_follow_the_route_class() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    // Pages: their own policy (one hashed stylesheet, no scripts), never framed.
    let page = Browser::new()
        .get(&env.authorize_url(&env.authorize_query(&client)))
        .await;
    let csp = page.header("content-security-policy");
    assert!(
        csp.contains("style-src 'sha256-") && !csp.contains("script-src"),
        "{csp}"
    );
    // Data: nothing renders from it, nothing caches it (discovery documents may be cached).
    let token = env.exchange(&client, "capsid_ac_guess").await;
    let meta = read(
        http()
            .get(env.url("/.well-known/oauth-authorization-server"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    for (what, r) in [("page", &page), ("token", &token), ("metadata", &meta)] {
        assert_eq!(r.header("x-frame-options"), "DENY", "{what}");
        assert_eq!(r.header("x-content-type-options"), "nosniff", "{what}");
        // Pages post their forms to their own origin, which must see a real Origin header;
        // no referrer ever goes to another origin.
        let referrer = if what == "page" {
            "same-origin"
        } else {
            "no-referrer"
        };
        assert_eq!(r.header("referrer-policy"), referrer, "{what}");
        assert!(
            r.header("content-security-policy")
                .contains("frame-ancestors 'none'"),
            "{what}"
        );
    }
    assert_eq!(token.header("cache-control"), "no-store");
    assert!(
        token
            .header("content-security-policy")
            .starts_with("default-src 'none'")
    );
    assert!(
        meta.header("cache-control").contains("max-age"),
        "discovery may be cached"
    );
}
