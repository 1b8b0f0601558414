//! Pull-request URLs as the queue reads them: anchored at both ends, so a URL mentioned
//! in passing is never taken for the job's own pull request.
//!
//! Two spellings, as in the Worker: the review gate reads the job's `result_ref` (trimmed,
//! any owner/repo segment without `/`), outcome verification reads evidence URLs (owner and
//! repo drawn from GitHub's charset `[A-Za-z0-9._-]`).

use std::sync::LazyLock;

use regex::Regex;

/// A pull request named by URL.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrUrl {
    /// The repository owner as written in the URL.
    pub owner: String,
    /// The repository name as written in the URL.
    pub repo: String,
    /// The pull-request number.
    pub number: u64,
}

impl PrUrl {
    /// `owner/repo`, the form the namespace mapping lists.
    pub fn full_repo(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }
}

fn pattern(source: &str) -> Regex {
    Regex::new(source).unwrap_or_else(|e| unreachable!("built-in pattern {source} is valid: {e}"))
}

// `[0-9]`, not `\d`: Rust's `\d` is Unicode-aware and JavaScript's is not.
static REVIEW_REF: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"^https://github\.com/([^/]+)/([^/]+)/pull/([0-9]+)(?:[/?#].*)?$"));
static EVIDENCE_URL: LazyLock<Regex> = LazyLock::new(|| {
    pattern(r"^https://github\.com/([A-Za-z0-9._-]+)/([A-Za-z0-9._-]+)/pull/([0-9]+)(?:[/?#].*)?$")
});

fn parse_with(re: &Regex, text: &str) -> Option<PrUrl> {
    let caps = re.captures(text)?;
    // A number too large for u64 names no pull request GitHub could answer about.
    let number = caps[3].parse().ok()?;
    Some(PrUrl {
        owner: caps[1].to_owned(),
        repo: caps[2].to_owned(),
        number,
    })
}

/// The pull request a job's `result_ref` names, for the review gate (trimmed first).
pub fn review_pr(reference: &str) -> Option<PrUrl> {
    parse_with(&REVIEW_REF, reference.trim())
}

/// The pull request an evidence URL names, for outcome verification (not trimmed).
pub fn evidence_pr(url: &str) -> Option<PrUrl> {
    parse_with(&EVIDENCE_URL, url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(owner: &str, repo: &str, number: u64) -> Option<PrUrl> {
        Some(PrUrl {
            owner: owner.into(),
            repo: repo.into(),
            number,
        })
    }

    #[test]
    fn review_refs_are_anchored() {
        let cases: &[(&str, Option<PrUrl>)] = &[
            ("https://github.com/acme/api/pull/12", pr("acme", "api", 12)),
            (
                "  https://github.com/acme/api/pull/12/files  ",
                pr("acme", "api", 12),
            ),
            (
                "https://github.com/acme/api/pull/12?x=1",
                pr("acme", "api", 12),
            ),
            (
                "https://github.com/acme/api/pull/12#discussion",
                pr("acme", "api", 12),
            ),
            ("https://github.com/ac me/a+b/pull/7", pr("ac me", "a+b", 7)),
            ("https://github.com/acme/api/pull/12x", None),
            ("see https://github.com/acme/api/pull/12", None),
            ("http://github.com/acme/api/pull/12", None),
            ("https://github.com/acme/api/issues/12", None),
            ("https://github.com/acme/api/pull/", None),
            ("https://github.com/acme/api/pull/١٢", None),
            (
                "https://github.com/acme/api/pull/99999999999999999999999",
                None,
            ),
            ("docs/result.md", None),
        ];
        for (text, want) in cases {
            assert_eq!(review_pr(text), *want, "{text:?}");
        }
    }

    #[test]
    fn evidence_urls_use_githubs_charset_and_are_not_trimmed() {
        assert_eq!(
            evidence_pr("https://github.com/Acme-1/api.rs_x/pull/3"),
            pr("Acme-1", "api.rs_x", 3)
        );
        assert_eq!(evidence_pr("https://github.com/ac me/api/pull/3"), None);
        assert_eq!(evidence_pr(" https://github.com/acme/api/pull/3"), None);
        assert_eq!(
            evidence_pr("https://github.com/acme/api/pull/3\nmore"),
            None
        );
        assert_eq!(
            pr("acme", "api", 1).map(|p| p.full_repo()),
            Some("acme/api".to_owned())
        );
    }
}
