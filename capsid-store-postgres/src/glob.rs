//! SQLite `GLOB` semantics on Postgres: a glob becomes an anchored POSIX (ARE) regex, plus
//! the literal prefix every match starts with, so `find` can range-scan the path index.
//!
//! SQLite's rules (`patternCompare` in `func.c`): `*` matches any run of characters, `?`
//! exactly one, `[...]` one character of a set (`^` first inverts it, `]` first is literal,
//! `a-z` is a range when `-` follows a single character and is not last; a reversed range
//! matches nothing beyond its first character); everything else, backslash included, is
//! literal and case-sensitive. A pattern with an unterminated `[` matches nothing.

/// A glob translated for Postgres.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobRegex {
    /// An anchored ARE regex (`^...$`) matching exactly what the glob matches.
    pub regex: String,
    /// The literal text before the first wildcard: every match starts with it.
    pub prefix: String,
}

impl GlobRegex {
    /// The smallest string greater than every string that starts with `prefix`, in byte
    /// order; `None` when there is no such bound (an empty prefix).
    pub fn prefix_upper_bound(&self) -> Option<String> {
        let mut chars: Vec<char> = self.prefix.chars().collect();
        while let Some(last) = chars.pop() {
            if let Some(next) = successor(last) {
                chars.push(next);
                return Some(chars.into_iter().collect());
            }
        }
        None
    }
}

/// The next Unicode scalar value after `c`, skipping surrogates.
fn successor(c: char) -> Option<char> {
    let mut code = u32::from(c) + 1;
    if (0xD800..=0xDFFF).contains(&code) {
        code = 0xE000;
    }
    char::from_u32(code)
}

/// Translates `glob`; `None` when it can match nothing at all (an unterminated `[`, or a
/// NUL, which no stored path holds).
pub fn to_regex(glob: &str) -> Option<GlobRegex> {
    if glob.contains('\0') {
        return None;
    }
    let mut regex = String::with_capacity(glob.len() * 2 + 2);
    let mut prefix = String::new();
    let mut literal_run = true;
    regex.push('^');
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                literal_run = false;
                // Runs of `*` are one `*`.
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                regex.push_str(".*");
            }
            '?' => {
                literal_run = false;
                regex.push('.');
            }
            '[' => {
                literal_run = false;
                let class = parse_class(&mut chars)?;
                regex.push_str(&class);
            }
            other => {
                if literal_run {
                    prefix.push(other);
                }
                push_escaped(&mut regex, other);
            }
        }
    }
    regex.push('$');
    Some(GlobRegex { regex, prefix })
}

/// Parses the set after a `[` into an ARE bracket expression; `None` if unterminated.
fn parse_class(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let mut out = String::from("[");
    let mut next = chars.next()?;
    if next == '^' {
        out.push('^');
        next = chars.next()?;
    }
    // A `]` right after `[` or `[^` is a member, and is no range start.
    let mut prior: Option<char> = None;
    if next == ']' {
        push_escaped(&mut out, ']');
        next = chars.next()?;
    }
    while next != ']' {
        match (next, prior) {
            ('-', Some(low)) if chars.peek().is_some_and(|&c| c != ']') => {
                let high = chars.next()?;
                // `low` is already in the set as a member; a reversed range adds nothing.
                if low <= high {
                    out.push('-');
                    push_escaped(&mut out, high);
                }
                prior = None;
            }
            (member, _) => {
                push_escaped(&mut out, member);
                prior = Some(member);
            }
        }
        next = chars.next()?;
    }
    out.push(']');
    Some(out)
}

/// Appends `c` so the regex reads it literally, inside or outside a bracket expression:
/// ASCII punctuation gets a backslash (an ARE escape of a non-alphanumeric character is that
/// character), letters, digits and non-ASCII characters are never special.
fn push_escaped(out: &mut String, c: char) {
    if c.is_ascii() && !c.is_ascii_alphanumeric() {
        out.push('\\');
    }
    out.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regex(glob: &str) -> Option<String> {
        to_regex(glob).map(|g| g.regex)
    }

    #[test]
    fn wildcards_and_literals() {
        assert_eq!(regex("notes/*.md").unwrap(), r"^notes\/.*\.md$");
        assert_eq!(regex("a?c").unwrap(), "^a.c$");
        assert_eq!(regex("***").unwrap(), "^.*$");
        assert_eq!(regex(r"a\b").unwrap(), r"^a\\b$");
        assert_eq!(regex("(x)+{1}|$^").unwrap(), r"^\(x\)\+\{1\}\|\$\^$");
        assert_eq!(regex("é*").unwrap(), "^é.*$");
    }

    #[test]
    fn classes_follow_sqlite() {
        assert_eq!(regex("[abc]").unwrap(), "^[abc]$");
        assert_eq!(regex("[^abc]").unwrap(), "^[^abc]$");
        assert_eq!(regex("[a-z]").unwrap(), "^[a-z]$");
        assert_eq!(regex("[]]").unwrap(), r"^[\]]$");
        assert_eq!(regex("[^]]").unwrap(), r"^[^\]]$");
        assert_eq!(regex("[]-a]").unwrap(), r"^[\]\-a]$");
        assert_eq!(regex("[a-]").unwrap(), r"^[a\-]$");
        assert_eq!(regex("[-a]").unwrap(), r"^[\-a]$");
        assert_eq!(regex("[a-c-e]").unwrap(), r"^[a-c\-e]$");
        // A reversed range keeps only its first character.
        assert_eq!(regex("[z-a]").unwrap(), "^[z]$");
        assert_eq!(regex(r"[\]").unwrap(), r"^[\\]$");
        assert_eq!(regex("[[]").unwrap(), r"^[\[]$");
        assert_eq!(regex("[!-/]").unwrap(), r"^[\!-\/]$");
    }

    #[test]
    fn unterminated_classes_and_nul_match_nothing() {
        assert_eq!(regex("a["), None);
        assert_eq!(regex("[]"), None);
        assert_eq!(regex("[^]"), None);
        assert_eq!(regex("[abc"), None);
        assert_eq!(regex("[a-"), None);
        assert_eq!(regex("a\0"), None);
    }

    #[test]
    fn prefixes_stop_at_the_first_wildcard() {
        let g = to_regex("notes/2026-*.md").unwrap();
        assert_eq!(g.prefix, "notes/2026-");
        assert_eq!(g.prefix_upper_bound().as_deref(), Some("notes/2026."));
        assert_eq!(to_regex("*.md").unwrap().prefix, "");
        assert_eq!(to_regex("*.md").unwrap().prefix_upper_bound(), None);
        assert_eq!(to_regex("a[b]").unwrap().prefix, "a");
        assert_eq!(to_regex("ab?").unwrap().prefix, "ab");
        assert_eq!(to_regex("exact.md").unwrap().prefix, "exact.md");
    }

    #[test]
    fn upper_bounds_carry_past_the_last_scalar_value() {
        let g = GlobRegex {
            regex: String::new(),
            prefix: format!("a{}", char::MAX),
        };
        assert_eq!(g.prefix_upper_bound().as_deref(), Some("b"));
        let g = GlobRegex {
            regex: String::new(),
            prefix: "\u{D7FF}".into(),
        };
        assert_eq!(g.prefix_upper_bound().as_deref(), Some("\u{E000}"));
        let g = GlobRegex {
            regex: String::new(),
            prefix: char::MAX.to_string(),
        };
        assert_eq!(g.prefix_upper_bound(), None);
    }
}
