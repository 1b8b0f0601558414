//! What a boxed run's doors saw, on the job's record (issue 48): every connection through the
//! model, git and MCP doors, and every host the agent's box (or the driver's test box) asked
//! an egress door for, refused or reached. Sent with the driver's own key (`jobs doors`) before
//! the job closes; `jobs get` and the console show them.

use std::time::SystemTime;

use capsid_box::bridge::{ConnectionRecord, DoorEnd};
use capsid_box::connect::{ConnectAttempt, Decision};
use capsid_core::jobs::doors::{
    DOOR_DETAIL_MAX, DOOR_HOST_MAX, DOORS_PER_CALL_MAX, DoorDecision, DoorRecord,
};
use capsid_core::time::Timestamp;
use serde_json::json;

use super::Ready;
use super::boxed::Seen;
use super::mcp::Answer;

fn at(t: SystemTime) -> Timestamp {
    let ms = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Timestamp::from_millis(ms)
}

fn clip(text: &str, max: usize) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect()
}

/// Whether `door` is an egress door (the agent's, or the driver's test box's).
fn is_egress(door: &str) -> bool {
    door == "egress" || door == "verify-egress"
}

fn connection(c: &ConnectionRecord, record_id: String) -> DoorRecord {
    let (host, port) = match &c.target {
        DoorEnd::Tcp { host, port } => (clip(host, DOOR_HOST_MAX), *port),
        DoorEnd::InProcess => ("capsid".to_owned(), 0),
    };
    DoorRecord {
        record_id,
        door: c.door.clone(),
        host,
        port,
        decision: match c.failure {
            Some(_) => DoorDecision::Failed,
            None => DoorDecision::Reached,
        },
        bytes_up: c.bytes_up,
        bytes_down: c.bytes_down,
        started_at: at(c.started),
        ended_at: at(c.ended.max(c.started)),
        detail: c.failure.as_deref().map(|f| clip(f, DOOR_DETAIL_MAX)),
    }
}

fn attempt(a: &ConnectAttempt, record_id: String) -> DoorRecord {
    let (decision, detail) = match (&a.decision, &a.failure) {
        (Decision::Refused(why), _) => (DoorDecision::Refused, Some(why.as_str())),
        (Decision::Allowed, Some(f)) => (DoorDecision::Failed, Some(f.as_str())),
        (Decision::Allowed, None) => (DoorDecision::Reached, None),
    };
    DoorRecord {
        record_id,
        door: "egress".to_owned(),
        host: clip(&a.host, DOOR_HOST_MAX),
        port: a.port,
        decision,
        bytes_up: a.bytes_up,
        bytes_down: a.bytes_down,
        started_at: at(a.started),
        ended_at: at(a.ended.max(a.started)),
        detail: detail.map(|d| clip(d, DOOR_DETAIL_MAX)),
    }
}

/// The job's door records of one run: each connection through the model, git and MCP doors,
/// and each host asked of an egress door (the egress doors' own connections stand behind
/// those, so they are not counted twice). `run` keeps a resumed run's record ids apart from
/// an earlier run's.
pub(crate) fn records(seen: &Seen, run: &str) -> Vec<DoorRecord> {
    let through = seen.connections.iter().filter(|c| !is_egress(&c.door));
    let mut out: Vec<DoorRecord> = through
        .enumerate()
        .map(|(i, c)| connection(c, format!("{run}-c{i}")))
        .collect();
    out.extend(
        seen.attempts
            .iter()
            .enumerate()
            .map(|(i, a)| attempt(a, format!("{run}-e{i}"))),
    );
    out.sort_by_key(|r| r.started_at);
    out
}

/// The records in one sentence for the job's outcome.
pub(crate) fn line(records: &[DoorRecord]) -> String {
    format!(
        "Boxed: {} record(s) through its doors ({}).",
        records.len(),
        capsid_core::jobs::doors::summary(records)
    )
}

/// An id for this run's records: the driver's clock in milliseconds when the run closed.
pub(crate) fn run_id() -> String {
    format!("r{}", at(SystemTime::now()).as_millis())
}

/// Sends `records` to the job's record, in calls of at most the server's bound. A refusal or
/// an error is said on stderr: the verdict never depends on it.
pub(crate) async fn send(r: &Ready, id: &str, records: &[DoorRecord]) {
    for chunk in records.chunks(DOORS_PER_CALL_MAX) {
        let args = json!({
            "action": "doors", "id": id, "namespace": r.namespace, "doors": chunk,
        });
        let why = match r.mcp.call("jobs", args).await {
            Ok(Answer::Ok(_)) => continue,
            Ok(Answer::Refused(why)) => why,
            Err(e) => format!("{e:#}"),
        };
        eprintln!("capsid drive: {id}: the doors' records could not be written: {why}");
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn t(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
    }

    #[test]
    fn egress_hosts_stand_for_the_egress_doors_connections() {
        let seen = Seen {
            metered: Default::default(),
            pushes: vec![],
            connections: vec![
                ConnectionRecord {
                    door: "model".into(),
                    target: DoorEnd::InProcess,
                    bytes_up: 5,
                    bytes_down: 7,
                    started: t(1),
                    ended: t(2),
                    failure: None,
                },
                ConnectionRecord {
                    door: "egress".into(),
                    target: DoorEnd::InProcess,
                    bytes_up: 1,
                    bytes_down: 1,
                    started: t(3),
                    ended: t(4),
                    failure: None,
                },
                ConnectionRecord {
                    door: "mcp".into(),
                    target: DoorEnd::Tcp {
                        host: "127.0.0.1".into(),
                        port: 8787,
                    },
                    bytes_up: 0,
                    bytes_down: 0,
                    started: t(5),
                    ended: t(5),
                    failure: Some("connection refused".into()),
                },
            ],
            attempts: vec![
                ConnectAttempt {
                    host: "example.com".into(),
                    port: 443,
                    decision: Decision::Refused("not allowed".into()),
                    bytes_up: 0,
                    bytes_down: 0,
                    started: t(3),
                    ended: t(3),
                    failure: None,
                },
                ConnectAttempt {
                    host: "registry.npmjs.org".into(),
                    port: 443,
                    decision: Decision::Allowed,
                    bytes_up: 100,
                    bytes_down: 2000,
                    started: t(4),
                    ended: t(6),
                    failure: None,
                },
            ],
        };
        let got = records(&seen, "r9");
        let brief: Vec<(String, &str, String, u16, DoorDecision)> = got
            .iter()
            .map(|r| {
                (
                    r.record_id.clone(),
                    r.door.as_str(),
                    r.host.clone(),
                    r.port,
                    r.decision,
                )
            })
            .collect();
        assert_eq!(
            brief,
            vec![
                (
                    "r9-c0".into(),
                    "model",
                    "capsid".into(),
                    0,
                    DoorDecision::Reached
                ),
                (
                    "r9-e0".into(),
                    "egress",
                    "example.com".into(),
                    443,
                    DoorDecision::Refused
                ),
                (
                    "r9-e1".into(),
                    "egress",
                    "registry.npmjs.org".into(),
                    443,
                    DoorDecision::Reached
                ),
                (
                    "r9-c1".into(),
                    "mcp",
                    "127.0.0.1".into(),
                    8787,
                    DoorDecision::Failed
                ),
            ]
        );
        assert_eq!(got[1].detail.as_deref(), Some("not allowed"));
        assert_eq!(got[3].detail.as_deref(), Some("connection refused"));
        assert_eq!((got[2].bytes_up, got[2].bytes_down), (100, 2000));
        for r in &got {
            assert_eq!(capsid_core::jobs::doors::check_door(r), Ok(()), "{r:?}");
        }
        assert_eq!(
            line(&got),
            "Boxed: 4 record(s) through its doors (egress reached registry.npmjs.org:443; egress refused example.com:443; mcp 1, model 1)."
        );
    }
}
