//! `improve_run` action `pin` (admin only): pins the Anchors checksum of a registered
//! namespace's `improve/scores.md` at `improve:anchor:<ns>` (the key the score path checks),
//! keyed on the pin it replaces and audited in the same transaction; and the per-namespace
//! loop state `improve_status` reports (the pin against the document, the roster, the best
//! record, the last run and the lifetime counts).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::score::SCORES_PATH;
use super::{ImproveCx, ImproveRunAnswer, PinRefused, Pinned, refuse};
use crate::caller::Caller;
use crate::error::Result;
use crate::improve::judging::BestRecord;
use crate::improve::keys::{ROSTER_KEY, anchor_key, best_key};
use crate::improve::pin::{PinState, pin_state, plan_pin};
use crate::improve::roster::Roster;
use crate::ports::{Expect, ImproveRunTotals, SettingChange};
use crate::service::{Area, require_namespace};
use crate::time::Timestamp;

impl ImproveCx<'_> {
    pub(crate) async fn pin_action(
        &self,
        caller: &Caller,
        namespace: Option<&str>,
        dry: bool,
    ) -> Result<ImproveRunAnswer> {
        let name = "pin";
        let Some(ns) = namespace else {
            return Ok(refuse(name, "pin needs a namespace"));
        };
        require_namespace(self.namespaces, ns).await?;
        let now = self.now();
        let body = self
            .docs
            .document(ns, SCORES_PATH)
            .await?
            .and_then(|d| d.body);
        let key = anchor_key(ns);
        let stored = self.settings.setting(&key, now).await?;
        let pin = match plan_pin(ns, body.as_deref(), stored.as_deref()) {
            Ok(pin) => pin,
            Err(refusal) => {
                return Ok(PinRefused {
                    ok: false,
                    action: name,
                    namespace: ns.to_owned(),
                    refusal: refusal.to_string(),
                    problems: refusal.problems(),
                }
                .into());
            }
        };
        let on_roster = self.on_roster(ns, now).await?;
        if !dry {
            let audit = self.audit(
                caller,
                "improve-pin",
                Some(ns),
                Some(SCORES_PATH),
                json!({"checksum": pin.checksum, "previous": pin.previous, "anchors": pin.anchors}),
            );
            let change = SettingChange {
                key,
                expected: Expect::Value(stored),
                value: Some(pin.checksum.clone()),
                expires_at: None,
            };
            if !self.settings.change_settings(&[change], audit, now).await? {
                return Ok(refuse(
                    name,
                    format!("the pin of {ns} changed while it was being pinned; try again"),
                ));
            }
        }
        Ok(Pinned {
            ok: true,
            action: name,
            namespace: ns.to_owned(),
            unchanged: pin.unchanged(),
            checksum: pin.checksum,
            previous: pin.previous,
            anchors: pin.anchors,
            on_roster,
            dry_run: dry,
            note: (!on_roster).then(|| format!("{ns} is not on the roster: the pin is stored, and the loop runs for {ns} only once it is added (capsid improve roster add {ns})")),
        }
        .into())
    }

    async fn on_roster(&self, ns: &str, now: Timestamp) -> Result<bool> {
        let stored = self.settings.setting(ROSTER_KEY, now).await?;
        Ok(Roster::from_setting(stored.as_deref()).contains(ns))
    }

    /// The loop's part of a namespace's status: `pinned`, `on_roster`, `best`, `last_run` and
    /// `lifetime` (from `totals`, every namespace's sums over all runs).
    pub(crate) async fn loop_state(
        &self,
        ns: &str,
        now: Timestamp,
        totals: &[ImproveRunTotals],
    ) -> Result<LoopState> {
        let scores = self
            .docs
            .document(ns, SCORES_PATH)
            .await?
            .and_then(|d| d.body);
        let stored = self.settings.setting(&anchor_key(ns), now).await?;
        let pinned = pin_state(scores.as_deref(), stored.as_deref());
        let best =
            BestRecord::from_setting(self.settings.setting(&best_key(ns), now).await?.as_deref());
        let last_run = self
            .runs
            .runs(Some(ns), 1)
            .await?
            .into_iter()
            .next()
            .map(|r| RunSeen {
                id: r.id,
                status: r.status.as_str(),
                started: r.started.to_string(),
                finished: r.finished.map(|f| f.to_string()),
                condition: r.condition,
                attempts: r.tally.attempts,
                kept: r.tally.kept,
                reverted: r.tally.reverts,
                note: r.note,
            });
        let lifetime = totals
            .iter()
            .find(|t| t.namespace == ns)
            .cloned()
            .unwrap_or_default();
        Ok(LoopState {
            pinned,
            on_roster: self.on_roster(ns, now).await?,
            best,
            last_run,
            lifetime: Lifetime {
                runs: lifetime.runs,
                attempts: lifetime.attempts,
                kept: lifetime.kept,
                reverted: lifetime.reverts,
                cost_usd: lifetime.cost_usd + 0.0,
                ci_minutes: lifetime.ci_minutes + 0.0,
            },
        })
    }
}

/// The loop's part of a namespace's status.
pub(crate) struct LoopState {
    pub(crate) pinned: PinState,
    pub(crate) on_roster: bool,
    pub(crate) best: Option<BestRecord>,
    pub(crate) last_run: Option<RunSeen>,
    pub(crate) lifetime: Lifetime,
}

/// A namespace's newest run, as `improve_status` shows it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunSeen {
    /// Its id.
    pub id: String,
    /// Its status.
    pub status: &'static str,
    /// When it started.
    pub started: String,
    /// When it reached a terminal status, if it did.
    pub finished: Option<String>,
    /// The condition it ran under.
    pub condition: String,
    /// Attempts.
    pub attempts: u32,
    /// Attempts kept.
    pub kept: u32,
    /// Attempts reverted.
    pub reverted: u32,
    /// Why it finished, if it did.
    pub note: Option<String>,
}

/// A namespace's sums over all its runs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Lifetime {
    /// Runs.
    pub runs: u64,
    /// Attempts.
    pub attempts: u64,
    /// Attempts kept.
    pub kept: u64,
    /// Attempts reverted.
    pub reverted: u64,
    /// Estimated model spend over all its runs, in US dollars.
    pub cost_usd: f64,
    /// GitHub Actions minutes over all its runs.
    pub ci_minutes: f64,
}
