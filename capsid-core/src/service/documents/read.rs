//! The read-side document tools: `list`, `read`, `brief`, `backlinks`, `find`, `search`,
//! `namespaces` and `history`, with the Worker's bounds and result shapes.

use super::DocumentsCx;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::caller::Caller;
use crate::docs::brief::Brief as BriefPacket;
use crate::docs::brief::{BriefInput, assemble_brief};
use crate::docs::document::{LIST_ADVICE, LIST_ADVICE_IN_NAMESPACE};
use crate::docs::links::{IncomingLink, OutgoingLink};
use crate::docs::packets::{BriefRows, brief_packet};
use crate::docs::versions::{HISTORY_DELETED_NOTE, version_not_found};
use crate::docs::{
    Document, DocumentSummary, HISTORY_ROWS, ListBounds, MAX_ROWS, SEARCH_DEPTH, SEARCH_PAGE_MAX,
    SEARCH_ROWS, bound_rows,
};
use crate::docs::{bounds, mutations};
use crate::error::{Error, Result};
use crate::ports::{DocFilter, NamespaceRow, SearchHit, VersionRow, VersionSummary};
use crate::scope_args;
use crate::service::Confirmer;
use crate::service::args::{Bounded, DocPathArg, NamespaceArg};
use crate::time::Timestamp;

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

/// A bounded listing of documents (`list`, `find`): `{count, limit, truncated, note?, documents}`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DocumentListing<T> {
    /// How many rows came back and whether there are more.
    #[serde(flatten)]
    pub bounds: ListBounds,
    /// The rows.
    pub documents: Vec<T>,
}

fn bounded_documents<T>(rows: Vec<T>, limit: usize, advice: &str) -> DocumentListing<T> {
    let (bounds, documents) = bound_rows(rows, limit, advice);
    DocumentListing { bounds, documents }
}

/// The `read` answer: the row's named columns, its body, and who wrote it last (the actor of
/// the newest audit row for it), so a reader can tell whose text it is about to trust.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadAnswer {
    /// The row.
    #[serde(flatten)]
    pub document: Document,
    /// Actor of the newest audit row for this document, or null.
    pub last_actor: Option<String>,
}

/// An edge seen from its source, as `backlinks` answers it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LinkOut {
    /// Edge type.
    #[serde(rename = "type")]
    pub link_type: String,
    /// Target namespace.
    pub to_ns: String,
    /// Target path.
    pub to_path: String,
}

/// An edge seen from its target, as `backlinks` answers it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LinkIn {
    /// Edge type.
    #[serde(rename = "type")]
    pub link_type: String,
    /// Source namespace.
    pub from_ns: String,
    /// Source path.
    pub from_path: String,
}

/// The `backlinks` answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BacklinksAnswer {
    /// The document's namespace.
    pub namespace: String,
    /// Its path.
    pub path: String,
    /// Edges it declares.
    pub outgoing: Vec<LinkOut>,
    /// Edges into it from namespaces the caller may name.
    pub incoming: Vec<LinkIn>,
}

/// A `find` row.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FoundDocument {
    /// Namespace.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// Title.
    pub title: Option<String>,
    /// Document type.
    #[serde(rename = "type")]
    pub doc_type: String,
    /// Status.
    pub status: String,
    /// Last write.
    pub updated_at: Timestamp,
}

/// A `search` page.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchAnswer {
    /// Hits returned.
    pub count: usize,
    /// The page size.
    pub limit: usize,
    /// Whether more hits exist.
    pub truncated: bool,
    /// The hits, best first.
    pub documents: Vec<SearchHit>,
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How to go on, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One version with its body, and the body's length in bytes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VersionAnswer {
    /// The version.
    #[serde(flatten)]
    pub version: VersionRow,
    /// Body length in bytes (UTF-8).
    pub bytes: usize,
}

/// The live document, as `history` shows it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LiveDocument {
    /// Title.
    pub title: Option<String>,
    /// Last write.
    pub updated_at: Timestamp,
    /// Body length in bytes (UTF-8).
    pub bytes: usize,
}

/// A document's version list.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VersionList {
    /// Namespace.
    pub namespace: String,
    /// Path.
    pub path: String,
    /// The live document, or null when it is deleted.
    pub live: Option<LiveDocument>,
    /// Newest first.
    pub versions: Vec<VersionSummary>,
    /// Why there may be more, or that the document is deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The `history` answer: one version (`version_id`) or the list.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum HistoryAnswer {
    /// One version with its body.
    Version(VersionAnswer),
    /// The version list.
    List(VersionList),
}

impl DocumentsCx<'_> {
    pub(crate) async fn list(
        &self,
        _: &Caller,
        a: ListArgs,
        _: &dyn Confirmer,
    ) -> Result<DocumentListing<DocumentSummary>> {
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

    pub(crate) async fn read(
        &self,
        _: &Caller,
        a: ReadArgs,
        _: &dyn Confirmer,
    ) -> Result<ReadAnswer> {
        let (ns, path) = (a.namespace.as_str(), a.path.as_str());
        let row = self
            .docs
            .document_with_actor(ns, path)
            .await?
            .ok_or_else(|| Error::NotFound(mutations::not_found(ns, path)))?;
        Ok(ReadAnswer {
            document: row.document,
            last_actor: row.last_actor,
        })
    }

    pub(crate) async fn brief(
        &self,
        caller: &Caller,
        a: BriefArgs,
        _: &dyn Confirmer,
    ) -> Result<BriefPacket> {
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
        Ok(brief)
    }

    pub(crate) async fn backlinks(
        &self,
        caller: &Caller,
        a: ReadArgs,
        _: &dyn Confirmer,
    ) -> Result<BacklinksAnswer> {
        let (ns, path) = (a.namespace.as_str(), a.path.as_str());
        let links = self.docs.backlinks(ns, path).await?;
        let outgoing = links
            .outgoing
            .into_iter()
            .map(|(link_type, to_ns, to_path)| LinkOut {
                link_type,
                to_ns,
                to_path,
            })
            .collect();
        // An edge from a namespace the caller may not name is that namespace's content.
        let incoming = links
            .incoming
            .into_iter()
            .filter(|(_, n, _)| caller.scopes.namespaces.allows(n))
            .map(|(link_type, from_ns, from_path)| LinkIn {
                link_type,
                from_ns,
                from_path,
            })
            .collect();
        Ok(BacklinksAnswer {
            namespace: ns.to_owned(),
            path: path.to_owned(),
            outgoing,
            incoming,
        })
    }

    pub(crate) async fn find(
        &self,
        _: &Caller,
        a: FindArgs,
        _: &dyn Confirmer,
    ) -> Result<DocumentListing<FoundDocument>> {
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
            .map(|d| FoundDocument {
                namespace: d.namespace,
                path: d.path,
                title: d.title,
                doc_type: d.doc_type,
                status: d.status,
                updated_at: d.updated_at,
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
    ) -> Result<SearchAnswer> {
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
        // The page is at most `limit` hits (the window ends at offset + limit), so its own
        // bounds never truncate: whether there are more is `more`.
        let page: Vec<_> = hits.into_iter().skip(offset).collect();
        let (bounds, documents) = bound_rows(page, limit, "");
        let mut out = SearchAnswer {
            count: bounds.count,
            limit: bounds.limit,
            truncated: bounds.truncated,
            documents,
            next_cursor: None,
            note: bounds.note,
        };
        let next = offset + limit;
        if more && next < SEARCH_DEPTH {
            let cursor = format!("o{next}");
            out.truncated = true;
            out.note = Some(format!(
                "Returned {limit} hits; there are more: pass cursor {cursor:?} for the next page."
            ));
            out.next_cursor = Some(cursor);
        } else if more {
            out.truncated = true;
            out.note = Some(format!(
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
    ) -> Result<Vec<NamespaceRow>> {
        // A narrowed caller sees only its own scope (SPEC 8).
        let mut rows = self.namespaces.namespaces().await?;
        rows.retain(|r| caller.scopes.namespaces.allows(&r.namespace));
        Ok(rows)
    }

    pub(crate) async fn history(
        &self,
        _: &Caller,
        a: HistoryArgs,
        _: &dyn Confirmer,
    ) -> Result<HistoryAnswer> {
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
            return Ok(HistoryAnswer::Version(VersionAnswer {
                version: row,
                bytes,
            }));
        }
        let mut versions = self.docs.versions(ns, path, HISTORY_ROWS + 1).await?;
        let truncated = versions.len() > HISTORY_ROWS;
        versions.truncate(HISTORY_ROWS);
        let live = self.docs.document(ns, path).await?.map(|d| LiveDocument {
            bytes: d.body.as_deref().map_or(0, str::len),
            title: d.title,
            updated_at: d.updated_at,
        });
        let note = if live.is_none() {
            Some(HISTORY_DELETED_NOTE.to_owned())
        } else if truncated {
            Some(format!(
                "Returned the newest {HISTORY_ROWS} versions; older ones exist. Fetch one by version_id."
            ))
        } else {
            None
        };
        Ok(HistoryAnswer::List(VersionList {
            namespace: ns.to_owned(),
            path: path.to_owned(),
            live,
            versions,
            note,
        }))
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
        type Answer = DocumentListing<DocumentSummary>;
        const SPEC: ToolSpec = ToolSpec::new(
            "list",
            Documents,
            READ,
            "List documents (no bodies), optionally filtered by namespace, type and status; ordered by namespace, path; at most 500.",
        )
        .titled("List documents");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: ListArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().list(c, a, k).await })
        }
    }

    /// `read`.
    #[derive(Debug)]
    pub struct Read;
    impl Tool for Read {
        type Args = ReadArgs;
        type Answer = ReadAnswer;
        const SPEC: ToolSpec = ToolSpec::new(
            "read",
            Documents,
            READ,
            "Read one document: its columns, body and last_actor (who last changed it).",
        )
        .titled("Read a document");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: ReadArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().read(c, a, k).await })
        }
    }

    /// `brief`.
    #[derive(Debug)]
    pub struct Brief;
    impl Tool for Brief {
        type Args = BriefArgs;
        type Answer = BriefPacket;
        const SPEC: ToolSpec = ToolSpec::new(
            "brief",
            Documents,
            READ,
            "Start a session in one call: conventions, repo structure, the namespace's core.md, open tasks, recent episodics and core links.",
        )
        .titled("Brief a namespace");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: BriefArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().brief(c, a, k).await })
        }
    }

    /// `backlinks`.
    #[derive(Debug)]
    pub struct Backlinks;
    impl Tool for Backlinks {
        type Args = ReadArgs;
        type Answer = BacklinksAnswer;
        const SPEC: ToolSpec = ToolSpec::new(
            "backlinks",
            Documents,
            READ,
            "Typed links out of and into one document.",
        )
        .titled("Documents linking here");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: ReadArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().backlinks(c, a, k).await })
        }
    }

    /// `find`.
    #[derive(Debug)]
    pub struct Find;
    impl Tool for Find {
        type Args = FindArgs;
        type Answer = DocumentListing<FoundDocument>;
        const SPEC: ToolSpec = ToolSpec::new(
            "find",
            Documents,
            READ,
            "Find documents whose path matches a glob (SQLite GLOB semantics: * ? [...]); at most 500.",
        )
        .titled("Find documents by path");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: FindArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().find(c, a, k).await })
        }
    }

    /// `search`.
    #[derive(Debug)]
    pub struct Search;
    impl Tool for Search {
        type Args = SearchArgs;
        type Answer = SearchAnswer;
        const SPEC: ToolSpec = ToolSpec::new(
            "search",
            Documents,
            READ,
            "Full-text search over titles and bodies; the best matches by bm25 with [marked] snippets, 25 a page (limit up to 100; next_cursor pages on, through the 500 best).",
        )
        .titled("Search documents");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: SearchArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().search(c, a, k).await })
        }
    }

    /// `namespaces`.
    #[derive(Debug)]
    pub struct Namespaces;
    impl Tool for Namespaces {
        type Args = NoArgs;
        type Answer = Vec<NamespaceRow>;
        const SPEC: ToolSpec = ToolSpec::new(
            "namespaces",
            Documents,
            READ,
            "Registered namespaces with their repos and how many episodic/source documents await consolidation.",
        )
        .titled("List namespaces");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: NoArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().namespaces(c, a, k).await })
        }
    }

    /// `history`.
    #[derive(Debug)]
    pub struct History;
    impl Tool for History {
        type Args = HistoryArgs;
        type Answer = HistoryAnswer;
        const SPEC: ToolSpec = ToolSpec::new(
            "history",
            Documents,
            READ,
            "A document's version snapshots (newest first, at most 100), or one version by version_id.",
        )
        .titled("Document history");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: HistoryArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.documents().history(c, a, k).await })
        }
    }
}
pub use registered::*;
