//! Who is calling (reference 3.1): a minted agent, a legacy operator key, the OAuth admin, or
//! the improve loop itself; and how a bearer key or a GitHub user maps to one of them.
//!
//! `admin` is not a scope flag. Only the OAuth admin and a legacy *write* operator key are
//! admins; no minted agent ever is, whatever its scopes say.

use std::fmt;

use crate::crypto::ct_eq;
use crate::scope::{Grant, Scopes};

/// What an agent is for. Descriptive only: nothing authorizes on kind except auto-merge's
/// "author is a driver" check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AgentKind {
    /// An interactive session.
    Session,
    /// A machine-run driver that claims jobs.
    Driver,
    /// A human's seat.
    Seat,
    /// A scheduled job.
    Cron,
}

impl AgentKind {
    /// The four kinds, in the reference's order.
    pub const ALL: [AgentKind; 4] = [
        AgentKind::Session,
        AgentKind::Driver,
        AgentKind::Seat,
        AgentKind::Cron,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Session => "session",
            AgentKind::Driver => "driver",
            AgentKind::Seat => "seat",
            AgentKind::Cron => "cron",
        }
    }

    /// The kind named `name`, if any.
    pub fn parse(name: &str) -> Option<AgentKind> {
        AgentKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Serialized as its wire name.
impl serde::Serialize for AgentKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The principal behind a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// A minted agent, resolved by the SHA-256 of its key.
    Agent {
        /// `agent_` + 12 hex.
        id: String,
        /// Unique, never reused.
        name: String,
        /// Descriptive kind.
        kind: AgentKind,
    },
    /// A legacy operator key from `CAPSID_OPERATOR_KEY_HASH`.
    OperatorKey {
        /// `Write` for a plain entry, `Read` for an `ro:` entry.
        grant: Grant,
        /// The first 12 hex of the key's SHA-256.
        fingerprint: String,
    },
    /// The GitHub user configured as the owner, signed in through OAuth or the console.
    Admin {
        /// GitHub login.
        login: String,
    },
    /// The server's own periodic work (lease sweep, loop ticks).
    ImproveLoop,
    /// The watcher: posts its findings as jobs, scoped to `jobs.post` in `capsid`, no flags.
    Watcher,
    /// The intake: posts tracker issues as jobs, scoped to `jobs.post` in the namespaces its
    /// signed policy names, no flags.
    Intake,
    /// The scout schedules (issue 55): post a scheduled scout job in the namespace its
    /// signed schedule names, scoped to `jobs.post` there, no flags.
    Scheduler,
    /// The pipeline (issue 55): posts a finished junior's review and an approved pull
    /// request's deploy in their namespace, scoped to `jobs.post` there, no flags.
    Pipeline,
    /// The `capsid` command line, run by whoever holds the database: an admin.
    Cli {
        /// The operating-system user who ran it.
        user: String,
    },
    /// A run credential: what a driven agent process holds instead of its driver's key, bound
    /// to one job and one claim of it ([`crate::jobs::run_credential`]).
    Run {
        /// The driver agent holding the job (its name, as in `claimed_by`).
        driver: String,
        /// The job the run works.
        job_id: String,
    },
}

/// An authenticated caller: who, and what they may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// Who is calling.
    pub principal: Principal,
    /// What they may do.
    pub scopes: Scopes,
}

impl Caller {
    /// A minted agent with its parsed scopes.
    pub fn agent(
        id: impl Into<String>,
        name: impl Into<String>,
        kind: AgentKind,
        scopes: Scopes,
    ) -> Caller {
        Caller {
            principal: Principal::Agent {
                id: id.into(),
                name: name.into(),
                kind,
            },
            scopes,
        }
    }

    /// A legacy operator key: write keys get everything and are admins; `ro:` keys read only.
    pub fn operator_key(grant: Grant, key_hash: &str) -> Caller {
        let fingerprint = key_hash.chars().take(12).collect();
        let scopes = match grant {
            Grant::Write => Scopes::unrestricted(),
            Grant::Read => Scopes::read_everything(),
        };
        Caller {
            principal: Principal::OperatorKey { grant, fingerprint },
            scopes,
        }
    }

    /// The owner, signed in with GitHub.
    pub fn admin(login: impl Into<String>) -> Caller {
        Caller {
            principal: Principal::Admin {
                login: login.into(),
            },
            scopes: Scopes::unrestricted(),
        }
    }

    /// The command line: it holds the database, so it is the admin.
    pub fn cli(user: impl Into<String>) -> Caller {
        Caller {
            principal: Principal::Cli { user: user.into() },
            scopes: Scopes::unrestricted(),
        }
    }

    /// The server's own periodic work.
    pub fn improve_loop() -> Caller {
        Caller {
            principal: Principal::ImproveLoop,
            scopes: Scopes::unrestricted(),
        }
    }

    /// The watcher (reference 10.3): it may post jobs in the `capsid` namespace and nothing
    /// else (no flags, not an admin), checked at the one enforcement point like any caller.
    pub fn watcher() -> Caller {
        Caller {
            principal: Principal::Watcher,
            scopes: Scopes::parse(Some(
                r#"{"namespaces":["capsid"],"tools":["jobs","jobs.post"],"grants":["write"]}"#,
            )),
        }
    }

    /// The intake (issue 37): it may post jobs in `namespaces` (the ones its signed policy
    /// names) and nothing else (no flags, not an admin).
    pub fn intake(namespaces: &[String]) -> Caller {
        let axes = serde_json::json!({"namespaces": namespaces, "tools": ["jobs", "jobs.post"],
                                      "grants": ["write"]});
        Caller {
            principal: Principal::Intake,
            scopes: Scopes::parse(Some(&axes.to_string())),
        }
    }

    /// The scout schedules: they may post jobs in `namespace` (the one a signed schedule names)
    /// and nothing else.
    pub fn scheduler(namespace: &str) -> Caller {
        let axes = serde_json::json!({"namespaces": [namespace], "tools": ["jobs", "jobs.post"],
                                      "grants": ["write"]});
        Caller {
            principal: Principal::Scheduler,
            scopes: Scopes::parse(Some(&axes.to_string())),
        }
    }

    /// The pipeline: it may post jobs in `namespace` (the hand-off's) and nothing else.
    pub fn pipeline(namespace: &str) -> Caller {
        let axes = serde_json::json!({"namespaces": [namespace], "tools": ["jobs", "jobs.post"],
                                      "grants": ["write"]});
        Caller {
            principal: Principal::Pipeline,
            scopes: Scopes::parse(Some(&axes.to_string())),
        }
    }

    /// The actor string written to audit rows, `claimed_by` and outcome rows.
    pub fn actor(&self) -> String {
        match &self.principal {
            Principal::Agent { name, .. } => format!("agent:{name}"),
            Principal::OperatorKey { fingerprint, .. } => format!("opkey:{fingerprint}"),
            Principal::Admin { login } => format!("github:{login}"),
            Principal::ImproveLoop => "improve-loop".to_owned(),
            Principal::Watcher => "watcher".to_owned(),
            Principal::Intake => crate::intake::INTAKE_ACTOR.to_owned(),
            Principal::Scheduler => crate::jobs::scout::SCOUT_ACTOR.to_owned(),
            Principal::Pipeline => crate::jobs::pipeline::PIPELINE_ACTOR.to_owned(),
            Principal::Cli { user } => format!("cli:{user}"),
            Principal::Run { driver, job_id } => format!("agent:{driver}/run:{job_id}"),
        }
    }

    /// The actor that holds jobs for this caller: a run credential holds its job through its
    /// driver (`agent:<driver>`); every other caller holds jobs as itself.
    pub fn holder_actor(&self) -> String {
        match &self.principal {
            Principal::Run { driver, .. } => format!("agent:{driver}"),
            _ => self.actor(),
        }
    }

    /// The job a run credential is bound to (`None` for every other caller).
    pub fn run_job(&self) -> Option<&str> {
        match &self.principal {
            Principal::Run { job_id, .. } => Some(job_id),
            _ => None,
        }
    }

    /// Whether this caller is an admin: the OAuth owner or a legacy write key. Never a minted
    /// agent, whatever its scopes.
    pub fn is_admin(&self) -> bool {
        matches!(
            self.principal,
            Principal::Admin { .. }
                | Principal::Cli { .. }
                | Principal::OperatorKey {
                    grant: Grant::Write,
                    ..
                }
        )
    }

    /// The agent kind, for minted agents.
    pub fn agent_kind(&self) -> Option<AgentKind> {
        match self.principal {
            Principal::Agent { kind, .. } => Some(kind),
            _ => None,
        }
    }
}

/// One entry of `CAPSID_OPERATOR_KEY_HASH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorKeyEntry {
    /// Lower-case SHA-256 hex of the key.
    pub hash: String,
    /// `Read` for `ro:` entries.
    pub grant: Grant,
}

/// Parses the comma list of operator key hashes: each entry trimmed and lower-cased; an `ro:`
/// prefix marks a read-only key and is stripped; empty entries are skipped.
pub fn parse_operator_keys(config: &str) -> Vec<OperatorKeyEntry> {
    config
        .split(',')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .filter_map(|e| match e.strip_prefix("ro:") {
            Some(h) => Some(OperatorKeyEntry {
                hash: h.trim().to_owned(),
                grant: Grant::Read,
            })
            .filter(|k| !k.hash.is_empty()),
            None => Some(OperatorKeyEntry {
                hash: e,
                grant: Grant::Write,
            }),
        })
        .collect()
}

/// The grant of the operator key whose hash is `token_hash`, compared in constant time
/// against every entry (no early exit, so timing does not reveal which entry matched).
pub fn match_operator_key(entries: &[OperatorKeyEntry], token_hash: &str) -> Option<Grant> {
    let mut found = None;
    for entry in entries {
        if ct_eq(entry.hash.as_bytes(), token_hash.as_bytes()) && found.is_none() {
            found = Some(entry.grant);
        }
    }
    found
}

/// `isAdminUser`: the configured owner, trimmed; empty means nobody; all digits compares the
/// numeric GitHub user id, anything else the login case-insensitively.
pub fn is_admin_user(configured: &str, login: &str, user_id: u64) -> bool {
    let configured = configured.trim();
    if configured.is_empty() {
        return false;
    }
    if configured.bytes().all(|b| b.is_ascii_digit()) {
        return configured.parse::<u64>().is_ok_and(|id| id == user_id);
    }
    configured.eq_ignore_ascii_case(login.trim())
}

/// The bearer token of an `Authorization` header value: it must start with `Bearer `, and the
/// rest, trimmed, must be non-empty.
pub fn bearer_token(header: &str) -> Option<&str> {
    header
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::Flag;

    /// An agent's kind is stored and shown by its name, and only the four names parse: the
    /// auto-merge check `author_is_driver` and the roster decide on it.
    #[test]
    fn agent_kinds_round_trip_by_name_and_nothing_else_parses() {
        let names: Vec<&str> = AgentKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["session", "driver", "seat", "cron"]);
        for kind in AgentKind::ALL {
            assert_eq!(AgentKind::parse(kind.name()), Some(kind));
            assert_eq!(kind.to_string(), kind.name());
        }
        for other in ["", "Driver", "drivers", " driver", "agent", "admin"] {
            assert_eq!(AgentKind::parse(other), None, "{other:?}");
        }
    }

    /// Only a minted agent has a kind; operator keys and the CLI have none.
    #[test]
    fn only_minted_agents_have_a_kind() {
        for kind in AgentKind::ALL {
            let agent = Caller::agent("agent_000000000001", "d", kind, Scopes::none());
            assert_eq!(agent.agent_kind(), Some(kind));
        }
        assert_eq!(Caller::operator_key(Grant::Write, "ab").agent_kind(), None);
        assert_eq!(Caller::cli("admin").agent_kind(), None);
    }

    #[test]
    fn operator_keys_parse_like_the_worker() {
        let keys = parse_operator_keys(" ABC , ro:Def,, ro: ,ghi");
        assert_eq!(
            keys,
            vec![
                OperatorKeyEntry {
                    hash: "abc".into(),
                    grant: Grant::Write
                },
                OperatorKeyEntry {
                    hash: "def".into(),
                    grant: Grant::Read
                },
                OperatorKeyEntry {
                    hash: "ghi".into(),
                    grant: Grant::Write
                },
            ]
        );
        assert_eq!(match_operator_key(&keys, "def"), Some(Grant::Read));
        assert_eq!(match_operator_key(&keys, "abc"), Some(Grant::Write));
        assert_eq!(match_operator_key(&keys, "ab"), None);
        assert_eq!(match_operator_key(&[], "abc"), None);
    }

    #[test]
    fn operator_callers() {
        let w = Caller::operator_key(Grant::Write, "0123456789abcdef");
        assert_eq!(w.actor(), "opkey:0123456789ab");
        assert!(w.is_admin());
        assert_eq!(w.scopes.flags.len(), Flag::ALL.len());
        let r = Caller::operator_key(Grant::Read, "0123456789abcdef");
        assert!(!r.is_admin());
        assert!(r.scopes.flags.is_empty());
        assert!(!r.scopes.has_grant(Grant::Write));
    }

    #[test]
    fn the_watcher_may_post_jobs_in_capsid_and_nothing_else() {
        use crate::scope::{Need, check_scope};
        let w = Caller::watcher();
        assert_eq!(w.actor(), "watcher");
        assert!(!w.is_admin());
        assert!(w.scopes.flags.is_empty(), "no flags");
        let need = |tool, action, namespace| Need {
            tool,
            action,
            namespace,
            repo: None,
            grant: Some(Grant::Write),
            flags: Vec::new(),
        };
        assert_eq!(
            check_scope(&w.scopes, &need("jobs", Some("post"), Some("capsid"))),
            Ok(())
        );
        for (tool, action, ns) in [
            ("jobs", Some("claim"), Some("capsid")),
            ("jobs", Some("post"), Some("alpha")),
            ("write", None, Some("capsid")),
            ("improve_run", Some("tick"), Some("capsid")),
        ] {
            assert!(
                check_scope(&w.scopes, &need(tool, action, ns)).is_err(),
                "{tool} {action:?} {ns:?}"
            );
        }
    }

    #[test]
    fn the_intake_may_post_jobs_in_its_namespaces_and_nothing_else() {
        use crate::scope::{Need, check_scope};
        let i = Caller::intake(&["alpha".to_owned(), "beta".to_owned()]);
        assert_eq!(i.actor(), "intake");
        assert!(!i.is_admin());
        assert!(i.scopes.flags.is_empty(), "no flags");
        let need = |tool, action, namespace| Need {
            tool,
            action,
            namespace,
            repo: None,
            grant: Some(Grant::Write),
            flags: Vec::new(),
        };
        for ns in ["alpha", "beta"] {
            assert_eq!(
                check_scope(&i.scopes, &need("jobs", Some("post"), Some(ns))),
                Ok(())
            );
        }
        for (tool, action, ns) in [
            ("jobs", Some("post"), Some("gamma")),
            ("jobs", Some("post"), Some("capsid")),
            ("jobs", Some("claim"), Some("alpha")),
            ("write", None, Some("alpha")),
        ] {
            assert!(
                check_scope(&i.scopes, &need(tool, action, ns)).is_err(),
                "{tool} {action:?} {ns:?}"
            );
        }
        let none = Caller::intake(&[]);
        assert!(
            check_scope(&none.scopes, &need("jobs", Some("post"), Some("alpha"))).is_err(),
            "no namespaces named reaches none"
        );
    }

    #[test]
    fn a_minted_agent_is_never_admin() {
        let a = Caller::agent("agent_1", "bot", AgentKind::Seat, Scopes::unrestricted());
        assert!(!a.is_admin(), "even with every scope and flag");
        assert_eq!(a.actor(), "agent:bot");
        assert_eq!(Caller::admin("octo").actor(), "github:octo");
        assert!(Caller::admin("octo").is_admin());
        assert_eq!(Caller::improve_loop().actor(), "improve-loop");
        assert!(Caller::cli("ops").is_admin(), "the CLI holds the database");
        assert_eq!(Caller::cli("ops").actor(), "cli:ops");
    }

    #[test]
    fn admin_user_check() {
        assert!(is_admin_user(" Octo ", "octo", 1));
        assert!(is_admin_user("42", "anyone", 42));
        assert!(
            !is_admin_user("42", "42", 7),
            "digits compare the id, not the login"
        );
        assert!(!is_admin_user("", "octo", 1));
        assert!(!is_admin_user("octo", "octopus", 1));
    }

    #[test]
    fn bearer_extraction() {
        assert_eq!(bearer_token("Bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("bearer abc"), None);
        assert_eq!(bearer_token("Basic abc"), None);
    }
}
