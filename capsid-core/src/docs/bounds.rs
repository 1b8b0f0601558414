//! The string bounds of reference 2.0: every free-text tool input is refused past these
//! lengths, counted in UTF-16 code units as the Worker's `z.string().max(n)` counts.

use thiserror::Error;

use crate::paths::js_len;

/// Document or repo path.
pub const PATH: usize = 512;
/// Document title.
pub const TITLE: usize = 1024;
/// Document tags (free text).
pub const TAGS: usize = 1024;
/// Namespace name.
pub const NAMESPACE: usize = 64;
/// Document type name (validated against the vocabulary after the bound).
pub const DOC_TYPE: usize = 64;
/// Document status name; separate from [`DOC_TYPE`] despite the same value, since the
/// vocabularies differ.
pub const DOC_STATUS: usize = 64;
/// Document body, and `find` / `replace_with`.
pub const BODY: usize = 1_000_000;
/// The `links` JSON text of `write`.
pub const LINKS_JSON: usize = 8192;
/// The `repos` JSON text of the namespace tools.
pub const REPOS_JSON: usize = 4096;
/// Search query.
pub const QUERY: usize = 512;
/// Path glob of `find`.
pub const GLOB: usize = 512;
/// Git ref (branch, tag, sha-ish).
pub const GIT_REF: usize = 255;
/// Repo selector (label or `owner/name`).
pub const REPO_SELECTOR: usize = 256;
/// A sha (`if_match`, commit sha).
pub const SHA: usize = 128;
/// Commit message.
pub const COMMIT_MESSAGE: usize = 4096;
/// Pull request title.
pub const PR_TITLE: usize = 512;
/// Pull request body.
pub const PR_BODY: usize = 65_536;

/// A tool input longer than its bound.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field} is {len} characters long; the limit is {max}")]
pub struct TooLong {
    /// The input's parameter name.
    pub field: &'static str,
    /// Its length in UTF-16 code units.
    pub len: usize,
    /// The bound it broke.
    pub max: usize,
}

/// Refuses `value` when it is longer than `max` UTF-16 code units, naming `field`.
pub fn check(field: &'static str, value: &str, max: usize) -> Result<(), TooLong> {
    let len = js_len(value);
    if len > max {
        Err(TooLong { field, len, max })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_count_utf16_units_and_name_the_field() {
        assert!(check("title", &"a".repeat(TITLE), TITLE).is_ok());
        let err = check("title", &"a".repeat(TITLE + 1), TITLE).unwrap_err();
        assert_eq!(
            err,
            TooLong {
                field: "title",
                len: 1025,
                max: 1024
            }
        );
        assert!(err.to_string().contains("title"));
        // An astral character is two UTF-16 units.
        assert!(check("namespace", &"😀".repeat(32), NAMESPACE).is_ok());
        assert!(check("namespace", &"😀".repeat(33), NAMESPACE).is_err());
    }
}
