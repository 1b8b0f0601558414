//! The console's checkmarks panel (the sister design's Phase 3, inside the one page): every
//! namespace's agents with their checkmarks and age, the log of one selected agent in pages,
//! the global feed and the shared context. Each part is read through the tool it stands for
//! (`namespaces`, `checkmarks`, `shared`) as the signed-in owner.

use serde_json::{Value, json};

use super::OwnerService;
use super::console::require_owner;
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::service::NoConfirmer;
use crate::time::{MINUTE_MS, Timestamp};

/// Log entries per page in the console.
pub const CONSOLE_LOG_ROWS: u32 = 10;
/// Feed entries the console shows.
pub const CONSOLE_FEED_ROWS: u32 = 20;

/// The agent whose log the console shows, and the page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogSelection {
    /// Its namespace.
    pub namespace: String,
    /// The agent.
    pub agent: String,
    /// The page's cursor (none: the newest page).
    pub cursor: Option<String>,
}

impl OwnerService {
    async fn read(&self, caller: &Caller, tool: &str, args: Value) -> Result<Value> {
        self.tools.call_tool(caller, tool, args, &NoConfirmer).await
    }

    /// The checkmarks panel's object (the `checkmarks` key of `/console.json`).
    pub async fn console_checkmarks(
        &self,
        caller: &Caller,
        selection: Option<&LogSelection>,
    ) -> Result<Value> {
        require_owner(caller)?;
        let now = self.now();
        let mut namespaces = Vec::new();
        let listed = self.read(caller, "namespaces", json!({})).await?;
        for ns in listed.as_array().into_iter().flatten() {
            let Some(name) = ns["namespace"].as_str() else {
                continue;
            };
            let list = self
                .read(
                    caller,
                    "checkmarks",
                    json!({"action": "list", "namespace": name}),
                )
                .await?;
            let agents: Vec<Value> = list["agents"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| with_age(c, now))
                .collect();
            namespaces.push(json!({
                "namespace": name,
                "agents": agents,
                "truncated": list["truncated"],
            }));
        }
        let log = match selection {
            None => Value::Null,
            Some(sel) => {
                let mut args = json!({"action": "log", "namespace": sel.namespace,
                                      "agent": sel.agent, "limit": CONSOLE_LOG_ROWS});
                if let Some(c) = &sel.cursor {
                    args["cursor"] = json!(c);
                }
                match self.read(caller, "checkmarks", args).await {
                    Ok(page) => page,
                    // A stale link or a bad cursor shows as a note on the page, not a failure.
                    Err(e @ (Error::Invalid(_) | Error::NotFound(_))) => json!({
                        "namespace": sel.namespace, "agent": sel.agent, "error": e.to_string(),
                    }),
                    Err(e) => return Err(e),
                }
            }
        };
        let feed = self
            .read(
                caller,
                "checkmarks",
                json!({"action": "feed", "limit": CONSOLE_FEED_ROWS}),
            )
            .await?;
        let shared = self
            .read(caller, "shared", json!({"action": "list"}))
            .await?;
        Ok(json!({
            "namespaces": namespaces,
            "log": log,
            "feed": feed,
            "shared": shared,
        }))
    }
}

/// A checkmark with its age in whole minutes (from its checkpoint to now).
fn with_age(checkmark: &Value, now: Timestamp) -> Value {
    let mut out = checkmark.clone();
    let age = checkmark["checkpoint_at"]
        .as_str()
        .and_then(Timestamp::parse)
        .map(|at| now.millis_since(at).max(0) / MINUTE_MS);
    out["age_minutes"] = json!(age);
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::owner::ConsoleAction;

    fn form(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn an_answer_keeps_its_lines_and_leaves_its_text_out_of_the_audit_row() {
        let a = ConsoleAction::from_form(&form(&[
            ("action", "answer"),
            ("namespace", "alpha"),
            ("agent", "d1"),
            ("answer", "  use Postgres\r\nand keep SQLite for tests  "),
            ("resume", "yes"),
        ]))
        .unwrap();
        assert_eq!(
            a,
            ConsoleAction::Answer {
                namespace: "alpha".into(),
                agent: "d1".into(),
                answer: "use Postgres\nand keep SQLite for tests".into(),
                resume: true,
            }
        );
        let again: BTreeMap<String, String> = a
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(ConsoleAction::from_form(&again).unwrap(), a);
        assert!(a.effect().contains("resumed"), "{}", a.effect());
        let params = a.audit_params();
        assert_eq!(params["answer_chars"], 38);
        assert!(params.get("answer").is_none(), "{params}");
        assert_eq!(params["resume"], "yes");
        for bad in [
            vec![
                ("action", "answer"),
                ("namespace", "alpha"),
                ("agent", "d1"),
            ],
            vec![
                ("action", "answer"),
                ("namespace", "alpha"),
                ("agent", "d1"),
                ("answer", "a\u{7}b"),
            ],
            vec![("action", "answer"), ("agent", "d1"), ("answer", "x")],
        ] {
            assert!(ConsoleAction::from_form(&form(&bad)).is_err(), "{bad:?}");
        }
        let long = "a".repeat(crate::checkmarks::ANSWER_MAX + 1);
        assert!(
            ConsoleAction::from_form(&form(&[
                ("action", "answer"),
                ("namespace", "alpha"),
                ("agent", "d1"),
                ("answer", &long)
            ]))
            .is_err()
        );
        let plain = ConsoleAction::from_form(&form(&[
            ("action", "answer"),
            ("namespace", "alpha"),
            ("agent", "d1"),
            ("answer", "no"),
        ]))
        .unwrap();
        assert!(matches!(plain, ConsoleAction::Answer { resume: false, .. }));
    }

    #[test]
    fn a_promotion_names_its_entry_and_refuses_an_id_that_is_not_one() {
        let a = ConsoleAction::from_form(&form(&[
            ("action", "promote"),
            ("namespace", "alpha"),
            ("entry_id", " 12 "),
        ]))
        .unwrap();
        assert_eq!(
            a,
            ConsoleAction::Promote {
                namespace: "alpha".into(),
                entry_id: 12
            }
        );
        let again: BTreeMap<String, String> = a
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(ConsoleAction::from_form(&again).unwrap(), a);
        assert!(
            a.effect().contains("log entry 12 of alpha"),
            "{}",
            a.effect()
        );
        assert_eq!(a.audit_params()["entry_id"], "12");
        for bad in ["0", "-3", "x", "1.5", ""] {
            let err = ConsoleAction::from_form(&form(&[
                ("action", "promote"),
                ("namespace", "alpha"),
                ("entry_id", bad),
            ]))
            .unwrap_err();
            assert!(err.to_string().contains("entry_id"), "{bad:?}: {err}");
        }
        let err = ConsoleAction::from_form(&form(&[("action", "promote"), ("entry_id", "3")]))
            .unwrap_err();
        assert!(err.to_string().contains("namespace"), "{err}");
    }

    #[test]
    fn ages_are_whole_minutes_and_never_negative() {
        let now = Timestamp::parse("2026-03-01T10:00:00.000Z").unwrap();
        let c = json!({"checkpoint_at": "2026-03-01T09:17:30.000Z"});
        assert_eq!(with_age(&c, now)["age_minutes"], 42);
        let future = json!({"checkpoint_at": "2026-03-01T11:00:00.000Z"});
        assert_eq!(with_age(&future, now)["age_minutes"], 0);
        assert_eq!(with_age(&json!({}), now)["age_minutes"], Value::Null);
    }
}
