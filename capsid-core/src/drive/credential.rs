//! A credential reference (the sister design's `credential_ref`): where the driver finds a
//! secret at run time, never the secret. `env:NAME`, `file:/absolute/path` or
//! `cmd:command`; anything else is refused, so a token pasted in its place is never stored.

use std::fmt;

/// The longest reference accepted.
pub const CREDENTIAL_REF_MAX: usize = 512;

/// Where a secret is found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialRef {
    /// An environment variable of the driver.
    Env(String),
    /// A file (its contents, trimmed).
    File(String),
    /// A command run with `sh -c` (its standard output, trimmed).
    Cmd(String),
}

impl CredentialRef {
    /// Parses `text`, or says why it is not a reference.
    pub fn parse(text: &str) -> Result<CredentialRef, String> {
        let text = text.trim();
        let refuse = |why: &str| {
            Err(format!(
                "credential_ref: {why}; use env:NAME, file:/absolute/path or cmd:command (a reference to the secret, never the secret itself)"
            ))
        };
        if text.chars().count() > CREDENTIAL_REF_MAX {
            return refuse(&format!("is longer than {CREDENTIAL_REF_MAX} characters"));
        }
        if text.chars().any(char::is_control) {
            return refuse("contains control characters");
        }
        if let Some(name) = text.strip_prefix("env:") {
            let valid = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !valid {
                return refuse(&format!("env:{name} is not an environment variable name"));
            }
            return Ok(CredentialRef::Env(name.to_owned()));
        }
        if let Some(path) = text.strip_prefix("file:") {
            if !path.starts_with('/') {
                return refuse(&format!("file:{path} is not an absolute path"));
            }
            return Ok(CredentialRef::File(path.to_owned()));
        }
        if let Some(cmd) = text.strip_prefix("cmd:") {
            if cmd.trim().is_empty() {
                return refuse("cmd: names no command");
            }
            return Ok(CredentialRef::Cmd(cmd.trim().to_owned()));
        }
        refuse("is not a reference (it has no env:, file: or cmd: prefix)")
    }
}

impl fmt::Display for CredentialRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredentialRef::Env(n) => write!(f, "env:{n}"),
            CredentialRef::File(p) => write!(f, "file:{p}"),
            CredentialRef::Cmd(c) => write!(f, "cmd:{c}"),
        }
    }
}

/// The host of a git remote URL (`https://host/...`, `ssh://git@host/...`, `git@host:o/r`),
/// which is the only host a credential helper may answer for.
pub fn remote_host(url: &str) -> Option<String> {
    let url = url.trim();
    let after = if let Some((_, rest)) = url.split_once("://") {
        rest
    } else if let Some((user_host, _)) = url.split_once(':') {
        // scp-like syntax; a local path has no colon before its first slash.
        if user_host.contains('/') {
            return None;
        }
        user_host
    } else {
        return None;
    };
    let authority = after.split('/').next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn references_parse_and_everything_else_is_refused() {
        assert_eq!(
            CredentialRef::parse("env:GITHUB_TOKEN"),
            Ok(CredentialRef::Env("GITHUB_TOKEN".into()))
        );
        assert_eq!(
            CredentialRef::parse("file:/run/secrets/t"),
            Ok(CredentialRef::File("/run/secrets/t".into()))
        );
        assert_eq!(
            CredentialRef::parse("cmd:pass show forge"),
            Ok(CredentialRef::Cmd("pass show forge".into()))
        );
        for bad in [
            "ghp_abcdef0123456789",
            "env:",
            "env:1X",
            "env:A-B",
            "file:rel/path",
            "cmd:  ",
            "",
        ] {
            let err = CredentialRef::parse(bad).expect_err(bad);
            assert!(err.starts_with("credential_ref: "), "{err}");
        }
    }

    #[test]
    fn remote_hosts() {
        assert_eq!(
            remote_host("https://github.com/o/r.git").as_deref(),
            Some("github.com")
        );
        assert_eq!(
            remote_host("https://x:y@Git.Example:8443/o/r").as_deref(),
            Some("git.example")
        );
        assert_eq!(
            remote_host("git@github.com:o/r.git").as_deref(),
            Some("github.com")
        );
        assert_eq!(remote_host("/srv/git/r.git"), None);
        assert_eq!(remote_host("../r"), None);
    }

    proptest! {
        #[test]
        fn a_parsed_reference_prints_back_to_itself(name in "[A-Z_][A-Z0-9_]{0,20}") {
            let r = CredentialRef::parse(&format!("env:{name}")).expect("valid");
            prop_assert_eq!(r.to_string(), format!("env:{name}"));
        }

        #[test]
        fn no_prefix_no_reference(s in "[a-zA-Z0-9_]{1,40}") {
            prop_assert!(CredentialRef::parse(&s).is_err());
        }
    }
}
