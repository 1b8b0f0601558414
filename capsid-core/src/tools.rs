//! What a tool is, as the one enforcement point sees it (`TOOL_GRANTS`, reference 2 and 3.3):
//! its name and group, its requirement (a grant, or per action a grant, whether the action is
//! admin-only, and the flags it always needs), when it needs confirmation, and its MCP
//! annotations. [`gate_call`] is the registrar check every tool call passes before its handler;
//! [`visible_to`] decides `tools/list`. The registry of served tools, which pairs each
//! [`ToolSpec`] with its argument type and handler, is [`crate::service::registry`].

use crate::caller::Caller;
use crate::guards::{is_money_path, protected_match};
use crate::scope::{Flag, Grant, Need, ScopeRefusal, check_global, check_scope};

/// The group a tool belongs to (for documentation and `tools/list` ordering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolGroup {
    /// Documents (12).
    Documents,
    /// Maintenance (4: lint, the two namespace tools, backup).
    Maintenance,
    /// Repo access (13).
    Repo,
    /// Work queue (1).
    Jobs,
    /// Self-improvement (2).
    Improve,
    /// Agent administration (1).
    Admin,
    /// Checkmarks, the log and the shared context (3, the sister design's).
    Checkmarks,
}

/// Why only an admin may make a call, as the refusal tells a caller that is not one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdminOnly {
    /// The refusal's text.
    pub why: &'static str,
}

/// Why a call changes state beyond one namespace, as the global-authority refusal says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Global {
    /// What it reaches beyond its namespace.
    pub why: &'static str,
}

/// What a call (or one action of an action tool) needs before its handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The grant.
    pub grant: Grant,
    /// `Some` when only an admin (the owner, a legacy write key, the CLI) may call it.
    pub admin_only: Option<AdminOnly>,
    /// `Some` when the call changes state beyond one namespace, so it needs a caller whose
    /// namespaces axis is `*` ([`check_global`]).
    pub global: Option<Global>,
    /// Flags every such call needs, whatever its arguments (those that depend on arguments
    /// come from the arguments, [`repo_write_flags`]).
    pub flags: &'static [Flag],
}

impl Rule {
    /// Needs the read grant.
    pub const fn read() -> Rule {
        Rule {
            grant: Grant::Read,
            admin_only: None,
            global: None,
            flags: &[],
        }
    }

    /// Needs the write grant.
    pub const fn write() -> Rule {
        Rule {
            grant: Grant::Write,
            admin_only: None,
            global: None,
            flags: &[],
        }
    }

    /// The same rule, admin only, refused with `why`.
    pub const fn admin_only(self, why: &'static str) -> Rule {
        Rule {
            admin_only: Some(AdminOnly { why }),
            ..self
        }
    }

    /// The same rule for a call that changes state beyond one namespace (`why`): only a caller
    /// whose namespaces axis is `*` passes.
    pub const fn global(self, why: &'static str) -> Rule {
        Rule {
            global: Some(Global { why }),
            ..self
        }
    }

    /// The same rule, always needing `flags`.
    pub const fn with_flags(self, flags: &'static [Flag]) -> Rule {
        Rule { flags, ..self }
    }
}

/// One action of an action tool and what it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionRule {
    /// The action's wire name.
    pub action: &'static str,
    /// What it needs.
    pub rule: Rule,
}

/// Shorthand for an [`ActionRule`] in a table.
pub const fn action(action: &'static str, rule: Rule) -> ActionRule {
    ActionRule { action, rule }
}

/// What a tool needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// The same for every call.
    Fixed(Rule),
    /// Decided per action; `tool.action` entries of the tools axis narrow it. An action missing
    /// from the list is refused as a write (fail closed).
    PerAction {
        /// The action a call without one performs.
        default: &'static str,
        /// Every action with its rule.
        actions: &'static [ActionRule],
    },
}

/// How a tool answers a refusal that is not a scope refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalShape {
    /// A tool error (`isError: true`).
    ToolError,
    /// A successful `{ok:false, action, refusal}` (the `jobs`, `agents` and `improve_run` tools).
    OkFalse,
}

/// When a call must be confirmed by a human (`confirm: true` or an elicitation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirmation {
    /// Never.
    Never,
    /// Every call.
    Always,
    /// When it overwrites an existing document (`write` with `replace` or `patch`).
    OnOverwrite,
    /// For some actions (`lint` finalize).
    ForActions(&'static [&'static str]),
}

/// MCP tool annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Annotations {
    /// `readOnlyHint`: derived from the requirement.
    pub read_only: bool,
    /// `destructiveHint`: may overwrite or remove something.
    pub destructive: bool,
    /// `idempotentHint`: repeating the call has no further effect.
    pub idempotent: bool,
    /// `openWorldHint`: reaches outside Capsid (GitHub, the model API).
    pub open_world: bool,
}

/// Everything about a tool but its arguments and handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolSpec {
    /// The MCP tool name.
    pub name: &'static str,
    /// The human-readable title clients show (MCP `title`); the name until [`ToolSpec::titled`].
    pub title: &'static str,
    /// Its group.
    pub group: ToolGroup,
    /// What the tool does, as shown to clients.
    pub description: &'static str,
    /// What it needs.
    pub requirement: Requirement,
    /// When it needs confirmation.
    pub confirmation: Confirmation,
    /// Whether it may overwrite or remove something.
    pub destructive: bool,
    /// How its non-scope refusals answer.
    pub refusals: RefusalShape,
    /// Whether a call may reach outside Capsid (GitHub or the model API) beyond the repo group.
    pub reaches_outside: bool,
    /// Whether repeating a write with the same arguments has no further effect.
    pub repeatable: bool,
}

impl ToolSpec {
    /// A tool of `group` named `name`, needing `requirement`; never confirmed, not destructive,
    /// refusing with tool errors until told otherwise.
    pub const fn new(
        name: &'static str,
        group: ToolGroup,
        requirement: Requirement,
        description: &'static str,
    ) -> ToolSpec {
        ToolSpec {
            name,
            title: name,
            group,
            description,
            requirement,
            confirmation: Confirmation::Never,
            destructive: false,
            refusals: RefusalShape::ToolError,
            reaches_outside: false,
            repeatable: false,
        }
    }

    /// The same tool, titled `title` for people (MCP `title`).
    pub const fn titled(self, title: &'static str) -> ToolSpec {
        ToolSpec { title, ..self }
    }

    /// The same tool, marked as one whose calls may reach GitHub or the model API
    /// (`openWorldHint`; the repo group always does).
    pub const fn open_world(self) -> ToolSpec {
        ToolSpec {
            reaches_outside: true,
            ..self
        }
    }

    /// The same tool, marked as a write whose repeat with the same arguments has no further
    /// effect (`idempotentHint`; a read always is).
    pub const fn idempotent(self) -> ToolSpec {
        ToolSpec {
            repeatable: true,
            ..self
        }
    }

    /// The same tool, confirmed `when`.
    pub const fn confirmed(self, when: Confirmation) -> ToolSpec {
        ToolSpec {
            confirmation: when,
            ..self
        }
    }

    /// The same tool, marked as one that may overwrite or remove something.
    pub const fn destructive(self) -> ToolSpec {
        ToolSpec {
            destructive: true,
            ..self
        }
    }

    /// The same tool, answering refusals as `{ok:false, action, refusal}`.
    pub const fn ok_false_refusals(self) -> ToolSpec {
        ToolSpec {
            refusals: RefusalShape::OkFalse,
            ..self
        }
    }

    /// The rule for `action` (the default action when `None`); an action tool's unknown action
    /// is a write (fail closed). A tool without actions has one rule.
    pub fn rule_for(&self, action: Option<&str>) -> Rule {
        match self.requirement {
            Requirement::Fixed(rule) => rule,
            Requirement::PerAction { default, actions } => {
                let wanted = action.unwrap_or(default);
                actions
                    .iter()
                    .find(|a| a.action == wanted)
                    .map_or(Rule::write(), |a| a.rule)
            }
        }
    }

    /// Whether any call of this tool only reads.
    fn reads_only(&self) -> bool {
        match self.requirement {
            Requirement::Fixed(rule) => rule.grant == Grant::Read,
            Requirement::PerAction { .. } => false,
        }
    }

    /// The human-readable title clients show (MCP `title`).
    pub fn title(&self) -> &'static str {
        self.title
    }

    /// The MCP annotations, derived from the requirement and the row.
    pub fn annotations(&self) -> Annotations {
        let read_only = self.reads_only();
        Annotations {
            read_only,
            destructive: !read_only && self.destructive,
            idempotent: read_only || self.repeatable,
            open_world: self.group == ToolGroup::Repo || self.reaches_outside,
        }
    }
}

/// What one call names, as the registrar check reads it from the parsed arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Call<'a> {
    /// The action, for action tools (`None`: the default action).
    pub action: Option<&'a str>,
    /// The namespace the call names.
    pub namespace: Option<&'a str>,
    /// The repo selector the call names.
    pub repo: Option<&'a str>,
    /// Whether the tool's arguments have a `namespace` field at all.
    pub takes_namespace: bool,
    /// The flags the call's arguments need (a repo mutation's [`repo_write_flags`], the
    /// improve-path opt-in), asked after the rule's own.
    pub flags: Vec<Flag>,
    /// The repositories the call maps to a namespace (`register_namespace`), each asked of
    /// the repos axis as a selector is.
    pub new_mapping: Vec<String>,
}

/// Why the registrar check refused a call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GateRefusal {
    /// The scope check refused it.
    #[error("{0}")]
    Scope(#[from] ScopeRefusal),
    /// Only an admin may make it.
    #[error("{why}")]
    AdminOnly {
        /// The action refused (the tool's name for a tool without actions).
        action: &'static str,
        /// Why.
        why: &'static str,
    },
}

/// The registrar wrapper's check (`guardRegistrations`), the one every tool call passes before
/// its handler: the rule of the call's action from `spec` with the call's namespace, repo and
/// every flag (the rule's, then the arguments'), in `check_scope`'s order (tool or
/// `tool.action`, grant, namespace, repo, flags); then each repository the call maps to a
/// namespace against the repos axis; then, for a call that changes state beyond one
/// namespace, the global-authority rule ([`check_global`]); then the rule that a narrowed
/// caller may not omit the namespace of a tool that takes one; then admin-only.
pub fn gate_call(caller: &Caller, spec: &ToolSpec, call: &Call<'_>) -> Result<(), GateRefusal> {
    let scopes = &caller.scopes;
    let (action, rule) = match spec.requirement {
        Requirement::Fixed(rule) => (None, rule),
        Requirement::PerAction { default, .. } => {
            let action = call.action.unwrap_or(default);
            (Some(action), spec.rule_for(Some(action)))
        }
    };
    let mut flags = rule.flags.to_vec();
    flags.extend(call.flags.iter().filter(|f| !rule.flags.contains(f)));
    check_scope(
        scopes,
        &Need {
            tool: spec.name,
            action,
            namespace: call.namespace,
            repo: call.repo,
            grant: Some(rule.grant),
            flags,
        },
    )?;
    // Each repository a call maps is asked of the repos axis (the tool and its action were
    // asked above; the tool is named again because every Need is asked of the tools axis).
    for repo in &call.new_mapping {
        check_scope(
            scopes,
            &Need {
                tool: spec.name,
                repo: Some(repo),
                ..Need::default()
            },
        )?;
    }
    if let Some(Global { why }) = rule.global {
        let what = match action {
            Some(a) => format!("{}.{a}", spec.name),
            None => spec.name.to_owned(),
        };
        check_global(scopes, &what, why)?;
    }
    if call.takes_namespace && call.namespace.is_none() && !scopes.namespaces.is_all() {
        return Err(ScopeRefusal::NamespaceOmitted {
            tool: spec.name.to_owned(),
            held: scopes.namespaces.describe(),
        }
        .into());
    }
    if let Some(AdminOnly { why }) = rule.admin_only
        && !caller.is_admin()
    {
        let action = match spec.requirement {
            Requirement::PerAction { default, actions } => actions
                .iter()
                .map(|a| a.action)
                .find(|a| Some(*a) == call.action)
                .unwrap_or(default),
            Requirement::Fixed(_) => spec.name,
        };
        return Err(GateRefusal::AdminOnly { action, why });
    }
    Ok(())
}

/// Whether `caller` sees `tool` in `tools/list`: the tools axis allows it and the caller holds
/// the grant of at least one of its calls (of one action, for action tools); a tool that is
/// admin only shows only to admins.
pub fn visible_to(caller: &Caller, tool: &ToolSpec) -> bool {
    let allowed = |action: Option<&str>, rule: &Rule| {
        (rule.admin_only.is_none() || caller.is_admin())
            && check_scope(
                &caller.scopes,
                &Need {
                    tool: tool.name,
                    action,
                    grant: Some(rule.grant),
                    ..Need::default()
                },
            )
            .is_ok()
    };
    match tool.requirement {
        Requirement::Fixed(rule) => allowed(None, &rule),
        Requirement::PerAction { actions, .. } => {
            actions.iter().any(|a| allowed(Some(a.action), &a.rule))
        }
    }
}

/// How a repository file change lands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RepoWriteMode {
    /// Commit to a new branch and open a pull request.
    #[default]
    Pr,
    /// Commit to the default branch (needs can_direct_write).
    Direct,
}

impl RepoWriteMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RepoWriteMode::Pr => "pr",
            RepoWriteMode::Direct => "direct",
        }
    }
}

/// The arguments of a repository file change that decide its flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepoWriteArgs<'a> {
    /// The repository path written or deleted.
    pub path: Option<&'a str>,
    /// How the change lands.
    pub mode: RepoWriteMode,
    /// Whether the caller opted into writing under `.github/workflows/`.
    pub allow_workflow_write: bool,
}

/// `repoWriteFlags` (reference 3.4) for what depends on a file change's arguments, in the
/// table's order: `direct` mode, the workflow opt-in, a protected path, a money path. The flags
/// an action always needs (`manage_pr merge` → `can_merge`, `comment` → `can_comment_pr`,
/// `ci_dispatch` → `can_dispatch`) are in the tools' rules.
pub fn repo_write_flags(args: &RepoWriteArgs<'_>) -> Vec<Flag> {
    let mut flags = Vec::new();
    if args.mode == RepoWriteMode::Direct {
        flags.push(Flag::CanDirectWrite);
    }
    if args.allow_workflow_write {
        flags.push(Flag::CanWriteWorkflows);
    }
    if let Some(path) = args.path {
        if protected_match(path).is_some() {
            flags.push(Flag::CanTouchProtected);
        }
        if is_money_path(path) {
            flags.push(Flag::MoneyPaths);
        }
    }
    flags
}

#[cfg(test)]
mod tests;
