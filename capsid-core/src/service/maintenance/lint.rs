//! `lint`: gather (a read-only consolidation packet), finalize (archive what was consumed,
//! confirmed, one unit of work) and report (the truth report, stored as a dated document).

use super::MaintenanceCx;
use crate::service::{Area, require_confirmation};
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::caller::Caller;
use crate::docs::counts::{AuthoritativeCounts, authoritative_for, scan_count_claims};
use crate::docs::document::Document;
use crate::docs::links::{DanglingEdge, Edge};
use crate::docs::lint::{
    FINALIZE_AUDIT_ACTION, FinalizeOutcome, GatherInput, GatherPacket, LintError, LintMode,
    finalize_plan, gather_packet,
};
use crate::docs::packets::{LintRows, lint_packet};
use crate::docs::truth_report::{
    REPORT_AUDIT_ACTION, ReportOutcome, TruthInput, build_truth_report, render_truth_report,
    report_path, report_title,
};
use crate::docs::write::ConfirmationText;
use crate::error::{Error, Result};
use crate::ports::{DocumentWrite, StoreError, WriteGuard};
use crate::service::Confirmer;
use crate::service::args::{DocPathArg, NamespaceArg};
use crate::service::registry::REGISTRY;

/// `lint`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LintArgs {
    /// Namespace.
    pub namespace: NamespaceArg,
    /// gather (default, read-only), finalize or report.
    pub mode: Option<LintMode>,
    /// finalize: the episodic/source paths that were compiled (at most 20).
    pub consumed: Option<Vec<DocPathArg>>,
    /// finalize: confirm the archive.
    pub confirm: Option<bool>,
}
impl crate::service::args::ScopeArgs for LintArgs {
    fn namespace(&self) -> Option<&str> {
        Some(self.namespace.as_str())
    }
    fn action(&self) -> Option<&str> {
        self.mode.map(LintMode::as_str)
    }
}

/// Security headers Capsid enforces on its HTML pages, and those it ships report-only:
/// the artifact's own numbers that prose in the `capsid` namespace is checked against.
const HTML_ENFORCED_HEADERS: usize = 6;
const HTML_REPORT_ONLY_HEADERS: usize = 0;

fn artifact_counts() -> AuthoritativeCounts {
    AuthoritativeCounts {
        tools: REGISTRY.len(),
        live_gates: 0,
        html_enforced_headers: HTML_ENFORCED_HEADERS,
        html_report_only_headers: HTML_REPORT_ONLY_HEADERS,
    }
}

fn edge(t: &(String, String, String, String, String)) -> Edge {
    Edge {
        link_type: t.0.clone(),
        from_ns: t.1.clone(),
        from_path: t.2.clone(),
        to_ns: t.3.clone(),
        to_path: t.4.clone(),
    }
}

/// Dangling edges as lint reports them, with which end is missing.
fn dangling(rows: &LintRows, known: &(dyn Fn(&str, &str) -> bool + Sync)) -> Vec<DanglingEdge> {
    rows.dangling_edges
        .iter()
        .map(|t| DanglingEdge {
            edge: edge(t),
            source_missing: !known(&t.1, &t.2),
            target_missing: !known(&t.3, &t.4),
        })
        .collect()
}

fn standing(rows: &LintRows) -> Vec<Document> {
    rows.core
        .iter()
        .chain(&rows.wiki)
        .chain(&rows.unconsolidated)
        .chain(&rows.others)
        .cloned()
        .collect()
}

/// The `lint` answer, one per mode.
#[derive(Debug, serde::Serialize, JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // built once per call, then serialized
pub enum LintAnswer {
    /// `gather`: the packet to consolidate from.
    Gathered(GatherPacket),
    /// `finalize`: what was archived.
    Finalized(FinalizeOutcome),
    /// `report`: the truth report, as stored.
    Reported(ReportOutcome),
}

impl MaintenanceCx<'_> {
    pub(crate) async fn lint(
        &self,
        caller: &Caller,
        a: LintArgs,
        confirmer: &dyn Confirmer,
    ) -> Result<LintAnswer> {
        let mode = a.mode.unwrap_or(LintMode::Gather);
        let ns = a.namespace.as_str();
        match mode {
            LintMode::Gather => Ok(LintAnswer::Gathered(
                self.lint_gather(caller, ns, confirmer).await?,
            )),
            LintMode::Finalize => Ok(LintAnswer::Finalized(
                self.lint_finalize(
                    caller,
                    ns,
                    a.consumed.unwrap_or_default(),
                    a.confirm,
                    confirmer,
                )
                .await?,
            )),
            LintMode::Report => Ok(LintAnswer::Reported(self.lint_report(caller, ns).await?)),
        }
    }

    async fn lint_gather(
        &self,
        caller: &Caller,
        ns: &str,
        client: &dyn Confirmer,
    ) -> Result<GatherPacket> {
        const STAGES: u64 = 2;
        let stop = |at: &str| {
            client.cancelled().then(|| {
                Error::Cancelled(format!("lint: gather of {ns} cancelled by the client {at}"))
            })
        };
        client
            .progress(0, Some(STAGES), &format!("reading {ns}'s documents"))
            .await;
        let rows = LintRows::from_packet(self.docs.read_packet(&lint_packet(ns)).await?);
        if let Some(cancelled) = stop("after reading its documents") {
            return Err(cancelled);
        }
        client
            .progress(1, Some(STAGES), "resolving links that leave the namespace")
            .await;
        let docs = standing(&rows);
        let present = |n: &str, p: &str| docs.iter().any(|d| d.namespace == n && d.path == p);
        let authoritative = authoritative_for(ns, artifact_counts());
        let packet = gather_packet(GatherInput {
            namespace: ns.to_owned(),
            core: rows.core.clone(),
            wiki: rows.wiki.clone(),
            unconsolidated: rows.unconsolidated.clone(),
            rules: rows.rules.clone(),
            dangling_edges: self.resolve_dangling(caller, ns, &rows, &present).await,
            authoritative_counts: authoritative,
            count_claims: scan_count_claims(&docs, authoritative.as_ref()),
        });
        if let Some(cancelled) = stop("after resolving its links") {
            return Err(cancelled);
        }
        client.progress(STAGES, Some(STAGES), "packet ready").await;
        Ok(packet)
    }

    /// Dangling edges with their missing ends decided: an end in this namespace is judged from
    /// the rows read; an end elsewhere is looked up, unless it lies outside the caller's
    /// namespaces: whether a document exists there is not the caller's to learn, so such an
    /// end is taken as present (never reported either way).
    async fn resolve_dangling(
        &self,
        caller: &Caller,
        ns: &str,
        rows: &LintRows,
        local: &(dyn Fn(&str, &str) -> bool + Sync),
    ) -> Vec<DanglingEdge> {
        let hidden = |n: &str| !caller.scopes.namespaces.allows(n);
        let mut foreign: Vec<(String, String)> = Vec::new();
        for t in &rows.dangling_edges {
            for (n, p) in [(&t.1, &t.2), (&t.3, &t.4)] {
                if n != ns && !hidden(n) && !foreign.iter().any(|(a, b)| a == n && b == p) {
                    foreign.push((n.clone(), p.clone()));
                }
            }
        }
        let exists = self
            .docs
            .documents_exist(&foreign)
            .await
            .unwrap_or_else(|_| vec![false; foreign.len()]);
        let found: BTreeMap<(String, String), bool> = foreign.into_iter().zip(exists).collect();
        let known = |n: &str, p: &str| {
            local(n, p)
                || (n != ns && hidden(n))
                || found
                    .get(&(n.to_owned(), p.to_owned()))
                    .copied()
                    .unwrap_or(false)
        };
        dangling(rows, &known)
    }

    async fn lint_finalize(
        &self,
        caller: &Caller,
        ns: &str,
        consumed: Vec<DocPathArg>,
        confirm: Option<bool>,
        confirmer: &dyn Confirmer,
    ) -> Result<FinalizeOutcome> {
        let paths: Vec<String> = consumed.into_iter().map(|p| p.0.into_string()).collect();
        let mut types = BTreeMap::new();
        for p in &paths {
            if let Some(d) = self.docs.document(ns, p).await? {
                types.insert(p.clone(), d.doc_type);
            }
        }
        let moves = finalize_plan(ns, &paths, |p| types.get(p).cloned()).map_err(|e| match e {
            LintError::Aborted(_) => Error::Conflict(e.to_string()),
            other => Error::Invalid(other.to_string()),
        })?;
        let n = moves.len();
        require_confirmation(
            confirm,
            confirmer,
            ConfirmationText {
                prompt: format!("Archive {n} document(s) in {ns} by moving them under archive/?"),
                declined: format!("finalize of {ns} declined"),
                unsupported: format!(
                    "confirmation required: re-run lint finalize with confirm: true to archive {n} document(s) in {ns}."
                ),
            },
        )
        .await?;
        let outcome = FinalizeOutcome::new(ns, moves);
        let pairs: Vec<(String, String)> = outcome
            .archived
            .iter()
            .map(|m| (m.from.clone(), m.to.clone()))
            .collect();
        let audit = self.audit(
            caller,
            FINALIZE_AUDIT_ACTION,
            Some(ns),
            None,
            outcome.audit_params(),
        );
        self.docs
            .archive_documents(ns, &pairs, self.now(), audit)
            .await
            .map_err(|e| match e {
                StoreError::Conflict(m) | StoreError::NotFound(m) => {
                    Error::Conflict(format!("finalize aborted, nothing archived: {m}"))
                }
                other => other.into(),
            })?;
        Ok(outcome)
    }

    async fn lint_report(&self, caller: &Caller, ns: &str) -> Result<ReportOutcome> {
        let now = self.now();
        let rows = LintRows::from_packet(self.docs.read_packet(&lint_packet(ns)).await?);
        let standing_docs = standing(&rows);
        let mut docs = standing_docs.clone();
        docs.extend(rows.archived.iter().cloned());
        let present = |n: &str, p: &str| docs.iter().any(|d| d.namespace == n && d.path == p);
        let authoritative = authoritative_for(ns, artifact_counts());
        let namespaces = self
            .namespaces
            .namespaces()
            .await?
            .into_iter()
            .map(|n| n.namespace)
            .collect();
        let input = TruthInput {
            namespace: ns.to_owned(),
            now,
            dangling_edges: self.resolve_dangling(caller, ns, &rows, &present).await,
            edges: rows.edges.iter().map(edge).collect(),
            count_claims: scan_count_claims(&standing_docs, authoritative.as_ref()),
            docs,
            // The primary repository's tree; `None` (not checked) when it cannot be read.
            repo_paths: self.repo.primary_repo_paths(caller, ns).await,
            namespaces,
        };
        let report = build_truth_report(&input);
        let path = report_path(now);
        let write = DocumentWrite {
            namespace: ns.to_owned(),
            path: path.clone(),
            title: Some(report_title(ns, now)),
            body: Some(render_truth_report(&report)),
            doc_type: Some(crate::docs::truth_report::REPORT_TYPE.as_str().to_owned()),
            status: Some(crate::docs::truth_report::REPORT_STATUS.as_str().to_owned()),
            tags: None,
            links: None,
            at: now,
        };
        let audit = self.audit(
            caller,
            REPORT_AUDIT_ACTION,
            Some(ns),
            Some(&path),
            report.audit_params(),
        );
        self.docs
            .write_document(write, WriteGuard::Upsert, vec![audit])
            .await?;
        Ok(ReportOutcome::new(report, &path))
    }
}

mod registered {
    //! `lint` as the registry serves it.
    use super::*;
    use crate::service::Areas;
    use crate::service::registry::{Tool, ToolFuture};
    use crate::tools::{Confirmation, Requirement, Rule, ToolGroup::Maintenance, ToolSpec, action};

    /// `lint`.
    #[derive(Debug)]
    pub struct Lint;
    impl Tool for Lint {
        type Args = LintArgs;
        type Answer = LintAnswer;
        const SPEC: ToolSpec = ToolSpec::new(
            "lint",
            Maintenance,
            Requirement::PerAction {
                default: "gather",
                actions: &[
                    action("gather", Rule::read()),
                    action("finalize", Rule::write()),
                    action("report", Rule::write()),
                ],
            },
            "Consolidation loop: mode gather (read-only packet), finalize (archive consumed episodic/source docs, needs confirm) or report (truth report).",
        )
    .open_world()
        .confirmed(Confirmation::ForActions(&["finalize"]))
        .destructive()
        .titled("Lint and consolidate a namespace");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: LintArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.maintenance().lint(c, a, k).await })
        }
    }
}
pub use registered::Lint;
