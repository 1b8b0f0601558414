//! Which hosts the box's HTTP `CONNECT` door may reach (issue 48): an allowlist of host rules
//! (an exact host, or `*.suffix` for the names under it) each with its ports (443 unless
//! named). [`Egress::allowed`] is the one check; its refusal names the rule it applied.
//! IP literals (also the numeric forms a resolver accepts, `127.1`, `0x7f.1`, `2130706433`)
//! and `localhost` are reachable only through a rule that names them exactly. The default
//! list ([`Egress::registries`]) is the package registries a project's tests need.

use std::fmt;
use std::net::IpAddr;

/// The port a rule admits when it names none.
pub const HTTPS: u16 = 443;

/// The hosts of [`Egress::registries`]: crates.io (API, sparse index, downloads), the npm
/// registry, PyPI and its files, Debian's mirror.
pub const REGISTRIES: &[&str] = &[
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "registry.npmjs.org",
    "pypi.org",
    "files.pythonhosted.org",
    "deb.debian.org",
];

/// What a rule matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostPattern {
    /// This host and no other.
    Exact(String),
    /// Any name strictly under this suffix (`*.example.org`: `a.example.org`, not
    /// `example.org`).
    Under(String),
}

/// One allowlist entry: a host pattern and the ports it admits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRule {
    pattern: HostPattern,
    ports: Vec<u16>,
}

impl HostRule {
    /// Parses `host`, `*.suffix`, either with `:port` or `:port,port` (443 when none):
    /// `crates.io`, `*.crates.io:443`, `10.0.0.5:8080`, `[::1]:8443`.
    pub fn parse(text: &str) -> Result<HostRule, RuleError> {
        let err = |why: &'static str| RuleError {
            rule: text.to_owned(),
            why,
        };
        let (host, ports) = split_host_port(text).ok_or_else(|| err("is not host[:port]"))?;
        let ports = match ports {
            None => vec![HTTPS],
            Some(list) => list
                .split(',')
                .map(|p| p.parse::<u16>().ok().filter(|p| *p != 0))
                .collect::<Option<Vec<u16>>>()
                .ok_or_else(|| err("has a port that is not 1 to 65535"))?,
        };
        let pattern = match host.strip_prefix("*.") {
            Some(suffix) => {
                let suffix = normalize(suffix).map_err(err)?;
                if ip_like(&suffix) || !suffix.contains('.') {
                    return Err(err("'*.' must stand before a domain of two labels or more"));
                }
                HostPattern::Under(suffix)
            }
            None => HostPattern::Exact(normalize(host).map_err(err)?),
        };
        Ok(HostRule { pattern, ports })
    }

    /// The pattern.
    pub fn pattern(&self) -> &HostPattern {
        &self.pattern
    }

    /// The ports it admits.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    fn matches(&self, host: &str) -> bool {
        match &self.pattern {
            HostPattern::Exact(exact) => exact == host,
            // A wildcard never admits an IP literal or localhost: `*.0.0.1` is not a domain.
            // Strictly under: `<label>.<suffix>`, the label non-empty (`normalize` already
            // refuses an empty label; the check keeps this rule sound on its own).
            HostPattern::Under(suffix) => {
                !ip_like(host)
                    && !is_localhost(host)
                    && host
                        .strip_suffix(suffix.as_str())
                        .and_then(|rest| rest.strip_suffix('.'))
                        .is_some_and(|label| !label.is_empty())
            }
        }
    }
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            HostPattern::Exact(h) if h.contains(':') => write!(f, "[{h}]")?,
            HostPattern::Exact(h) => f.write_str(h)?,
            HostPattern::Under(s) => write!(f, "*.{s}")?,
        }
        let ports: Vec<String> = self.ports.iter().map(u16::to_string).collect();
        write!(f, ":{}", ports.join(","))
    }
}

/// A rule that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the egress rule {rule:?} {why}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// The allowlist of a box's `CONNECT` door.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Egress {
    name: String,
    rules: Vec<HostRule>,
}

impl Egress {
    /// An allowlist named `name` (refusals quote it) that admits nothing.
    pub fn none(name: impl Into<String>) -> Egress {
        Egress {
            name: name.into(),
            rules: Vec::new(),
        }
    }

    /// The default: the package registries ([`REGISTRIES`]) on 443.
    pub fn registries() -> Egress {
        let rules = REGISTRIES
            .iter()
            .map(|h| HostRule {
                pattern: HostPattern::Exact((*h).to_owned()),
                ports: vec![HTTPS],
            })
            .collect();
        Egress {
            name: "package registries".into(),
            rules,
        }
    }

    /// An allowlist named `name` of the rules written in `rules` ([`HostRule::parse`]).
    pub fn parse<'a>(
        name: impl Into<String>,
        rules: impl IntoIterator<Item = &'a str>,
    ) -> Result<Egress, RuleError> {
        let rules = rules
            .into_iter()
            .map(HostRule::parse)
            .collect::<Result<_, _>>()?;
        Ok(Egress {
            name: name.into(),
            rules,
        })
    }

    /// This allowlist and one more rule.
    pub fn with(mut self, rule: HostRule) -> Egress {
        self.rules.push(rule);
        self
    }

    /// The rules.
    pub fn rules(&self) -> &[HostRule] {
        &self.rules
    }

    /// Whether the box may open a tunnel to `host:port` (`host` as a `CONNECT` names it, an
    /// IPv6 literal with or without brackets), or why not, naming the rule.
    pub fn allowed(&self, host: &str, port: u16) -> Result<(), Refusal> {
        let host = normalize(
            host.strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host),
        )
        .map_err(|why| Refusal::Malformed {
            host: host.to_owned(),
            why,
        })?;
        let matched: Vec<&HostRule> = self.rules.iter().filter(|r| r.matches(&host)).collect();
        if matched.iter().any(|r| r.ports.contains(&port)) {
            return Ok(());
        }
        if let Some(rule) = matched.first() {
            return Err(Refusal::Port {
                host,
                port,
                rule: rule.to_string(),
            });
        }
        if ip_like(&host) {
            return Err(Refusal::IpLiteral { host, port });
        }
        if is_localhost(&host) {
            return Err(Refusal::Localhost { host, port });
        }
        Err(Refusal::NotListed {
            host,
            port,
            list: self.name.clone(),
        })
    }
}

/// Why a `CONNECT` was refused; the text names the rule and goes in the 403's body.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The host is not a host name.
    #[error("refused: {host:?} {why}")]
    Malformed {
        /// As asked.
        host: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// An IP address (in any spelling) that no rule names exactly.
    #[error(
        "refused: {host}:{port} is an IP address, and an address is reachable only through a rule naming it exactly"
    )]
    IpLiteral {
        /// The host, normalized.
        host: String,
        /// The port.
        port: u16,
    },
    /// `localhost` or a name under it, not named exactly.
    #[error(
        "refused: {host}:{port} is the box's own loopback name, reachable only through a rule naming it exactly"
    )]
    Localhost {
        /// The host, normalized.
        host: String,
        /// The port.
        port: u16,
    },
    /// A rule names the host, but not this port.
    #[error("refused: {host}:{port} is allowed only on the ports of the rule {rule}")]
    Port {
        /// The host, normalized.
        host: String,
        /// The port asked.
        port: u16,
        /// The rule that names the host.
        rule: String,
    },
    /// No rule names the host.
    #[error("refused: {host}:{port} is not on the allowlist '{list}'")]
    NotListed {
        /// The host, normalized.
        host: String,
        /// The port.
        port: u16,
        /// The allowlist's name.
        list: String,
    },
}

/// Whether an address a name resolved to may be tunneled to: not the host's loopback, not a
/// private, link-local, shared (100.64/10), unspecified, broadcast or multicast address, nor an
/// IPv6 unique-local or an IPv4 address mapped into IPv6 that is one of those. A registry's
/// name that resolves there is refused: the proxy runs on the host, and would otherwise reach
/// the host's own services, its network's, or its cloud's metadata service, which the box is
/// cut off from. The documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24) are no
/// host's or network's own services, and sandboxed networks route the registries through them
/// (a CI runner here resolves `registry.npmjs.org` to 203.0.113.80): they are allowed.
pub fn public_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_multicast()
                // 0/8, "this network", holds the unspecified address 0.0.0.0.
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                // 240/4, reserved, holds the broadcast address 255.255.255.255.
                || a >= 240)
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => public_address(IpAddr::V4(v4)),
            None => {
                let first = v6.segments()[0];
                !(v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || (first & 0xfe00) == 0xfc00
                    || (first & 0xffc0) == 0xfe80)
            }
        },
    }
}

/// Lowercases, drops one trailing dot, and checks the labels: ASCII letters, digits, `-`, `_`
/// (an IPv6 literal: hex digits, `:` and `.`).
fn normalize(host: &str) -> Result<String, &'static str> {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if host.is_empty() || host.len() > 253 {
        return Err("is not a host name of 1 to 253 characters");
    }
    if host.contains(':') {
        return match host.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => Ok(host),
            _ => Err("is not a host name nor an IPv6 address"),
        };
    }
    let labels_ok = host.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    if !labels_ok {
        return Err("is not a host name (letters, digits, '-', '_' in dot-separated labels)");
    }
    Ok(host)
}

/// An IP address, or a name a resolver reads as one: a top label that is all digits or hex
/// (`127.1`, `2130706433`, `0x7f.1`). No real top-level domain looks like that.
fn ip_like(host: &str) -> bool {
    if host.parse::<IpAddr>().is_ok() {
        return true;
    }
    let last = host.rsplit('.').next().unwrap_or(host);
    last.bytes().all(|b| b.is_ascii_digit())
        || last
            .strip_prefix("0x")
            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_localhost(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost")
}

/// Splits `host[:ports]`, with `[v6]` or a bare IPv6 literal (no port) accepted.
fn split_host_port(text: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?))),
        };
    }
    if text.matches(':').count() > 1 {
        return Some((text, None));
    }
    match text.split_once(':') {
        Some((host, ports)) => Some((host, Some(ports))),
        None => Some((text, None)),
    }
}

#[cfg(test)]
mod tests;
