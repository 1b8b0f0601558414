//! The document row the store and the tools share, its wire views (`read`, `list`), and the
//! bounded-list envelope every listing answers with.

use crate::time::Timestamp;
use serde::Serialize;

/// One `documents` row, with the Worker's column names. The legacy `frontmatter` and
/// `publish_at` columns are never read or returned, so they have no field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Document {
    /// Row id.
    pub id: i64,
    /// Namespace name.
    pub namespace: String,
    /// Path inside the namespace.
    pub path: String,
    /// Title, when set.
    pub title: Option<String>,
    /// Document type (one of [`super::DocType`] for rows written through `write`).
    #[serde(rename = "type")]
    pub doc_type: String,
    /// Editorial status (one of [`super::DocStatus`]).
    pub status: String,
    /// Free-text tags, when set.
    pub tags: Option<String>,
    /// Creation time as stored.
    pub created_at: Timestamp,
    /// Last write time as stored.
    pub updated_at: Timestamp,
    /// Markdown body.
    pub body: Option<String>,
}

impl Document {
    /// The body, or `""` when the column is NULL (how the Worker measures and hashes it).
    pub fn body_text(&self) -> &str {
        self.body.as_deref().unwrap_or("")
    }

    /// The row without its body, as `list` returns it.
    pub fn summary(&self) -> DocumentSummary {
        DocumentSummary {
            id: self.id,
            namespace: self.namespace.clone(),
            path: self.path.clone(),
            title: self.title.clone(),
            doc_type: self.doc_type.clone(),
            status: self.status.clone(),
            tags: self.tags.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A `list` row: the named columns, no body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DocumentSummary {
    /// Row id.
    pub id: i64,
    /// Namespace name.
    pub namespace: String,
    /// Path inside the namespace.
    pub path: String,
    /// Title, when set.
    pub title: Option<String>,
    /// Document type.
    #[serde(rename = "type")]
    pub doc_type: String,
    /// Editorial status.
    pub status: String,
    /// Free-text tags, when set.
    pub tags: Option<String>,
    /// Creation time as stored.
    pub created_at: Timestamp,
    /// Last write time as stored.
    pub updated_at: Timestamp,
}

/// The `read` answer: the row's named columns, its body, and who wrote it last (the actor
/// of the newest audit row for it), so a reader can tell whose text it is about to trust.
#[derive(Debug, Clone, Serialize)]
pub struct ReadView<'a> {
    /// The row.
    #[serde(flatten)]
    pub document: &'a Document,
    /// Actor of the newest audit row for this document, or null.
    pub last_actor: Option<&'a str>,
}

/// The envelope of a bounded listing: `{count, limit, truncated, note?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ListBounds {
    /// Rows returned.
    pub count: usize,
    /// The bound.
    pub limit: usize,
    /// Whether more rows exist than were returned.
    pub truncated: bool,
    /// How to narrow, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Cuts a `limit + 1` fetch down to `limit` rows and says whether there were more, so
/// "exactly limit" is never mistaken for "there are more" nor a short list for a complete one.
/// `advice` tells the caller how to narrow (see [`LIST_ADVICE`], [`LIST_ADVICE_IN_NAMESPACE`]).
pub fn bound_rows<T>(mut rows: Vec<T>, limit: usize, advice: &str) -> (ListBounds, Vec<T>) {
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    let note =
        truncated.then(|| format!("Returned the first {limit} rows; there are more. {advice}"));
    (
        ListBounds {
            count: rows.len(),
            limit,
            truncated,
            note,
        },
        rows,
    )
}

/// `list`'s narrowing advice when no namespace was given.
pub const LIST_ADVICE: &str =
    "Narrow with namespace (the usual case), type or status, or use find with a path glob.";
/// `list`'s narrowing advice inside one namespace.
pub const LIST_ADVICE_IN_NAMESPACE: &str =
    "Narrow with type or status, or use find with a path glob.";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Document {
        Document {
            id: 7,
            namespace: "capsid".into(),
            path: "core.md".into(),
            title: Some("Core".into()),
            doc_type: "core".into(),
            status: "published".into(),
            tags: None,
            created_at: Timestamp::parse("2026-01-01T00:00:00.000Z").expect("instant"),
            updated_at: Timestamp::parse("2026-01-02T00:00:00.000Z").expect("instant"),
            body: Some("hello".into()),
        }
    }

    #[test]
    fn rows_serialize_with_the_worker_column_names() {
        let d = doc();
        let read = serde_json::to_value(ReadView {
            document: &d,
            last_actor: Some("agent:a"),
        })
        .unwrap();
        assert_eq!(read["type"], "core");
        assert_eq!(read["body"], "hello");
        assert_eq!(read["last_actor"], "agent:a");
        assert_eq!(read["tags"], serde_json::Value::Null);
        let summary = serde_json::to_value(d.summary()).unwrap();
        assert!(summary.get("body").is_none());
        assert_eq!(summary["id"], 7);
    }

    #[test]
    fn bound_rows_tells_exactly_limit_from_more() {
        let (bounds, rows) = bound_rows(vec![1, 2, 3], 3, LIST_ADVICE);
        assert_eq!(rows, vec![1, 2, 3]);
        assert_eq!(
            serde_json::to_value(&bounds).unwrap(),
            json!({"count": 3, "limit": 3, "truncated": false})
        );

        let (bounds, rows) = bound_rows(vec![1, 2, 3, 4], 3, LIST_ADVICE_IN_NAMESPACE);
        assert_eq!(rows, vec![1, 2, 3]);
        assert!(bounds.truncated);
        assert_eq!(bounds.count, 3);
        let note = bounds.note.unwrap();
        assert!(
            note.starts_with("Returned the first 3 rows; there are more."),
            "{note}"
        );
        assert!(note.ends_with(LIST_ADVICE_IN_NAMESPACE));
    }

    #[test]
    fn null_body_reads_as_empty() {
        let mut d = doc();
        d.body = None;
        assert_eq!(d.body_text(), "");
    }
}
