//! Checklist rows 10, 12 and 14: iss and state on redirects, scopes, consent CSRF and
//! framing, remembered approval.

use serde_json::{Value, json};

use crate::env::*;

#[tokio::test]
async fn success_redirects_carry_iss_and_state() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let done = env
        .sign_in(&mut Browser::new(), &env.authorize_query(&client))
        .await;
    let q = query_of(&done.location());
    assert_eq!(q["iss"], env.server.url);
    assert_eq!(q["state"], "client-state-1");
    let meta: Value = http()
        .get(env.url("/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(meta["issuer"], env.server.url);
    assert_eq!(meta["authorization_response_iss_parameter_supported"], true);
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert!(
        !meta["grant_types_supported"]
            .to_string()
            .contains("password")
    );
}

#[tokio::test]
async fn other_scopes_are_refused() {
    let env = Env::start().await;
    refused_to_client(&env, |q| set(q, "scope", "mcp admin"), "invalid_scope").await;
}

#[tokio::test]
async fn consent_needs_the_csrf_token_of_this_browser() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let q = env.authorize_query(&client);
    let mut browser = Browser::new();
    let page = browser.get(&env.authorize_url(&q)).await;
    assert_eq!(page.status, 200);
    let mut form = q.clone();
    form.push(("csrf".into(), "0".repeat(64)));
    form.push(("decision".into(), "approve".into()));
    let r = browser.post_form(&env.url("/authorize"), &form).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.header("location").is_empty());
    // The right token from another browser (no cookie) is refused too.
    let mut form = q.clone();
    form.push(("csrf".into(), hidden(&page.body, "csrf")));
    form.push(("decision".into(), "approve".into()));
    let r = Browser::new()
        .post_form(&env.url("/authorize"), &form)
        .await;
    assert_eq!(r.status, 403);
    let r = browser.post_form(&env.url("/authorize"), &q).await;
    assert_eq!(r.status, 400, "no csrf field at all");
}

#[tokio::test]
async fn consent_from_another_origin_is_refused() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let q = env.authorize_query(&client);
    let mut browser = Browser::new();
    let page = browser.get(&env.authorize_url(&q)).await;
    let mut form = q.clone();
    form.push(("csrf".into(), hidden(&page.body, "csrf")));
    form.push(("decision".into(), "approve".into()));
    let resp = http()
        .post(env.url("/authorize"))
        .header("cookie", browser.cookie_header())
        .header("origin", "https://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(serde_urlencoded::to_string(&form).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
}

#[tokio::test]
async fn the_consent_page_cannot_be_framed_and_escapes_the_client() {
    let env = Env::start().await;
    let r = env
        .register_json(json!({"client_name": "<script>alert(1)</script>", "redirect_uris": ["https://app.example/cb?a=\"x\""]}))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let client = r.json()["client_id"].as_str().unwrap().to_owned();
    let mut q = env.authorize_query(&client);
    set(&mut q, "redirect_uri", "https://app.example/cb?a=\"x\"");
    let page = Browser::new().get(&env.authorize_url(&q)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!page.body.contains("<script>"), "{}", page.body);
    assert!(page.body.contains("&lt;script&gt;"));
    assert!(
        page.body.contains("Only the owner"),
        "says only the owner is admitted"
    );
    let csp = page.header("content-security-policy");
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    assert_eq!(page.header("x-frame-options"), "DENY");
}

#[tokio::test]
async fn denying_consent_tells_the_client() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let q = env.authorize_query(&client);
    let mut browser = Browser::new();
    let page = browser.get(&env.authorize_url(&q)).await;
    let mut form = q.clone();
    form.push(("csrf".into(), hidden(&page.body, "csrf")));
    form.push(("decision".into(), "deny".into()));
    let r = browser.post_form(&env.url("/authorize"), &form).await;
    let back = query_of(&r.location());
    assert_eq!(back["error"], "access_denied");
    assert_eq!(back["iss"], env.server.url);
}

#[tokio::test]
async fn approval_is_remembered_per_client_and_redirect_set() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let done = env
        .sign_in(&mut Browser::new(), &env.authorize_query(&client))
        .await;
    assert_eq!(done.status, 302);
    // The same client again: straight to GitHub, no consent page.
    let again = Browser::new()
        .get(&env.authorize_url(&env.authorize_query(&client)))
        .await;
    assert_eq!(again.status, 302);
    assert!(
        again.location().starts_with(&env.github.url),
        "{}",
        again.location()
    );
    // A client with another redirect set is asked again.
    let other = env
        .register(&[REDIRECT, "http://127.0.0.1:7777/other"])
        .await;
    let page = Browser::new()
        .get(&env.authorize_url(&env.authorize_query(&other)))
        .await;
    assert_eq!(page.status, 200, "consent for a new redirect set");
}
