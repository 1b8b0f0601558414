//! What `improve_status` (and so the console, which renders that report) says about autonomy:
//! the roster, the auto-merge and gate policies' state as they would load now, the last
//! auto-merge tick's time and counts, the PRs awaiting the seat, the watcher's last findings,
//! and each periodic task's cadence and last run.

use serde_json::{Value, json};

use super::merge::{LAST_TICK_KEY, last_tick};
use super::watcher::{WATCHER_LAST_KEY, last_pass};
use super::{gate_policy_state, load_auto_merge_policy};
use crate::autonomy::auto_merge::audit::awaiting_from_setting;
use crate::error::Result;
use crate::improve::keys::AWAITING_SEAT_KEY;
use crate::schedule::Task;
use crate::scope::Axis;
use crate::service::Area;
use crate::service::improve::ImproveCx;
use crate::service::to_json;

impl ImproveCx<'_> {
    /// The `autonomy` block of `improve_status`, as seen from `seen_from` (the caller's
    /// namespaces axis): a narrowed caller sees only its own namespaces in the roster, the
    /// policy and the pull requests awaiting the seat, and none of the notes and findings,
    /// which are free text about every namespace.
    pub(crate) async fn autonomy_status(&self, seen_from: &Axis) -> Result<Value> {
        let now = self.now();
        let roster = super::read_roster(self.settings, now).await?;
        let (policy, _) =
            load_auto_merge_policy(self.docs, self.audit_log, self.settings, self.config, now)
                .await?;
        let gates = gate_policy_state(self.docs, self.audit_log, self.config).await?;
        let last = last_tick(self.settings.setting(LAST_TICK_KEY, now).await?.as_deref());
        let awaiting = awaiting_from_setting(
            self.settings
                .setting(AWAITING_SEAT_KEY, now)
                .await?
                .as_deref(),
        );
        let awaiting: Vec<_> = awaiting
            .into_iter()
            .filter(|a| seen_from.allows(&a.namespace))
            .collect();
        let watcher = last_pass(
            self.settings
                .setting(WATCHER_LAST_KEY, now)
                .await?
                .as_deref(),
        );
        let mut tasks = Vec::new();
        for task in Task::ALL {
            let cadence = self.settings.setting(&task.cadence_key(), now).await?;
            let last_run = self.settings.setting(&task.last_run_key(), now).await?;
            tasks.push(json!({
                "task": task.name(),
                "cadence_minutes": task.cadence_ms(cadence.as_deref()) / crate::time::MINUTE_MS,
                "last_run": last_run,
            }));
        }
        let mut policy = to_json(&policy)?;
        if let Some(names) = policy["namespaces"].as_array_mut() {
            names.retain(|n| n.as_str().is_some_and(|n| seen_from.allows(n)));
        }
        let roster_note = roster.unreadable.clone();
        let roster: Vec<&str> = roster
            .namespaces()
            .iter()
            .map(String::as_str)
            .filter(|n| seen_from.allows(n))
            .collect();
        let mut out = json!({
            "roster": roster,
            "roster_note": roster_note,
            "auto_merge": {
                "policy": policy,
                "last_tick": last.as_ref().map(|t| json!({
                    "at": t["at"], "evaluated": t["evaluated"], "merged": t["merged"],
                    "declined": t["declined"], "unchanged": t["unchanged"], "notes": t["notes"],
                })),
            },
            "gates": {"policy": to_json(&gates)?},
            "awaiting_seat": to_json(&awaiting)?,
            "watcher": watcher.as_ref().map(|w| json!({
                "at": w["at"], "findings": w["findings"], "posted": w["posted"],
                "cleared": w["cleared"], "notes": w["notes"],
            })),
            "tasks": tasks,
        });
        if !seen_from.is_all() {
            out["auto_merge"]["policy"]["note"] = Value::Null;
            if out["auto_merge"]["last_tick"].is_object() {
                out["auto_merge"]["last_tick"]["notes"] = json!([]);
            }
            out["watcher"] = Value::Null;
            out["roster_note"] = Value::Null;
            out["hidden"] = json!(
                "this caller's namespaces are narrowed: the tick's notes and the watcher's findings, which name every namespace, are shown to callers whose namespaces are * only"
            );
        }
        Ok(out)
    }
}
