//! `improve_run` actions `roster` (the namespaces autonomy and the loop may touch, a setting
//! the admin edits, audited with the change in one transaction), `cadence` (a periodic task's
//! minutes, the same way) and `tick` (the periodic tasks on demand, answering the tick
//! report, audited).

use serde_json::json;

use super::{
    CadenceAnswer, ImproveCx, ImproveRunAnswer, RosterChanged, RosterListed, RosterOp, refuse,
};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::improve::keys::ROSTER_KEY;
use crate::improve::roster::Roster;
use crate::ports::{Expect, SettingChange};
use crate::schedule::Task;
use crate::service::{Area, require_namespace};
use crate::time::{DAY_MS, MINUTE_MS};

impl ImproveCx<'_> {
    pub(crate) async fn roster_action(
        &self,
        caller: &Caller,
        op: Option<RosterOp>,
        namespace: Option<&str>,
        dry: bool,
    ) -> Result<ImproveRunAnswer> {
        let name = "roster";
        let now = self.now();
        let stored = self.settings.setting(ROSTER_KEY, now).await?;
        let roster = Roster::from_setting(stored.as_deref());
        let op = op.unwrap_or(RosterOp::List);
        let op_name = match op {
            RosterOp::Add => "add",
            RosterOp::Remove => "remove",
            RosterOp::List => {
                return Ok(RosterListed {
                    ok: true,
                    action: name,
                    op: "list",
                    roster: roster.namespaces().to_vec(),
                    note: roster.unreadable,
                }
                .into());
            }
        };
        let Some(ns) = namespace else {
            return Ok(refuse(name, format!("roster {op_name} needs a namespace")));
        };
        let next = match op {
            RosterOp::Add => {
                require_namespace(self.namespaces, ns).await?;
                roster
                    .with(ns)
                    .map_err(|e| Error::Invalid(format!("improve_run: {e}")))?
            }
            _ => roster.without(ns),
        };
        if !dry {
            let audit = self.audit(
                caller,
                "improve-roster",
                Some(ns),
                None,
                json!({"op": op_name, "namespace": ns, "roster": next.namespaces()}),
            );
            let change = SettingChange {
                key: ROSTER_KEY.to_owned(),
                expected: Expect::Value(stored),
                value: Some(next.to_setting()),
                expires_at: None,
            };
            if !self.settings.change_settings(&[change], audit, now).await? {
                return Ok(refuse(
                    name,
                    "the roster changed while it was being edited; list it and try again",
                ));
            }
        }
        Ok(RosterChanged {
            ok: true,
            action: name,
            op: op_name,
            namespace: ns.to_owned(),
            roster: next.namespaces().to_vec(),
            dry_run: dry,
        }
        .into())
    }
}

impl ImproveCx<'_> {
    pub(crate) async fn cadence_action(
        &self,
        caller: &Caller,
        task: Option<&str>,
        value: Option<&str>,
        dry: bool,
    ) -> Result<ImproveRunAnswer> {
        let name = "cadence";
        let Some(task) = task else {
            return Ok(refuse(name, "cadence needs a task"));
        };
        let task = Task::parse(task).map_err(|e| Error::Invalid(format!("improve_run: {e}")))?;
        let now = self.now();
        let key = task.cadence_key();
        let answer = |minutes: i64, dry: bool| -> ImproveRunAnswer {
            CadenceAnswer {
                ok: true,
                action: name,
                task: task.name(),
                cadence_minutes: minutes,
                default_minutes: task.default_cadence_minutes(),
                floor_minutes: task.floor_minutes(),
                dry_run: dry,
            }
            .into()
        };
        let Some(value) = value else {
            let stored = self.settings.setting(&key, now).await?;
            return Ok(answer(
                task.cadence_ms(stored.as_deref()) / MINUTE_MS,
                false,
            ));
        };
        let most = 7 * DAY_MS / MINUTE_MS;
        let minutes = value
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|m| (task.floor_minutes()..=most).contains(m))
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "improve_run: value: {task}'s cadence is whole minutes from {} to {most} (got {value:?})",
                    task.floor_minutes()
                ))
            })?;
        if !dry {
            let audit = self.audit(
                caller,
                "improve-cadence",
                None,
                None,
                json!({"task": task.name(), "minutes": minutes}),
            );
            self.settings
                .change_settings(&[SettingChange::put(key, minutes.to_string())], audit, now)
                .await?;
        }
        Ok(answer(minutes, dry))
    }
}
