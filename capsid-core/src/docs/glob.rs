//! How much work a `find` glob may ask for (SPEC 8). Matching a glob against a path costs
//! about the path's length times the glob's wildcards (SQLite's `patternCompare` retries
//! every position after a `*`, and a `[...]` set is scanned for every character it is tried
//! on), so a glob of hundreds of wildcards or a set of hundreds of characters turns one
//! `find` into minutes of matching. A glob is refused past these bounds before any store is
//! asked; Postgres runs `find` under a statement timeout as well.

/// Most wildcards one glob may hold: `*` runs (counted once), `?` and `[...]` sets.
pub const GLOB_WILDCARDS_MAX: usize = 8;
/// Most characters inside one `[...]` set.
pub const GLOB_SET_CHARS_MAX: usize = 32;

/// Why `glob` asks for more matching work than `find` allows, naming the rule; `None` when
/// it is within the bounds. (An unterminated `[` matches nothing and is left to the store.)
pub fn glob_work_problem(glob: &str) -> Option<String> {
    let mut wildcards = 0usize;
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                wildcards += 1;
            }
            '?' => wildcards += 1,
            '[' => {
                wildcards += 1;
                // SQLite: `^` first inverts, a `]` right after `[` or `[^` is a member.
                let mut members = 0usize;
                if chars.peek() == Some(&'^') {
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    chars.next();
                    members += 1;
                }
                for m in chars.by_ref() {
                    if m == ']' {
                        break;
                    }
                    members += 1;
                }
                if members > GLOB_SET_CHARS_MAX {
                    return Some(format!(
                        "glob has a [...] set of {members} characters; the limit is {GLOB_SET_CHARS_MAX}, because a set is scanned for every character of every path it is tried on. Use a range such as [a-z]."
                    ));
                }
            }
            _ => {}
        }
    }
    (wildcards > GLOB_WILDCARDS_MAX).then(|| {
        format!(
            "glob has {wildcards} wildcards (* runs, ?, [...] sets); the limit is {GLOB_WILDCARDS_MAX}, because each one multiplies the work of matching every path. Use a literal prefix such as notes/, or a namespace filter."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_globs_pass_and_bombs_are_refused() {
        for ok in [
            "*",
            "*.md",
            "notes/2026-??-??.md",
            "*/*/*.md",
            "[a-z]*",
            "[]]x",
            "[^]]x",
            "***a",
            "exact.md",
            "a[",
            "????????",
        ] {
            assert_eq!(glob_work_problem(ok), None, "{ok}");
        }
        for bomb in [
            "*a".repeat(9),
            "?".repeat(9),
            "[a]".repeat(9),
            format!("*[{}]", "b".repeat(33)),
            format!("[^{}]", "b".repeat(33)),
        ] {
            let why = glob_work_problem(&bomb).unwrap_or_else(|| panic!("{bomb}"));
            assert!(
                why.starts_with("glob has") && why.contains("limit"),
                "{why}"
            );
        }
        assert_eq!(glob_work_problem(&format!("[{}]", "b".repeat(32))), None);
        assert_eq!(glob_work_problem(&"*a".repeat(8)), None);
    }
}
