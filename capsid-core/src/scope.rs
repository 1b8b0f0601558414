//! Scopes: the five axes a caller holds, parsed fail-closed, and `check_scope`, the single
//! check every tool call passes through (reference 3.2, 3.3).
//!
//! Order is load-bearing: tool/action, then grant, then namespace, then repo, then flags, so a
//! caller that cannot use a tool at all is told that first and learns nothing about namespaces.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value, json};

/// A blast-radius permission. `admin` is deliberately not a flag: a flag can be granted through
/// `update_scopes`, and no minted agent may ever become an admin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Flag {
    /// Merge pull requests.
    CanMerge,
    /// Commit straight to the default branch.
    CanDirectWrite,
    /// Dispatch or re-run CI workflows.
    CanDispatch,
    /// Write under `.github/workflows/`.
    CanWriteWorkflows,
    /// Touch protected paths (tests, CI, manifests, the loop's own files).
    CanTouchProtected,
    /// Touch billing, payment and pricing paths.
    MoneyPaths,
    /// Comment on pull requests.
    CanCommentPr,
    /// Write the shared context every namespace reads (SPEC 8).
    CanWriteShared,
    /// Run a backup of every namespace on demand (`POST /ops/backup`).
    CanBackup,
    /// Raise a job's cap on what its run may spend (`jobs raise`, `capsid jobs raise`).
    CanRaiseBudget,
}

impl Flag {
    /// All ten flags: the reference's seven in its order, then `can_write_shared`,
    /// `can_backup` and `can_raise_budget`.
    pub const ALL: [Flag; 10] = [
        Flag::CanMerge,
        Flag::CanDirectWrite,
        Flag::CanDispatch,
        Flag::CanWriteWorkflows,
        Flag::CanTouchProtected,
        Flag::MoneyPaths,
        Flag::CanCommentPr,
        Flag::CanWriteShared,
        Flag::CanBackup,
        Flag::CanRaiseBudget,
    ];

    /// The flag's wire name.
    pub fn name(self) -> &'static str {
        match self {
            Flag::CanMerge => "can_merge",
            Flag::CanDirectWrite => "can_direct_write",
            Flag::CanDispatch => "can_dispatch",
            Flag::CanWriteWorkflows => "can_write_workflows",
            Flag::CanTouchProtected => "can_touch_protected",
            Flag::MoneyPaths => "money_paths",
            Flag::CanCommentPr => "can_comment_pr",
            Flag::CanWriteShared => "can_write_shared",
            Flag::CanBackup => "can_backup",
            Flag::CanRaiseBudget => "can_raise_budget",
        }
    }

    /// The flag named `name` (exact spelling), if any.
    pub fn parse(name: &str) -> Option<Flag> {
        Flag::ALL.into_iter().find(|f| f.name() == name)
    }

    /// One sentence on why the flag exists, quoted in refusals.
    pub fn reason(self) -> &'static str {
        match self {
            Flag::CanMerge => "merging lands code on the default branch without a human",
            Flag::CanDirectWrite => "a direct write skips the pull request a human would review",
            Flag::CanDispatch => {
                "dispatching CI spends Actions minutes and can run deploy workflows"
            }
            Flag::CanWriteWorkflows => "workflow files run with the repository's CI secrets",
            Flag::CanTouchProtected => {
                "protected paths (tests, CI, manifests, the loop's own files) decide what counts as passing"
            }
            Flag::MoneyPaths => "billing and payment code moves real money",
            Flag::CanCommentPr => {
                "a pull-request comment can carry a review verdict that gates a job"
            }
            Flag::CanWriteShared => {
                "the shared context is the one store every namespace reads and trusts"
            }
            Flag::CanBackup => "a backup dumps every namespace's data and keeps it for 90 days",
            Flag::CanRaiseBudget => {
                "raising a job's cap lets its agent spend more of the namespace's money"
            }
        }
    }
}

impl fmt::Display for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Read tools versus write tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Grant {
    /// May call read tools.
    Read,
    /// May call write tools.
    Write,
}

impl Grant {
    /// The grant's wire name.
    pub fn name(self) -> &'static str {
        match self {
            Grant::Read => "read",
            Grant::Write => "write",
        }
    }

    /// The grant named `name` (exact spelling), if any.
    pub fn parse(name: &str) -> Option<Grant> {
        match name {
            "read" => Some(Grant::Read),
            "write" => Some(Grant::Write),
            _ => None,
        }
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A list axis: everything (`"*"` as the whole value) or exactly the listed names. The string
/// `"*"` inside a list is a literal name, not a wildcard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Axis {
    /// `"*"`: every value.
    All,
    /// Only these values (possibly none).
    Only(Vec<String>),
}

impl Axis {
    /// Whether `value` is allowed.
    pub fn allows(&self, value: &str) -> bool {
        match self {
            Axis::All => true,
            Axis::Only(list) => list.iter().any(|v| v == value),
        }
    }

    /// Whether this is the wildcard.
    pub fn is_all(&self) -> bool {
        matches!(self, Axis::All)
    }

    /// Whether some value is allowed by both axes (a wildcard meets any non-empty list).
    pub fn overlaps(&self, other: &Axis) -> bool {
        match (self, other) {
            (Axis::All, Axis::All) => true,
            (Axis::All, Axis::Only(list)) | (Axis::Only(list), Axis::All) => !list.is_empty(),
            (Axis::Only(a), Axis::Only(b)) => a.iter().any(|v| b.contains(v)),
        }
    }

    /// How refusals print the axis: `*`, `(none)`, or a comma list.
    pub fn describe(&self) -> String {
        match self {
            Axis::All => "*".to_owned(),
            Axis::Only(list) if list.is_empty() => "(none)".to_owned(),
            Axis::Only(list) => list.join(", "),
        }
    }

    /// Fail-closed parse of one stored axis: `"*"` is the wildcard, an array keeps its non-empty
    /// strings, anything else is the empty list.
    fn from_stored(value: Option<&Value>) -> Axis {
        match value {
            Some(Value::String(s)) if s == "*" => Axis::All,
            Some(Value::Array(items)) => Axis::Only(
                items
                    .iter()
                    .filter_map(|v| v.as_str())
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ),
            _ => Axis::Only(Vec::new()),
        }
    }

    /// An axis given at mint or update time: a list that is exactly `["*"]` becomes the wildcard.
    pub fn from_input(list: Vec<String>) -> Axis {
        if list.len() == 1 && list[0] == "*" {
            Axis::All
        } else {
            Axis::Only(list)
        }
    }

    fn view(&self) -> AxisView {
        match self {
            Axis::All => AxisView::All(Wildcard),
            Axis::Only(list) => AxisView::Only(list.clone()),
        }
    }
}

/// `"*"`: every value of an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wildcard;

impl serde::Serialize for Wildcard {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("*")
    }
}

impl schemars::JsonSchema for Wildcard {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Wildcard".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "const": "*" })
    }
}

/// An axis as stored and shown: `"*"` or a list.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum AxisView {
    /// Everything.
    All(Wildcard),
    /// Only these.
    Only(Vec<String>),
}

/// Every flag with whether it is held, in [`Flag::ALL`]'s order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlagValues(pub Vec<(Flag, bool)>);

impl serde::Serialize for FlagValues {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (flag, held) in &self.0 {
            map.serialize_entry(flag.name(), held)?;
        }
        map.end()
    }
}

impl schemars::JsonSchema for FlagValues {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FlagValues".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Flag::ALL.iter().map(|f| f.name()).collect();
        let properties: Map<String, Value> = names
            .iter()
            .map(|n| ((*n).to_owned(), json!({ "type": "boolean" })))
            .collect();
        schemars::json_schema!({
            "type": "object",
            "properties": properties,
            "required": names,
            "additionalProperties": false,
        })
    }
}

/// The stored (and publicly shown) form of [`Scopes`]: every flag listed with its value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ScopesView {
    /// Which namespaces calls may name.
    pub namespaces: AxisView,
    /// Which `repo` selectors may be passed.
    pub repos: AxisView,
    /// Which tools (and `tool.action` entries) may be called.
    pub tools: AxisView,
    /// `read`, `write`.
    pub grants: Vec<&'static str>,
    /// Every flag and whether it is held.
    pub flags: FlagValues,
}

/// The five axes a caller holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scopes {
    /// Which namespaces calls may name.
    pub namespaces: Axis,
    /// Which `repo` selector strings may be passed.
    pub repos: Axis,
    /// Which tools (and `tool.action` entries) may be called.
    pub tools: Axis,
    /// Read and/or write.
    pub grants: BTreeSet<Grant>,
    /// Blast-radius flags held.
    pub flags: BTreeSet<Flag>,
}

impl Scopes {
    /// Nothing at all: what any malformed stored value parses to.
    pub fn none() -> Scopes {
        Scopes {
            namespaces: Axis::Only(Vec::new()),
            repos: Axis::Only(Vec::new()),
            tools: Axis::Only(Vec::new()),
            grants: BTreeSet::new(),
            flags: BTreeSet::new(),
        }
    }

    /// Everything, every flag: the OAuth admin and a legacy write operator key.
    pub fn unrestricted() -> Scopes {
        Scopes {
            namespaces: Axis::All,
            repos: Axis::All,
            tools: Axis::All,
            grants: [Grant::Read, Grant::Write].into(),
            flags: Flag::ALL.into(),
        }
    }

    /// Every namespace, repo and tool, read grant only, no flags: a legacy `ro:` operator key.
    pub fn read_everything() -> Scopes {
        Scopes {
            grants: [Grant::Read].into(),
            flags: BTreeSet::new(),
            ..Scopes::unrestricted()
        }
    }

    /// The defaults a newly minted agent starts from: the given namespaces, every repo and tool,
    /// the read grant, no flags.
    pub fn mint_defaults(namespaces: Axis) -> Scopes {
        Scopes {
            namespaces,
            repos: Axis::All,
            tools: Axis::All,
            grants: [Grant::Read].into(),
            flags: BTreeSet::new(),
        }
    }

    /// `parseScopes`: fail-closed. Null or empty text, invalid JSON, or a non-object gives
    /// [`Scopes::none`]. Within an object, a list axis that is neither `"*"` nor an array is
    /// empty, list entries are kept only if non-empty strings, grants are filtered to the two
    /// known values, and a flag counts only if it is one of the nine and literally `true`.
    pub fn parse(stored: Option<&str>) -> Scopes {
        let Some(text) = stored.filter(|t| !t.trim().is_empty()) else {
            return Scopes::none();
        };
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(text) else {
            return Scopes::none();
        };
        let grants = match obj.get("grants") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str())
                .filter_map(Grant::parse)
                .collect(),
            _ => BTreeSet::new(),
        };
        let flags = match obj.get("flags") {
            Some(Value::Object(map)) => Flag::ALL
                .into_iter()
                .filter(|f| map.get(f.name()) == Some(&Value::Bool(true)))
                .collect(),
            _ => BTreeSet::new(),
        };
        Scopes {
            namespaces: Axis::from_stored(obj.get("namespaces")),
            repos: Axis::from_stored(obj.get("repos")),
            tools: Axis::from_stored(obj.get("tools")),
            grants,
            flags,
        }
    }

    /// The stored (and publicly shown) form. Every flag is listed with its value.
    pub fn view(&self) -> ScopesView {
        ScopesView {
            namespaces: self.namespaces.view(),
            repos: self.repos.view(),
            tools: self.tools.view(),
            grants: self.grants.iter().map(|g| g.name()).collect(),
            flags: FlagValues(
                Flag::ALL
                    .into_iter()
                    .map(|f| (f, self.flags.contains(&f)))
                    .collect(),
            ),
        }
    }

    /// The stored (and publicly shown) JSON form ([`Scopes::view`]).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).unwrap_or(Value::Null)
    }

    /// Whether the caller holds `grant`.
    pub fn has_grant(&self, grant: Grant) -> bool {
        self.grants.contains(&grant)
    }

    /// Applies the axes named in `patch` over these scopes; omitted axes and unnamed flags are
    /// untouched, a named flag is set to whether its value is `true`.
    pub fn apply(&self, patch: &ScopePatch) -> Scopes {
        let mut out = self.clone();
        if let Some(ns) = &patch.namespaces {
            out.namespaces = ns.clone();
        }
        if let Some(repos) = &patch.repos {
            out.repos = repos.clone();
        }
        if let Some(tools) = &patch.tools {
            out.tools = tools.clone();
        }
        if let Some(grants) = &patch.grants {
            out.grants = grants.clone();
        }
        for (flag, on) in &patch.flags {
            if *on {
                out.flags.insert(*flag);
            } else {
                out.flags.remove(flag);
            }
        }
        out
    }
}

/// Axes supplied to `agents mint` or `agents update_scopes`, already validated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopePatch {
    /// New namespace axis, if named.
    pub namespaces: Option<Axis>,
    /// New repos axis, if named.
    pub repos: Option<Axis>,
    /// New tools axis, if named.
    pub tools: Option<Axis>,
    /// New grants, if named.
    pub grants: Option<BTreeSet<Grant>>,
    /// Flags named in the input, with their new values.
    pub flags: BTreeMap<Flag, bool>,
}

impl ScopePatch {
    /// Validates raw input axes. Unknown grant or flag names are refused with a message naming
    /// them; list entries must be non-empty strings.
    pub fn from_input(
        namespaces: Option<Vec<String>>,
        repos: Option<Vec<String>>,
        tools: Option<Vec<String>>,
        grants: Option<Vec<String>>,
        flags: Option<BTreeMap<String, bool>>,
    ) -> Result<ScopePatch, String> {
        fn axis(field: &str, list: Option<Vec<String>>) -> Result<Option<Axis>, String> {
            match list {
                None => Ok(None),
                Some(list) if list.iter().any(|s| s.trim().is_empty()) => {
                    Err(format!("{field}: entries must be non-empty strings"))
                }
                Some(list) => Ok(Some(Axis::from_input(list))),
            }
        }
        let grants = match grants {
            None => None,
            Some(list) => Some(
                list.iter()
                    .map(|g| {
                        Grant::parse(g).ok_or_else(|| {
                            format!("grants: unknown grant {g:?} (valid: read, write)")
                        })
                    })
                    .collect::<Result<BTreeSet<_>, _>>()?,
            ),
        };
        let flags = flags
            .unwrap_or_default()
            .into_iter()
            .map(|(name, on)| {
                Flag::parse(&name).map(|f| (f, on)).ok_or_else(|| {
                    let valid: Vec<_> = Flag::ALL.iter().map(|f| f.name()).collect();
                    format!("flags: unknown flag {name:?} (valid: {})", valid.join(", "))
                })
            })
            .collect::<Result<BTreeMap<_, _>, _>>()?;
        Ok(ScopePatch {
            namespaces: axis("namespaces", namespaces)?,
            repos: axis("repos", repos)?,
            tools: axis("tools", tools)?,
            grants,
            flags,
        })
    }
}

/// What one call needs: the tool (and action), the grant, the namespace and repo selector it
/// names, and any flags its arguments require.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Need<'a> {
    /// The tool called.
    pub tool: &'a str,
    /// The action, for action tools.
    pub action: Option<&'a str>,
    /// The namespace named by the call.
    pub namespace: Option<&'a str>,
    /// The repo selector named by the call.
    pub repo: Option<&'a str>,
    /// The grant the call needs.
    pub grant: Option<Grant>,
    /// Flags the call's arguments need, in order.
    pub flags: Vec<Flag>,
}

/// Why a call was refused by the scope check. Each names what is missing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScopeRefusal {
    /// The tools axis does not allow the tool (or `tool.action`).
    #[error("scope refused: this caller may not use {qualified} (tool scope: {held})")]
    Tool {
        /// `tool` or `tool.action`.
        qualified: String,
        /// The caller's tools axis.
        held: String,
    },
    /// The caller lacks the grant.
    #[error("scope refused: {tool} needs the {needed} grant; this caller holds {held}")]
    Grant {
        /// The tool called.
        tool: String,
        /// The missing grant.
        needed: Grant,
        /// What the caller holds.
        held: String,
    },
    /// The namespace is outside the caller's namespace axis.
    #[error("scope refused: namespace {namespace:?} is outside this caller's namespaces ({held})")]
    Namespace {
        /// The namespace named.
        namespace: String,
        /// The caller's namespace axis.
        held: String,
    },
    /// A narrowed caller omitted the namespace (omission means "all namespaces").
    #[error(
        "scope refused: {tool} without a namespace means every namespace, and this caller is limited to {held}; pass namespace"
    )]
    NamespaceOmitted {
        /// The tool called.
        tool: String,
        /// The caller's namespace axis.
        held: String,
    },
    /// The repo selector is outside the caller's repos axis.
    #[error("scope refused: repo {repo:?} is outside this caller's repos ({held})")]
    Repo {
        /// The selector passed.
        repo: String,
        /// The caller's repos axis.
        held: String,
    },
    /// A call that changes state beyond one namespace, from a caller narrowed to some.
    #[error(
        "scope refused: {what} changes state beyond one namespace ({why}), so it needs the admin or a caller whose namespaces are *; this caller's namespaces: {held}"
    )]
    Global {
        /// `tool.action`, or the route.
        what: String,
        /// Why it reaches beyond one namespace.
        why: &'static str,
        /// The caller's namespace axis.
        held: String,
    },
    /// A required flag is missing.
    #[error("scope refused: this needs the {flag} flag, which this caller does not hold ({reason})", reason = flag.reason())]
    Flag {
        /// The first missing flag.
        flag: Flag,
    },
}

impl Scopes {
    /// Whether these scopes reach every namespace (the namespaces axis is `*`): the one
    /// authority an action that changes state beyond one namespace needs (the admin's scopes
    /// always do).
    pub fn reaches_every_namespace(&self) -> bool {
        self.namespaces.is_all()
    }
}

/// The global-authority rule: `what` changes state beyond one namespace (`why`), so only a
/// caller whose namespaces axis is `*` may do it (the admin, whose scopes are unrestricted,
/// or a minted agent minted for every namespace). Every such action asks this one function:
/// the registry through a [`crate::tools::Rule`] marked global, and the routes that are not
/// tools (`POST /ops/backup`) directly.
pub fn check_global(scopes: &Scopes, what: &str, why: &'static str) -> Result<(), ScopeRefusal> {
    if scopes.reaches_every_namespace() {
        return Ok(());
    }
    Err(ScopeRefusal::Global {
        what: what.to_owned(),
        why,
        held: scopes.namespaces.describe(),
    })
}

/// `allowsToolAction`: the wildcard allows all; otherwise the bare tool name must be listed;
/// a tool with any `tool.` entry is narrowed to the listed actions.
pub fn allows_tool_action(tools: &Axis, tool: &str, action: Option<&str>) -> bool {
    let Axis::Only(list) = tools else { return true };
    if !list.iter().any(|t| t == tool) {
        return false;
    }
    let Some(action) = action else { return true };
    let prefix = format!("{tool}.");
    let narrowed = list.iter().any(|t| t.starts_with(&prefix));
    !narrowed || list.iter().any(|t| t.strip_prefix(&prefix) == Some(action))
}

/// `checkScope`: tool/action → grant → namespace → repo → flags; the first failure is returned.
pub fn check_scope(scopes: &Scopes, need: &Need<'_>) -> Result<(), ScopeRefusal> {
    if !allows_tool_action(&scopes.tools, need.tool, need.action) {
        let qualified = match need.action {
            Some(a) => format!("{}.{a}", need.tool),
            None => need.tool.to_owned(),
        };
        return Err(ScopeRefusal::Tool {
            qualified,
            held: scopes.tools.describe(),
        });
    }
    if let Some(grant) = need.grant
        && !scopes.has_grant(grant)
    {
        let held = if scopes.grants.is_empty() {
            "no grant at all".to_owned()
        } else {
            scopes
                .grants
                .iter()
                .map(|g| g.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(ScopeRefusal::Grant {
            tool: need.tool.to_owned(),
            needed: grant,
            held,
        });
    }
    if let Some(ns) = need.namespace
        && !scopes.namespaces.allows(ns)
    {
        return Err(ScopeRefusal::Namespace {
            namespace: ns.to_owned(),
            held: scopes.namespaces.describe(),
        });
    }
    if let Some(repo) = need.repo
        && !scopes.repos.allows(repo)
    {
        return Err(ScopeRefusal::Repo {
            repo: repo.to_owned(),
            held: scopes.repos.describe(),
        });
    }
    if let Some(flag) = need.flags.iter().find(|f| !scopes.flags.contains(f)) {
        return Err(ScopeRefusal::Flag { flag: *flag });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
