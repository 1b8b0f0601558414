//! Names and paths, parsed at the edge: a value of these types has passed the reference's
//! rules (section 4.3), so nothing past the parser re-checks it.
//!
//! Lengths count UTF-16 code units, as the Worker's `z.string().max(n)` does, so the same
//! input is accepted or refused by both implementations.

use std::fmt;

/// Length as the Worker measures it (UTF-16 code units).
pub fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Control characters as the reference defines them: code < 0x20 or 0x7F.
fn has_control(s: &str) -> bool {
    s.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7F)
}

/// Longest document or repo path.
pub const PATH_MAX: usize = 512;
/// Longest namespace name.
pub const NAMESPACE_MAX: usize = 64;

/// Why a document path was refused; `None` when it is fine (`pathProblem`).
pub fn doc_path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        Some("path is empty")
    } else if js_len(path) > PATH_MAX {
        Some("path is longer than 512 characters")
    } else if path.starts_with('/') || path.ends_with('/') {
        Some("path must not start or end with '/'")
    } else if path.contains("..") {
        Some("path must not contain '..'")
    } else if path.contains("//") {
        Some("path must not contain '//'")
    } else if has_control(path) {
        Some("path must not contain control characters")
    } else {
        None
    }
}

/// Why a repository path was refused; `None` when it is fine (`repoPathProblem`).
/// Unlike document paths, `a..b` is legal: only whole `.` or `..` segments are refused.
pub fn repo_path_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        Some("path is empty")
    } else if js_len(path) > PATH_MAX {
        Some("path is longer than 512 characters")
    } else if has_control(path) {
        Some("path must not contain control characters")
    } else if path.starts_with('/') || path.ends_with('/') {
        Some("path must not start or end with '/'")
    } else if path.contains("//") {
        Some("path must not contain '//'")
    } else if path.split('/').any(|seg| seg == "." || seg == "..") {
        Some("path must not contain a '.' or '..' segment")
    } else {
        None
    }
}

/// Why a namespace name was refused; `None` when it is fine.
///
/// The Worker bounds names to 64 characters and nothing else. Capsid also refuses empty
/// names, control characters and `/`, because a namespace is the first segment of
/// `capsid://{namespace}/{+path}` URIs and of prompt names and must split unambiguously.
pub fn namespace_problem(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        Some("namespace is empty")
    } else if js_len(name) > NAMESPACE_MAX {
        Some("namespace is longer than 64 characters")
    } else if has_control(name) {
        Some("namespace must not contain control characters")
    } else if name.contains('/') {
        Some("namespace must not contain '/'")
    } else {
        None
    }
}

/// Why a job `result_ref` was refused: it must be a document path or an `https://` URL with
/// a host and no embedded credentials.
pub fn result_ref_problem(value: &str) -> Option<&'static str> {
    if js_len(value) > PATH_MAX {
        return Some("result_ref is longer than 512 characters");
    }
    if let Some(rest) = value.strip_prefix("https://") {
        if has_control(value) || value.chars().any(char::is_whitespace) {
            return Some("result_ref URL must not contain whitespace or control characters");
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.contains('@') {
            return Some("result_ref URL must not embed credentials");
        }
        let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        if host.is_empty() {
            return Some("result_ref URL has no host");
        }
        return None;
    }
    if value.contains("://") {
        return Some("result_ref must be a document path or an https:// URL");
    }
    doc_path_problem(value)
}

macro_rules! validated_name {
    ($(#[$doc:meta])* $name:ident, $problem:path, $field:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Parses `value`, or says which rule it breaks (naming the field).
            pub fn parse(value: impl Into<String>) -> Result<Self, String> {
                let value = value.into();
                match $problem(&value) {
                    None => Ok(Self(value)),
                    Some(why) => Err(format!("{}: {why}", $field)),
                }
            }

            /// The validated text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The validated text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

validated_name!(
    /// A namespace name (section 4.3, plus the tightening described at [`namespace_problem`]).
    Namespace, namespace_problem, "namespace"
);
validated_name!(
    /// A document path inside a namespace.
    DocPath, doc_path_problem, "path"
);
validated_name!(
    /// A path inside a repository.
    RepoPath, repo_path_problem, "path"
);

impl DocPath {
    /// Whether the document lives under `archive/` (consolidated raw material).
    pub fn is_archived(&self) -> bool {
        self.0.starts_with("archive/")
    }

    /// The path a consolidated document moves to.
    pub fn archived(&self) -> Result<DocPath, String> {
        DocPath::parse(format!("archive/{}", self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Repo paths and result refs are bounded at 512 characters (as JavaScript counts them):
    /// 512 is accepted, 513 refused.
    #[test]
    fn repo_paths_and_result_refs_stop_at_512_characters() {
        let path = |n: usize| "a".repeat(n);
        assert_eq!(repo_path_problem(&path(512)), None);
        assert_eq!(
            repo_path_problem(&path(513)),
            Some("path is longer than 512 characters")
        );
        let url = |n: usize| format!("https://github.com/{}", "a".repeat(n - 19));
        assert_eq!(js_len(&url(512)), 512);
        assert_eq!(result_ref_problem(&url(512)), None);
        assert_eq!(
            result_ref_problem(&url(513)),
            Some("result_ref is longer than 512 characters")
        );
        assert_eq!(result_ref_problem(&path(512)), None);
    }

    /// A result URL is refused for whitespace alone and for a control character alone.
    #[test]
    fn result_ref_urls_refuse_whitespace_or_control_characters() {
        let why = Some("result_ref URL must not contain whitespace or control characters");
        assert_eq!(result_ref_problem("https://github.com/o/r/pull/1 x"), why);
        assert_eq!(
            result_ref_problem("https://github.com/o/r/pull/1\u{7f}"),
            why
        );
        assert_eq!(result_ref_problem("https://github.com/o/r/pull/1"), None);
    }

    /// Only a path under the top-level `archive/` folder is archived (lint skips it, the
    /// consolidation moves there).
    #[test]
    fn only_the_top_level_archive_folder_is_archived() {
        let doc = |p: &str| DocPath::parse(p).unwrap();
        assert!(doc("archive/old.md").is_archived());
        assert!(doc("archive/a/b.md").is_archived());
        for live in ["notes/archive/x.md", "archived.md", "archive.md", "core.md"] {
            assert!(!doc(live).is_archived(), "{live}");
        }
    }

    #[test]
    fn doc_paths_follow_the_reference() {
        for ok in [
            "core.md",
            "a/b/c.md",
            "weird name (1).md",
            "ünïcode/ok",
            "a.b/.c",
        ] {
            assert_eq!(doc_path_problem(ok), None, "{ok}");
        }
        // Document paths refuse `..` anywhere, even inside a segment.
        for bad in [
            "", "/x", "x/", "a//b", "../x", "a/../b", "a..b", "x\u{0}", "x\ty", "x\u{7f}",
        ] {
            assert!(doc_path_problem(bad).is_some(), "{bad:?}");
        }
        assert!(doc_path_problem(&"a".repeat(512)).is_none());
        assert!(doc_path_problem(&"a".repeat(513)).is_some());
        // UTF-16 length: an astral character counts twice.
        assert!(doc_path_problem(&"😀".repeat(256)).is_none());
        assert!(doc_path_problem(&"😀".repeat(257)).is_some());
    }

    #[test]
    fn repo_paths_refuse_whole_dot_segments_only() {
        assert_eq!(repo_path_problem("src/a..b.rs"), None);
        assert_eq!(repo_path_problem(".github/workflows/ci.yml"), None);
        for bad in [
            "", ".", "..", "a/./b", "a/../b", "../a", "a/..", "/a", "a/", "a//b", "a\nb",
        ] {
            assert!(repo_path_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn namespaces() {
        assert!(Namespace::parse("capsid").is_ok());
        assert!(Namespace::parse("").is_err());
        assert!(Namespace::parse("a/b").is_err());
        assert!(Namespace::parse("x".repeat(65)).is_err());
        assert!(Namespace::parse("x".repeat(64)).is_ok());
        assert_eq!(
            Namespace::parse("a\u{1}").unwrap_err(),
            "namespace: namespace must not contain control characters"
        );
    }

    #[test]
    fn result_refs() {
        assert_eq!(result_ref_problem("https://github.com/o/r/pull/1"), None);
        assert_eq!(result_ref_problem("notes/done.md"), None);
        assert!(result_ref_problem("http://github.com/o/r/pull/1").is_some());
        assert!(result_ref_problem("https://user:pw@github.com/x").is_some());
        assert!(result_ref_problem("https:///path").is_some());
        assert!(result_ref_problem("javascript://x").is_some());
        assert!(result_ref_problem("../etc/passwd").is_some());
    }

    fn model_doc_path_ok(p: &str) -> bool {
        !p.is_empty()
            && p.encode_utf16().count() <= 512
            && !p.starts_with('/')
            && !p.ends_with('/')
            && !p.contains("..")
            && !p.contains("//")
            && !p.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7f)
    }

    proptest! {
        #[test]
        fn doc_path_guard_matches_model(p in "[a-z./\\\\ \\x00-\\x1f\\x7fé😀]{0,40}") {
            prop_assert_eq!(doc_path_problem(&p).is_none(), model_doc_path_ok(&p));
        }

        #[test]
        fn accepted_doc_paths_never_escape(p in any::<String>()) {
            if doc_path_problem(&p).is_none() {
                prop_assert!(!p.contains(".."));
                prop_assert!(!p.contains("//"));
                prop_assert!(!p.starts_with('/') && !p.ends_with('/'));
                prop_assert!(!p.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7f));
                prop_assert!(!p.is_empty());
            }
        }

        #[test]
        fn plain_segment_paths_are_accepted(segs in proptest::collection::vec("[A-Za-z0-9 _.-]{1,12}", 1..6)) {
            let p = segs.join("/");
            prop_assume!(!p.contains(".."));
            prop_assert_eq!(doc_path_problem(&p), None);
        }

        #[test]
        fn repo_path_guard_never_accepts_escapes(p in "[a./\\x00-\\x1f]{0,24}") {
            if repo_path_problem(&p).is_none() {
                prop_assert!(!p.split('/').any(|s| s == "." || s == ".." || s.is_empty()));
                prop_assert!(!p.chars().any(|c| (c as u32) < 0x20));
            }
        }
    }
}
