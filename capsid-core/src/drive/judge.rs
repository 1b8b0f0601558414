//! The judge over what the supervisor saw of a run (issue 48), as pure functions: which
//! protected branches moved outside the gates, whether the gates can vouch for the run at
//! all, and which step only a person may take the job waits on. The driver gathers the
//! observations (the protected heads before and after, read by the driver; what the gateway
//! let through on an approval, from its own log; what the hooks recorded on the server) and
//! [`crate::drive::verdict`] closes the job from the facts these make.
//!
//! The rules:
//!
//! 1. a protected head that changed, appeared or went during the run **moved**; a move is
//!    forgiven only when the head is now exactly a sha a person approved for that branch and
//!    the gate let through (a deletion never is);
//! 2. the gates cannot vouch for a run whose own hooks were rewired, in which a protected
//!    branch moved outside them, or in which none of the hooks reported (silence counts
//!    against a run; a report never counts for it);
//! 3. a step only a person may take, whether a human gate the session was refused or the
//!    updates the gateway held, is the question the job blocks on, over whatever the hooks
//!    recorded.

use super::push_policy::{RefUpdate, held_push_command};
use super::verdict::HookState;
use crate::checkmarks::AgentStatus;

/// A protected branch's head as the driver read it: its name (`refs/heads/main`, or
/// `origin refs/heads/main` for the remote's) and its sha.
pub type Head = (String, String);

/// A protected update a person approved and the gate let through: the branch's ref
/// (`refs/heads/main`) and the sha it may now be at.
pub type Approved = (String, String);

/// The branch a head names, without the remote's prefix (`origin refs/heads/main` is
/// `refs/heads/main`).
fn branch_of(name: &str) -> &str {
    name.strip_prefix("origin ").unwrap_or(name)
}

/// The protected heads that moved between `before` and `after` and that no approval covers,
/// as text (`origin refs/heads/main is now 1234abcd5678`, `refs/heads/master was deleted`),
/// or `None` when nothing moved outside the gates (rule 1).
pub fn unapproved_moves(before: &[Head], after: &[Head], approved: &[Approved]) -> Option<String> {
    let forgiven = |name: &str, sha: &str| {
        approved
            .iter()
            .any(|(r, s)| r == branch_of(name) && s == sha)
    };
    let mut moves: Vec<String> = after
        .iter()
        .filter(|(name, sha)| {
            before.iter().find(|(b, _)| b == name).map(|(_, s)| s) != Some(sha)
                && !forgiven(name, sha)
        })
        .map(|(name, sha)| format!("{name} is now {}", &sha[..sha.len().min(12)]))
        .collect();
    moves.extend(
        before
            .iter()
            .filter(|(name, _)| !after.iter().any(|(a, _)| a == name))
            .map(|(name, _)| format!("{name} was deleted")),
    );
    (!moves.is_empty()).then(|| moves.join(", "))
}

/// The approvals a gate reported, one `approved <ref> <sha>` line each (other lines are
/// ignored).
pub fn approved_lines(text: &str) -> Vec<Approved> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next(), words.next()) {
                (Some("approved"), Some(r), Some(sha), None) => {
                    Some((r.to_owned(), sha.to_owned()))
                }
                _ => None,
            }
        })
        .collect()
}

/// The commands the PreToolUse hook refused, one `denied <command as a JSON string>` line
/// each, in order (other lines, and a line whose command does not read, are ignored). Codex
/// prints no list of refused calls, so the hook keeps it; what a refused command means is
/// decided again from the command itself ([`super::verdict::human_gate_in`]), never taken from
/// the line.
pub fn denied_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("denied "))
        .filter_map(|json| serde_json::from_str::<String>(json).ok())
        .collect()
}

/// Whether the agent CLI's own hooks (session start, pre-tool-use, stop, session end)
/// reported in the hooks' report `text`: git's pre-push gate and the lines the hooks keep
/// (approvals, refusals) are not the CLI running Capsid's hooks.
pub fn agent_hooks_reported(text: &str) -> bool {
    text.lines().any(|l| {
        matches!(
            l.split_whitespace().next(),
            Some("session-start" | "pre-tool-use" | "stop" | "session-end")
        )
    })
}

/// The line [`denied_lines`] reads for `command`.
pub fn denied_line(command: &str) -> String {
    format!("denied {}", serde_json::Value::String(command.to_owned()))
}

/// Why the gates cannot vouch for the run, if they cannot (rule 2): `rewired` says how the
/// run's own hooks were changed, `moved` is [`unapproved_moves`], and `hooks_reported` whether
/// any of Capsid's hooks reported during the session.
pub fn gates_tampered(
    rewired: Option<&str>,
    moved: Option<&str>,
    hooks_reported: bool,
) -> Option<String> {
    if let Some(why) = rewired {
        return Some(why.to_owned());
    }
    if let Some(moved) = moved {
        return Some(format!(
            "a protected branch moved during the run outside the gates ({moved}); a person must look at it"
        ));
    }
    if !hooks_reported {
        return Some(
            "none of Capsid's hooks reported during the session (the agent did not run them: a setting switched them off, or the agent command does not load Capsid's settings)".to_owned(),
        );
    }
    None
}

/// The hooks' state the verdict reads (rule 3): the updates the gateway `held` (the exact
/// question: [`held_push_command`]), else a human gate the session was refused, else what the
/// hooks recorded.
pub fn hook_state(
    recorded: Option<HookState>,
    human_gate: Option<String>,
    held: &[RefUpdate],
) -> Option<HookState> {
    if !held.is_empty() {
        return Some(HookState {
            status: AgentStatus::Blocked,
            question: Some(held_push_command(held)),
            from_gate: true,
        });
    }
    match human_gate {
        Some(command) => Some(HookState {
            status: AgentStatus::Blocked,
            question: Some(command),
            from_gate: true,
        }),
        None => recorded,
    }
}

#[cfg(test)]
mod tests;
