//! The box's doors on the job's record (issue 48): every connection a boxed agent (or the
//! driver's test box) made through one of the supervisor's doors, and every host it asked the
//! egress door for, refused or reached. The driver's doors write them (the driver's own key,
//! never the run credential the agent holds); `jobs get` and the console read them.

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// At most this many records in one `jobs doors` call.
pub const DOORS_PER_CALL_MAX: usize = 200;
/// At most this many records of one job are kept: a run that opens more connections keeps its
/// first ones and the driver says how many it left out.
pub const JOB_DOORS_MAX: usize = 2_000;
/// At most this many records of one job are answered by `jobs get`, newest kept.
pub const JOB_DOORS_SHOWN: usize = 500;
/// The longest host a record keeps (a DNS name's limit).
pub const DOOR_HOST_MAX: usize = 253;
/// The longest detail (why a host was refused or could not be reached) a record keeps.
pub const DOOR_DETAIL_MAX: usize = 300;

/// What became of a connection.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DoorDecision {
    /// The door carried it to its target.
    Reached,
    /// The door refused it (a host the namespace does not allow).
    Refused,
    /// The door allowed it but its target could not be reached.
    Failed,
}

impl DoorDecision {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DoorDecision::Reached => "reached",
            DoorDecision::Refused => "refused",
            DoorDecision::Failed => "failed",
        }
    }

    /// From the stored spelling.
    pub fn parse(s: &str) -> Option<DoorDecision> {
        match s {
            "reached" => Some(DoorDecision::Reached),
            "refused" => Some(DoorDecision::Refused),
            "failed" => Some(DoorDecision::Failed),
            _ => None,
        }
    }
}

/// One connection through a door, as the job's record keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DoorRecord {
    /// The driver's id for the record (a record sent twice is kept once).
    pub record_id: String,
    /// The door: `model`, `git`, `mcp` or `egress`.
    pub door: String,
    /// The host it reached or asked for (`capsid` for a service in the driver's process).
    pub host: String,
    /// Its port (0 for a service in the driver's process).
    pub port: u16,
    /// What became of it.
    pub decision: DoorDecision,
    /// Bytes from the box.
    pub bytes_up: u64,
    /// Bytes to the box.
    pub bytes_down: u64,
    /// When the box connected or asked.
    #[schemars(with = "String")]
    pub started_at: Timestamp,
    /// When the connection ended or was refused.
    #[schemars(with = "String")]
    pub ended_at: Timestamp,
    /// Why it was refused or failed, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The doors a box has: what a record's `door` may name.
pub const DOORS: [&str; 4] = ["model", "git", "mcp", "egress"];

/// Why a record a driver sent is refused (the whole `jobs doors` changes nothing).
pub fn check_door(r: &DoorRecord) -> Result<(), String> {
    let id = &r.record_id;
    if id.is_empty()
        || id.len() > 64
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "record_id {id:?}: 1 to 64 letters, digits, '_' or '-' (the driver's id for the record)"
        ));
    }
    if !DOORS.contains(&r.door.as_str()) {
        return Err(format!(
            "record {id}: door {:?} is not one of the box's doors ({})",
            r.door,
            DOORS.join(", ")
        ));
    }
    if r.host.is_empty()
        || r.host.len() > DOOR_HOST_MAX
        || r.host.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(format!(
            "record {id}: host must be 1 to {DOOR_HOST_MAX} characters without spaces or control characters"
        ));
    }
    if let Some(d) = &r.detail
        && (d.chars().count() > DOOR_DETAIL_MAX || d.chars().any(char::is_control))
    {
        return Err(format!(
            "record {id}: detail must be at most {DOOR_DETAIL_MAX} characters without control characters"
        ));
    }
    if r.ended_at < r.started_at {
        return Err(format!("record {id}: ended_at is before started_at"));
    }
    Ok(())
}

/// The doors' records summed per door and decision, for a line in a record or the console:
/// `egress refused example.com:443; egress reached registry.npmjs.org:443; git 2, model 5`.
pub fn summary(records: &[DoorRecord]) -> String {
    use std::collections::{BTreeMap, BTreeSet};
    let mut per_door: BTreeMap<&str, usize> = BTreeMap::new();
    let mut egress: BTreeMap<DoorDecision, BTreeSet<String>> = BTreeMap::new();
    for r in records {
        if r.door == "egress" {
            egress
                .entry(r.decision)
                .or_default()
                .insert(format!("{}:{}", r.host, r.port));
        } else {
            *per_door.entry(r.door.as_str()).or_default() += 1;
        }
    }
    let mut parts: Vec<String> = egress
        .iter()
        .map(|(d, hosts)| {
            format!(
                "egress {} {}",
                d.as_str(),
                hosts.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    if !per_door.is_empty() {
        parts.push(
            per_door
                .iter()
                .map(|(d, n)| format!("{d} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
    }
    if parts.is_empty() {
        "no connection".to_owned()
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).expect("a time")
    }

    fn record(door: &str, host: &str, decision: DoorDecision) -> DoorRecord {
        DoorRecord {
            record_id: "run1-0".into(),
            door: door.into(),
            host: host.into(),
            port: 443,
            decision,
            bytes_up: 10,
            bytes_down: 20,
            started_at: at("2026-12-07T10:00:00.000Z"),
            ended_at: at("2026-12-07T10:00:01.000Z"),
            detail: None,
        }
    }

    #[test]
    fn a_well_formed_record_passes() {
        assert_eq!(
            check_door(&record("egress", "example.com", DoorDecision::Refused)),
            Ok(())
        );
        let mut r = record("model", "capsid", DoorDecision::Reached);
        r.detail = Some("x".repeat(DOOR_DETAIL_MAX));
        r.host = "h".repeat(DOOR_HOST_MAX);
        r.record_id = "a".repeat(64);
        assert_eq!(check_door(&r), Ok(()));
        r.ended_at = r.started_at;
        assert_eq!(check_door(&r), Ok(()));
    }

    #[test]
    fn each_rule_names_its_field() {
        let ok = record("git", "capsid", DoorDecision::Reached);
        let refused = |f: &dyn Fn(&mut DoorRecord)| {
            let mut r = ok.clone();
            f(&mut r);
            check_door(&r).expect_err("refused")
        };
        for id in ["", "a b", "é", &"a".repeat(65)] {
            let why = refused(&|r| r.record_id = id.to_owned());
            assert!(why.starts_with("record_id"), "{why}");
        }
        let why = refused(&|r| r.door = "ssh".into());
        assert!(
            why.contains("door \"ssh\" is not one of the box's doors (model, git, mcp, egress)"),
            "{why}"
        );
        for host in ["", "a b", "a\nb", &"h".repeat(DOOR_HOST_MAX + 1)] {
            let why = refused(&|r| r.host = host.to_owned());
            assert!(why.contains("host must be"), "{why}");
        }
        for detail in ["a\u{7}b".to_owned(), "x".repeat(DOOR_DETAIL_MAX + 1)] {
            let why = refused(&|r| r.detail = Some(detail.clone()));
            assert!(why.contains("detail must be"), "{why}");
        }
        let why = refused(&|r| r.ended_at = at("2026-12-07T09:59:59.999Z"));
        assert_eq!(why, "record run1-0: ended_at is before started_at");
    }

    #[test]
    fn decisions_round_trip_their_stored_spelling() {
        for d in [
            DoorDecision::Reached,
            DoorDecision::Refused,
            DoorDecision::Failed,
        ] {
            assert_eq!(DoorDecision::parse(d.as_str()), Some(d));
        }
        assert_eq!(DoorDecision::parse("allowed"), None);
    }

    #[test]
    fn the_summary_names_each_egress_host_once_and_counts_the_other_doors() {
        let mut again = record("egress", "example.com", DoorDecision::Refused);
        again.record_id = "run1-9".into();
        let records = vec![
            record("egress", "example.com", DoorDecision::Refused),
            again,
            record("egress", "registry.npmjs.org", DoorDecision::Reached),
            record("model", "capsid", DoorDecision::Reached),
            record("model", "capsid", DoorDecision::Reached),
            record("git", "capsid", DoorDecision::Reached),
        ];
        assert_eq!(
            summary(&records),
            "egress reached registry.npmjs.org:443; egress refused example.com:443; git 1, model 2"
        );
        assert_eq!(summary(&[]), "no connection");
        assert_eq!(
            summary(&[record("mcp", "capsid", DoorDecision::Failed)]),
            "mcp 1"
        );
    }
}
