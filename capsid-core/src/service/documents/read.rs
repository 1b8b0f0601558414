//! The read-side document tools: `list`, `read`, `brief`, `backlinks`, `find`, `search`,
//! `namespaces` and `history`, with the Worker's bounds and result shapes.

use super::DocumentsCx;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::docs::brief::{BriefInput, assemble_brief};
use crate::docs::document::{LIST_ADVICE, LIST_ADVICE_IN_NAMESPACE};
use crate::docs::links::{IncomingLink, OutgoingLink};
use crate::docs::packets::{BriefRows, brief_packet};
use crate::docs::versions::{HISTORY_DELETED_NOTE, version_not_found};
use crate::docs::{
    HISTORY_ROWS, MAX_ROWS, ReadView, SEARCH_DEPTH, SEARCH_PAGE_MAX, SEARCH_ROWS, bound_rows,
};
use crate::docs::{bounds, mutations};
use crate::error::{Error, Result};
use crate::ports::DocFilter;
use crate::scope_args;
use crate::service::args::{Bounded, DocPathArg, NamespaceArg};
use crate::service::{Confirmer, to_json};

/// No arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct NoArgs {}
scope_args!(NoArgs);

/// `list`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only this namespace.
    pub namespace: Option<NamespaceArg>,
    /// Only this document type.
    #[serde(rename = "type")]
    pub doc_type: Option<Bounded<{ bounds::DOC_TYPE }>>,
    /// Only this status.
    pub status: Option<Bounded<{ bounds::DOC_STATUS }>>,
}
scope_args!(ListArgs, optional namespace);

/// `read`, `backlinks`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// Namespace.
    pub namespace: NamespaceArg,
    /// Document path.
    pub path: DocPathArg,
}
scope_args!(ReadArgs, namespace);

/// `brief`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BriefArgs {
    /// Namespace to brief.
    pub namespace: NamespaceArg,
}
scope_args!(BriefArgs, namespace);

/// `find`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindArgs {
    /// Only this namespace.
    pub namespace: Option<NamespaceArg>,
    /// SQLite GLOB over the path, e.g. `notes/*.md` (case-sensitive; `*`, `?`, `[...]`).
    pub glob: Bounded<{ bounds::GLOB }>,
}
scope_args!(FindArgs, optional namespace);

/// `search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Words to find (FTS5 syntax is allowed; anything else is searched as a phrase).
    pub query: Bounded<{ bounds::QUERY }>,
    /// Only this namespace.
    pub namespace: Option<NamespaceArg>,
    /// Only this document type.
    #[serde(rename = "type")]
    pub doc_type: Option<Bounded<{ bounds::DOC_TYPE }>>,
    /// How many hits (1 to 100; default 25).
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page, for the page after it (pages reach the 500
    /// best matches).
    pub cursor: Option<Bounded<16>>,
}
scope_args!(SearchArgs, optional namespace);

/// `history`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct HistoryArgs {
    /// Namespace.
    pub namespace: NamespaceArg,
    /// Document path.
    pub path: DocPathArg,
    /// One version's id (a positive integer) to fetch its body.
    pub version_id: Option<i64>,
}
scope_args!(HistoryArgs, namespace);

fn bounded_documents<T: serde::Serialize>(rows: Vec<T>, limit: usize, advice: &str) -> Value {
    let (bounds, rows) = bound_rows(rows, limit, advice);
    let mut out = serde_json::to_value(bounds).unwrap_or_else(|_| json!({}));
    out["documents"] = serde_json::to_value(rows).unwrap_or(Value::Array(Vec::new()));
    out
}

impl DocumentsCx<'_> {
    pub(crate) async fn list(&self, _: &Caller, a: ListArgs, _: &dyn Confirmer) -> Result<Value> {
        let filter = DocFilter {
            namespace: a.namespace.as_ref().map(|n| n.as_str().to_owned()),
            doc_type: a.doc_type.map(|t| t.0),
            status: a.status.map(|s| s.0),
        };
        let rows = self.docs.list_documents(&filter, MAX_ROWS + 1).await?;
        let advice = if filter.namespace.is_some() {
            LIST_ADVICE_IN_NAMESPACE
        } else {
            LIST_ADVICE
        };
        Ok(bounded_documents(rows, MAX_ROWS, advice))
    }

    pub(crate) async fn read(&self, _: &Caller, a: ReadArgs, _: &dyn Confirmer) -> Result<Value> {
        let (ns, path) = (a.namespace.as_str(), a.path.as_str());
        let row = self
            .docs
            .document_with_actor(ns, path)
            .await?
            .ok_or_else(|| Error::NotFound(mutations::not_found(ns, path)))?;
        to_json(ReadView {
            document: &row.document,
            last_actor: row.last_actor.as_deref(),
        })
    }

    pub(crate) async fn brief(
        &self,
        caller: &Caller,
        a: BriefArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
        let ns = a.namespace.as_str();
        let packet = self.docs.read_packet(&brief_packet(ns)).await?;
        let rows = BriefRows::from_packet(packet);
        let outgoing = rows
            .core_links
            .outgoing
            .iter()
            .map(|(t, to_ns, to_path)| OutgoingLink {
                link_type: t.clone(),
                to_ns: to_ns.clone(),
                to_path: to_path.clone(),
            });
        // An edge from a namespace the caller may not name is that namespace's content.
        let incoming = rows
            .core_links
            .incoming
            .iter()
            .filter(|(_, from_ns, _)| caller.scopes.namespaces.allows(from_ns))
            .map(|(t, from_ns, from_path)| IncomingLink {
                link_type: t.clone(),
                from_ns: from_ns.clone(),
                from_path: from_path.clone(),
            });
        let brief = assemble_brief(BriefInput {
            namespace: ns.to_owned(),
            conventions: rows.conventions,
            repo_structure: rows.repo_structure,
            core: rows.core,
            tasks: rows.open_tasks,
            episodics: rows.recent_episodics,
            core_outgoing: outgoing.collect(),
            core_incoming: incoming.collect(),
        });
        to_json(brief)
    }

    pub(crate) async fn backlinks(
        &self,
        caller: &Caller,
        a: ReadArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
        let (ns, path) = (a.namespace.as_str(), a.path.as_str());
        let links = self.docs.backlinks(ns, path).await?;
        let outgoing: Vec<_> = links
            .outgoing
            .iter()
            .map(|(t, n, p)| json!({"type": t, "to_ns": n, "to_path": p}))
            .collect();
        // An edge from a namespace the caller may not name is that namespace's content.
        let incoming: Vec<_> = links
            .incoming
            .iter()
            .filter(|(_, n, _)| caller.scopes.namespaces.allows(n))
            .map(|(t, n, p)| json!({"type": t, "from_ns": n, "from_path": p}))
            .collect();
        Ok(json!({ "namespace": ns, "path": path, "outgoing": outgoing, "incoming": incoming }))
    }

    pub(crate) async fn find(&self, _: &Caller, a: FindArgs, _: &dyn Confirmer) -> Result<Value> {
        if let Some(problem) = crate::docs::glob::glob_work_problem(a.glob.as_str()) {
            return Err(Error::Invalid(format!("find: {problem}")));
        }
        let ns = a.namespace.as_ref().map(|n| n.as_str());
        let rows = self
            .docs
            .find_documents(ns, a.glob.as_str(), MAX_ROWS + 1)
            .await?;
        let rows: Vec<_> = rows
            .into_iter()
            .map(|d| {
                json!({"namespace": d.namespace, "path": d.path, "title": d.title, "type": d.doc_type,
                       "status": d.status, "updated_at": d.updated_at})
            })
            .collect();
        Ok(bounded_documents(
            rows,
            MAX_ROWS,
            "Tighten the glob, or add a namespace filter.",
        ))
    }

    pub(crate) async fn search(
        &self,
        _: &Caller,
        a: SearchArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
        let ns = a.namespace.as_ref().map(|n| n.as_str());
        let doc_type = a.doc_type.as_ref().map(|t| t.as_str());
        let limit = match a.limit {
            None => SEARCH_ROWS,
            Some(n) if (1..=SEARCH_PAGE_MAX as i64).contains(&n) => n as usize,
            Some(n) => {
                return Err(Error::Invalid(format!(
                    "limit: {n} is out of range (1 to {SEARCH_PAGE_MAX})"
                )));
            }
        };
        let offset = match a.cursor.as_ref().map(|c| c.as_str()) {
            None => 0,
            Some(c) => c
                .strip_prefix('o')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n < SEARCH_DEPTH)
                .ok_or_else(|| {
                    Error::Invalid(format!(
                        "cursor: {c:?} is not a cursor this server gave (pass the next_cursor of the previous page)"
                    ))
                })?,
        };
        let window = (offset + limit).min(SEARCH_DEPTH);
        let mut hits = self
            .docs
            .search_documents(a.query.as_str(), ns, doc_type, window + 1)
            .await?;
        let more = hits.len() > window;
        hits.truncate(window);
        let page: Vec<_> = hits.into_iter().skip(offset).collect();
        let mut out = bounded_documents(
            page,
            limit,
            "Pass next_cursor for the next page, add a namespace or type filter, or make the query more specific.",
        );
        let next = offset + limit;
        if more && next < SEARCH_DEPTH {
            out["truncated"] = json!(true);
            out["next_cursor"] = json!(format!("o{next}"));
            out["note"] = json!(format!(
                "Returned {limit} hits; there are more: pass cursor {:?} for the next page.",
                format!("o{next}")
            ));
        } else if more {
            out["truncated"] = json!(true);
            out["note"] = json!(format!(
                "These are the last of the {SEARCH_DEPTH} best matches pages reach; make the query more specific for the rest."
            ));
        }
        Ok(out)
    }

    /// The registered namespaces the caller may name (SPEC 8: metadata stays in scope).
    pub(crate) async fn namespaces(
        &self,
        caller: &Caller,
        _: NoArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
        // A narrowed caller sees only its own scope (SPEC 8).
        let mut rows = self.namespaces.namespaces().await?;
        rows.retain(|r| caller.scopes.namespaces.allows(&r.namespace));
        to_json(rows)
    }

    pub(crate) async fn history(
        &self,
        _: &Caller,
        a: HistoryArgs,
        _: &dyn Confirmer,
    ) -> Result<Value> {
        let (ns, path) = (a.namespace.as_str(), a.path.as_str());
        if let Some(id) = a.version_id {
            if id <= 0 {
                return Err(Error::Invalid(
                    "history: version_id must be a positive integer".into(),
                ));
            }
            let row = self
                .docs
                .version(id, ns, path)
                .await?
                .ok_or_else(|| Error::NotFound(version_not_found(id, ns, path)))?;
            let bytes = row.body.as_deref().map_or(0, str::len);
            let mut out = to_json(row)?;
            out["bytes"] = json!(bytes);
            return Ok(out);
        }
        let mut versions = self.docs.versions(ns, path, HISTORY_ROWS + 1).await?;
        let truncated = versions.len() > HISTORY_ROWS;
        versions.truncate(HISTORY_ROWS);
        let live = self.docs.document(ns, path).await?.map(|d| {
            json!({"title": d.title, "updated_at": d.updated_at, "bytes": d.body.as_deref().map_or(0, str::len)})
        });
        let mut out = json!({ "namespace": ns, "path": path, "live": live, "versions": versions });
        if out["live"].is_null() {
            out["note"] = json!(HISTORY_DELETED_NOTE);
        } else if truncated {
            out["note"] = json!(format!(
                "Returned the newest {HISTORY_ROWS} versions; older ones exist. Fetch one by version_id."
            ));
        }
        Ok(out)
    }
}

mod registered {
    //! The read-side document tools as the registry serves them.
    use super::*;
    use crate::service::Areas;
    use crate::service::registry::{Tool, ToolFuture};
    use crate::tools::{Requirement::Fixed, Rule, ToolGroup::Documents, ToolSpec};

    const READ: crate::tools::Requirement = Fixed(Rule::read());

    /// `list`.
    #[derive(Debug)]
    pub struct List;
    impl Tool for List {
        type Args = ListArgs;
        const SPEC: ToolSpec = ToolSpec::new(
            "list",
            Documents,
            READ,
            "List documents (no bodies), optionally filtered by namespace, type and status; ordered by namespace, path; at most 500.",
        );
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: ListArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a> {
            Box::pin(async move { s.documents().list(c, a, k).await })
        }
    }

    /// `read`.
    #[derive(Debug)]
    pub struct Read;
    impl Tool for Read {
        type Args = ReadArgs;
        const SPEC: ToolSpec = ToolSpec::new(
            "read",
            Documents,
            READ,
            "Read one document: its columns, body and last_actor (who last changed it).",
        );
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: ReadArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a> {
            Box::pin(async move { s.documents().read(c, a, k).await })
        }
    }

    /// `brief`.
    #[derive(Debug)]
    pub struct Brief;
    impl Tool for Brief {
        type Args = BriefArgs;
        const SPEC: ToolSpec = ToolSpec::new(
            "brief",
            Documents,
            READ,
            "Start a session in one call: conventions, repo structure, the namespace's core.md, open tasks, recent episodics and core links.",
        );
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: BriefArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a> {
            Box::pin(async move { s.documents().brief(c, a, k).await })
        }
    }

    /// `backlinks`.
    #[derive(Debug)]
    pub struct Backlinks;
    impl Tool for Backlinks {
        type Args = ReadArgs;
        const SPEC: ToolSpec = ToolSpec::new(
            "backlinks",
            Documents,
            READ,
            "Typed links out of and into one document.",
        );
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: ReadArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a> {
            Box::pin(async move { s.documents().backlinks(c, a, k).await })
        }
    }

    /// `find`.
    #[derive(Debug)]
    pub struct Find;
    impl Tool for Find {
        type Args = FindArgs;
        const SPEC: ToolSpec = ToolSpec::new(
            "find",
            Documents,
            READ,
            "Find documents whose path matches a glob (SQLite GLOB semantics: * ? [...]); at most 500.",
        );
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: FindArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a> {
            Box::pin(async move { s.documents().find(c, a, k).await })
        }
    }

    /// `search`.
    #[derive(Debug)]
    pub struct Search;
    impl Tool for Search {
        type Args = SearchArgs;
        const SPEC: ToolSpec = ToolSpec::new(
            "search",
            Documents,
            READ,
            "Full-text search over titles and bodies; the best matches by bm25 with [marked] snippets, 25 a page (limit up to 100; next_cursor pages on, through the 500 best).",
        );
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: SearchArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a> {
            Box::pin(async move { s.documents().search(c, a, k).await })
        }
    }

    /// `namespaces`.
    #[derive(Debug)]
    pub struct Namespaces;
    impl Tool for Namespaces {
        type Args = NoArgs;
        const SPEC: ToolSpec = ToolSpec::new(
            "namespaces",
            Documents,
            READ,
            "Registered namespaces with their repos and how many episodic/source documents await consolidation.",
        );
        fn run<'a>(s: Areas<'a>, c: &'a Caller, a: NoArgs, k: &'a dyn Confirmer) -> ToolFuture<'a> {
            Box::pin(async move { s.documents().namespaces(c, a, k).await })
        }
    }

    /// `history`.
    #[derive(Debug)]
    pub struct History;
    impl Tool for History {
        type Args = HistoryArgs;
        const SPEC: ToolSpec = ToolSpec::new(
            "history",
            Documents,
            READ,
            "A document's version snapshots (newest first, at most 100), or one version by version_id.",
        );
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: HistoryArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a> {
            Box::pin(async move { s.documents().history(c, a, k).await })
        }
    }
}
pub use registered::*;
