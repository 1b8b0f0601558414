//! `POST /improve/holdout-credential` and the reads its token allows.

use capsid_core::improve::holdout::HOLDOUT_TOKEN_TTL_MS;
use serde_json::Value;

use super::{Env, signed};

pub(crate) async fn holdout_credential_reads_only_its_namespace_for_an_hour(env: &Env) {
    let (status, cred) = signed(
        env,
        "/improve/holdout-credential",
        "capsid",
        r#"{"jti":"cred-1"}"#.into(),
    )
    .await;
    assert_eq!(status, 200, "{cred}");
    assert_eq!(cred["scope"], "improve/holdout/capsid/");
    assert_eq!(cred["access"], "read");
    assert_eq!(cred["truncated"], false);
    let keys: Vec<&str> = cred["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter_map(|o| o["key"].as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "improve/holdout/capsid/cases/001.json",
            "improve/holdout/capsid/manifest.json"
        ]
    );
    let (status, _) = signed(
        env,
        "/improve/holdout-credential",
        "capsid",
        r#"{"jti":"cred-1"}"#.into(),
    )
    .await;
    assert_eq!(status, 409, "a jti works once");
    let (status, _) = signed(
        env,
        "/improve/holdout-credential",
        "capsid",
        r#"{"jti":"x","more":1}"#.into(),
    )
    .await;
    assert_eq!(status, 400);
    let token = cred["token"].as_str().expect("a token").to_owned();
    let get = |key: &str| {
        env.http
            .get(format!("{}/improve/holdout/objects/{key}", env.s.url))
            .bearer_auth(&token)
            .send()
    };
    let read = get("improve/holdout/capsid/manifest.json")
        .await
        .expect("get");
    assert_eq!(read.status(), 200);
    let manifest: Value = read.json().await.expect("json");
    assert_eq!(manifest["total"], 40);
    let other = get("improve/holdout/borealis/manifest.json")
        .await
        .expect("get");
    assert_eq!(other.status(), 401, "another namespace's prefix");
    let climb = get("improve/holdout/capsid/../borealis/manifest.json")
        .await
        .expect("get");
    assert_ne!(climb.status(), 200);
    let by_query = env
        .http
        .get(format!(
            "{}/improve/holdout/objects/improve/holdout/capsid/cases/001.json?token={token}",
            env.s.url
        ))
        .send()
        .await
        .expect("get");
    assert_eq!(by_query.status(), 200);
    assert_eq!(
        by_query.bytes().await.expect("bytes").as_ref(),
        b"{\"case\": 1}"
    );
    let anonymous = env
        .http
        .get(format!(
            "{}/improve/holdout/objects/improve/holdout/capsid/manifest.json",
            env.s.url
        ))
        .send()
        .await
        .expect("get");
    assert_eq!(anonymous.status(), 401);
    env.s.clock.advance(HOLDOUT_TOKEN_TTL_MS);
    let expired = get("improve/holdout/capsid/manifest.json")
        .await
        .expect("get");
    assert_eq!(expired.status(), 401, "after an hour");
}
