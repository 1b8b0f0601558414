//! The settings a dump carries (`_kv.json`, reference 10.4): the loop's mode, budget and
//! meta marker, the backup stamp, the roster and the tick cadences, and per roster namespace
//! the best record, the pause and the pinned anchor. Nothing else: no lease, no cache, no
//! counter, no tick bookkeeping.

use crate::improve::keys::{
    BACKUP_LAST_OK_KEY, BUDGET_KEY, IMPROVE_MODE_KEY, META_LAST_KEY, ROSTER_KEY,
    WATCHER_CADENCE_KEY, anchor_key, best_key, paused_key,
};
use crate::improve::roster::Roster;
use crate::schedule::Task;

/// Whether the settings sidecar carries `key`, given the roster the store holds.
pub fn carried_setting(key: &str, roster: &Roster) -> bool {
    if [
        IMPROVE_MODE_KEY,
        BUDGET_KEY,
        META_LAST_KEY,
        BACKUP_LAST_OK_KEY,
        ROSTER_KEY,
        WATCHER_CADENCE_KEY,
    ]
    .contains(&key)
        || Task::ALL.iter().any(|t| key == t.cadence_key())
    {
        return true;
    }
    roster
        .namespaces()
        .iter()
        .any(|ns| key == best_key(ns) || key == paused_key(ns) || key == anchor_key(ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::improve::keys::driver_key;

    #[test]
    fn the_allowlist_is_closed() {
        let configured = Roster::from_setting(Some(r#"["alpha"]"#));
        for key in [
            "improve_mode",
            "improve:budget",
            "improve:meta:last",
            "backup:last-ok",
            "improve:best:alpha",
            "improve:paused:alpha",
            "improve:anchor:alpha",
            "improve:roster",
            "watcher:cadence-minutes",
            "tick:cadence-minutes:auto-merge",
        ] {
            assert!(carried_setting(key, &configured), "{key}");
        }
        assert!(carried_setting("improve:paused:alpha", &configured));
        assert!(!carried_setting("improve:paused:capsid", &configured));
        for key in [
            "backup:lease",
            "improve:awaiting-seat",
            &driver_key("capsid"),
            "improve:best:not-on-roster",
            "github:installation-token",
            "improve:best:capsid ",
            "tick:last:auto-merge",
            "autonomy:last-tick",
        ] {
            assert!(!carried_setting(key, &Roster::default()), "{key}");
        }
    }
}
