//! Full-text search over the FTS5 index. User text is tried as given, then (when FTS5 refuses
//! it) as one quoted phrase; it never surfaces an error.
//!
//! Speed at 100,000 documents comes from three choices. The query is driven from the FTS
//! match set: a `CROSS JOIN` keeps `documents_fts` the outer loop, so FTS5 itself consumes
//! `ORDER BY rank` (no temp b-tree, no second sort key) and snippets are built only for the
//! rows returned. Namespace and type filters are also tokens of the index (`fts_keys`, see
//! the migration), so a filtered search narrows inside the index; the SQL predicates stay
//! as the authority. And ranking is bounded: bm25 costs a lookup per match, so a query
//! matching more than [`RANK_WINDOW`] documents is ranked among its newest `RANK_WINDOW`
//! matches (by row id, i.e. creation order) rather than all of them. Equal scores come in
//! creation order: a tie-break key would cost a second bm25 pass (reading `rank` as a column
//! recomputes it) or a sort outside the index.
//!
//! On a small corpus the ranking itself is the cost: two words found in nearly every one of
//! 1,000 documents take FTS5 about 1.5 ms to rank (bm25 reads each match's size row) and
//! 0.8 ms to snip, against a few microseconds to answer from memory. So answers are cached
//! like `read`'s documents, tagged with the database's data version: a repeated query is
//! answered from memory until the next commit, by this process or any other.

use capsid_core::ports::{SearchHit, StoreResult};
use sqlx::QueryBuilder;
use sqlx::sqlite::{Sqlite, SqliteRow};

use crate::error::{DbResult, backend, is_statement_error};
use crate::rows::limit as sql_limit;
use crate::store::SqliteStore;

/// How many matches, at most, are ranked by bm25 (the newest ones).
pub(crate) const RANK_WINDOW: i64 = 1_000;

/// The index token of a namespace or type filter: a prefix letter and the value's bytes in
/// hex, matching the generated column `documents.fts_keys`.
fn key_token(prefix: char, value: &str) -> String {
    let mut token = String::with_capacity(1 + 2 * value.len());
    token.push(prefix);
    for byte in value.bytes() {
        token.push_str(&format!("{byte:02x}"));
    }
    token
}

/// The FTS5 expression for `query` (a valid expression on its own) within the filters.
pub(crate) fn filtered_expression(
    query: &str,
    namespace: Option<&str>,
    doc_type: Option<&str>,
) -> String {
    if namespace.is_none() && doc_type.is_none() {
        return query.to_owned();
    }
    let mut expression = format!("({query})");
    if let Some(namespace) = namespace {
        expression.push_str(&format!(" AND fts_keys : {}", key_token('n', namespace)));
    }
    if let Some(doc_type) = doc_type {
        expression.push_str(&format!(" AND fts_keys : {}", key_token('t', doc_type)));
    }
    expression
}

/// Whether the parentheses of `query` balance outside FTS5 strings (`"..."`, with `""` as
/// an escaped quote) and every string is closed. FTS5 refuses any other query, and only a
/// balanced one can be wrapped in parentheses without escaping them.
pub(crate) fn balanced(query: &str) -> bool {
    let mut depth: i64 = 0;
    let mut in_string = false;
    for c in query.chars() {
        match c {
            '"' => in_string = !in_string,
            '(' if !in_string => depth += 1,
            ')' if !in_string => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0 && !in_string
}

/// Pushes the search query for the FTS5 expression `expression` (already including the
/// filter tokens), the SQL filters and a limit.
pub(crate) fn push_search(
    qb: &mut QueryBuilder<Sqlite>,
    expression: &str,
    namespace: Option<&str>,
    doc_type: Option<&str>,
    limit: usize,
) {
    qb.push(
        "SELECT d.id, d.namespace, d.path, d.title, d.type, d.status, d.updated_at, \
         snippet(documents_fts, 1, '[', ']', ' ... ', 16) AS snippet \
         FROM documents_fts CROSS JOIN documents AS d ON d.id = documents_fts.rowid \
         WHERE documents_fts MATCH ",
    );
    qb.push_bind(expression.to_owned());
    qb.push(
        " AND documents_fts.rowid >= COALESCE((SELECT rowid FROM documents_fts WHERE documents_fts MATCH ",
    );
    qb.push_bind(expression.to_owned());
    qb.push(format_args!(
        " ORDER BY rowid DESC LIMIT 1 OFFSET {}), 0)",
        RANK_WINDOW - 1
    ));
    if let Some(namespace) = namespace {
        qb.push(" AND d.namespace = ")
            .push_bind(namespace.to_owned());
    }
    if let Some(doc_type) = doc_type {
        qb.push(" AND d.type = ").push_bind(doc_type.to_owned());
    }
    qb.push(" ORDER BY documents_fts.rank LIMIT ")
        .push_bind(sql_limit(limit));
}

/// `text` as one FTS5 phrase: wrapped in double quotes, inner quotes doubled. Every byte
/// inside a phrase is literal to the FTS5 parser, so this is always a valid expression.
pub(crate) fn as_phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

fn hit(row: SqliteRow) -> Result<SearchHit, sqlx::Error> {
    capsid_store_sql::documents::search_hit(&capsid_store_sql::Row::Sqlite(row))
}

async fn run(
    store: &SqliteStore,
    query: &str,
    namespace: Option<&str>,
    doc_type: Option<&str>,
    limit: usize,
) -> Result<Vec<SearchHit>, sqlx::Error> {
    let expression = filtered_expression(query, namespace, doc_type);
    let mut qb = QueryBuilder::new("");
    push_search(&mut qb, &expression, namespace, doc_type, limit);
    let found = qb.build().fetch_all(store.reader()).await?;
    found.into_iter().map(hit).collect()
}

/// The hits for `query`: answered from memory while the database has not changed since the
/// same query, filters and limit were answered (any commit, in any process, empties the
/// cache; see [`crate::cache`]), else from the index.
pub(crate) async fn search(
    store: &SqliteStore,
    query: &str,
    namespace: Option<&str>,
    doc_type: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<SearchHit>> {
    if query.trim().is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    crate::cache::read_through(
        store.data_version(),
        store.search_cache(),
        (
            query.to_owned(),
            namespace.map(str::to_owned),
            doc_type.map(str::to_owned),
            limit,
        ),
        |(query, ..), hits| query.len() + hits.iter().map(hit_size).sum::<usize>(),
        search_index(store, query, namespace, doc_type, limit),
    )
    .await
}

/// The bytes a cached hit holds, roughly.
fn hit_size(hit: &SearchHit) -> usize {
    hit.namespace.len()
        + hit.path.len()
        + hit.title.as_ref().map_or(0, String::len)
        + hit.doc_type.len()
        + hit.status.len()
        + hit.snippet.len()
        + 96
}

async fn search_index(
    store: &SqliteStore,
    query: &str,
    namespace: Option<&str>,
    doc_type: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<SearchHit>> {
    if balanced(query) {
        match run(store, query, namespace, doc_type, limit).await {
            Ok(hits) => return Ok(hits),
            Err(err) if is_statement_error(&err) => {
                tracing::debug!(error = %err, "search query refused by FTS5; retrying as a phrase");
            }
            Err(err) => return Err(backend(err)),
        }
    }
    match run(store, &as_phrase(query), namespace, doc_type, limit).await {
        Ok(hits) => Ok(hits),
        // A phrase the engine still refuses matches nothing the caller could have meant.
        Err(err) if is_statement_error(&err) => Ok(Vec::new()),
        Err(err) => Err(err).db(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_double_inner_quotes() {
        assert_eq!(as_phrase("a \"b\" c"), "\"a \"\"b\"\" c\"");
        assert_eq!(as_phrase(""), "\"\"");
    }

    #[test]
    fn only_balanced_queries_are_wrapped() {
        for ok in [
            "a",
            "(a OR b) c",
            "\"(\" x",
            "\"a \"\" b\"",
            "NEAR(a b, 2)",
            "",
        ] {
            assert!(balanced(ok), "{ok}");
        }
        for bad in ["(", ")", "a) OR (b", "\"a", "((a)", "\"a\"\""] {
            assert!(!balanced(bad), "{bad}");
        }
    }

    #[test]
    fn filters_become_index_tokens() {
        assert_eq!(filtered_expression("a OR b", None, None), "a OR b");
        assert_eq!(
            filtered_expression("a OR b", Some("ns"), Some("note")),
            "(a OR b) AND fts_keys : n6e73 AND fts_keys : t6e6f7465"
        );
        assert_eq!(key_token('n', "ü"), "nc3bc");
    }
}
