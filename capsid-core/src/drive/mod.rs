//! What `capsid drive` and `capsid hook` decide, as pure functions: which shell commands push
//! or merge ([`command`]), what a hook answers Claude Code ([`hooks`]), which test and build
//! commands a run uses ([`gate`]), what a credential reference is ([`credential`]), what an
//! agent's `stream-json` output says ([`stream`]) and which CLI runs a job ([`runtime`]), how the hooks merge into a project's
//! `.claude/settings.json` ([`settings`]), what the supervisor's observations of a run say
//! ([`judge`]), how a finished run closes its job ([`verdict`]),
//! the box an agent runs in ([`box_plan`]) and the hosts its CONNECT door may reach
//! ([`egress`]).
//! The CLI runs the processes and talks to the server; every rule it applies is here.

pub mod box_plan;
pub mod command;
pub mod credential;
pub mod egress;
pub mod gate;
pub mod hooks;
pub mod judge;
pub mod lease_edits;
pub mod ledger;
pub mod patch;
pub mod push_policy;
pub mod runner;
pub mod runtime;
pub mod settings;
pub mod stream;
pub mod verdict;

/// Claude Code caps a hook's output at 10,000 characters; a reason stays well inside it.
pub const REASON_MAX: usize = 4000;

/// The last `max` characters of `text` (on a character boundary), marked when cut.
pub fn tail(text: &str, max: usize) -> String {
    let text = text.trim_end();
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let skip = count - max;
    let cut: String = text.chars().skip(skip).collect();
    format!("[... {skip} characters cut ...]\n{cut}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tail_keeps_short_text_and_cuts_long_text_from_the_front() {
        assert_eq!(tail("ok\n", 10), "ok");
        let cut = tail("abcdefghij", 4);
        assert_eq!(cut, "[... 6 characters cut ...]\nghij");
    }

    proptest! {
        #[test]
        fn tail_is_bounded_and_ends_like_the_text(s in "\\PC{0,300}", max in 1usize..50) {
            let t = tail(&s, max);
            let trimmed = s.trim_end();
            prop_assert!(t.chars().count() <= max + 40);
            let end: String = trimmed.chars().rev().take(max.min(trimmed.chars().count())).collect::<Vec<_>>().into_iter().rev().collect();
            prop_assert!(t.ends_with(&end));
        }
    }
}
