//! Shared-context keys: short names for standing facts every namespace may read (a staging
//! URL, a schema version), safe in a URL path segment.

use super::super::paths::js_len;

/// Longest key.
pub const KEY_MAX: usize = 128;
/// Longest value.
pub const VALUE_MAX: usize = 8192;

/// Why a key was refused; `None` when it is fine: 1 to 128 characters from `A-Z a-z 0-9 . _ : -`,
/// starting with a letter or digit.
pub fn key_problem(key: &str) -> Option<String> {
    if key.is_empty() {
        return Some("key: is empty".to_owned());
    }
    if js_len(key) > KEY_MAX {
        return Some(format!(
            "key: is {} characters long; the limit is {KEY_MAX}",
            js_len(key)
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-');
    if !key.starts_with(|c: char| c.is_ascii_alphanumeric()) || !key.chars().all(allowed) {
        return Some(format!(
            "key: {key:?} must start with a letter or digit and hold only letters, digits, '.', '_', ':' and '-'"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_short_url_safe_names() {
        for ok in [
            "staging-url",
            "schema.version",
            "a",
            "ns:alpha_1",
            &"k".repeat(128),
        ] {
            assert_eq!(key_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "-x",
            ".x",
            "a/b",
            "a b",
            "ü",
            "a?b",
            &"k".repeat(129),
            "a\u{0}",
        ] {
            let why = key_problem(bad).unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert!(why.starts_with("key:"), "{why}");
        }
    }
}
