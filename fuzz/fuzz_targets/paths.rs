//! Document paths, repo paths, namespaces and result refs: never panics, a parsed value is
//! exactly the input, and the archived form of a document path is itself a document path.
#![no_main]

use capsid_core::paths::{DocPath, Namespace, RepoPath, result_ref_problem};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(path) = DocPath::parse(text) {
        assert_eq!(path.as_str(), text);
        if let Ok(archived) = path.archived() {
            assert!(archived.is_archived());
            assert!(DocPath::parse(archived.as_str()).is_ok(), "{archived:?}");
        }
    }
    if let Ok(path) = RepoPath::parse(text) {
        assert_eq!(path.as_str(), text);
        assert!(
            !path.as_str().split('/').any(|s| s == ".."),
            "{text:?} escapes"
        );
    }
    if let Ok(ns) = Namespace::parse(text) {
        assert_eq!(ns.as_str(), text);
    }
    let _ = result_ref_problem(text);
});
