//! OAuth redirect URIs: validation and exact matching never panic; a URI matches itself only
//! when it is valid, and a URI that does not validate matches nothing registered.
#![no_main]

use capsid_core::oauth::redirect::{redirect_matches, validate_redirect_uri};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (registered, uri) = text.split_once('\n').unwrap_or((text, text));
    let valid = validate_redirect_uri(uri).is_ok();
    let _ = validate_redirect_uri(registered);
    let matched = redirect_matches(registered, uri);
    if matched && validate_redirect_uri(registered).is_ok() {
        assert!(
            valid || registered == uri,
            "{uri:?} matched {registered:?} without validating"
        );
    }
});
