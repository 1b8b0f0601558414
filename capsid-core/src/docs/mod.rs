//! Documents (reference 2.1, 2.2, 2.7, 4.2-4.5): the rules the document, lint and prompt
//! tools apply between the store's reads and writes, as pure functions over plain rows.
//!
//! The application service reads rows, calls these functions, and hands the result to the
//! store (for writes) or to the wire (for answers). Nothing here reads a clock or a store.

pub mod bounds;
pub mod brief;
pub mod counts;
pub mod document;
pub mod glob;
pub mod kinds;
pub mod links;
pub mod lint;
pub mod mutations;
pub mod normalize;
pub mod packets;
pub mod prompts;
pub mod truth_report;
pub mod versions;
pub mod write;
pub mod write_mode;

pub use document::{Document, DocumentSummary, ListBounds, ReadView, bound_rows};
pub use kinds::{DocStatus, DocType, KindError, LinkType};
pub use links::{Link, LinkError, parse_links};
pub use normalize::{normalize_body, normalize_title};
pub use write::{WriteError, WriteOutcome, check_if_match, check_meta, prepare_write};
pub use write_mode::{WriteInput, WriteMode, WriteModeError, assemble_body, needs_confirmation};

use std::cmp::Ordering;

use crate::time::{HOUR_MS, Timestamp};

/// Page size of `list` and `find`.
pub const MAX_ROWS: usize = 500;
/// Hits returned by `search`.
pub const SEARCH_ROWS: usize = 25;
/// The most hits one `search` page returns (`limit`).
pub const SEARCH_PAGE_MAX: usize = 100;
/// How deep `search` pages reach: the best this many matches (a cursor past them is refused;
/// a more specific query finds the rest).
pub const SEARCH_DEPTH: usize = 500;
/// Versions listed by `history`.
pub const HISTORY_ROWS: usize = 100;

/// The prefix under which consolidated raw material lives; only it takes a document out of
/// the lint loop, the unconsolidated counter, open tasks and `brief` (status never does).
pub const ARCHIVE_PREFIX: &str = "archive/";

/// The namespace holding the shared rules (`conventions.md`, `repo-structure.md`,
/// `schema.md`) and the signed policies.
pub const CAPSID_NAMESPACE: &str = "capsid";

/// How recent a prior write must be for an overwrite without `if_match` to carry a warning.
pub const CONCURRENT_EDIT_WINDOW_MS: i64 = HOUR_MS;

/// Whether `path` is consolidated history (under `archive/`).
pub fn is_archived(path: &str) -> bool {
    path.starts_with(ARCHIVE_PREFIX)
}

/// The warning `write` adds when it overwrote a document last written within the hour and
/// the caller passed no `if_match`. Warn, never refuse: two writes inside an hour are
/// usually one agent working, but the warning reaches the client that did not know to ask.
///
/// `updated_at` is the stored row's time (`None` on create); a time in the future or older
/// than an hour gives no warning, as in the Worker.
pub fn concurrency_warning(
    updated_at: Option<Timestamp>,
    now: Timestamp,
    if_match_given: bool,
) -> Option<String> {
    let updated_at = updated_at?;
    if if_match_given {
        return None;
    }
    let age = now.millis_since(updated_at);
    if !(0..=CONCURRENT_EDIT_WINDOW_MS).contains(&age) {
        return None;
    }
    Some(format!(
        "possible concurrent edit: this document was last written at {updated_at}, within the last hour, \
         and no if_match was passed. The write went through and the prior body was snapshotted to \
         document_versions, so nothing is lost, but if another session is working on this document \
         your write may have just replaced its changes. Pass if_match (the sha256 this response \
         returns) on the next write to make that a refusal instead of a warning."
    ))
}

/// The retry `search` makes when the engine refuses a query's syntax: the whole query as
/// one quoted phrase, inner `"` doubled.
pub fn search_phrase(query: &str) -> String {
    format!("\"{}\"", query.replace('"', "\"\""))
}

/// Whitespace as JavaScript's `\s` sees it. Rust's `char::is_whitespace` differs in two code
/// points (it counts U+0085 and not U+FEFF), and the rules here must cut where the Worker's
/// regexes cut.
pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// The same set as a regex character class body, for patterns ported from the Worker.
pub(crate) const JS_SPACE_CLASS: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// Orders two times newest first.
pub(crate) fn newest_first(a: &Timestamp, b: &Timestamp) -> Ordering {
    b.cmp(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MINUTE_MS;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    #[test]
    fn concurrency_warning_fires_inside_the_hour_without_if_match() {
        let now = at("2026-11-30T12:00:00Z");
        let cases = [
            (Some(now.plus_millis(-30 * MINUTE_MS)), false, true),
            (Some(now.plus_millis(-HOUR_MS)), false, true),
            (Some(now), false, true),
            (Some(now.plus_millis(-HOUR_MS - 1)), false, false),
            (Some(now.plus_millis(1)), false, false),
            (Some(now.plus_millis(-MINUTE_MS)), true, false),
            (None, false, false),
        ];
        for (updated_at, if_match, fires) in cases {
            let warning = concurrency_warning(updated_at, now, if_match);
            assert_eq!(
                warning.is_some(),
                fires,
                "{updated_at:?} if_match={if_match}"
            );
        }
        let text = concurrency_warning(Some(now.plus_millis(-MINUTE_MS)), now, false).unwrap();
        assert!(text.contains("2026-11-30T11:59:00.000Z"), "{text}");
        assert!(text.contains("if_match"), "{text}");
    }

    #[test]
    fn js_space_differs_from_rust_where_the_worker_does() {
        assert!(is_js_space('\u{FEFF}'));
        assert!(!is_js_space('\u{85}'));
        assert!(is_js_space('\u{2007}'));
        assert!(!is_js_space('x'));
    }

    #[test]
    fn newest_first_orders_instants_whatever_form_they_were_stored_in() {
        assert_eq!(
            newest_first(&at("2026-01-02 00:00:00"), &at("2026-01-01T23:00:00.000Z")),
            Ordering::Less
        );
        assert_eq!(
            newest_first(&at("2026-01-01T00:00:00Z"), &at("2026-01-02 00:00:00")),
            Ordering::Greater
        );
        assert_eq!(
            newest_first(&at("2026-01-01T00:00:00Z"), &at("2026-01-01T00:00:00.000Z")),
            Ordering::Equal
        );
    }

    #[test]
    fn search_phrase_quotes_and_doubles_inner_quotes() {
        assert_eq!(search_phrase("a AND (b"), "\"a AND (b\"");
        assert_eq!(search_phrase(r#"say "hi""#), r#""say ""hi""""#);
        assert_eq!(search_phrase(""), "\"\"");
    }

    #[test]
    fn archive_prefix_is_the_only_exclusion() {
        assert!(is_archived("archive/notes/x.md"));
        assert!(!is_archived("notes/archive/x.md"));
        assert!(!is_archived("archived.md"));
    }
}
