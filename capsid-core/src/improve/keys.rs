//! The settings keys the improve loop and its neighbours read and write (reference 8.1).
//!
//! Every key is spelled once, here, and per-namespace keys are built by a function so no
//! caller can typo a prefix into a keyspace nothing reads.

/// The loop's mode switch (`off` | `subscription` | `api`).
pub const IMPROVE_MODE_KEY: &str = "improve_mode";
/// Monthly caps, JSON `{actions_minutes_month, model_usd_month}`.
pub const BUDGET_KEY: &str = "improve:budget";
/// The auto-merge tick's declined pull requests, rewritten whole every tick.
pub const AWAITING_SEAT_KEY: &str = "improve:awaiting-seat";
/// The weekly meta-loop's cadence marker.
pub const META_LAST_KEY: &str = "improve:meta:last";
/// When the last backup succeeded.
pub const BACKUP_LAST_OK_KEY: &str = "backup:last-ok";
/// Days between skill evaluation cycles.
pub const SKILLS_CADENCE_KEY: &str = "skills:evaluate:cadence-days";
/// The roster: a JSON array of the namespaces that may take part in autonomy and the loop.
pub const ROSTER_KEY: &str = "improve:roster";
/// Minutes between watcher passes.
pub const WATCHER_CADENCE_KEY: &str = "watcher:cadence-minutes";

/// `improve:best:<ns>`: the best known commit and the scores that made it best.
pub fn best_key(namespace: &str) -> String {
    format!("improve:best:{namespace}")
}

/// `improve:paused:<ns>`: the pause reason. Written with no expiry.
pub fn paused_key(namespace: &str) -> String {
    format!("improve:paused:{namespace}")
}

/// `improve:anchor:<ns>`: the human-pinned sha256 of the Anchors block.
pub fn anchor_key(namespace: &str) -> String {
    format!("improve:anchor:{namespace}")
}

/// `improve:driver:<ns>`: the subscription-mode driver lease.
pub fn driver_key(namespace: &str) -> String {
    format!("improve:driver:{namespace}")
}

/// `improve:model:<stage>`: the model a stage of `api` mode asks, overriding its default.
pub fn model_key(stage: crate::improve::models::Stage) -> String {
    format!("improve:model:{}", stage.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_namespace_keys_carry_the_namespace_after_their_prefix() {
        assert_eq!(best_key("orchard"), "improve:best:orchard");
        assert_eq!(paused_key("capsid"), "improve:paused:capsid");
        assert_eq!(anchor_key("borealis"), "improve:anchor:borealis");
        assert_eq!(driver_key("atlas"), "improve:driver:atlas");
        assert_eq!(
            model_key(crate::improve::models::Stage::Abstract),
            "improve:model:abstract"
        );
    }
}
