//! The gateway's path rule (issue 51): a push whose diff against the job's base touches a path
//! outside the job's lease is refused, whatever the agent's hooks said. The rule needs the
//! pushed objects, which exist only inside git's quarantine while the mirror's `pre-receive`
//! hook runs, so the hook asks a checker program (the `capsid` binary, `capsid door
//! check-push-paths`; `capsid-door check-push-paths` in the tests) with the update lines on
//! stdin and the lease and base in variables the gateway set: the agent can write none of
//! them. The checker reads the changed paths with `git diff --name-only --no-renames` from the
//! merge base of the job's base and each new head (so commits the default branch gained since
//! are not the job's), and decides with [`capsid_core::jobs::paths::Lease::covers`].

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::process::Command;

use capsid_core::jobs::paths::Lease;

/// The hook's argument that asks a checker for the path rule.
pub const CHECK_ARG: &str = "check-push-paths";
/// The variable holding the lease (a JSON array of patterns).
pub const LEASE_VAR: &str = "CAPSID_GATEWAY_LEASE";
/// The variable holding the job's base commit.
pub const BASE_VAR: &str = "CAPSID_GATEWAY_BASE";

/// The lease a gateway enforces on every push: the job's patterns, its base commit, and the
/// program (with its leading arguments) the hook runs to check them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathLease {
    /// The job's base commit (the default branch's head when its run was prepared).
    pub base: String,
    /// The patterns the job holds.
    pub patterns: Vec<String>,
    /// The checker program and the arguments before [`CHECK_ARG`].
    pub checker: Vec<OsString>,
}

/// The most paths a refusal names.
const NAMED_MAX: usize = 10;

/// Decides the path rule for the update lines `updates` (`old new ref`, as `pre-receive` reads
/// them): `Err` names the paths outside `lease` and the lease.
pub fn check_push_paths(
    updates: &str,
    base: &str,
    lease: &[String],
    git: &Path,
) -> Result<(), String> {
    let held = Lease::Paths(lease);
    let mut outside: Vec<String> = Vec::new();
    for line in updates.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.split_whitespace();
        let (Some(_old), Some(new), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!(
                "capsid gateway: push refused, an update line it could not read: {line:?}."
            ));
        };
        if new.bytes().all(|b| b == b'0') {
            continue;
        }
        let out = Command::new(git)
            .args(["diff", "--name-only", "--no-renames", "-z"])
            .arg(format!("{base}...{new}"))
            .arg("--")
            .output()
            .map_err(|e| format!("capsid gateway: push refused, git diff could not run: {e}."))?;
        if !out.status.success() {
            return Err(format!(
                "capsid gateway: push refused, {name} could not be compared with the job's base {base}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        for path in out.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            let path = String::from_utf8_lossy(path).into_owned();
            if !held.covers(&path) && !outside.contains(&path) {
                outside.push(path);
            }
        }
    }
    if outside.is_empty() {
        return Ok(());
    }
    let n = outside.len();
    let named: Vec<String> = outside
        .iter()
        .take(NAMED_MAX)
        .map(|p| format!("`{p}`"))
        .collect();
    let more = if n > NAMED_MAX {
        format!(" and {} more", n - NAMED_MAX)
    } else {
        String::new()
    };
    Err(format!(
        "capsid gateway: push refused, it changes {n} path(s) outside this job's lease: {}{more}. The job holds {}. Take those changes out of the branch, or ask for the paths with `jobs lease extend`; nothing was updated.",
        named.join(", "),
        held.describe()
    ))
}

/// The checker's side of the hook: reads the update lines on stdin and the lease and base from
/// the environment, prints a refusal on stderr, and returns the exit status (0: the push may
/// go on).
pub fn check_from_hook() -> i32 {
    let mut updates = String::new();
    if std::io::stdin().read_to_string(&mut updates).is_err() {
        eprintln!("capsid gateway: push refused, its update lines could not be read.");
        return 1;
    }
    let lease: Option<Vec<String>> = std::env::var(LEASE_VAR)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let (Some(lease), Ok(base)) = (lease, std::env::var(BASE_VAR)) else {
        eprintln!("capsid gateway: push refused, the job's lease is not readable.");
        return 1;
    };
    match check_push_paths(&updates, &base, &lease, Path::new("git")) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("{why}");
            1
        }
    }
}
