//! Budgets at the queue: a claim in a namespace whose month's spend reached its budget is
//! refused before the store is asked (spend only grows when a job finishes, so a claim
//! racing a finish is the one claim the budget lets through), and a finished job's cost
//! that brings the spend to 80% or 100% of the budget tells the owner once (the replay
//! cache keys each alert by namespace, month and share, so replicas, retries and
//! concurrent finishes send it once).

use super::JobsCx;
use crate::error::Result;
use crate::jobs::budget::{BudgetState, month_start, usd};
use crate::ports::Notification;
use crate::service::Area;

/// The replay-cache scope of budget alerts.
const ALERT_SCOPE: &str = "budget-alert";

impl JobsCx<'_> {
    /// `namespace`'s budget and spend this month; `None` when it is not registered.
    pub(crate) async fn budget_state(&self, namespace: &str) -> Result<Option<BudgetState>> {
        let now = self.now();
        let Some(found) = self
            .namespaces
            .namespace_budget(namespace, month_start(now))
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(BudgetState::new(
            namespace,
            now,
            found.budget_usd,
            self.config.default_monthly_budget_usd,
            found.spent_usd,
        )))
    }

    /// Why a claim in `namespace` is refused for its budget, when it is.
    pub(super) async fn budget_refusal(&self, namespace: &str) -> Result<Option<String>> {
        Ok(self
            .budget_state(namespace)
            .await?
            .and_then(|state| state.claim_refusal()))
    }

    /// After a job of `namespace` finished with a reported cost: each alert share the spend
    /// has reached, sent once a month (the replay cache decides, across replicas and
    /// concurrent finishes). A failure to send is the notifier's to log; nothing here undoes
    /// the finished job.
    pub(super) async fn budget_alerts(&self, namespace: &str) -> Result<()> {
        let Some(notifier) = self.notifier else {
            return Ok(());
        };
        let Some(state) = self.budget_state(namespace).await? else {
            return Ok(());
        };
        let now = self.now();
        for pct in state.reached() {
            let key = format!("{namespace}/{}/{pct}", state.month);
            if !self.settings.claim_nonce(ALERT_SCOPE, &key, now).await? {
                continue;
            }
            let budget = state.budget_usd.unwrap_or_default();
            notifier
                .notify(Notification {
                    event: format!("budget-{pct}"),
                    namespace: namespace.to_owned(),
                    job_id: None,
                    title: None,
                    agent: None,
                    question: None,
                    reason: format!(
                        "namespace '{namespace}' has spent {} of its {} monthly budget in {} (UTC): {pct}% reached{}",
                        usd(state.spent_usd),
                        usd(budget),
                        state.month,
                        if pct >= 100 {
                            "; no job there is claimed until the month ends or the budget is raised"
                        } else {
                            ""
                        }
                    ),
                    command: None,
                    link: Some("/console".to_owned()),
                    at: now.to_string(),
                })
                .await;
        }
        Ok(())
    }
}
