//! Dash normalization (reference 4.5): no document stores a wide dash, whichever client
//! wrote it. Applied by `write` to titles and bodies (never to `meta` bodies, restores or
//! repo files).
//!
//! Prose separators become a comma and a space. Titles and markdown heading lines take a
//! spaced hyphen instead, so a document's H1 and its title read the same. A numeric en-dash
//! range becomes a plain hyphen. Whitespace around a dash is optional and is swallowed: the
//! Worker's patterns are `\s*[—―]\s*` and `\s*–\s*`, with JavaScript's `\s`.

use std::sync::LazyLock;

use regex::Regex;

use super::JS_SPACE_CLASS;

/// The separator prose lines get.
const PROSE_SEPARATOR: &str = ", ";
/// The separator titles and heading lines get.
const HEADING_SEPARATOR: &str = " - ";

struct Patterns {
    en_range: Regex,
    em_or_bar: Regex,
    en_dash: Regex,
    heading: Regex,
}

static PATTERNS: LazyLock<Option<Patterns>> = LazyLock::new(|| {
    let s = format!("[{JS_SPACE_CLASS}]");
    Some(Patterns {
        // A digit, an en dash, a digit: a range (`2014–2018`), not a separator.
        en_range: Regex::new(&format!("([0-9]){s}*\u{2013}{s}*([0-9])")).ok()?,
        // Em dash (U+2014) or horizontal bar (U+2015), with any whitespace around it.
        em_or_bar: Regex::new(&format!("{s}*[\u{2014}\u{2015}]{s}*")).ok()?,
        // An en dash left over after ranges is used as an em dash.
        en_dash: Regex::new(&format!("{s}*\u{2013}{s}*")).ok()?,
        // A markdown heading: up to three spaces, one to six `#`, then whitespace.
        heading: Regex::new(&format!("^{s}{{0,3}}#{{1,6}}{s}")).ok()?,
    })
});

fn apply_dashes(p: &Patterns, text: &str, separator: &str) -> String {
    let ranged = p.en_range.replace_all(text, "${1}-${2}");
    let spaced = p.em_or_bar.replace_all(&ranged, separator);
    p.en_dash.replace_all(&spaced, separator).into_owned()
}

fn has_wide_dash(text: &str) -> bool {
    text.contains(['\u{2013}', '\u{2014}', '\u{2015}'])
}

/// Normalizes a title: every separator becomes ` - `.
pub fn normalize_title(title: &str) -> String {
    match PATTERNS.as_ref() {
        Some(p) if has_wide_dash(title) => apply_dashes(p, title, HEADING_SEPARATOR),
        _ => title.to_owned(),
    }
}

/// Normalizes a body line by line (split on `\n`): heading lines take ` - `, prose `, `.
pub fn normalize_body(body: &str) -> String {
    let Some(p) = PATTERNS.as_ref().filter(|_| has_wide_dash(body)) else {
        return body.to_owned();
    };
    let mut out = String::with_capacity(body.len());
    for (i, line) in body.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        // Only lines with a wide dash change; the rest are copied (most of a long body).
        if !has_wide_dash(line) {
            out.push_str(line);
            continue;
        }
        let separator = if p.heading.is_match(line) {
            HEADING_SEPARATOR
        } else {
            PROSE_SEPARATOR
        };
        out.push_str(&apply_dashes(p, line, separator));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn patterns_compile() {
        assert!(PATTERNS.is_some());
    }

    #[test]
    fn prose_lines() {
        let cases = [
            ("one — two", "one, two"),
            ("one—two", "one, two"),
            ("one  —  two", "one, two"),
            ("one ― two", "one, two"),
            ("one – two", "one, two"),
            ("one –two", "one, two"),
            ("ends —", "ends, "),
            ("— starts", ", starts"),
            ("a — b — c", "a, b, c"),
            ("carriage —\r\nnext", "carriage, \nnext"),
            ("plain - hyphen", "plain - hyphen"),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_body(input), expected, "{input:?}");
        }
    }

    #[test]
    fn heading_lines_take_a_spaced_hyphen() {
        let cases = [
            ("# capsid — core", "# capsid - core"),
            ("   ### a–b", "   ### a - b"),
            ("###### x ― y", "###### x - y"),
            ("    # four spaces — is code", "    # four spaces, is code"),
            ("####### seven — hashes", "####### seven, hashes"),
            ("#tag — not a heading", "#tag, not a heading"),
            (
                "# Title — one\nprose — two\n## Sub — three",
                "# Title - one\nprose, two\n## Sub - three",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_body(input), expected, "{input:?}");
        }
    }

    #[test]
    fn titles_take_a_spaced_hyphen() {
        assert_eq!(normalize_title("capsid — core"), "capsid - core");
        assert_eq!(normalize_title("a―b"), "a - b");
        assert_eq!(normalize_title("a – b"), "a - b");
        assert_eq!(normalize_title("2014–2018 review"), "2014-2018 review");
        assert_eq!(normalize_title(""), "");
    }

    #[test]
    fn numeric_ranges_become_hyphens() {
        let cases = [
            ("pages 3–5", "pages 3-5"),
            ("pages 3 – 5", "pages 3-5"),
            ("2014–2018", "2014-2018"),
            // Ranges do not overlap: the second dash has lost its left digit.
            ("1–2–3", "1-2, 3"),
            ("a–5", "a, 5"),
            // Only the en dash makes a range; an em dash between digits is a separator.
            ("3—5", "3, 5"),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_body(input), expected, "{input:?}");
        }
    }

    proptest! {
        #[test]
        fn text_without_wide_dashes_is_unchanged(text in "[^\u{2013}\u{2014}\u{2015}]*") {
            prop_assert_eq!(normalize_body(&text), text.clone());
            prop_assert_eq!(normalize_title(&text), text);
        }

        #[test]
        fn normalization_is_idempotent_and_removes_every_wide_dash(
            text in "([a-z0-9#\n ]|\u{2013}|\u{2014}|\u{2015}|\t|\r)*"
        ) {
            let once = normalize_body(&text);
            prop_assert!(!has_wide_dash(&once));
            prop_assert_eq!(normalize_body(&once), once.clone());
            let title = normalize_title(&text);
            prop_assert!(!has_wide_dash(&title));
            prop_assert_eq!(normalize_title(&title), title);
        }
    }
}
