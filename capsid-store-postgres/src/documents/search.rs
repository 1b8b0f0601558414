//! Full-text search over the generated `search` tsvector (GIN): `websearch_to_tsquery`
//! (which accepts any text), ranked by `ts_rank` (term frequency with title words weighted
//! A and body words B, divided by 1 + log of the document length: bm25-like), ties by
//! namespace and path, with `ts_headline` snippets computed for the returned rows only. The
//! two candidate sets (title matches, other matches) are ranked by two statements (at once,
//! on two connections, when the pool has a second free) and merged. Every search is bounded:
//! in words, in ranked candidates, in snippet text and in time.

use std::time::Duration;

use capsid_core::ports::{SearchHit, StoreError, StoreResult};
use sqlx::pool::PoolConnection;
use sqlx::postgres::PgRow;
use sqlx::{AssertSqlSafe, Connection, PgConnection, PgPool, Postgres, Row};

use crate::error::{limit, translate, unavailable};

/// How the user's text becomes a tsquery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parser {
    /// `websearch_to_tsquery`: words, `"phrases"`, `or`, `-word`; never a syntax error.
    Web,
    /// `plainto_tsquery`: every word, ANDed; the fallback.
    Plain,
}

impl Parser {
    fn function(self) -> &'static str {
        match self {
            Parser::Web => "websearch_to_tsquery",
            Parser::Plain => "plainto_tsquery",
        }
    }
}

/// At most this many title matches, and this many other matches, are ranked, so a query
/// whose words are in nearly every document still answers in bounded time. Each candidate
/// costs its row's visit and its `tsvector` read twice (the match, then `ts_rank`), and a
/// seq-scan candidate also the rows it passes over: about 2.5 µs a row on the 2-core machine
/// with rows kept whole (migration 0021; 10 to 20 µs when vectors lived in TOAST, when a word
/// in a fifth of 100,000 documents took 90 to 160 ms, docs/perf/2026-12-02.md). A bound of
/// 300 made that 7 to 20 ms but ranked only the first 300 matches the scan yields, so the
/// strongest of 1,201 body matches was missed (the conformance case
/// `search_ranks_strongest_body_match_first_among_many`): every match is
/// ranked up to this many of each kind, and title matches are bounded apart from the others
/// so a word common in bodies still finds its titles; past it, the ranked ones are the first
/// the scan yields (where the last sequential scan stopped, or the oldest rows), which only
/// words in thousands of documents reach.
pub(crate) const CANDIDATES_MAX: i64 = 2_000;

/// Snippets are cut from the first this-many characters of a body: `ts_headline` parses all
/// the text it is given (about 1 ms per 10,000 characters), so a page of 25 long documents
/// stays within the latency budget. A match further in still ranks; it is just not marked.
const SNIPPET_SOURCE_CHARS: i64 = 20_000;

/// Only the first this-many words of a search text are used: matching, ranking and
/// especially snippets and phrase checks grow with the number of query terms (a few hundred
/// repeated common words took tens of seconds on 100,000 documents).
const QUERY_WORDS_MAX: usize = 32;

/// Only the first this-many characters of a search text are used (the tools allow 512).
const QUERY_CHARS_MAX: usize = 1_024;

/// Every search runs read-only under a time limit; a query still too costly (a phrase of
/// common words over a large corpus) is cancelled and retried as plain words. It is always
/// planned for its own text: how many rows a word matches decides the plan (a sequential
/// pass for a word in every document, the GIN index for a rare one), and a generic plan of
/// the prepared statement would pick one for every word.
pub(crate) const BOUNDED_READ: &str = "BEGIN READ ONLY; SET LOCAL statement_timeout = 1000; \
     SET LOCAL plan_cache_mode = force_custom_plan";

/// SQLSTATE of a statement cancelled by `statement_timeout`.
pub(crate) const QUERY_CANCELED: &str = "57014";

/// The tsquery the snippets mark: an OR of the text's distinct lexemes, each quoted for the
/// tsquery syntax (`'` doubled, `\` escaped), so `ts_headline` stays cheap whatever
/// operators the search used.
const MARKS: &str = r"marks AS (SELECT array_to_string(array(
    SELECT '''' || replace(replace(l, '\', '\\'), '''', '''''') || ''''
    FROM unnest(tsvector_to_array(to_tsvector('simple', $1))) AS l LIMIT 32), ' | ')::tsquery AS query)";

/// The search text as it is sent: NUL (which Postgres text cannot hold) read as a space, and
/// cut to [`QUERY_CHARS_MAX`] characters and [`QUERY_WORDS_MAX`] words.
pub(crate) fn bounded_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(QUERY_CHARS_MAX * 4));
    let (mut words, mut in_word) = (0, false);
    for c in text.chars().take(QUERY_CHARS_MAX) {
        let c = if c == '\0' { ' ' } else { c };
        let word_char = c.is_alphanumeric();
        if word_char && !in_word {
            words += 1;
            if words > QUERY_WORDS_MAX {
                break;
            }
        }
        in_word = word_char;
        out.push(c);
    }
    out
}

/// One of a search's two candidate sets: the matching documents whose title alone matches,
/// and the other matching documents. Each is bounded apart, so a word common in bodies still
/// finds its titles, and the two never overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Candidates {
    /// Matching documents whose title matches.
    Titled,
    /// The other matching documents.
    Untitled,
}

/// The SQL that ranks one candidate set: `$1` the text, then namespace and type when given,
/// then the candidate bound and the limit. It answers the set's best `limit` with their
/// snippets and their `rank`.
pub(crate) fn search_sql(
    parser: Parser,
    set: Candidates,
    namespace: bool,
    doc_type: bool,
) -> String {
    let query = format!("{}('simple', $1)", parser.function());
    let mut n = 1;
    let mut filters = String::new();
    if namespace {
        n += 1;
        filters.push_str(&format!(" AND namespace = ${n}"));
    }
    if doc_type {
        n += 1;
        filters.push_str(&format!(" AND type = ${n}"));
    }
    let (bound, limit) = (n + 1, n + 2);
    let matched = match set {
        // A title match is nearly always a whole-text match (`search` holds the title's
        // words), so the whole-text test only filters the title index's rows: `IS TRUE`
        // keeps the planner from intersecting with the whole-text index, whose bitmap for a
        // word in a third of 100,000 documents took 7 ms to build (docs/perf/2026-12-05.md).
        Candidates::Titled => {
            format!("title_search @@ {query} AND (search @@ {query}) IS TRUE")
        }
        Candidates::Untitled => format!("search @@ {query} AND NOT title_search @@ {query}"),
    };
    format!(
        "WITH candidates AS (SELECT id, namespace, path, search FROM documents \
         WHERE {matched}{filters} LIMIT ${bound}), \
         top AS (SELECT id, namespace, path, ts_rank(search, {query}, 1) AS rank \
         FROM candidates ORDER BY rank DESC, namespace, path LIMIT ${limit}), {MARKS} \
         SELECT d.id, d.namespace, d.path, d.title, d.type, d.status, d.updated_at, \
         ts_headline('simple', left(coalesce(d.body, ''), {SNIPPET_SOURCE_CHARS}), marks.query, \
         'StartSel=[, StopSel=], MaxWords=16, MinWords=5, MaxFragments=2, FragmentDelimiter=\" ... \"') AS snippet, \
         top.rank \
         FROM top JOIN documents d ON d.id = top.id CROSS JOIN marks \
         ORDER BY top.rank DESC, top.namespace, top.path"
    )
}

/// A ranked hit.
type Ranked = (f32, SearchHit);

fn ranked(row: PgRow) -> Result<Ranked, sqlx::Error> {
    let rank: f32 = row.try_get("rank")?;
    let hit = capsid_store_sql::documents::search_hit(&capsid_store_sql::Row::Postgres(row))?;
    Ok((rank, hit))
}

/// One candidate set's best `max`, in its own bounded read-only transaction on `conn`.
async fn run_set(
    conn: &mut PgConnection,
    parser: Parser,
    set: Candidates,
    text: &str,
    filters: (Option<&str>, Option<&str>),
    max: usize,
) -> Result<Vec<Ranked>, sqlx::Error> {
    let (namespace, doc_type) = filters;
    let sql = search_sql(parser, set, namespace.is_some(), doc_type.is_some());
    let mut query = sqlx::query(AssertSqlSafe(sql)).bind(text);
    if let Some(namespace) = namespace {
        query = query.bind(namespace);
    }
    if let Some(doc_type) = doc_type {
        query = query.bind(doc_type);
    }
    let mut tx = conn.begin_with(BOUNDED_READ).await?;
    let rows = query
        .bind(CANDIDATES_MAX)
        .bind(limit(max))
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    rows.into_iter().map(ranked).collect()
}

/// How long a search waits for a second connection the pool may still open (a quiet pool keeps
/// few), before it ranks both sets on its first.
const SECOND_CONNECTION_WAIT: Duration = Duration::from_millis(100);

/// A second connection for a search: an idle one, or a new one when the pool has room for it
/// and it comes within [`SECOND_CONNECTION_WAIT`]; `None` when the pool is busy.
async fn second_connection(pool: &PgPool) -> Option<PoolConnection<Postgres>> {
    if let Some(conn) = pool.try_acquire() {
        return Some(conn);
    }
    if pool.size() >= pool.options().get_max_connections() {
        return None;
    }
    tokio::time::timeout(SECOND_CONNECTION_WAIT, pool.acquire())
        .await
        .ok()?
        .ok()
}

/// Both candidate sets, merged into the order one statement over both gave. When a second
/// pooled connection is free at once, the two are ranked at the same time on two backends (in
/// one statement the two scans ran one after the other, and Postgres's own parallel plan
/// passed every candidate's vector through a `Gather`, slower still); both are awaited to the
/// end, so neither connection goes back mid-statement. When none is free, they run one after
/// the other on one connection: a search never waits long for a second.
async fn run(
    pool: &PgPool,
    parser: Parser,
    text: &str,
    filters: (Option<&str>, Option<&str>),
    max: usize,
) -> Result<Vec<SearchHit>, sqlx::Error> {
    let mut first = pool.acquire().await?;
    let (titled, untitled) = match second_connection(pool).await {
        Some(mut second) => {
            let (titled, untitled) = tokio::join!(
                run_set(&mut first, parser, Candidates::Titled, text, filters, max),
                run_set(
                    &mut second,
                    parser,
                    Candidates::Untitled,
                    text,
                    filters,
                    max
                ),
            );
            (titled?, untitled?)
        }
        None => (
            run_set(&mut first, parser, Candidates::Titled, text, filters, max).await?,
            run_set(&mut first, parser, Candidates::Untitled, text, filters, max).await?,
        ),
    };
    Ok(merge(titled, untitled, max))
}

/// The best `max` of two ranked sets: rank first, then namespace and path in byte order (the
/// columns' "C" collation), as `ORDER BY rank DESC, namespace, path` over both would give.
/// A document in both (its title changed between the two statements) is answered once.
fn merge(titled: Vec<Ranked>, untitled: Vec<Ranked>, max: usize) -> Vec<SearchHit> {
    let mut all: Vec<Ranked> = titled.into_iter().chain(untitled).collect();
    all.sort_by(|(rank_a, a), (rank_b, b)| {
        rank_b
            .total_cmp(rank_a)
            .then_with(|| a.namespace.cmp(&b.namespace))
            .then_with(|| a.path.cmp(&b.path))
    });
    let mut seen = std::collections::HashSet::new();
    all.into_iter()
        .map(|(_, hit)| hit)
        .filter(|hit| seen.insert(hit.id))
        .take(max)
        .collect()
}

/// `DocumentStore::search_documents`: blank text finds nothing without asking; a query the
/// database refuses or cancels is retried with `plainto_tsquery`, and a second refusal
/// finds nothing.
pub(crate) async fn search(
    pool: &PgPool,
    text: &str,
    namespace: Option<&str>,
    doc_type: Option<&str>,
    max: usize,
) -> StoreResult<Vec<SearchHit>> {
    let text = bounded_text(text);
    if text.trim().is_empty() || max == 0 {
        return Ok(Vec::new());
    }
    for parser in [Parser::Web, Parser::Plain] {
        match run(pool, parser, &text, (namespace, doc_type), max).await {
            Ok(hits) => return Ok(hits),
            // The text refused or the statement cancelled; not a lost connection or a
            // restarting server, which the caller hears as such.
            Err(refusal @ sqlx::Error::Database(_)) if unavailable(&refusal).is_none() => {
                tracing::warn!(error = %refusal, ?parser, "search text refused or cancelled by Postgres");
            }
            Err(other) => return Err(translate(other)),
        }
    }
    tracing::warn!("search gave up; answering with no hits");
    Ok(Vec::new())
}

/// `StoreHealth::fts_probe`: how many documents match the word(s) `term` (0 when counting
/// them would take too long).
pub(crate) async fn count_matches(pool: &PgPool, term: &str) -> StoreResult<u64> {
    let term = bounded_text(term);
    if term.trim().is_empty() {
        return Ok(0);
    }
    let counted = async {
        let mut tx = pool.begin_with(BOUNDED_READ).await?;
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM documents WHERE search @@ plainto_tsquery('simple', $1)",
        )
        .bind(term)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(n)
    };
    match counted.await {
        Ok(n) => u64::try_from(n).map_err(|_| StoreError::Backend("negative count".to_owned())),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some(QUERY_CANCELED) => {
            tracing::warn!("full-text probe cancelled after its time limit");
            Ok(0)
        }
        Err(other) => Err(translate(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_text_is_bounded_in_words_and_characters() {
        assert_eq!(bounded_text("zebra\0grazing"), "zebra grazing");
        let many = "w ".repeat(100);
        assert_eq!(
            bounded_text(&many).split_whitespace().count(),
            QUERY_WORDS_MAX
        );
        let hyphens = "a-".repeat(4000);
        assert_eq!(bounded_text(&hyphens).matches('a').count(), QUERY_WORDS_MAX);
        assert_eq!(
            bounded_text(&"(".repeat(5000)).chars().count(),
            QUERY_CHARS_MAX
        );
        assert_eq!(
            bounded_text("\"lease renewal\" -manual"),
            "\"lease renewal\" -manual"
        );
        assert_eq!(
            bounded_text(&"é".repeat(2000)).chars().count(),
            QUERY_CHARS_MAX
        );
    }

    #[test]
    fn parameters_are_numbered_in_bind_order() {
        for set in [Candidates::Titled, Candidates::Untitled] {
            let sql = search_sql(Parser::Web, set, true, true);
            assert!(sql.contains("websearch_to_tsquery('simple', $1)"), "{sql}");
            assert!(
                sql.contains(" AND namespace = $2 AND type = $3 LIMIT $4)"),
                "{sql}"
            );
            assert!(sql.contains("namespace, path LIMIT $5)"), "{sql}");
            let sql = search_sql(Parser::Plain, set, false, false);
            assert!(sql.contains("plainto_tsquery('simple', $1)"), "{sql}");
            assert!(!sql.contains("namespace = $"), "{sql}");
            assert!(sql.contains(" LIMIT $2)"), "{sql}");
            assert!(sql.contains("namespace, path LIMIT $3)"), "{sql}");
            assert!(!sql.contains("$4"), "{sql}");
        }
        assert!(
            search_sql(Parser::Web, Candidates::Untitled, false, false)
                .contains("AND NOT title_search @@")
        );
        assert!(
            !search_sql(Parser::Web, Candidates::Titled, false, false).contains("NOT title_search")
        );
    }

    fn hit(id: i64, namespace: &str, path: &str) -> SearchHit {
        SearchHit {
            id,
            namespace: namespace.to_owned(),
            path: path.to_owned(),
            title: None,
            doc_type: "note".to_owned(),
            status: "active".to_owned(),
            updated_at: capsid_core::time::Timestamp::parse("2026-03-01T09:00:00.000Z")
                .expect("time"),
            snippet: String::new(),
        }
    }

    #[test]
    fn merged_sets_keep_rank_then_namespace_then_path_and_each_document_once() {
        let titled = vec![(0.5, hit(1, "b", "x.md")), (0.2, hit(2, "a", "z.md"))];
        let untitled = vec![
            (0.5, hit(3, "a", "y.md")),
            (0.5, hit(4, "b", "W.md")),
            (0.2, hit(1, "b", "x.md")),
            (0.1, hit(5, "a", "a.md")),
            (0.1, hit(6, "a", "Z.md")),
        ];
        let paths = |hits: Vec<SearchHit>| -> Vec<(i64, String)> {
            hits.into_iter().map(|h| (h.id, h.path)).collect()
        };
        assert_eq!(
            paths(merge(titled.clone(), untitled.clone(), 25)),
            [
                (3, "y.md".to_owned()),
                (4, "W.md".to_owned()),
                (1, "x.md".to_owned()),
                (2, "z.md".to_owned()),
                (6, "Z.md".to_owned()),
                (5, "a.md".to_owned()),
            ],
            "rank first, then namespace, then path in byte order (uppercase first, as `C` sorts)"
        );
        assert_eq!(paths(merge(titled, untitled, 2)).len(), 2);
    }
}
