//! The client's address, for the per-address rate limits: the socket peer, unless the peer is
//! one of the trusted reverse proxies (`CAPSID_TRUSTED_PROXIES`), in which case the right-most
//! `X-Forwarded-For` entry that is not itself a trusted proxy. Entries left of it are whatever
//! the client wrote, so they are never read; a header from an untrusted peer is ignored.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request};
use axum::http::HeaderMap;
use ipnet::IpNet;

/// One `X-Forwarded-For` entry as an address: a bare address, or one with a port.
fn entry_ip(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .or_else(|| {
            entry
                .strip_prefix('[')
                .and_then(|e| e.strip_suffix(']'))
                .and_then(|e| e.parse().ok())
        })
}

/// The client behind `peer`, given the trusted proxies and the request's headers.
pub(crate) fn client_ip(trusted: &[IpNet], peer: IpAddr, headers: &HeaderMap) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let mut nearest = peer;
    for entry in entries.iter().rev() {
        // An entry the proxies did not write sensibly ends the walk: the last trusted hop is
        // the best the server knows.
        let Some(ip) = entry_ip(entry) else {
            return nearest;
        };
        if !is_trusted(&ip) {
            return ip;
        }
        nearest = ip;
    }
    nearest
}

/// The client's address for `req` (`unknown` when the server does not know the peer).
pub(crate) fn client_addr(trusted: &[IpNet], req: &Request) -> String {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(
            || "unknown".to_owned(),
            |c| client_ip(trusted, c.0.ip(), req.headers()).to_string(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_a_trusted_peer_is_looked_through() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
        let xff = headers(&["198.51.100.9, 203.0.113.5"]);
        assert_eq!(
            client_ip(&trusted, ip("192.0.2.1"), &xff),
            ip("192.0.2.1"),
            "untrusted peer"
        );
        assert_eq!(
            client_ip(&[], ip("10.0.0.1"), &xff),
            ip("10.0.0.1"),
            "no proxies set"
        );
        assert_eq!(
            client_ip(&trusted, ip("10.0.0.1"), &xff),
            ip("203.0.113.5"),
            "right-most"
        );
        let hops = headers(&["203.0.113.5", "10.9.9.9, 10.1.1.1"]);
        assert_eq!(
            client_ip(&trusted, ip("10.0.0.1"), &hops),
            ip("203.0.113.5"),
            "trusted hops skipped"
        );
        let all_trusted = headers(&["10.2.2.2, 10.3.3.3"]);
        assert_eq!(
            client_ip(&trusted, ip("10.0.0.1"), &all_trusted),
            ip("10.2.2.2")
        );
        assert_eq!(
            client_ip(&trusted, ip("10.0.0.1"), &HeaderMap::new()),
            ip("10.0.0.1")
        );
        let junk = headers(&["203.0.113.5, not-an-ip"]);
        assert_eq!(
            client_ip(&trusted, ip("10.0.0.1"), &junk),
            ip("10.0.0.1"),
            "junk ends the walk"
        );
        let ported = headers(&["203.0.113.5:4711", "[2001:db8::1]"]);
        assert_eq!(client_ip(&trusted, ip("::1"), &ported), ip("2001:db8::1"));
    }
}
