//! The intake policy document (`capsid/policy/intake.md`): the autonomy policies' envelope and
//! rules (signed by `sign_policy`, unsigned or edited after signing authorizes nothing, off
//! unless `- enabled: true`), with these fields:
//!
//! ```text
//! - version: 1
//! - enabled: true
//! - namespaces: alpha, beta
//! - label: capsid            (optional; default `capsid`)
//! - authors: octocat, hubot  (optional; see below)
//! - jobs_per_pass: 10        (optional; default 10, at most 1000)
//! - jobs_per_author: 3       (optional; default 3, at most 1000)
//! ```
//!
//! A label is not an authorization boundary on GitHub (an issue template can apply it to
//! every issue), so without an `authors` line the intake takes in only the issues of authors
//! GitHub relates to the repository as `OWNER`, `MEMBER` or `COLLABORATOR`; `authors` names
//! the logins instead, and `- authors: *` takes in anyone's. Each pass takes in at most
//! `jobs_per_pass` new issues, and at most `jobs_per_author` of any one author; the rest wait
//! for a later pass.
//!
//! The caller verifies the signature and strips the envelope before parsing. Every refusal
//! names its field.

use crate::autonomy::policy::field;
use crate::paths::namespace_problem;

/// The intake policy's path in the `capsid` namespace.
pub const INTAKE_POLICY_PATH: &str = "policy/intake.md";
/// The label an issue needs when the policy names none.
pub const DEFAULT_LABEL: &str = "capsid";
/// The actor of every row the intake writes and of the jobs it posts.
pub const INTAKE_ACTOR: &str = "intake";

/// The longest label GitHub accepts.
const LABEL_MAX: usize = 50;
/// The longest GitHub login.
const LOGIN_MAX: usize = 39;
/// New issues one pass takes in when the policy does not say.
pub const DEFAULT_JOBS_PER_PASS: u32 = 10;
/// New issues of one author one pass takes in when the policy does not say.
pub const DEFAULT_JOBS_PER_AUTHOR: u32 = 3;
/// The most either cap may be.
const JOBS_CAP_MAX: u32 = 1000;
/// The author associations taken in without an `authors` line.
pub const TRUSTED_ASSOCIATIONS: [&str; 3] = ["OWNER", "MEMBER", "COLLABORATOR"];

/// Whose issues the intake takes in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Authors {
    /// No `authors` line: those GitHub relates to the repository as [`TRUSTED_ASSOCIATIONS`].
    Trusted,
    /// `- authors: a, b`: these logins (lower-cased).
    Named(Vec<String>),
    /// `- authors: *`: anyone's.
    Anyone,
}

/// A loaded intake policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntakePolicy {
    /// The version string, recorded on every job the intake posts.
    pub version: String,
    /// Whether the policy is on.
    pub enabled: bool,
    /// The namespaces whose repositories the intake reads, in document order, no repeats.
    pub namespaces: Vec<String>,
    /// The label an issue needs.
    pub label: String,
    /// Whose issues are taken in.
    pub authors: Authors,
    /// New issues one pass takes in.
    pub jobs_per_pass: u32,
    /// New issues of one author one pass takes in.
    pub jobs_per_author: u32,
}

impl IntakePolicy {
    /// Whether the policy names `namespace`.
    pub fn names(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|n| n == namespace)
    }

    /// Whether an issue opened by `login`, whom GitHub relates to the repository as
    /// `association`, is taken in (logins and associations are case-insensitive).
    pub fn admits(&self, login: &str, association: &str) -> bool {
        match &self.authors {
            Authors::Trusted => TRUSTED_ASSOCIATIONS
                .iter()
                .any(|a| a.eq_ignore_ascii_case(association)),
            Authors::Named(list) => list.iter().any(|a| a.eq_ignore_ascii_case(login)),
            Authors::Anyone => true,
        }
    }

    /// Why an issue of `login` (as `association`) is left out, for the pass's report.
    pub fn refusal(&self, login: &str, association: &str) -> String {
        match &self.authors {
            Authors::Trusted => format!(
                "opened by @{login} ({}), not an owner, member or collaborator of the repository (name the author in the policy's `authors` line to take it in)",
                if association.is_empty() {
                    "no association given"
                } else {
                    association
                }
            ),
            Authors::Named(_) => format!("opened by @{login}, whom the policy does not name"),
            Authors::Anyone => String::new(),
        }
    }
}

/// Why an intake policy authorizes nothing: the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the intake policy's `{field}` field: {why}")]
pub struct IntakePolicyError {
    /// The field (`version`, `enabled`, `namespaces`, `label`, `authors`, `jobs_per_pass` or
    /// `jobs_per_author`).
    pub field: &'static str,
    /// What is wrong with it.
    pub why: String,
}

fn refuse<T>(field: &'static str, why: impl Into<String>) -> Result<T, IntakePolicyError> {
    Err(IntakePolicyError {
        field,
        why: why.into(),
    })
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect()
}

fn login_ok(login: &str) -> bool {
    let name = login.strip_suffix("[bot]").unwrap_or(login);
    !name.is_empty()
        && name.len() <= LOGIN_MAX
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// Loads the intake policy from its unsigned body: version, enabled (`true` or `false`),
/// namespaces (at least one, each a valid namespace name), label (default `capsid`), authors
/// (when the line is present: `*` or at least one GitHub login), jobs_per_pass and
/// jobs_per_author (1 to 1000).
pub fn parse_intake_policy(body: &str) -> Result<IntakePolicy, IntakePolicyError> {
    let Some(version) = field(body, "version").filter(|v| !v.is_empty()) else {
        return refuse(
            "version",
            "missing (a `- version:` line); every job the intake posts records the version that allowed it",
        );
    };
    let enabled = match field(body, "enabled").map(str::to_ascii_lowercase) {
        Some(v) if v == "true" => true,
        Some(v) if v == "false" => false,
        Some(v) => return refuse("enabled", format!("'{v}' is neither true nor false")),
        None => return refuse("enabled", "missing (a `- enabled: true` or `false` line)"),
    };
    let mut namespaces: Vec<String> = Vec::new();
    for ns in list(field(body, "namespaces").unwrap_or_default()) {
        if let Some(problem) = namespace_problem(&ns) {
            return refuse("namespaces", format!("'{ns}': {problem}"));
        }
        if !namespaces.contains(&ns) {
            namespaces.push(ns);
        }
    }
    if namespaces.is_empty() {
        return refuse(
            "namespaces",
            "names no namespace (a `- namespaces: a, b` line), so it takes in nothing",
        );
    }
    let label = match field(body, "label") {
        None => DEFAULT_LABEL.to_owned(),
        Some("") => {
            return refuse("label", "empty; leave the line out for `capsid`");
        }
        Some(l) if l.contains(',') => {
            return refuse("label", format!("'{l}' names more than one label"));
        }
        Some(l) if l.chars().count() > LABEL_MAX || l.chars().any(char::is_control) => {
            return refuse(
                "label",
                format!("'{l}' is not a GitHub label (at most {LABEL_MAX} printable characters)"),
            );
        }
        Some(l) => l.to_owned(),
    };
    let authors = match field(body, "authors") {
        None => Authors::Trusted,
        Some("*") => Authors::Anyone,
        Some(value) => {
            let logins = list(value);
            if logins.is_empty() {
                return refuse(
                    "authors",
                    "lists nobody; leave the line out for the repository's owners, members and collaborators, or write `*` for anyone",
                );
            }
            if let Some(bad) = logins.iter().find(|l| !login_ok(l)) {
                return refuse("authors", format!("'{bad}' is not a GitHub login"));
            }
            Authors::Named(logins.iter().map(|l| l.to_ascii_lowercase()).collect())
        }
    };
    let cap = |name: &'static str, default: u32| -> Result<u32, IntakePolicyError> {
        match field(body, name) {
            None => Ok(default),
            Some(v) => match v.parse::<u32>() {
                Ok(n) if (1..=JOBS_CAP_MAX).contains(&n) => Ok(n),
                _ => refuse(
                    name,
                    format!("'{v}' is not a whole number from 1 to {JOBS_CAP_MAX}"),
                ),
            },
        }
    };
    Ok(IntakePolicy {
        version: version.to_owned(),
        enabled,
        namespaces,
        label,
        authors,
        jobs_per_pass: cap("jobs_per_pass", DEFAULT_JOBS_PER_PASS)?,
        jobs_per_author: cap("jobs_per_author", DEFAULT_JOBS_PER_AUTHOR)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = "# Intake\n\n- version: 3\n- enabled: true\n- namespaces: alpha, beta, alpha\n\
                        - label: agent-work\n- authors: Octocat, hubot[bot]\n";

    #[test]
    fn a_full_policy_parses_every_field() {
        let p = parse_intake_policy(FULL).unwrap();
        assert_eq!(p.version, "3");
        assert!(p.enabled);
        assert_eq!(
            p.namespaces,
            ["alpha", "beta"],
            "repeats dropped, order kept"
        );
        assert_eq!(p.label, "agent-work");
        assert_eq!(
            p.authors,
            Authors::Named(vec!["octocat".to_owned(), "hubot[bot]".to_owned()])
        );
        assert!(p.names("beta") && !p.names("gamma"));
        // Named logins whatever GitHub says of them; nobody else, an owner included.
        assert!(
            p.admits("OCTOCAT", "NONE")
                && p.admits("hubot[bot]", "")
                && !p.admits("mallory", "OWNER")
        );
        assert_eq!(
            p.refusal("mallory", "OWNER"),
            "opened by @mallory, whom the policy does not name"
        );
    }

    #[test]
    fn label_defaults_to_capsid_authors_to_the_repositorys_people_and_caps_to_ten_and_three() {
        let p =
            parse_intake_policy("- version: 1\n- enabled: false\n- namespaces: alpha\n").unwrap();
        assert_eq!(p.label, DEFAULT_LABEL);
        assert_eq!(p.authors, Authors::Trusted);
        for trusted in ["OWNER", "MEMBER", "COLLABORATOR", "member"] {
            assert!(p.admits("someone", trusted), "{trusted}");
        }
        for outsider in [
            "CONTRIBUTOR",
            "FIRST_TIME_CONTRIBUTOR",
            "FIRST_TIMER",
            "NONE",
            "MANNEQUIN",
            "",
        ] {
            assert!(!p.admits("someone", outsider), "{outsider}");
        }
        let why = p.refusal("mallory", "NONE");
        assert!(
            why.contains("@mallory (NONE), not an owner, member or collaborator"),
            "{why}"
        );
        assert!(p.refusal("x", "").contains("(no association given)"));
        assert_eq!((p.jobs_per_pass, p.jobs_per_author), (10, 3));
        assert!(!p.enabled);
        let anyone = parse_intake_policy(
            "- version: 1\n- enabled: true\n- namespaces: a\n- authors: *\n- jobs_per_pass: 100\n- jobs_per_author: 1\n",
        )
        .unwrap();
        assert_eq!(anyone.authors, Authors::Anyone);
        assert!(anyone.admits("stranger", "NONE"));
        assert_eq!((anyone.jobs_per_pass, anyone.jobs_per_author), (100, 1));
    }

    #[test]
    fn each_malformed_field_is_named() {
        let base = "- version: 1\n- enabled: true\n- namespaces: alpha\n";
        let cases: [(&str, &str, &str); 14] = [
            ("- enabled: true\n- namespaces: a\n", "version", "missing"),
            (
                "- version:\n- enabled: true\n- namespaces: a\n",
                "version",
                "missing",
            ),
            ("- version: 1\n- namespaces: a\n", "enabled", "missing"),
            (
                "- version: 1\n- enabled: yes\n- namespaces: a\n",
                "enabled",
                "'yes'",
            ),
            (
                "- version: 1\n- enabled: true\n",
                "namespaces",
                "names no namespace",
            ),
            (
                "- version: 1\n- enabled: true\n- namespaces: a/b\n",
                "namespaces",
                "'a/b'",
            ),
            (&format!("{base}- label:\n"), "label", "empty"),
            (&format!("{base}- label: a, b\n"), "label", "more than one"),
            (&format!("{base}- authors: ,\n"), "authors", "lists nobody"),
            (
                &format!("{base}- authors: ok, not a login\n"),
                "authors",
                "'not a login'",
            ),
            (
                &format!("{base}- jobs_per_pass: 0\n"),
                "jobs_per_pass",
                "'0'",
            ),
            (
                &format!("{base}- jobs_per_pass: 1001\n"),
                "jobs_per_pass",
                "from 1 to 1000",
            ),
            (
                &format!("{base}- jobs_per_author: many\n"),
                "jobs_per_author",
                "'many'",
            ),
            (
                &format!("{base}- jobs_per_author: -1\n"),
                "jobs_per_author",
                "'-1'",
            ),
        ];
        for (body, field, says) in cases {
            let err = parse_intake_policy(body).unwrap_err();
            assert_eq!(err.field, field, "{body}");
            let text = err.to_string();
            assert!(
                text.contains(&format!("`{field}`")) && text.contains(says),
                "{body}: {text}"
            );
        }
        let long = format!("{base}- label: {}\n", "x".repeat(LABEL_MAX + 1));
        assert_eq!(parse_intake_policy(&long).unwrap_err().field, "label");
        let ok = format!("{base}- label: {}\n", "x".repeat(LABEL_MAX));
        assert!(parse_intake_policy(&ok).is_ok());
    }

    #[test]
    fn an_author_is_a_github_login_of_at_most_39_characters_not_starting_with_a_hyphen() {
        let authors = |line: &str| {
            parse_intake_policy(&format!(
                "- version: 1\n- enabled: true\n- namespaces: a\n- authors: {line}\n"
            ))
        };
        let longest = "a".repeat(LOGIN_MAX);
        let p = authors(&format!("{longest}, mona-lisa, Dependabot[bot], x")).unwrap();
        assert_eq!(
            p.authors,
            Authors::Named(vec![
                longest.clone(),
                "mona-lisa".to_owned(),
                "dependabot[bot]".to_owned(),
                "x".to_owned(),
            ])
        );
        let too_long = "a".repeat(LOGIN_MAX + 1);
        for bad in [
            too_long.as_str(),
            "[bot]",
            "-octocat",
            "-",
            "octo_cat",
            "octo.cat",
            "bot[bot][bot]",
        ] {
            let err = authors(&format!("ok, {bad}")).unwrap_err();
            assert_eq!(
                err,
                IntakePolicyError {
                    field: "authors",
                    why: format!("'{bad}' is not a GitHub login"),
                },
                "{bad}"
            );
        }
    }

    /// The reviewable copy shipped in `docs/policy/intake.md` (issue 56, item 12) parses with
    /// the defaults it states, and survives signing.
    #[test]
    fn the_shipped_intake_policy_parses_and_signs() {
        use crate::jobs::signature::{seal_task, verify_task};
        let body = include_str!("../../../docs/policy/intake.md");
        let p = parse_intake_policy(body).expect("intake.md parses");
        assert_eq!((p.version.as_str(), p.enabled), ("1", false));
        assert_eq!(p.namespaces, ["demo"]);
        assert_eq!(p.label, DEFAULT_LABEL);
        assert_eq!(p.authors, Authors::Trusted);
        assert_eq!(
            (p.jobs_per_pass, p.jobs_per_author),
            (DEFAULT_JOBS_PER_PASS, DEFAULT_JOBS_PER_AUTHOR)
        );
        let sealed = seal_task("the-owner's-secret", body);
        let verified = verify_task("the-owner's-secret", &sealed).expect("verifies");
        assert_eq!(parse_intake_policy(verified), Ok(p));
    }

    #[test]
    fn enabled_is_read_whatever_its_case() {
        let p = parse_intake_policy("- Version: 2\n- ENABLED: True\n- namespaces: a\n").unwrap();
        assert!(p.enabled);
        assert_eq!(p.version, "2");
    }
}
