//! `brief` (reference 2.1): the one-call session start, assembled from documents the
//! service has already read, and held under [`BRIEF_BUDGET`] body characters by stubbing
//! the most re-readable sections first.

use serde::Serialize;

use super::document::Document;
use super::links::{IncomingLink, OutgoingLink};
use super::{is_archived, newest_first};
use crate::paths::js_len;
use crate::time::Timestamp;

/// Body characters (UTF-16 units) a brief aims to stay under.
pub const BRIEF_BUDGET: usize = 40_000;
/// How many recent episodics a brief carries.
pub const BRIEF_EPISODICS: usize = 3;
/// Where the shared conventions live (namespace [`super::CAPSID_NAMESPACE`]).
pub const CONVENTIONS_PATH: &str = "conventions.md";
/// Where the shared repo layout lives (namespace [`super::CAPSID_NAMESPACE`]).
pub const REPO_STRUCTURE_PATH: &str = "repo-structure.md";
/// The namespace's core document.
pub const CORE_PATH: &str = "core.md";

/// A document as read for the brief, with the actor of its newest audit row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefSource {
    /// The stored row.
    pub document: Document,
    /// Who wrote it last (newest audit row), if anyone.
    pub last_actor: Option<String>,
}

/// What the service read for a brief of `namespace`.
#[derive(Debug, Clone, Default)]
pub struct BriefInput {
    /// The namespace being briefed.
    pub namespace: String,
    /// `capsid/conventions.md`.
    pub conventions: Option<BriefSource>,
    /// `capsid/repo-structure.md`.
    pub repo_structure: Option<BriefSource>,
    /// `<namespace>/core.md`.
    pub core: Option<BriefSource>,
    /// The namespace's task documents; those closed or archived are dropped here.
    pub tasks: Vec<BriefSource>,
    /// The namespace's episodic documents; archived ones are dropped, the newest three kept.
    pub episodics: Vec<BriefSource>,
    /// Edges declared on `core.md`.
    pub core_outgoing: Vec<OutgoingLink>,
    /// Edges pointing at `core.md`.
    pub core_incoming: Vec<IncomingLink>,
}

/// A document in the brief: the Worker's projection (namespace, path, title, type, body,
/// updated_at) plus `last_actor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct BriefDoc {
    /// Namespace name.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// Title.
    pub title: Option<String>,
    /// Document type.
    #[serde(rename = "type")]
    pub doc_type: String,
    /// Body.
    pub body: Option<String>,
    /// Last write time.
    pub updated_at: Timestamp,
    /// Who wrote it last.
    pub last_actor: Option<String>,
}

/// A document whose body was trimmed for size: metadata and a pointer to read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct BriefStub {
    /// Namespace name.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// Title.
    pub title: Option<String>,
    /// Last write time.
    pub updated_at: Timestamp,
    /// Who wrote it last.
    pub last_actor: Option<String>,
    /// `(trimmed for size: read <ns>/<path>)`.
    pub body: String,
}

/// A task or episodic entry: whole, or stubbed when the brief was over budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum BriefEntry {
    /// The whole document.
    Full(BriefDoc),
    /// Its metadata only.
    Stub(BriefStub),
}

/// The edges touching `core.md`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CoreLinks {
    /// Declared on `core.md`.
    pub outgoing: Vec<OutgoingLink>,
    /// Pointing at `core.md`.
    pub incoming: Vec<IncomingLink>,
}

/// The `brief` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Brief {
    /// The namespace briefed.
    pub namespace: String,
    /// `capsid/conventions.md`, or null.
    pub conventions: Option<BriefDoc>,
    /// `capsid/repo-structure.md`, or null.
    pub repo_structure: Option<BriefDoc>,
    /// `<ns>/core.md`, or null.
    pub core: Option<BriefDoc>,
    /// Open tasks, newest update first.
    pub open_tasks: Vec<BriefEntry>,
    /// The newest episodics.
    pub recent_episodics: Vec<BriefEntry>,
    /// Edges touching `core.md`.
    pub core_links: CoreLinks,
    /// Body characters carried (stubs not counted).
    pub approx_chars: usize,
    /// Set when the namespace has no `core.md`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// What was cut to stubs, when anything was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trimmed: Option<Vec<String>>,
}

/// Whether `doc` is an open task: type `task`, status not `closed`, not archived. This is the
/// only status predicate in the product.
pub fn is_open_task(doc: &Document) -> bool {
    doc.doc_type == "task" && doc.status != "closed" && !is_archived(&doc.path)
}

fn full(source: BriefSource) -> BriefDoc {
    let BriefSource {
        document,
        last_actor,
    } = source;
    BriefDoc {
        namespace: document.namespace,
        path: document.path,
        title: document.title,
        doc_type: document.doc_type,
        body: document.body,
        updated_at: document.updated_at,
        last_actor,
    }
}

fn stub(doc: BriefDoc) -> BriefEntry {
    let body = format!("(trimmed for size: read {}/{})", doc.namespace, doc.path);
    BriefEntry::Stub(BriefStub {
        namespace: doc.namespace,
        path: doc.path,
        title: doc.title,
        updated_at: doc.updated_at,
        last_actor: doc.last_actor,
        body,
    })
}

fn body_chars(doc: Option<&BriefDoc>) -> usize {
    doc.and_then(|d| d.body.as_deref()).map_or(0, js_len)
}

fn sum_chars(docs: &[BriefDoc]) -> usize {
    docs.iter().map(|d| body_chars(Some(d))).sum()
}

/// Assembles the brief. Open tasks are ordered newest update first and episodics newest
/// creation first (ties keep the input order). Over budget, episodic bodies become stubs,
/// then, if still over, task bodies; `approx_chars` counts the bodies still carried.
pub fn assemble_brief(input: BriefInput) -> Brief {
    let BriefInput {
        namespace,
        conventions,
        repo_structure,
        core,
        tasks,
        episodics,
        core_outgoing,
        core_incoming,
    } = input;
    let mut tasks: Vec<BriefSource> = tasks
        .into_iter()
        .filter(|t| is_open_task(&t.document))
        .collect();
    tasks.sort_by(|a, b| newest_first(&a.document.updated_at, &b.document.updated_at));
    let mut episodics: Vec<BriefSource> = episodics
        .into_iter()
        .filter(|e| e.document.doc_type == "episodic" && !is_archived(&e.document.path))
        .collect();
    episodics.sort_by(|a, b| newest_first(&a.document.created_at, &b.document.created_at));
    episodics.truncate(BRIEF_EPISODICS);

    let conventions = conventions.map(full);
    let repo_structure = repo_structure.map(full);
    let core = core.map(full);
    let tasks: Vec<BriefDoc> = tasks.into_iter().map(full).collect();
    let episodics: Vec<BriefDoc> = episodics.into_iter().map(full).collect();

    let mut total = body_chars(conventions.as_ref())
        + body_chars(repo_structure.as_ref())
        + body_chars(core.as_ref())
        + sum_chars(&tasks)
        + sum_chars(&episodics);
    let mut trimmed = Vec::new();
    let episodics_over = total > BRIEF_BUDGET;
    if episodics_over {
        total -= sum_chars(&episodics);
        trimmed.push(format!("{} episodic bodies", episodics.len()));
    }
    let tasks_over = total > BRIEF_BUDGET;
    if tasks_over {
        total -= sum_chars(&tasks);
        trimmed.push(format!("{} task bodies", tasks.len()));
    }
    let entries = |docs: Vec<BriefDoc>, over: bool| -> Vec<BriefEntry> {
        docs.into_iter()
            .map(|d| if over { stub(d) } else { BriefEntry::Full(d) })
            .collect()
    };

    let warning = core
        .is_none()
        .then(|| format!("no core.md for namespace {namespace}"));
    Brief {
        namespace,
        conventions,
        repo_structure,
        core,
        open_tasks: entries(tasks, tasks_over),
        recent_episodics: entries(episodics, episodics_over),
        core_links: CoreLinks {
            outgoing: sorted(core_outgoing),
            incoming: sorted(core_incoming),
        },
        approx_chars: total,
        warning,
        trimmed: (!trimmed.is_empty()).then_some(trimmed),
    }
}

fn sorted<T: Ord>(mut items: Vec<T>) -> Vec<T> {
    items.sort();
    items
}

#[cfg(test)]
mod tests;
