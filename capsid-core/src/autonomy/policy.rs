//! The policy document format (reference 7.1): `- version:`, `- enabled:`, `- namespaces:`
//! fields and backticked check/class ids, and the load-time rule that a policy may not
//! describe less than the code enforces.
//!
//! The caller verifies the signature and strips its frontmatter before parsing. Ids the
//! document names beyond the ones the code enforces are ignored: they authorise nothing,
//! since the code only ever runs its own checks.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use crate::autonomy::auto_merge::CheckId;
use crate::autonomy::gates::GateClass;
use crate::improve::roster::Roster;

/// The namespace both policy documents live in.
pub const POLICY_NAMESPACE: &str = "capsid";
/// The auto-merge policy's path in [`POLICY_NAMESPACE`].
pub const AUTO_MERGE_POLICY_PATH: &str = "policy/auto-merge.md";
/// The pre-approved gates policy's path in [`POLICY_NAMESPACE`].
pub const GATE_POLICY_PATH: &str = "policy/gates.md";

/// Which policy a document is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// `policy/auto-merge.md`: what the server may merge without a human.
    AutoMerge,
    /// `policy/gates.md`: which blocked commands the seat may approve alone.
    Gates,
}

impl PolicyKind {
    /// The ids the code enforces, each of which the document must name.
    pub fn enforced_ids(self) -> Vec<&'static str> {
        match self {
            PolicyKind::AutoMerge => CheckId::ALL.iter().map(|c| c.name()).collect(),
            PolicyKind::Gates => GateClass::ALL.iter().map(|c| c.name()).collect(),
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyKind::AutoMerge => "merge policy",
            PolicyKind::Gates => "gate policy",
        })
    }
}

/// Why a policy document authorises nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// No `- version:` line, or an empty one.
    #[error(
        "the {kind} names no version (a `- version:` line), so an action taken against it cannot be traced to what it allowed"
    )]
    MissingVersion {
        /// Which policy.
        kind: PolicyKind,
    },
    /// No `- enabled:` line.
    #[error("the {kind} does not say whether it is enabled (a `- enabled:` line)")]
    MissingEnabled {
        /// Which policy.
        kind: PolicyKind,
    },
    /// The merge policy's `- namespaces:` line is missing or lists nothing.
    #[error(
        "the merge policy covers no namespaces (a `- namespaces:` line), so it authorises nothing"
    )]
    NoNamespaces,
    /// The merge policy names namespaces off the improve roster.
    #[error("the merge policy names {}, which is not on the improve roster; a policy cannot widen the set of repos the server reaches", .namespaces.join(", "))]
    OffRoster {
        /// The namespaces not on the roster.
        namespaces: Vec<String>,
    },
    /// The document does not name every check or class the code enforces.
    #[error("the {kind} does not name {}, which the code enforces; refusing a policy that describes less than the code does", .missing.join(", "))]
    DescribesLess {
        /// Which policy.
        kind: PolicyKind,
        /// The enforced ids the document leaves out, in the code's order.
        missing: Vec<&'static str>,
    },
}

/// A loaded auto-merge policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoMergePolicy {
    /// The version string, recorded on every merge and decline.
    pub version: String,
    /// Whether the policy is on.
    pub enabled: bool,
    /// The roster namespaces it covers, in document order.
    pub namespaces: Vec<String>,
}

/// A loaded gate policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatePolicy {
    /// The version string an approval must name.
    pub version: String,
    /// Whether the policy is on.
    pub enabled: bool,
}

static ID_ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^- `([a-z_]+)`").unwrap_or_else(|e| unreachable!("id pattern is valid: {e}"))
});

/// The value of the first line (trimmed) that starts, case-insensitively, with `- <name>:`:
/// the text after its first colon, trimmed.
pub(crate) fn field<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let prefix = format!("- {name}:");
    body.split('\n')
        .map(str::trim)
        .find(|line| line.to_lowercase().starts_with(&prefix))
        .and_then(|line| line.split_once(':'))
        .map(|(_, value)| value.trim())
}

/// `body` with every `- enabled:` line (as the policy reader finds it, whatever its case) set to
/// `- enabled: false`, and one added after the first line when there is none: a policy a
/// restore brought in under a secret it cannot check waits, disabled, for the admin.
pub fn disabled(body: &str) -> String {
    let mut found = false;
    let lines: Vec<String> = body
        .split('\n')
        .map(|line| {
            let trimmed = line.trim();
            if trimmed.to_lowercase().starts_with("- enabled:") {
                found = true;
                let indent = &line[..line.len() - line.trim_start().len()];
                format!("{indent}- enabled: false")
            } else {
                line.to_owned()
            }
        })
        .collect();
    if found {
        return lines.join("\n");
    }
    match body.split_once('\n') {
        Some((first, rest)) => format!("{first}\n- enabled: false\n{rest}"),
        None => format!("{body}\n- enabled: false\n"),
    }
}

/// Every backticked id at the head of a list item, in document order.
pub fn named_ids(body: &str) -> Vec<String> {
    body.split('\n')
        .filter_map(|line| ID_ITEM.captures(line.trim()).map(|c| c[1].to_owned()))
        .collect()
}

fn version_and_enabled(kind: PolicyKind, body: &str) -> Result<(String, bool), PolicyError> {
    let version = field(body, "version")
        .filter(|v| !v.is_empty())
        .ok_or(PolicyError::MissingVersion { kind })?;
    let enabled = field(body, "enabled").ok_or(PolicyError::MissingEnabled { kind })?;
    Ok((version.to_owned(), enabled.to_lowercase() == "true"))
}

fn require_enforced_ids(kind: PolicyKind, body: &str) -> Result<(), PolicyError> {
    let named = named_ids(body);
    let missing: Vec<&'static str> = kind
        .enforced_ids()
        .into_iter()
        .filter(|id| !named.iter().any(|n| n == id))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PolicyError::DescribesLess { kind, missing })
    }
}

/// Loads the auto-merge policy: version, enabled, namespaces (non-empty, all on `roster`),
/// then every enforced check named.
pub fn parse_auto_merge_policy(
    body: &str,
    roster: &Roster,
) -> Result<AutoMergePolicy, PolicyError> {
    let kind = PolicyKind::AutoMerge;
    let (version, enabled) = version_and_enabled(kind, body)?;
    let namespaces: Vec<String> = field(body, "namespaces")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    if namespaces.is_empty() {
        return Err(PolicyError::NoNamespaces);
    }
    let off_roster: Vec<String> = namespaces
        .iter()
        .filter(|n| !roster.contains(n))
        .cloned()
        .collect();
    if !off_roster.is_empty() {
        return Err(PolicyError::OffRoster {
            namespaces: off_roster,
        });
    }
    require_enforced_ids(kind, body)?;
    Ok(AutoMergePolicy {
        version,
        enabled,
        namespaces,
    })
}

/// Loads the gate policy: version, enabled, then every gate class named.
pub fn parse_gate_policy(body: &str) -> Result<GatePolicy, PolicyError> {
    let kind = PolicyKind::Gates;
    let (version, enabled) = version_and_enabled(kind, body)?;
    require_enforced_ids(kind, body)?;
    Ok(GatePolicy { version, enabled })
}

#[cfg(test)]
mod tests;
