//! The settings a dump carries (`_kv.json`, reference 10.4): the loop's mode, budget and
//! meta marker, the backup stamp, and per roster namespace the best record, the pause and the
//! pinned anchor. Nothing else: no lease, no cache, no counter.

use crate::improve::keys::{
    BACKUP_LAST_OK_KEY, BUDGET_KEY, IMPROVE_MODE_KEY, META_LAST_KEY, anchor_key, best_key,
    paused_key,
};
use crate::improve::roster::ROSTER;

/// Whether the settings sidecar carries `key`.
pub fn carried_setting(key: &str) -> bool {
    if [
        IMPROVE_MODE_KEY,
        BUDGET_KEY,
        META_LAST_KEY,
        BACKUP_LAST_OK_KEY,
    ]
    .contains(&key)
    {
        return true;
    }
    ROSTER
        .iter()
        .any(|ns| key == best_key(ns) || key == paused_key(ns) || key == anchor_key(ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::improve::keys::driver_key;

    #[test]
    fn the_allowlist_is_closed() {
        for key in [
            "improve_mode",
            "improve:budget",
            "improve:meta:last",
            "backup:last-ok",
            "improve:best:capsid",
            "improve:paused:foxing",
            "improve:anchor:germomics",
        ] {
            assert!(carried_setting(key), "{key}");
        }
        for key in [
            "backup:lease",
            "improve:awaiting-seat",
            &driver_key("capsid"),
            "improve:best:not-on-roster",
            "github:installation-token",
            "improve:best:capsid ",
        ] {
            assert!(!carried_setting(key), "{key}");
        }
    }
}
