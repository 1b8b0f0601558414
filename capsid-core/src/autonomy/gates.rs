//! Pre-approved gates (reference 7.4): which blocked commands the seat may send back through
//! `resume` on the signed gate policy alone.
//!
//! The never-list is checked first, over the whole command, and is not the complement of the
//! classes: a command that looks like a branch push and carries `--force` must never reach
//! `push_branch`. Migrations are parsed statement by statement, and an unrecognised statement
//! refuses rather than passes.
//!
//! Patterns are the Worker's, matched case-insensitively with ASCII word boundaries (as
//! JavaScript's `\b`).

use std::fmt;
use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};

use crate::autonomy::policy::GatePolicy;

/// A pre-approved class, as the gate policy names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateClass {
    /// `wrangler d1 execute ... --file migrations/...` whose statements are all additive.
    AdditiveMigration,
    /// `git push [-u|--set-upstream] origin <branch>`.
    PushBranch,
    /// `gh pr create ...`.
    OpenPr,
}

impl GateClass {
    /// The three classes, in the order they are tried.
    pub const ALL: [GateClass; 3] = [
        GateClass::AdditiveMigration,
        GateClass::PushBranch,
        GateClass::OpenPr,
    ];

    /// The class id as the policy document spells it.
    pub fn name(self) -> &'static str {
        match self {
            GateClass::AdditiveMigration => "additive_migration",
            GateClass::PushBranch => "push_branch",
            GateClass::OpenPr => "open_pr",
        }
    }
}

impl fmt::Display for GateClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One never-list entry: a pattern and the consequence that keeps it off every class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeverRule {
    /// The regex source (case-insensitive).
    pub pattern: &'static str,
    /// Why it never matches a class.
    pub why: &'static str,
}

/// The never-list, in the Worker's order.
pub const NEVER_LIST: [NeverRule; 21] = [
    NeverRule {
        pattern: r"\b(wrangler|npx\s+wrangler)\s+secret\b",
        why: "it sets or deletes a secret",
    },
    NeverRule {
        pattern: r"\bgh\s+secret\b",
        why: "it sets or deletes a repository secret",
    },
    NeverRule {
        pattern: r"\bsecret\s+(put|delete|bulk)\b",
        why: "it sets or deletes a secret",
    },
    NeverRule {
        pattern: r"\brevoke\b",
        why: "it revokes a credential",
    },
    NeverRule {
        pattern: r"--force\b|--force-with-lease\b",
        why: "it force-pushes, which rewrites history somebody else may hold",
    },
    // `-f` is psql's file flag, so it is refused only where git reads it as force.
    NeverRule {
        pattern: r"\bgit\b[^\n]*\s-f(\s|$)",
        why: "it forces a git command, which force-pushes or discards work somebody else may hold",
    },
    NeverRule {
        pattern: r"\bpush\s+[^\n]*\+refs\/",
        why: "it force-updates a ref",
    },
    NeverRule {
        pattern: r"\b(wrangler|npx\s+wrangler)\s+deploy\b",
        why: "it deploys",
    },
    NeverRule {
        pattern: r"\b(wrangler|npx\s+wrangler)\s+rollback\b",
        why: "it changes what is deployed",
    },
    NeverRule {
        pattern: r"\bwrangler\.jsonc?\b",
        why: "it edits deployment configuration",
    },
    NeverRule {
        pattern: r"\bimprove_mode\b|\bimprove_run\b",
        why: "it changes the loop's mode",
    },
    NeverRule {
        pattern: r"\bdrop\s+(table|index|column|view|schema|database)\b",
        why: "it drops a database object",
    },
    NeverRule {
        pattern: r"\bdelete\s+from\b",
        why: "it deletes rows",
    },
    NeverRule {
        pattern: r"\btruncate\b",
        why: "it empties a table",
    },
    NeverRule {
        pattern: r"\brm\s+-rf?\b",
        why: "it deletes files recursively",
    },
    NeverRule {
        pattern: r"\bgh\s+pr\s+merge\b",
        why: "it merges a pull request, which is the human's gate",
    },
    NeverRule {
        pattern: r"\bgit\s+push[^\n]*\b(master|main)\b",
        why: "it pushes to a default branch",
    },
    // The self-hosted migration tools' destructive commands (issue 56, item 13).
    NeverRule {
        pattern: r"\bsqlx\s+migrate\s+revert\b",
        why: "it reverts an applied migration",
    },
    NeverRule {
        pattern: r"\bsqlx\s+database\s+(drop|reset)\b|\bdropdb\b",
        why: "it drops a database",
    },
    NeverRule {
        pattern: r"\bpg_restore\b",
        why: "it overwrites a database from a dump",
    },
    NeverRule {
        pattern: r"\bpsql\b[^\n]*\s(-c|--command)",
        why: "it runs statements given on the command line, which nobody parsed",
    },
];

const PUSH_BRANCH: &str = r"^git\s+push\s+(-u\s+|--set-upstream\s+)?origin\s+[A-Za-z0-9._\/-]+\s*$";
const OPEN_PR: &str = r"^gh\s+pr\s+create\b";
const MIGRATION: &str = r"\bd1\s+execute\s+\S+[^\n]*?--file[= ]\s*(\S+)";
const PSQL: &str = r"^psql\s";
const PSQL_FILE: &str = r"(^|\s)(-f\s*|--file[= ]\s*)(\S+)";
const SQLX_RUN: &str = r"^sqlx\s+migrate\s+run(\s|$)";
const SQLX_SOURCE: &str = r"(^|\s)--source[= ]\s*(\S+)";
const UNDER_MIGRATIONS: &str = r"(^|/)migrations/";
/// What makes one command line run more than the one invocation the gate read: a chain, a
/// pipe, a redirection or a command substitution.
const NOT_ONE_INVOCATION: &str = r"[;&|<>`\n]|\$\(";

/// Compiles a Worker pattern: case-insensitive, with `\b` as JavaScript's ASCII word boundary.
fn js_insensitive(source: &str) -> Regex {
    RegexBuilder::new(&source.replace(r"\b", r"(?-u:\b)"))
        .case_insensitive(true)
        .build()
        .unwrap_or_else(|e| unreachable!("built-in pattern {source} is valid: {e}"))
}

static NEVER: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    NEVER_LIST
        .iter()
        .map(|r| js_insensitive(r.pattern))
        .collect()
});
static PUSH_BRANCH_RE: LazyLock<Regex> = LazyLock::new(|| js_insensitive(PUSH_BRANCH));
static OPEN_PR_RE: LazyLock<Regex> = LazyLock::new(|| js_insensitive(OPEN_PR));
static MIGRATION_RE: LazyLock<Regex> = LazyLock::new(|| js_insensitive(MIGRATION));
static UNDER_MIGRATIONS_RE: LazyLock<Regex> = LazyLock::new(|| js_insensitive(UNDER_MIGRATIONS));
static PSQL_RE: LazyLock<Regex> = LazyLock::new(|| js_insensitive(PSQL));
static PSQL_FILE_RE: LazyLock<Regex> = LazyLock::new(|| js_insensitive(PSQL_FILE));
static SQLX_RUN_RE: LazyLock<Regex> = LazyLock::new(|| js_insensitive(SQLX_RUN));
static SQLX_SOURCE_RE: LazyLock<Regex> = LazyLock::new(|| js_insensitive(SQLX_SOURCE));
static NOT_ONE_INVOCATION_RE: LazyLock<Regex> =
    LazyLock::new(|| js_insensitive(NOT_ONE_INVOCATION));

/// Why a blocked command is not approved on the policy. The job stays blocked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GateRefusal {
    /// The policy is loaded and switched off.
    #[error("gate policy {version} is present and disabled, so nothing is pre-approved")]
    PolicyDisabled {
        /// The stored policy version.
        version: String,
    },
    /// The approval names a different version from the stored one.
    #[error(
        "this approval names policy version '{requested}' and the stored policy is version '{stored}'; re-read the policy before approving against it"
    )]
    VersionMismatch {
        /// The version the approval named.
        requested: String,
        /// The stored policy's version.
        stored: String,
    },
    /// The blocked job recorded no command (or an empty one).
    #[error("the blocked job records no command, so there is nothing for the policy to match")]
    NoCommand,
    /// The command matches the never-list.
    #[error("this command is on the policy's never list because {why}; it waits for the human")]
    NeverList {
        /// The consequence that keeps it off the list.
        why: &'static str,
    },
    /// A migration command whose file (or, for `sqlx`, folder) is not under `migrations/`.
    #[error("{path} is not under migrations/, so it is not a migration this policy covers")]
    NotUnderMigrations {
        /// The file path, quotes stripped.
        path: String,
    },
    /// A `psql` or `sqlx` command that chains, pipes, redirects or substitutes, or a `psql`
    /// given no file or more than one.
    #[error(
        "this {tool} command runs more than the one migration the gate can read (a chain, a pipe, a redirection, a command substitution, or other than one -f file), so it waits for the human"
    )]
    NotOneMigration {
        /// The tool.
        tool: MigrationTool,
    },
    /// A `sqlx migrate run` whose folder holds no migration to read.
    #[error("{dir} holds no migration file (*.sql), so there is nothing for the policy to check")]
    NoMigrations {
        /// The folder.
        dir: String,
    },
    /// A file of a `sqlx migrate run` folder that is not additive.
    #[error(
        "{path} contains a statement this policy does not call additive: \"{statement}\"; sqlx migrate run applies whichever migrations are pending, so every file of the folder must be additive (or block on psql -f <the new file>)"
    )]
    FolderNotAdditive {
        /// The file.
        path: String,
        /// The statement's first 80 characters.
        statement: String,
    },
    /// The command fits no class.
    #[error("this command matches no pre-approved class, so it waits for the human")]
    NoClass,
    /// The migration file could not be read from the namespace's primary repo.
    #[error(
        "{path} could not be read, so its statements could not be checked; a migration nobody parsed is not pre-approved"
    )]
    MigrationUnreadable {
        /// The file path.
        path: String,
    },
    /// The migration file holds no statement once comments are stripped.
    #[error("the migration file contains no statements")]
    NoStatements,
    /// A statement that is not one of the additive forms.
    #[error(
        "the migration contains a statement this policy does not call additive: \"{statement}\"; only CREATE TABLE IF NOT EXISTS, \
         ALTER TABLE ADD COLUMN and CREATE INDEX are pre-approved"
    )]
    NotAdditive {
        /// The statement's first 80 characters (UTF-16 units, as the Worker counts).
        statement: String,
    },
}

/// The reason the never-list refuses `command`, if any entry matches anywhere in it.
pub fn never_list_reason(command: &str) -> Option<&'static str> {
    NEVER
        .iter()
        .zip(NEVER_LIST)
        .find(|(re, _)| re.is_match(command))
        .map(|(_, rule)| rule.why)
}

/// A command that fits a class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClassifiedCommand {
    /// A migration of one file (`d1`, `psql`); the service reads `path` from the namespace's
    /// primary repo and passes its text to [`approve_migration`].
    AdditiveMigration {
        /// The file argument, quotes stripped.
        path: String,
    },
    /// `sqlx migrate run`: the service reads every migration of `dir` and passes them to
    /// [`approve_migration_folder`].
    AdditiveMigrationFolder {
        /// The `--source` folder (default `migrations`), quotes and a trailing `/` stripped.
        dir: String,
    },
    /// A plain branch push.
    PushBranch,
    /// A pull request being opened.
    OpenPr,
}

impl ClassifiedCommand {
    /// The class it fits.
    pub fn class(&self) -> GateClass {
        match self {
            ClassifiedCommand::AdditiveMigration { .. }
            | ClassifiedCommand::AdditiveMigrationFolder { .. } => GateClass::AdditiveMigration,
            ClassifiedCommand::PushBranch => GateClass::PushBranch,
            ClassifiedCommand::OpenPr => GateClass::OpenPr,
        }
    }
}

/// Strips one leading and one trailing quote, as the Worker does.
fn strip_quotes(path: &str) -> &str {
    let path = path.strip_prefix(['"', '\'']).unwrap_or(path);
    path.strip_suffix(['"', '\'']).unwrap_or(path)
}

/// Which class a blocked command falls into under the default migration tool (`d1`, the
/// Worker's), or why none.
pub fn classify_command(command: &str) -> Result<ClassifiedCommand, GateRefusal> {
    classify_command_for(command, &MigrationTools::default())
}

/// Which class a blocked command falls into (trimmed; never-list first) when the namespace's
/// migrations run with `tools`, or why none.
pub fn classify_command_for(
    command: &str,
    tools: &MigrationTools,
) -> Result<ClassifiedCommand, GateRefusal> {
    let command = command.trim();
    if command.is_empty() {
        return Err(GateRefusal::NoCommand);
    }
    if let Some(why) = never_list_reason(command) {
        return Err(GateRefusal::NeverList { why });
    }
    if tools.has(MigrationTool::D1)
        && let Some(caps) = MIGRATION_RE.captures(command)
    {
        let path = strip_quotes(caps.get(1).map_or("", |m| m.as_str()));
        return migration_file(path);
    }
    if tools.has(MigrationTool::Psql) && PSQL_RE.is_match(command) {
        let files: Vec<&str> = PSQL_FILE_RE
            .captures_iter(command)
            .filter_map(|c| c.get(3).map(|m| m.as_str()))
            .collect();
        return match files[..] {
            [path] if !NOT_ONE_INVOCATION_RE.is_match(command) => {
                migration_file(strip_quotes(path))
            }
            _ => Err(GateRefusal::NotOneMigration {
                tool: MigrationTool::Psql,
            }),
        };
    }
    if tools.has(MigrationTool::Sqlx) && SQLX_RUN_RE.is_match(command) {
        if NOT_ONE_INVOCATION_RE.is_match(command) {
            return Err(GateRefusal::NotOneMigration {
                tool: MigrationTool::Sqlx,
            });
        }
        let source = SQLX_SOURCE_RE
            .captures(command)
            .and_then(|c| c.get(2))
            .map_or("migrations", |m| strip_quotes(m.as_str()));
        let dir = source.strip_suffix('/').unwrap_or(source);
        if !UNDER_MIGRATIONS_RE.is_match(&format!("{dir}/")) {
            return Err(GateRefusal::NotUnderMigrations {
                path: dir.to_owned(),
            });
        }
        return Ok(ClassifiedCommand::AdditiveMigrationFolder {
            dir: dir.to_owned(),
        });
    }
    if PUSH_BRANCH_RE.is_match(command) {
        return Ok(ClassifiedCommand::PushBranch);
    }
    if OPEN_PR_RE.is_match(command) {
        return Ok(ClassifiedCommand::OpenPr);
    }
    Err(GateRefusal::NoClass)
}

/// A one-file migration of `path`, when it is under `migrations/`.
fn migration_file(path: &str) -> Result<ClassifiedCommand, GateRefusal> {
    if !UNDER_MIGRATIONS_RE.is_match(path) {
        return Err(GateRefusal::NotUnderMigrations {
            path: path.to_owned(),
        });
    }
    Ok(ClassifiedCommand::AdditiveMigration {
        path: path.to_owned(),
    })
}

mod migration;
mod tools;

pub use migration::{StatementKind, classify_migration_sql, split_statements};
pub use tools::{MigrationTool, MigrationTools};

/// An approval the seat may act on, recorded in the resume audit row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Approval {
    /// The class the command fits.
    pub class: GateClass,
    /// `"<path>: <statement kinds>"` for a migration, the trimmed command otherwise.
    pub detail: String,
    /// The policy version approved against.
    pub policy_version: String,
}

/// The outcome of the checks that need no repository read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreApproval {
    /// Approved outright (`push_branch`, `open_pr`).
    Approved(Approval),
    /// An `additive_migration`: read `path` and finish with [`approve_migration`].
    ReadMigration {
        /// The migration file to read.
        path: String,
        /// The policy version to approve against.
        policy_version: String,
    },
    /// A `sqlx migrate run`: read every migration of `dir` and finish with
    /// [`approve_migration_folder`].
    ReadMigrationFolder {
        /// The migrations folder to read.
        dir: String,
        /// The policy version to approve against.
        policy_version: String,
    },
}

/// The preconditions, in order: the policy is enabled, the requested version is the stored
/// one, and the blocked job recorded a command. Returns that command.
pub fn check_preconditions<'a>(
    policy: &GatePolicy,
    requested_version: &str,
    command: Option<&'a str>,
) -> Result<&'a str, GateRefusal> {
    if !policy.enabled {
        return Err(GateRefusal::PolicyDisabled {
            version: policy.version.clone(),
        });
    }
    if requested_version != policy.version {
        return Err(GateRefusal::VersionMismatch {
            requested: requested_version.to_owned(),
            stored: policy.version.clone(),
        });
    }
    command
        .filter(|c| !c.is_empty())
        .ok_or(GateRefusal::NoCommand)
}

/// Everything up to the migration read: preconditions, then classification under the
/// namespace's migration `tools`.
pub fn pre_approve(
    policy: &GatePolicy,
    requested_version: &str,
    command: Option<&str>,
    tools: &MigrationTools,
) -> Result<PreApproval, GateRefusal> {
    let command = check_preconditions(policy, requested_version, command)?;
    let classified = classify_command_for(command, tools)?;
    let policy_version = policy.version.clone();
    Ok(match classified {
        ClassifiedCommand::AdditiveMigration { path } => PreApproval::ReadMigration {
            path,
            policy_version,
        },
        ClassifiedCommand::AdditiveMigrationFolder { dir } => PreApproval::ReadMigrationFolder {
            dir,
            policy_version,
        },
        other => PreApproval::Approved(Approval {
            class: other.class(),
            detail: command.trim().to_owned(),
            policy_version,
        }),
    })
}

/// Finishes an `additive_migration` approval from the file's text (`None`: unreadable).
pub fn approve_migration(
    policy_version: &str,
    path: &str,
    sql: Option<&str>,
) -> Result<Approval, GateRefusal> {
    let sql = sql.ok_or_else(|| GateRefusal::MigrationUnreadable {
        path: path.to_owned(),
    })?;
    let kinds = classify_migration_sql(sql)?;
    let labels: Vec<&str> = kinds.iter().map(|k| k.label()).collect();
    Ok(Approval {
        class: GateClass::AdditiveMigration,
        detail: format!("{path}: {}", labels.join(", ")),
        policy_version: policy_version.to_owned(),
    })
}

/// Whether `name`, a file of a migrations folder, is a migration `sqlx migrate run` applies:
/// `*.sql`, but not a reversible migration's `*.down.sql`.
pub fn is_forward_migration(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".sql") && !lower.ends_with(".down.sql")
}

/// Finishes a `sqlx migrate run` approval from the folder's migrations, each `(path, text)`
/// (`None`: unreadable): every one must be additive, since any of them may be pending.
pub fn approve_migration_folder(
    policy_version: &str,
    dir: &str,
    files: &[(String, Option<String>)],
) -> Result<Approval, GateRefusal> {
    if files.is_empty() {
        return Err(GateRefusal::NoMigrations {
            dir: dir.to_owned(),
        });
    }
    let mut details = Vec::with_capacity(files.len());
    for (path, sql) in files {
        let sql = sql
            .as_deref()
            .ok_or_else(|| GateRefusal::MigrationUnreadable { path: path.clone() })?;
        let kinds = classify_migration_sql(sql).map_err(|e| match e {
            GateRefusal::NotAdditive { statement } => GateRefusal::FolderNotAdditive {
                path: path.clone(),
                statement,
            },
            other => other,
        })?;
        let labels: Vec<&str> = kinds.iter().map(|k| k.label()).collect();
        details.push(format!("{path}: {}", labels.join(", ")));
    }
    Ok(Approval {
        class: GateClass::AdditiveMigration,
        detail: details.join("; "),
        policy_version: policy_version.to_owned(),
    })
}

#[cfg(test)]
mod tests;
