//! The agent inventory `improve_status` and the console show: every agent seen from the
//! caller's namespaces, with its measured record (reference 6.8).

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::ImproveCx;
use crate::caller::AgentKind;
use crate::error::Result;
use crate::jobs::record::{
    AgentRecord, ClaimedJobCount, NamespaceRuns, agent_record, attempt_sums,
};
use crate::scope::{Axis, AxisView, Scopes};
use crate::service::to_json;
use crate::time::Timestamp;

/// One agent as the inventory shows it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentSeen {
    /// Its name.
    pub name: String,
    /// What it is for.
    #[schemars(schema_with = "crate::schema::agent_kind")]
    pub kind: AgentKind,
    /// Its namespaces: `*`, or those the caller shares with it.
    pub namespaces: AxisView,
    /// When it was revoked, if it was.
    pub revoked_at: Option<Timestamp>,
    /// Its last authenticated call.
    pub last_seen: Option<Timestamp>,
    /// Its measured record.
    pub record: AgentRecord,
}

impl ImproveCx<'_> {
    /// Every agent whose namespaces overlap `seen_from` (the caller's namespace axis: all of
    /// them for the admin), with its measured record (reference 6.8; SPEC 8 keeps a narrowed
    /// caller's view of the inventory within its own scope).
    pub(crate) async fn agent_inventory(&self, seen_from: &Axis) -> Result<Vec<Value>> {
        self.agents_seen(seen_from)
            .await?
            .into_iter()
            .map(to_json)
            .collect()
    }

    /// The inventory as [`AgentSeen`]s (see [`ImproveCx::agent_inventory`]).
    pub(crate) async fn agents_seen(&self, seen_from: &Axis) -> Result<Vec<AgentSeen>> {
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
                (Axis::Only(mine), Axis::Only(theirs)) => AxisView::Only(
                    theirs
                        .iter()
                        .filter(|n| mine.contains(n))
                        .cloned()
                        .collect(),
                ),
                _ => scopes.view().namespaces,
            };
            out.push(AgentSeen {
                name: row.name,
                kind: row.kind,
                namespaces,
                revoked_at: row.revoked_at,
                last_seen: row.last_seen,
                record,
            });
        }
        Ok(out)
    }
}
