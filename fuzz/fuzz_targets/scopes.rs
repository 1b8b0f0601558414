//! Stored scopes (`Scopes::parse`, fail closed): never panics, and what it parses survives its
//! own stored form unchanged.
#![no_main]

use capsid_core::scope::Scopes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let scopes = Scopes::parse(Some(text));
    let stored = scopes.to_json().to_string();
    assert_eq!(
        Scopes::parse(Some(&stored)),
        scopes,
        "round trip of {text:?}"
    );
});
