//! `CAPSID_TRUSTED_PROXIES`: which reverse proxies may name the client in `X-Forwarded-For`
//! (SPEC 8, rate limits behind a proxy), parsed once for `serve` and checked by `doctor`.

use anyhow::{Result, bail};
use capsid_http::IpNet;
use serde_json::json;

/// The environment variable.
pub const VAR: &str = "CAPSID_TRUSTED_PROXIES";

/// Parses a comma list of CIDRs (`10.0.0.0/8`) or bare addresses (`192.168.1.7`, taken as one
/// host). Empty entries are skipped; a bad entry is an error naming it.
pub fn parse(list: &str) -> Result<Vec<IpNet>> {
    let mut nets = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let net = entry
            .parse::<IpNet>()
            .ok()
            .or_else(|| entry.parse::<std::net::IpAddr>().ok().map(IpNet::from));
        match net {
            Some(n) => nets.push(n),
            None => {
                bail!("{VAR}: '{entry}' is not an address or a CIDR (e.g. 10.0.0.0/8, 192.168.1.7)")
            }
        }
    }
    Ok(nets)
}

/// The trusted proxies from the environment (none when the variable is unset).
pub fn from_env() -> Result<Vec<IpNet>> {
    match std::env::var(VAR) {
        Ok(v) => parse(&v),
        Err(_) => Ok(Vec::new()),
    }
}

/// `capsid doctor`'s check: the list, a warning when the public URL is `https://` (so a
/// reverse proxy very likely stands in front) and no proxy is trusted (every client then
/// shares the proxy's address and its rate limits), an error for a bad entry.
pub fn doctor_check(public_url: Option<&str>) -> (serde_json::Value, bool) {
    match from_env() {
        Err(e) => (
            json!({"check": "trusted proxies", "error": format!("{e:#}")}),
            false,
        ),
        Ok(nets) => {
            let https = public_url.is_some_and(|u| u.trim().starts_with("https://"));
            let warning = (https && nets.is_empty()).then(|| {
                format!(
                    "CAPSID_PUBLIC_URL is https:// but {VAR} is not set: behind a reverse proxy every client shares the proxy's address, so anyone's junk requests use up the owner's rate limits; set {VAR} to the proxy's address or CIDR"
                )
            });
            let value: Vec<String> = nets.iter().map(ToString::to_string).collect();
            (
                json!({"check": "trusted proxies", "value": value, "warning": warning}),
                true,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_or_are_named() {
        let nets = parse(" 10.0.0.0/8, ,192.168.1.7, ::1 ").unwrap();
        let shown: Vec<String> = nets.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["10.0.0.0/8", "192.168.1.7/32", "::1/128"]);
        let err = parse("10.0.0.0/8,10.0.0.0/33").unwrap_err().to_string();
        assert!(err.contains("'10.0.0.0/33'"), "{err}");
        assert!(parse("").unwrap().is_empty());
    }
}
