//! Autonomy policy documents (auto-merge and gate policies) and the job ids a policy names:
//! never panics on any body.
#![no_main]

use capsid_core::autonomy::policy::{named_ids, parse_auto_merge_policy, parse_gate_policy};
use capsid_core::improve::roster::Roster;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    // A configured roster, and an empty one (a fresh install's, or a stored roster that
    // does not parse).
    let _ = parse_auto_merge_policy(body, &Roster::from_setting(Some(r#"["capsid","orchard"]"#)));
    let _ = parse_auto_merge_policy(body, &Roster::default());
    let _ = parse_auto_merge_policy(body, &Roster::from_setting(Some("not a roster")));
    let _ = parse_gate_policy(body);
    let _ = named_ids(body);
});
