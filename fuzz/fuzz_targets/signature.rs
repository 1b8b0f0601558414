//! The signature envelope of job bodies and task documents: splitting any stored text never
//! panics, verification of arbitrary text never passes under a secret it was not sealed with,
//! and sealing then verifying gives the (unwrapped) body back.
#![no_main]

use capsid_core::jobs::signature::{seal_task, split_signed, verify_task};
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "fuzz-secret";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = split_signed(text);
    let _ = verify_task(SECRET, text);
    let _ = verify_task("", text);
    let sealed = seal_task(SECRET, text);
    let body = verify_task(SECRET, &sealed).expect("a sealed body verifies");
    assert!(verify_task("another-secret", &sealed).is_err());
    assert_eq!(seal_task(SECRET, body), sealed, "sealing is idempotent");
});
