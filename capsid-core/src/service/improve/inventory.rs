//! The agent inventory `improve_status` and the console show: every agent seen from the
//! caller's namespaces, with its measured record (reference 6.8).

use serde_json::{Value, json};

use super::ImproveCx;
use crate::caller::AgentKind;
use crate::error::Result;
use crate::jobs::record::{ClaimedJobCount, NamespaceRuns, agent_record, attempt_sums};
use crate::scope::{Axis, Scopes};
use crate::service::to_json;

impl ImproveCx<'_> {
    /// Every agent whose namespaces overlap `seen_from` (the caller's namespace axis: all of
    /// them for the admin), with its measured record (reference 6.8; SPEC 8 keeps a narrowed
    /// caller's view of the inventory within its own scope).
    pub(crate) async fn agent_inventory(&self, seen_from: &Axis) -> Result<Vec<Value>> {
        let agents = self.agents.agents().await?;
        let outcomes = self.jobs.outcomes(None).await?;
        let counts: Vec<ClaimedJobCount> = self
            .jobs
            .job_status_counts()
            .await?
            .into_iter()
            .map(|c| ClaimedJobCount {
                claimed_by: c.claimed_by,
                status: c.status,
                n: i64::try_from(c.count).unwrap_or(i64::MAX),
            })
            .collect();
        let runs: Vec<NamespaceRuns> = self
            .improve
            .run_totals(None)
            .await?
            .into_iter()
            .map(|t| NamespaceRuns {
                namespace: t.namespace,
                kept: t.kept as i64,
                reverts: t.reverts as i64,
            })
            .collect();
        let mut out = Vec::with_capacity(agents.len());
        for row in agents {
            let scopes = Scopes::parse(Some(&row.scopes));
            if !seen_from.overlaps(&scopes.namespaces) {
                continue;
            }
            let actor = format!("agent:{}", row.name);
            let attempts =
                (row.kind == AgentKind::Driver).then(|| attempt_sums(&runs, &scopes.namespaces));
            let record = agent_record(&actor, &outcomes, &counts, attempts);
            // A narrowed caller sees of another agent's namespaces only those it shares.
            let namespaces = match (seen_from, &scopes.namespaces) {
                (Axis::Only(mine), Axis::Only(theirs)) => {
                    json!(
                        theirs
                            .iter()
                            .filter(|n| mine.contains(n))
                            .collect::<Vec<_>>()
                    )
                }
                _ => scopes.to_json()["namespaces"].clone(),
            };
            out.push(json!({
                "name": row.name, "kind": row.kind, "namespaces": namespaces,
                "revoked_at": row.revoked_at, "last_seen": row.last_seen, "record": to_json(&record)?,
            }));
        }
        Ok(out)
    }
}
