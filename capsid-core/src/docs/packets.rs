//! What `brief` and `lint` read, decided here and asked of the store as primitive selections
//! (kinds, a path prefix, a status to leave out, order, limit) read from one snapshot: the
//! archive exclusion, the conventions and rules documents, the open-task rule and the limits
//! are the core's, never a store's SQL.

use super::brief::{
    BRIEF_EPISODICS, BriefSource, CONVENTIONS_PATH, CORE_PATH, REPO_STRUCTURE_PATH,
};
use super::document::Document;
use super::kinds::{DocStatus, DocType};
use super::lint::RULES_PATHS;
use super::{ARCHIVE_PREFIX, CAPSID_NAMESPACE};
use crate::ports::{Backlinks, EdgeTuple, Kinds, Order, Packet, PacketRows, Prefix, Selection};

/// The type a document takes when its first write names none.
pub const DEFAULT_TYPE: DocType = DocType::Note;
/// The status a document takes when its first write names none.
pub const DEFAULT_STATUS: DocStatus = DocStatus::Published;

fn kinds(types: &[DocType]) -> Vec<String> {
    types.iter().map(|t| t.as_str().to_owned()).collect()
}

fn outside_archive(namespace: &str, kinds: Kinds, order: Order) -> Selection {
    Selection {
        namespace: namespace.to_owned(),
        kinds,
        prefix: Prefix::Outside(ARCHIVE_PREFIX.to_owned()),
        status_not: None,
        except_paths: Vec::new(),
        order,
        limit: None,
    }
}

/// Everything `brief` reads for `namespace`.
pub fn brief_packet(namespace: &str) -> Packet {
    let open_tasks = Selection {
        // The only status predicate in the product: a closed task is not open.
        status_not: Some(DocStatus::Closed.as_str().to_owned()),
        ..outside_archive(
            namespace,
            Kinds::Only(kinds(&[DocType::Task])),
            Order::NewestUpdateFirst,
        )
    };
    let episodics = Selection {
        limit: Some(BRIEF_EPISODICS),
        ..outside_archive(
            namespace,
            Kinds::Only(kinds(&[DocType::Episodic])),
            Order::NewestUpdateFirst,
        )
    };
    Packet {
        documents: vec![
            (CAPSID_NAMESPACE.to_owned(), CONVENTIONS_PATH.to_owned()),
            (CAPSID_NAMESPACE.to_owned(), REPO_STRUCTURE_PATH.to_owned()),
            (namespace.to_owned(), CORE_PATH.to_owned()),
        ],
        selections: vec![open_tasks, episodics],
        links_of: vec![(namespace.to_owned(), CORE_PATH.to_owned())],
        edges_of: None,
    }
}

/// The brief's rows, from what [`brief_packet`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BriefRows {
    /// `capsid/conventions.md`.
    pub conventions: Option<BriefSource>,
    /// `capsid/repo-structure.md`.
    pub repo_structure: Option<BriefSource>,
    /// `<ns>/core.md`.
    pub core: Option<BriefSource>,
    /// Open tasks, newest update first.
    pub open_tasks: Vec<BriefSource>,
    /// The newest episodics.
    pub recent_episodics: Vec<BriefSource>,
    /// Edges out of and into `core.md`.
    pub core_links: Backlinks,
}

impl BriefRows {
    /// Takes apart what [`brief_packet`] read, in its order.
    pub fn from_packet(rows: PacketRows) -> BriefRows {
        let mut documents = rows.documents.into_iter();
        let mut selections = rows.selections.into_iter();
        BriefRows {
            conventions: documents.next().flatten(),
            repo_structure: documents.next().flatten(),
            core: documents.next().flatten(),
            open_tasks: selections.next().unwrap_or_default(),
            recent_episodics: selections.next().unwrap_or_default(),
            core_links: rows.links.into_iter().next().unwrap_or_default(),
        }
    }
}

/// Everything `lint gather` and `lint report` read for `namespace`.
pub fn lint_packet(namespace: &str) -> Packet {
    let wiki = Kinds::Only(kinds(&[DocType::Concept, DocType::Decision]));
    let raw = [DocType::Episodic, DocType::Source];
    let mut others = outside_archive(
        namespace,
        Kinds::Except(kinds(&[
            DocType::Concept,
            DocType::Decision,
            DocType::Episodic,
            DocType::Source,
        ])),
        Order::Path,
    );
    others.except_paths.push(CORE_PATH.to_owned());
    if namespace == CAPSID_NAMESPACE {
        // The rules documents are read on their own.
        others
            .except_paths
            .extend(RULES_PATHS.iter().map(|p| (*p).to_owned()));
    }
    let archived = Selection {
        prefix: Prefix::Inside(ARCHIVE_PREFIX.to_owned()),
        ..outside_archive(namespace, Kinds::Any, Order::Path)
    };
    let mut documents = vec![(namespace.to_owned(), CORE_PATH.to_owned())];
    // The port's order: schema, then conventions.
    documents.extend(
        RULES_PATHS
            .iter()
            .rev()
            .map(|p| (CAPSID_NAMESPACE.to_owned(), (*p).to_owned())),
    );
    Packet {
        documents,
        selections: vec![
            outside_archive(namespace, wiki, Order::Path),
            outside_archive(namespace, Kinds::Only(kinds(&raw)), Order::OldestFirst),
            others,
            archived,
        ],
        links_of: Vec::new(),
        edges_of: Some(namespace.to_owned()),
    }
}

/// Lint's rows, from what [`lint_packet`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LintRows {
    /// `<ns>/core.md`.
    pub core: Option<Document>,
    /// Types `concept` and `decision`, not under `archive/`, by path.
    pub wiki: Vec<Document>,
    /// Types `episodic` and `source`, not under `archive/`, oldest first (status ignored).
    pub unconsolidated: Vec<Document>,
    /// `capsid/schema.md` and `capsid/conventions.md`, when present.
    pub rules: Vec<Document>,
    /// Every other document of the namespace not under `archive/` (for the truth report).
    pub others: Vec<Document>,
    /// Every document of the namespace under `archive/` (for the truth report's counts).
    pub archived: Vec<Document>,
    /// Every edge with either endpoint in the namespace, sorted.
    pub edges: Vec<EdgeTuple>,
    /// Edges with either endpoint in the namespace whose other endpoint is missing.
    pub dangling_edges: Vec<EdgeTuple>,
}

impl LintRows {
    /// Takes apart what [`lint_packet`] read, in its order.
    pub fn from_packet(rows: PacketRows) -> LintRows {
        let plain = |list: Vec<BriefSource>| list.into_iter().map(|d| d.document).collect();
        let mut documents = rows.documents.into_iter().map(|d| d.map(|d| d.document));
        let core = documents.next().flatten();
        let rules = documents.flatten().collect();
        let mut selections = rows.selections.into_iter();
        LintRows {
            core,
            wiki: plain(selections.next().unwrap_or_default()),
            unconsolidated: plain(selections.next().unwrap_or_default()),
            rules,
            others: plain(selections.next().unwrap_or_default()),
            archived: plain(selections.next().unwrap_or_default()),
            edges: rows.edges,
            dangling_edges: rows.dangling_edges,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brief_reads_open_tasks_and_three_episodics_outside_the_archive() {
        let p = brief_packet("alpha");
        assert_eq!(p.documents[2], ("alpha".into(), "core.md".into()));
        assert_eq!(p.documents[0], ("capsid".into(), "conventions.md".into()));
        let tasks = &p.selections[0];
        assert_eq!(tasks.kinds, Kinds::Only(vec!["task".into()]));
        assert_eq!(tasks.status_not.as_deref(), Some("closed"));
        assert_eq!(tasks.prefix, Prefix::Outside("archive/".into()));
        assert_eq!(tasks.order, Order::NewestUpdateFirst);
        assert_eq!(tasks.limit, None);
        let episodics = &p.selections[1];
        assert_eq!(episodics.limit, Some(3));
        assert_eq!(episodics.status_not, None, "status never hides an episodic");
        assert_eq!(p.links_of, vec![("alpha".into(), "core.md".into())]);
    }

    #[test]
    fn lint_reads_wiki_raw_material_the_rest_and_the_archive() {
        let p = lint_packet("alpha");
        assert_eq!(p.edges_of.as_deref(), Some("alpha"));
        assert_eq!(
            p.selections[1].kinds,
            Kinds::Only(vec!["episodic".into(), "source".into()])
        );
        assert_eq!(p.selections[1].order, Order::OldestFirst);
        assert_eq!(p.selections[2].except_paths, vec!["core.md".to_owned()]);
        assert_eq!(p.selections[3].prefix, Prefix::Inside("archive/".into()));
        let capsid = lint_packet("capsid");
        assert_eq!(
            capsid.selections[2].except_paths,
            vec!["core.md", "conventions.md", "schema.md"]
        );
        assert_eq!(
            capsid.documents[1..],
            [
                ("capsid".to_owned(), "schema.md".to_owned()),
                ("capsid".to_owned(), "conventions.md".to_owned())
            ]
        );
    }

    #[test]
    fn defaults_are_note_and_published() {
        assert_eq!(DEFAULT_TYPE.as_str(), "note");
        assert_eq!(DEFAULT_STATUS.as_str(), "published");
    }
}
