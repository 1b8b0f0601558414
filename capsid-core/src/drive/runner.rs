//! A namespace's runner settings for agent hosts, stored with the namespace and edited by the
//! admin: the project's root folder, its test command, its build check, the agent command, the
//! runtime (which agent CLI) and a credential reference (never a secret). An update names only the fields it changes; an
//! empty string clears one.

use serde::{Deserialize, Serialize};

use super::credential::CredentialRef;
use crate::autonomy::gates::MigrationTools;
use crate::jobs::dispatch::DispatchLimits;

/// The longest command or path accepted.
pub const RUNNER_FIELD_MAX: usize = 2048;

/// The stored settings (every field optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunnerSettings {
    /// The project's root folder on agent hosts (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_dir: Option<String>,
    /// The test command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_command: Option<String>,
    /// The build check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_command: Option<String>,
    /// The agent command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_command: Option<String>,
    /// Where the project's credential is (`env:`, `file:`, `cmd:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_ref: Option<String>,
    /// The cap of the namespace's jobs posted without their own `max_cost_usd`, in US dollars
    /// (above the server's default, `CAPSID_JOB_MAX_COST_USD`), as decimal text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_max_cost_usd: Option<String>,
    /// The agent CLI that runs the namespace's jobs that name none (`claude-code`, `codex`;
    /// `capsid drive --runtime` overrides it for one driver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The migration tools the gate policy's `additive_migration` recognises for the
    /// namespace (`d1`, `psql`, `sqlx`, comma separated; unset: `d1`, the Worker's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration_tools: Option<String>,
    /// The branches a push or merge reaches only with an approval, comma separated (the
    /// remote's default branch is always one); unset: main, master and the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected_branches: Option<String>,
    /// The namespace's dispatch bounds, `depth=N,children=N,<role>=N` (unset: a chain three
    /// deep, five children for a job without a role, each role's own count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_limits: Option<String>,
    /// The command a deploy job's driver runs once its run merged through the gate (`mise run
    /// deploy`, a script): on the agent host, in the project's own checkout (never the agent's
    /// clone), with the merge in `CAPSID_DEPLOY_*`; unset: a merge is the deploy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_command: Option<String>,
}

/// The fields an update names: `Some("")` clears, `None` keeps.
pub type RunnerPatch = RunnerSettings;

impl RunnerSettings {
    /// Reads the stored JSON (absent or unreadable: no settings).
    pub fn stored(json: Option<&str>) -> RunnerSettings {
        json.and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default()
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == RunnerSettings::default()
    }

    /// Whether `patch` names any field.
    pub fn names_any(patch: &RunnerPatch) -> bool {
        !patch.is_empty()
    }

    /// `self` with `patch` applied and checked, or the refusal naming the field.
    pub fn apply(&self, patch: &RunnerPatch) -> Result<RunnerSettings, String> {
        fn field(
            name: &str,
            current: &Option<String>,
            change: &Option<String>,
        ) -> Result<Option<String>, String> {
            let Some(v) = change else {
                return Ok(current.clone());
            };
            let v = v.trim();
            if v.is_empty() {
                return Ok(None);
            }
            if v.chars().count() > RUNNER_FIELD_MAX {
                return Err(format!(
                    "{name}: is longer than {RUNNER_FIELD_MAX} characters"
                ));
            }
            if v.chars().any(|c| c.is_control() && c != '\t') {
                return Err(format!(
                    "{name}: must be one line without control characters"
                ));
            }
            Ok(Some(v.to_owned()))
        }
        let next = RunnerSettings {
            root_dir: field("root_dir", &self.root_dir, &patch.root_dir)?,
            test_command: field("test_command", &self.test_command, &patch.test_command)?,
            build_command: field("build_command", &self.build_command, &patch.build_command)?,
            agent_command: field("agent_command", &self.agent_command, &patch.agent_command)?,
            credential_ref: field(
                "credential_ref",
                &self.credential_ref,
                &patch.credential_ref,
            )?,
            job_max_cost_usd: field(
                "job_max_cost_usd",
                &self.job_max_cost_usd,
                &patch.job_max_cost_usd,
            )?,
            runtime: field("runtime", &self.runtime, &patch.runtime)?,
            migration_tools: field(
                "migration_tools",
                &self.migration_tools,
                &patch.migration_tools,
            )?
            .map(|t| MigrationTools::parse(&t).map(|tools| tools.to_setting()))
            .transpose()?,
            protected_branches: field(
                "protected_branches",
                &self.protected_branches,
                &patch.protected_branches,
            )?
            .map(|t| super::hooks::parse_protected_branches(&t).map(|names| names.join(",")))
            .transpose()?,
            dispatch_limits: field(
                "dispatch_limits",
                &self.dispatch_limits,
                &patch.dispatch_limits,
            )?
            .map(|t| DispatchLimits::parse(&t).map(|l| l.to_setting()))
            .transpose()?,
            deploy_command: field(
                "deploy_command",
                &self.deploy_command,
                &patch.deploy_command,
            )?,
        };
        if let Some(r) = &next.runtime {
            crate::drive::runtime::RuntimeKind::parse("runtime", r)?;
        }
        if let Some(cap) = &next.job_max_cost_usd
            && next.job_cap().is_none()
        {
            return Err(format!(
                "job_max_cost_usd: must be a number of US dollars above zero (what one run of a job that names no cap may spend on its model), or \"none\" to clear it, not {cap:?}"
            ));
        }
        if let Some(dir) = &next.root_dir
            && !dir.starts_with('/')
        {
            return Err(format!("root_dir: {dir} is not an absolute path"));
        }
        if let Some(r) = &next.credential_ref {
            CredentialRef::parse(r)?;
        }
        Ok(next)
    }

    /// The namespace's default job cap, when set (and readable: an unreadable one stored
    /// before it was checked is no cap, so the server's default applies).
    pub fn job_cap(&self) -> Option<crate::drive::ledger::Usd> {
        self.job_max_cost_usd
            .as_deref()
            .and_then(|t| t.parse::<f64>().ok())
            .and_then(|x| crate::jobs::budget::parse_job_cap(x).ok())
    }

    /// The namespace's default runtime, when set and readable.
    pub fn runtime(&self) -> Option<crate::drive::runtime::RuntimeKind> {
        self.runtime
            .as_deref()
            .and_then(|r| crate::drive::runtime::RuntimeKind::parse("runtime", r).ok())
    }

    /// The namespace's protected branches, when set and readable (`None`: main, master and the
    /// remote's default).
    pub fn protected_branches(&self) -> Option<Vec<String>> {
        self.protected_branches
            .as_deref()
            .and_then(|t| super::hooks::parse_protected_branches(t).ok())
    }

    /// The namespace's dispatch bounds (unset or unreadable: the defaults).
    pub fn dispatch_limits(&self) -> DispatchLimits {
        self.dispatch_limits
            .as_deref()
            .and_then(|t| DispatchLimits::parse(t).ok())
            .unwrap_or_default()
    }

    /// The migration tools the namespace's gate recognises (unset: `d1`).
    pub fn migration_tools(&self) -> MigrationTools {
        MigrationTools::stored(self.migration_tools.as_deref())
    }

    /// The stored JSON, or `None` when no field is set.
    pub fn to_stored(&self) -> Option<String> {
        (!self.is_empty()).then(|| serde_json::to_string(self).unwrap_or_else(|_| "{}".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(f: impl FnOnce(&mut RunnerPatch)) -> RunnerPatch {
        let mut p = RunnerPatch::default();
        f(&mut p);
        p
    }

    #[test]
    fn the_runtime_is_one_capsid_drives_and_clears_with_empty() {
        let s = RunnerSettings::default()
            .apply(&patch(|p| p.runtime = Some(" codex ".into())))
            .expect("codex");
        assert_eq!(s.runtime.as_deref(), Some("codex"));
        assert_eq!(s.runtime(), Some(crate::drive::runtime::RuntimeKind::Codex));
        assert_eq!(RunnerSettings::default().runtime(), None);
        let why = s
            .apply(&patch(|p| p.runtime = Some("aider".into())))
            .expect_err("not a runtime");
        assert!(
            why.starts_with("runtime: \"aider\" is not a runtime"),
            "{why}"
        );
        let cleared = s
            .apply(&patch(|p| p.runtime = Some(String::new())))
            .expect("cleared");
        assert_eq!(cleared.runtime, None);
        assert!(cleared.is_empty());
        // A value stored before it was checked is no runtime (the default applies).
        let stored = RunnerSettings::stored(Some("{\"runtime\":\"aider\"}"));
        assert_eq!(stored.runtime(), None);
    }

    #[test]
    fn protected_branches_are_checked_stored_normalised_and_cleared() {
        let s = RunnerSettings::default()
            .apply(&patch(|p| {
                p.protected_branches = Some(" release , refs/heads/main,release".into())
            }))
            .expect("valid");
        assert_eq!(s.protected_branches.as_deref(), Some("release,main"));
        assert_eq!(
            s.protected_branches(),
            Some(vec!["release".to_owned(), "main".to_owned()])
        );
        assert_eq!(RunnerSettings::default().protected_branches(), None);
        for bad in ["main..x", "a b", " , "] {
            let e = s
                .apply(&patch(|p| p.protected_branches = Some(bad.into())))
                .expect_err("refused");
            assert!(e.starts_with("protected_branches: "), "{bad}: {e}");
        }
        let cleared = s
            .apply(&patch(|p| p.protected_branches = Some(String::new())))
            .expect("clears");
        assert_eq!(cleared.protected_branches, None);
    }

    #[test]
    fn migration_tools_are_checked_stored_normalised_and_cleared() {
        let s = RunnerSettings::default()
            .apply(&patch(|p| p.migration_tools = Some(" SQLX, psql ".into())))
            .expect("valid");
        assert_eq!(s.migration_tools.as_deref(), Some("sqlx,psql"));
        assert_eq!(s.migration_tools().to_setting(), "sqlx,psql");
        assert_eq!(
            RunnerSettings::default().migration_tools().to_setting(),
            "d1"
        );
        let bad = s
            .apply(&patch(|p| p.migration_tools = Some("flyway".into())))
            .expect_err("unknown tool");
        assert!(bad.starts_with("migration_tools: 'flyway'"), "{bad}");
        let cleared = s
            .apply(&patch(|p| p.migration_tools = Some(String::new())))
            .expect("clears");
        assert_eq!(cleared.migration_tools, None);
    }

    #[test]
    fn updates_name_their_fields_clear_with_empty_and_refuse_secrets() {
        let s = RunnerSettings::default()
            .apply(&patch(|p| {
                p.test_command = Some("cargo test".into());
                p.credential_ref = Some("env:GITHUB_TOKEN".into());
                p.root_dir = Some("/srv/demo".into());
            }))
            .expect("valid");
        assert_eq!(s.test_command.as_deref(), Some("cargo test"));
        let kept = s
            .apply(&patch(|p| p.build_command = Some("docker build .".into())))
            .expect("valid");
        assert_eq!(kept.test_command.as_deref(), Some("cargo test"));
        let cleared = kept
            .apply(&patch(|p| p.test_command = Some(String::new())))
            .expect("valid");
        assert_eq!(cleared.test_command, None);
        let secret = s
            .apply(&patch(|p| p.credential_ref = Some("ghp_abcdef123".into())))
            .expect_err("a secret");
        assert!(secret.starts_with("credential_ref: "), "{secret}");
        let rel = s
            .apply(&patch(|p| p.root_dir = Some("srv".into())))
            .expect_err("relative");
        assert!(rel.starts_with("root_dir: "), "{rel}");
        let two = s
            .apply(&patch(|p| p.agent_command = Some("a\nb".into())))
            .expect_err("two lines");
        assert!(two.starts_with("agent_command: "), "{two}");
        let capped = s
            .apply(&patch(|p| p.job_max_cost_usd = Some(" 2.5 ".into())))
            .expect("a cap");
        assert_eq!(
            capped.job_cap(),
            crate::drive::ledger::Usd::from_dollars(2.5)
        );
        assert_eq!(s.job_cap(), None);
        for bad in ["0", "-1", "two", "NaN", "inf"] {
            let why = s
                .apply(&patch(|p| p.job_max_cost_usd = Some(bad.into())))
                .expect_err(bad);
            assert!(why.starts_with("job_max_cost_usd: "), "{why}");
        }
        let uncapped = capped
            .apply(&patch(|p| p.job_max_cost_usd = Some(String::new())))
            .expect("cleared");
        assert_eq!(uncapped.job_cap(), None);
        assert_eq!(
            RunnerSettings::stored(capped.to_stored().as_deref()),
            capped
        );
        assert_eq!(RunnerSettings::stored(s.to_stored().as_deref()), s);
        assert_eq!(RunnerSettings::default().to_stored(), None);
    }
}
