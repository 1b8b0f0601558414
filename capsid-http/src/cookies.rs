//! Cookies, small and strict: reading one from the `Cookie` header and writing `Set-Cookie`
//! with `HttpOnly`, a `SameSite` policy, a path, a lifetime, and `Secure` on https.

use axum::http::{HeaderMap, HeaderValue, header};

/// The value of cookie `name`, if the request carries it exactly once.
pub fn get(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut found = None;
    for value in headers.get_all(header::COOKIE) {
        let Ok(text) = value.to_str() else { continue };
        for pair in text.split(';') {
            if let Some((k, v)) = pair.trim().split_once('=')
                && k == name
            {
                if found.is_some() {
                    return None;
                }
                found = Some(v.trim_matches('"').to_owned());
            }
        }
    }
    found.filter(|v| !v.is_empty())
}

/// `SameSite` policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SameSite {
    /// Sent on top-level navigations from other sites (login round trips).
    Lax,
}

/// A `Set-Cookie` value.
pub fn set(
    name: &str,
    value: &str,
    path: &str,
    max_age_secs: i64,
    same_site: SameSite,
    secure: bool,
) -> HeaderValue {
    let site = match same_site {
        SameSite::Lax => "Lax",
    };
    let secure = if secure { "; Secure" } else { "" };
    let text = format!(
        "{name}={value}; Path={path}; Max-Age={max_age_secs}; HttpOnly; SameSite={site}{secure}"
    );
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("invalid=; Max-Age=0"))
}

/// A `Set-Cookie` value that removes cookie `name` at `path`.
pub fn clear(name: &str, path: &str, secure: bool) -> HeaderValue {
    set(name, "", path, 0, SameSite::Lax, secure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_one_cookie_and_refuses_duplicates() {
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, HeaderValue::from_static("a=1; b=two"));
        assert_eq!(get(&h, "b").as_deref(), Some("two"));
        assert_eq!(get(&h, "c"), None);
        h.append(header::COOKIE, HeaderValue::from_static("b=three"));
        assert_eq!(get(&h, "b"), None, "a duplicated cookie is ambiguous");
    }

    #[test]
    fn writes_strict_attributes() {
        let v = set("s", "v", "/console", 60, SameSite::Lax, true);
        assert_eq!(
            v.to_str().unwrap(),
            "s=v; Path=/console; Max-Age=60; HttpOnly; SameSite=Lax; Secure"
        );
        assert!(
            clear("s", "/", false)
                .to_str()
                .unwrap()
                .contains("Max-Age=0")
        );
    }
}
