//! Redirect URIs: what may be registered, and when a presented one matches a registration.
//!
//! A registered redirect URI is `https://` on any host, or `http://` on a loopback host
//! (RFC 8252 §7.3), written in plain printable ASCII: no whitespace or control characters
//! anywhere, a lower-case scheme and host, no user-info, no fragment. Tricks that slip past
//! blacklists (mixed-case schemes, leading blanks, tabs and NULs, `javascript:`, user-info
//! `@`) fail these rules instead of being normalised away. At authorize and token time the
//! presented URI must equal a registered one byte for byte; the only exception is the port
//! of a loopback registration, which a native client picks at run time.

/// The longest redirect URI accepted.
pub const MAX_REDIRECT_URI: usize = 512;
/// The most redirect URIs one client may register.
pub const MAX_REDIRECT_URIS: usize = 10;

const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// The parts of a valid redirect URI.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Parts<'a> {
    https: bool,
    host: &'a str,
    port: Option<&'a str>,
    rest: &'a str,
}

fn split(uri: &str) -> Result<Parts<'_>, String> {
    if uri.is_empty() {
        return Err("the redirect URI is empty".into());
    }
    if uri.len() > MAX_REDIRECT_URI {
        return Err(format!(
            "the redirect URI is longer than {MAX_REDIRECT_URI} bytes"
        ));
    }
    if let Some(c) = uri.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "the redirect URI contains {c:?}: whitespace, control and non-ASCII characters are not allowed"
        ));
    }
    let (https, rest) = if let Some(r) = uri.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = uri.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(
            "the redirect URI must start with https:// (or http:// on a loopback host), in lower case"
                .into(),
        );
    };
    if uri.contains('#') {
        return Err("the redirect URI must not carry a fragment".into());
    }
    if uri.contains('\\') {
        return Err("the redirect URI must not contain a backslash".into());
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') {
        return Err("the redirect URI must not carry user-info (@)".into());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let close = v6
            .find(']')
            .ok_or("the redirect URI's IPv6 host is not closed")?;
        let host = &authority[..close + 2];
        match &authority[close + 2..] {
            "" => (host, None),
            p => (
                host,
                Some(p.strip_prefix(':').ok_or("bad text after the IPv6 host")?),
            ),
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("the redirect URI has no host".into());
    }
    if !host.starts_with('[')
        && !host
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return Err(
            "the redirect URI's host must be lower-case letters, digits, dots and hyphens".into(),
        );
    }
    if let Some(p) = port
        && !(p.len() <= 5
            && !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=65535).contains(&n)))
    {
        return Err(format!(
            "the redirect URI's port {p:?} is not a port number"
        ));
    }
    Ok(Parts {
        https,
        host,
        port,
        rest: path,
    })
}

fn is_loopback(host: &str) -> bool {
    LOOPBACK_HOSTS.contains(&host)
}

/// Whether `uri` may be registered; the error names the rule it breaks.
pub fn validate_redirect_uri(uri: &str) -> Result<(), String> {
    let parts = split(uri)?;
    if !parts.https && !is_loopback(parts.host) {
        return Err(format!(
            "http:// redirect URIs are accepted only on a loopback host ({}); use https://",
            LOOPBACK_HOSTS.join(", ")
        ));
    }
    Ok(())
}

/// Whether the presented `uri` matches the registered `registered`: byte for byte, except
/// that a loopback `http://` registration accepts any port (RFC 8252 §7.3).
pub fn redirect_matches(registered: &str, uri: &str) -> bool {
    if registered == uri {
        return split(uri).is_ok();
    }
    match (split(registered), split(uri)) {
        (Ok(r), Ok(p)) => {
            !r.https
                && !p.https
                && is_loopback(r.host)
                && r.host == p.host
                && r.rest == p.rest
                && p.port.is_some()
        }
        _ => false,
    }
}

/// The registered redirect URI `uri` matches, if any.
pub fn match_registered<'a>(registered: &'a [String], uri: &str) -> Option<&'a str> {
    registered
        .iter()
        .find(|r| redirect_matches(r, uri))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_and_http_on_loopback_only() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "https://example.com:8443/cb?x=1",
            "http://127.0.0.1:3000/callback",
            "http://localhost/callback",
            "http://[::1]:9/cb",
        ] {
            assert_eq!(validate_redirect_uri(ok), Ok(()), "{ok}");
        }
        for bad in [
            "http://example.com/cb",
            "http://127.0.0.1.evil.com/cb",
            "ftp://example.com/cb",
            "cursor://callback",
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "data:text/html,x",
            "//example.com/cb",
            "example.com/cb",
            "",
        ] {
            assert!(validate_redirect_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scheme_case_whitespace_and_control_tricks_are_refused() {
        for bad in [
            "HTTPS://example.com/cb",
            "Https://example.com/cb",
            "hTTp://127.0.0.1/cb",
            " https://example.com/cb",
            "https://example.com/cb ",
            "\thttps://example.com/cb",
            "https://example.com/c b",
            "https://example.com/\ncb",
            "https://example.com/cb\r\n",
            "\u{0}https://example.com/cb",
            "https://exa\u{0}mple.com/cb",
            "java\tscript:alert(1)",
            "https://EXAMPLE.com/cb",
            "https://exämple.com/cb",
            "https://example.com/cb\u{7f}",
        ] {
            assert!(validate_redirect_uri(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn userinfo_fragments_and_odd_ports_are_refused() {
        for bad in [
            "https://good.com@evil.com/cb",
            "https://user:pw@example.com/cb",
            "http://127.0.0.1@evil.com/cb",
            "https://example.com/cb#frag",
            "https://example.com:0/cb",
            "https://example.com:99999/cb",
            "https://example.com:80a/cb",
            "https://example.com:/cb",
            "https://example.com\\@evil.com/cb",
            "https:///cb",
        ] {
            assert!(validate_redirect_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn matching_is_exact() {
        let reg = "https://app.example/cb";
        assert!(redirect_matches(reg, reg));
        for other in [
            "https://app.example/cb/",
            "https://app.example/CB",
            "https://app.example%2Fcb",
            "https://app.example/cb?x=1",
            "https://app.example/cb#x",
            "http://app.example/cb",
            "https://APP.example/cb",
            "https://app.example:443/cb",
            "https://evil@app.example/cb",
            "https://app.example/cb%20",
            " https://app.example/cb",
        ] {
            assert!(!redirect_matches(reg, other), "{other}");
        }
    }

    #[test]
    fn loopback_registrations_accept_any_port_but_nothing_else() {
        let reg = "http://127.0.0.1:3000/callback";
        assert!(redirect_matches(reg, "http://127.0.0.1:51234/callback"));
        assert!(redirect_matches(
            "http://localhost/callback",
            "http://localhost:8080/callback"
        ));
        assert!(
            !redirect_matches(reg, "http://localhost:3000/callback"),
            "another host"
        );
        assert!(
            !redirect_matches(reg, "http://127.0.0.1:3000/callback/"),
            "another path"
        );
        assert!(
            !redirect_matches(reg, "https://127.0.0.1:3000/callback"),
            "another scheme"
        );
        assert!(
            !redirect_matches("https://localhost:3000/cb", "https://localhost:4000/cb"),
            "the port exception is for http loopback only"
        );
        let list = vec!["https://a.example/cb".to_owned(), reg.to_owned()];
        assert_eq!(
            match_registered(&list, "http://127.0.0.1:9/callback"),
            Some(reg)
        );
        assert_eq!(match_registered(&list, "https://a.example/cb2"), None);
    }
}
