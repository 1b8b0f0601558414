//! The GitHub round trip: owner only, state bound to the browser, spent after the
//! exchange.

use capsid_core::time::MINUTE_MS;

use crate::env::*;

#[tokio::test]
async fn a_non_owner_github_user_is_not_admitted() {
    let env = Env::start().await;
    env.github.sign_in_as("mallory", 666);
    let client = env.register(&[REDIRECT]).await;
    let mut browser = Browser::new();
    let r = env
        .sign_in(&mut browser, &env.authorize_query(&client))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body.contains("mallory") && r.body.contains("owner"),
        "{}",
        r.body
    );
    assert!(
        r.header("location").is_empty(),
        "no code goes to the client"
    );
}

#[tokio::test]
async fn the_owner_is_matched_case_insensitively_or_by_id() {
    let env = Env::start_as("OCTO").await;
    env.tokens().await;
    let by_id = Env::start_as(&OWNER_ID.to_string()).await;
    by_id.github.sign_in_as("renamed-octo", OWNER_ID);
    by_id.tokens().await;
    by_id.github.sign_in_as(&OWNER_ID.to_string(), 1);
    let client = by_id.register(&[REDIRECT]).await;
    let r = by_id
        .sign_in(&mut Browser::new(), &by_id.authorize_query(&client))
        .await;
    assert_eq!(
        r.status, 403,
        "a login that looks like the owner's id is not the owner"
    );
}

#[tokio::test]
async fn a_state_cookie_from_another_browser_is_refused() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let mut alice = Browser::new();
    let to_github = env.consent(&mut alice, &env.authorize_query(&client)).await;
    let back = alice.get(&to_github.location()).await;
    // Mallory's browser started its own flow; it lands on Alice's callback URL.
    let mut mallory = Browser::new();
    env.consent(&mut mallory, &env.authorize_query(&client))
        .await;
    let r = mallory.get(&back.location()).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("did not start"), "{}", r.body);
    let r = Browser::new().get(&back.location()).await;
    assert_eq!(r.status, 403, "and a browser with no state cookie");
    assert_eq!(env.github.exchanges(), 0, "GitHub was never asked");
}

#[tokio::test]
async fn an_expired_state_is_refused() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let mut browser = Browser::new();
    let to_github = env
        .consent(&mut browser, &env.authorize_query(&client))
        .await;
    let back = browser.get(&to_github.location()).await;
    env.advance(10 * MINUTE_MS + 1);
    let r = browser.get(&back.location()).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("expired"), "{}", r.body);
}

#[tokio::test]
async fn the_state_is_spent_only_after_a_successful_exchange() {
    let env = Env::start().await;
    let client = env.register(&[REDIRECT]).await;
    let mut browser = Browser::new();
    let to_github = env
        .consent(&mut browser, &env.authorize_query(&client))
        .await;
    let back = browser.get(&to_github.location()).await;
    env.github.fail_exchanges(true);
    let r = browser.get(&back.location()).await;
    assert_eq!(r.status, 502, "{}", r.body);
    env.github.fail_exchanges(false);
    // GitHub codes are single-use on GitHub's side too; a fresh round trip with the same
    // Capsid state is what a retry looks like. The state is still live:
    let again = browser.get(&to_github.location()).await;
    let ok = browser.get(&again.location()).await;
    assert_eq!(ok.status, 302, "{}", ok.body);
    assert!(query_of(&ok.location()).contains_key("code"));
    // Now it is spent.
    let third = browser.get(&to_github.location()).await;
    let r = browser.get(&third.location()).await;
    assert_eq!(r.status, 403, "{}", r.body);
}

#[tokio::test]
async fn a_callback_without_code_or_state_is_a_bad_request() {
    let env = Env::start().await;
    let mut browser = Browser::new();
    assert_eq!(browser.get(&env.url("/callback")).await.status, 400);
    assert_eq!(browser.get(&env.url("/callback?code=x")).await.status, 400);
    assert_eq!(browser.get(&env.url("/callback?state=x")).await.status, 400);
    assert_eq!(
        browser
            .get(&env.url("/callback?code=x&state=x&state=y"))
            .await
            .status,
        400
    );
}
