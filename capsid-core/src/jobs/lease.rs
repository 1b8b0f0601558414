//! Leases and who may hold them (reference 6.2).
//!
//! A claim or resume takes a four-hour lease; the holder heartbeats to renew it and the
//! five-minute sweep returns an expired one to the queue.

use crate::time::{HOUR_MS, MINUTE_MS, Timestamp};

/// How long a claim holds a job (`JOB_LEASE_SECONDS` = 4 h).
pub const JOB_LEASE_MS: i64 = 4 * HOUR_MS;

/// How often the sweep looks for expired leases (the five-minute tick).
pub const LEASE_SWEEP_INTERVAL_MS: i64 = 5 * MINUTE_MS;

/// How often a driver is expected to heartbeat; the lease is the backstop, not the rhythm.
pub const HEARTBEAT_INTERVAL_MS: i64 = 15 * MINUTE_MS;

/// Actor prefixes that can hold a lease: an OAuth login, an operator key, a minted agent.
pub const LEASE_HOLDER_PREFIXES: [&str; 3] = ["github:", "opkey:", "agent:"];

/// When a lease taken or renewed at `now` runs out.
pub fn lease_expiry(now: Timestamp) -> Timestamp {
    now.plus_millis(JOB_LEASE_MS)
}

/// Whether the sweep returns this lease to the queue: set and strictly before `now`.
///
/// No lease is never expired (the sweep's `lease_expires IS NOT NULL`). A lease text that
/// does not parse cannot be shown to still run, so it counts as expired: the job goes back
/// to the queue rather than staying pinned on a holder forever.
pub fn lease_expired(lease_expires: Option<&str>, now: Timestamp) -> bool {
    match lease_expires {
        None => false,
        Some(text) => Timestamp::parse(text).is_none_or(|expires| expires < now),
    }
}

/// Whether `actor` has the shape of a caller a lease can be recorded against
/// (`^(github:|opkey:|agent:)`).
pub fn actor_may_hold_jobs(actor: &str) -> bool {
    LEASE_HOLDER_PREFIXES
        .iter()
        .any(|prefix| actor.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SECOND_MS;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    #[test]
    fn lease_runs_four_hours() {
        let now = at("2026-11-30T04:09:01.123Z");
        assert_eq!(lease_expiry(now).to_string(), "2026-11-30T08:09:01.123Z");
    }

    /// The reference's constants: a claim holds for `JOB_LEASE_SECONDS` = 14,400 s, the sweep
    /// runs every five minutes and a driver heartbeats every fifteen.
    #[test]
    fn lease_and_sweep_periods_are_the_references() {
        assert_eq!(JOB_LEASE_MS, 14_400 * SECOND_MS);
        assert_eq!(LEASE_SWEEP_INTERVAL_MS, 300 * SECOND_MS);
        assert_eq!(HEARTBEAT_INTERVAL_MS, 900 * SECOND_MS);
    }

    #[test]
    fn expiry_is_strictly_before_now() {
        let now = at("2026-11-30T08:00:00Z");
        assert!(!lease_expired(Some("2026-11-30T08:00:00.000Z"), now));
        assert!(lease_expired(Some("2026-11-30T07:59:59.999Z"), now));
        assert!(!lease_expired(Some("2026-11-30T08:00:00.001Z"), now));
        assert!(lease_expired(Some("2026-11-30 07:00:00"), now));
    }

    #[test]
    fn no_lease_never_expires_and_garbage_always_does() {
        let now = at("2026-11-30T08:00:00Z");
        assert!(!lease_expired(None, now));
        assert!(lease_expired(Some("zzz"), now));
        assert!(lease_expired(Some(""), now));
    }

    #[test]
    fn a_fresh_lease_survives_the_next_sweeps() {
        let now = at("2026-11-30T08:00:00Z");
        let expires = lease_expiry(now).to_string();
        let last_safe = now.plus_millis(JOB_LEASE_MS);
        assert!(!lease_expired(Some(&expires), last_safe));
        assert!(lease_expired(
            Some(&expires),
            last_safe.plus_millis(SECOND_MS)
        ));
        assert!(!lease_expired(
            Some(&expires),
            now.plus_millis(LEASE_SWEEP_INTERVAL_MS)
        ));
    }

    #[test]
    fn lease_holders_by_actor_shape() {
        for actor in ["github:dustin", "opkey:0123456789ab", "agent:capsid-driver"] {
            assert!(actor_may_hold_jobs(actor), "{actor}");
        }
        for actor in [
            "improve-loop",
            "operator",
            "Agent:x",
            " agent:x",
            "",
            "github",
        ] {
            assert!(!actor_may_hold_jobs(actor), "{actor}");
        }
    }
}
