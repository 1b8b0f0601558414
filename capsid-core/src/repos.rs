//! A namespace's repository mapping (reference 2.2, 2.3): the `repos` JSON list, the single
//! `primary` rule, and resolving a tool's `repo` selector against it. The mapping is the
//! authorization boundary of repo access: a repository not mapped to the namespace is refused.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ports::RepoRef;

/// One mapped repository.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RepoEntry {
    /// `owner/name`.
    pub repo: String,
    /// `primary`, `legacy`, ...
    pub label: String,
}

/// The label of the default repository.
pub const PRIMARY: &str = "primary";

/// `owner/name` with no whitespace and exactly one slash (`REPO_SHAPE`).
pub fn is_repo_shape(text: &str) -> bool {
    match text.split_once('/') {
        Some((owner, name)) => {
            !owner.is_empty()
                && !name.is_empty()
                && !name.contains('/')
                && !text.chars().any(char::is_whitespace)
        }
        None => false,
    }
}

/// Parses a `repos` JSON array: non-empty, each entry `{repo: "owner/name", label?}`, the
/// label trimmed and defaulting to `primary`.
pub fn parse_repos_list(json_text: &str) -> Result<Vec<RepoEntry>, String> {
    let parsed: Value =
        serde_json::from_str(json_text).map_err(|e| format!("invalid repos JSON: {e}"))?;
    let Value::Array(items) = parsed else {
        return Err("repos must be a non-empty JSON array of { repo, label } entries".into());
    };
    if items.is_empty() {
        return Err("repos must be a non-empty JSON array of { repo, label } entries".into());
    }
    items
        .iter()
        .map(|item| {
            let repo = item
                .get("repo")
                .and_then(Value::as_str)
                .filter(|r| is_repo_shape(r));
            let Some(repo) = repo else {
                return Err(format!(
                    "each repos entry needs a \"repo\" of the form owner/name (got {item})"
                ));
            };
            let label = item
                .get("label")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|l| !l.is_empty());
            Ok(RepoEntry {
                repo: repo.to_owned(),
                label: label.unwrap_or(PRIMARY).to_owned(),
            })
        })
        .collect()
}

/// Exactly one entry must be labelled `primary`.
pub fn require_single_primary(list: &[RepoEntry]) -> Result<(), String> {
    let primaries = list.iter().filter(|r| r.label == PRIMARY).count();
    if primaries == 1 {
        Ok(())
    } else {
        Err(format!(
            "repos must have exactly one entry labeled \"primary\" (found {primaries})"
        ))
    }
}

/// Reads a stored mapping. Fails closed: a corrupt column is reported as damage, never as
/// "no repos".
pub fn stored_repos(namespace: &str, stored: Option<&str>) -> Result<Vec<RepoEntry>, String> {
    let text = stored.unwrap_or("[]");
    serde_json::from_str::<Vec<RepoEntry>>(text)
        .map_err(|_| format!("the repos mapping stored for namespace {namespace} is corrupt; fix it with update_namespace"))
}

/// Resolves a tool's `repo` selector (a label, or an `owner/name` that must be mapped) to a
/// mapped repository; without a selector, the `primary` entry (or the first).
pub fn resolve_repo(
    namespace: &str,
    list: &[RepoEntry],
    selector: Option<&str>,
) -> Result<RepoRef, String> {
    let entry = resolve_entry(namespace, list, selector)?;
    RepoRef::parse(&entry.repo)
        .ok_or_else(|| format!("mapped repo {:?} is not owner/name", entry.repo))
}

/// The mapping entry a selector names (see [`resolve_repo`]), with its label.
pub fn resolve_entry<'a>(
    namespace: &str,
    list: &'a [RepoEntry],
    selector: Option<&str>,
) -> Result<&'a RepoEntry, String> {
    if list.is_empty() {
        return Err(format!(
            "namespace {namespace} has no repo mapping; add one with update_namespace"
        ));
    }
    let entry = match selector.map(str::trim).filter(|s| !s.is_empty()) {
        None => list.iter().find(|r| r.label == PRIMARY).unwrap_or(&list[0]),
        Some(sel) => match list
            .iter()
            .find(|r| r.label == sel || r.repo.eq_ignore_ascii_case(sel))
        {
            Some(e) => e,
            None => {
                let valid: Vec<String> = list
                    .iter()
                    .map(|r| format!("{} ({})", r.label, r.repo))
                    .collect();
                return Err(format!(
                    "repo {sel:?} is not mapped to namespace {namespace}; valid selectors: {}",
                    valid.join(", ")
                ));
            }
        },
    };
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_shape() {
        assert!(is_repo_shape("octo/widgets"));
        for bad in ["octo", "/x", "x/", "a/b/c", "a b/c", ""] {
            assert!(!is_repo_shape(bad), "{bad}");
        }
    }

    #[test]
    fn parse_and_primary_rules() {
        let list =
            parse_repos_list(r#"[{"repo":"o/a"},{"repo":"o/b","label":" legacy "}]"#).unwrap();
        assert_eq!(list[0].label, "primary");
        assert_eq!(list[1].label, "legacy");
        assert!(require_single_primary(&list).is_ok());
        let two = parse_repos_list(r#"[{"repo":"o/a"},{"repo":"o/b"}]"#).unwrap();
        assert_eq!(
            require_single_primary(&two).unwrap_err(),
            "repos must have exactly one entry labeled \"primary\" (found 2)"
        );
        assert!(parse_repos_list("[]").is_err());
        assert!(parse_repos_list("{}").is_err());
        assert!(
            parse_repos_list("nope")
                .unwrap_err()
                .starts_with("invalid repos JSON")
        );
        assert!(
            parse_repos_list(r#"[{"repo":"bad"}]"#)
                .unwrap_err()
                .contains("owner/name")
        );
    }

    #[test]
    fn selectors_resolve_only_mapped_repos() {
        let list = parse_repos_list(r#"[{"repo":"o/a"},{"repo":"o/b","label":"legacy"}]"#).unwrap();
        assert_eq!(resolve_repo("ns", &list, None).unwrap().to_string(), "o/a");
        assert_eq!(
            resolve_repo("ns", &list, Some("legacy"))
                .unwrap()
                .to_string(),
            "o/b"
        );
        assert_eq!(
            resolve_repo("ns", &list, Some("o/b")).unwrap().to_string(),
            "o/b"
        );
        let err = resolve_repo("ns", &list, Some("evil/repo")).unwrap_err();
        assert!(
            err.contains("not mapped") && err.contains("legacy (o/b)"),
            "{err}"
        );
        assert!(
            stored_repos("ns", Some("{corrupt"))
                .unwrap_err()
                .contains("corrupt")
        );
    }
}
