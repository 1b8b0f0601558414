//! The authorization request (`GET /authorize`, OAuth 2.1 §4.1.1): which mistakes are shown
//! to the person at the browser (an unknown client, a redirect URI not registered for it:
//! redirecting there would make Capsid an open redirector) and which are sent back to the
//! client's redirect URI with the client's `state` and Capsid's `iss` (RFC 9207).

use super::redirect::match_registered;
use super::{OAuthError, OwnerSettings, SCOPE, pkce};

/// The longest `state` echoed back.
pub const MAX_STATE: usize = 1024;
/// The longest client id looked up.
pub const MAX_CLIENT_ID: usize = 128;

/// The query of an authorization request, as sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct AuthorizeParams {
    /// Must be `code`.
    pub response_type: Option<String>,
    /// The registered client.
    pub client_id: Option<String>,
    /// One of the client's registered redirect URIs.
    pub redirect_uri: Option<String>,
    /// The S256 PKCE challenge.
    pub code_challenge: Option<String>,
    /// Must be `S256`.
    pub code_challenge_method: Option<String>,
    /// RFC 8707: the MCP route's canonical URI.
    pub resource: Option<String>,
    /// Space-separated scopes.
    pub scope: Option<String>,
    /// The client's opaque state, echoed back.
    pub state: Option<String>,
}

/// A valid authorization request: what a code will be bound to.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct PendingAuthorization {
    /// The client.
    pub client_id: String,
    /// The redirect URI the code goes to (as presented; it matched a registration).
    pub redirect_uri: String,
    /// The S256 challenge.
    pub code_challenge: String,
    /// The audience of the tokens.
    pub resource: String,
    /// The granted scope.
    pub scope: String,
    /// The client's state.
    pub state: Option<String>,
}

/// Why an authorization request was refused, and where the answer goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthorizeRefusal {
    /// Shown to the person at the browser: the client or redirect URI cannot be trusted.
    Show(OAuthError),
    /// Sent back to the client's (validated) redirect URI.
    Redirect {
        /// The redirect URI.
        redirect_uri: String,
        /// The client's state.
        state: Option<String>,
        /// The error.
        error: OAuthError,
    },
}

/// The client id of a request, if it is present and plausible.
pub fn client_id_of(params: &AuthorizeParams) -> Result<&str, OAuthError> {
    match params.client_id.as_deref() {
        Some(id) if !id.is_empty() && id.len() <= MAX_CLIENT_ID => Ok(id),
        Some(_) => Err(OAuthError::invalid_request("client_id is malformed")),
        None => Err(OAuthError::invalid_request("client_id is required")),
    }
}

/// The granted scope for a requested one: `mcp` (also when none is asked for).
/// `offline_access` is tolerated (refresh tokens are always issued); anything else is refused.
pub fn grant_scope(requested: Option<&str>) -> Result<String, String> {
    for s in requested.unwrap_or("").split(' ').filter(|s| !s.is_empty()) {
        if s != SCOPE && s != "offline_access" {
            return Err(format!(
                "scope {s:?} is not offered; this server grants only {SCOPE:?}"
            ));
        }
    }
    Ok(SCOPE.to_owned())
}

/// Checks an authorization request of the client whose registered redirect URIs are
/// `registered` (the caller has found the client).
pub fn check_authorize(
    settings: &OwnerSettings,
    params: &AuthorizeParams,
    registered: &[String],
) -> Result<PendingAuthorization, AuthorizeRefusal> {
    let client_id = client_id_of(params).map_err(AuthorizeRefusal::Show)?;
    let redirect_uri = match params.redirect_uri.as_deref() {
        Some(uri) => match_registered(registered, uri)
            .map(|_| uri.to_owned())
            .ok_or_else(|| {
                AuthorizeRefusal::Show(OAuthError::invalid_request(
                    "redirect_uri is not registered for this client (it must match a registered URI exactly)",
                ))
            })?,
        None if registered.len() == 1 => registered[0].clone(),
        None => {
            return Err(AuthorizeRefusal::Show(OAuthError::invalid_request(
                "redirect_uri is required: this client registered more than one",
            )));
        }
    };
    let state = params.state.clone();
    let refuse = |error: OAuthError| AuthorizeRefusal::Redirect {
        redirect_uri: redirect_uri.clone(),
        state: state.clone(),
        error,
    };
    if let Some(s) = &state
        && (s.len() > MAX_STATE || s.chars().any(char::is_control))
    {
        return Err(AuthorizeRefusal::Show(OAuthError::invalid_request(
            "state is longer than 1024 bytes or holds control characters",
        )));
    }
    match params.response_type.as_deref() {
        Some("code") => {}
        Some(other) => {
            return Err(refuse(OAuthError::unsupported_response_type(format!(
                "response_type {other:?} is not supported: only code (no implicit flow)"
            ))));
        }
        None => {
            return Err(refuse(OAuthError::invalid_request(
                "response_type is required",
            )));
        }
    }
    pkce::check_challenge(
        params.code_challenge.as_deref(),
        params.code_challenge_method.as_deref(),
    )
    .map_err(|why| refuse(OAuthError::invalid_request(why)))?;
    let resource = settings.resource();
    if let Some(r) = params.resource.as_deref()
        && r != resource
    {
        return Err(refuse(OAuthError::invalid_target(format!(
            "resource {r:?} is not served here; the only resource is {resource}"
        ))));
    }
    let scope = grant_scope(params.scope.as_deref())
        .map_err(|why| refuse(OAuthError::invalid_scope(why)))?;
    Ok(PendingAuthorization {
        client_id: client_id.to_owned(),
        redirect_uri,
        code_challenge: params.code_challenge.clone().unwrap_or_default(),
        resource,
        scope,
        state,
    })
}

/// Percent-encodes `value` for a query string (unreserved characters stay).
pub fn encode_component(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `uri` with `pairs` appended to its query.
pub fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = uri.to_owned();
    let mut sep = if uri.contains('?') { '&' } else { '?' };
    for (k, v) in pairs {
        out.push(sep);
        out.push_str(&encode_component(k));
        out.push('=');
        out.push_str(&encode_component(v));
        sep = '&';
    }
    out
}

/// The redirect that answers a refused request: `error`, `error_description`, the client's
/// `state` and Capsid's `iss`.
pub fn error_redirect(
    settings: &OwnerSettings,
    redirect_uri: &str,
    state: Option<&str>,
    error: &OAuthError,
) -> String {
    let mut pairs = vec![
        ("error", error.code),
        ("error_description", error.description.as_str()),
    ];
    if let Some(s) = state {
        pairs.push(("state", s));
    }
    pairs.push(("iss", settings.issuer.as_str()));
    with_query(redirect_uri, &pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    fn settings() -> OwnerSettings {
        OwnerSettings::new("https://capsid.example", "octo")
    }

    fn good() -> AuthorizeParams {
        AuthorizeParams {
            response_type: Some("code".into()),
            client_id: Some("c1".into()),
            redirect_uri: Some("https://app.example/cb".into()),
            code_challenge: Some(CHALLENGE.into()),
            code_challenge_method: Some("S256".into()),
            resource: Some("https://capsid.example/mcp".into()),
            scope: Some("mcp".into()),
            state: Some("xyz".into()),
        }
    }

    fn registered() -> Vec<String> {
        vec!["https://app.example/cb".into()]
    }

    #[test]
    fn a_good_request_is_bound_to_what_it_asked() {
        let p = check_authorize(&settings(), &good(), &registered()).unwrap();
        assert_eq!(p.redirect_uri, "https://app.example/cb");
        assert_eq!(p.resource, "https://capsid.example/mcp");
        assert_eq!(p.scope, "mcp");
        let mut no_resource = good();
        no_resource.resource = None;
        no_resource.redirect_uri = None;
        let p = check_authorize(&settings(), &no_resource, &registered()).unwrap();
        assert_eq!(
            p.resource, "https://capsid.example/mcp",
            "defaults to the MCP route"
        );
        assert_eq!(
            p.redirect_uri, "https://app.example/cb",
            "the only registration"
        );
    }

    #[test]
    fn an_unregistered_redirect_is_shown_never_followed() {
        for uri in [
            "https://evil.example/cb",
            "https://app.example/cb/",
            "https://app.example/CB",
        ] {
            let mut p = good();
            p.redirect_uri = Some(uri.into());
            assert!(matches!(
                check_authorize(&settings(), &p, &registered()),
                Err(AuthorizeRefusal::Show(_))
            ));
        }
    }

    #[test]
    fn later_mistakes_go_back_to_the_client() {
        type Change = Box<dyn Fn(&mut AuthorizeParams)>;
        let cases: Vec<(Change, &str)> = vec![
            (
                Box::new(|p| p.response_type = Some("token".into())),
                "unsupported_response_type",
            ),
            (
                Box::new(|p| p.code_challenge_method = Some("plain".into())),
                "invalid_request",
            ),
            (Box::new(|p| p.code_challenge = None), "invalid_request"),
            (
                Box::new(|p| p.code_challenge_method = None),
                "invalid_request",
            ),
            (
                Box::new(|p| p.resource = Some("https://other.example/mcp".into())),
                "invalid_target",
            ),
            (
                Box::new(|p| p.scope = Some("admin".into())),
                "invalid_scope",
            ),
        ];
        for (change, code) in cases {
            let mut p = good();
            change(&mut p);
            match check_authorize(&settings(), &p, &registered()) {
                Err(AuthorizeRefusal::Redirect { error, state, .. }) => {
                    assert_eq!(error.code, code);
                    assert_eq!(state.as_deref(), Some("xyz"));
                }
                other => panic!("expected a redirect with {code}, got {other:?}"),
            }
        }
    }

    #[test]
    fn error_redirects_carry_state_and_iss() {
        let url = error_redirect(
            &settings(),
            "https://app.example/cb?x=1",
            Some("a b"),
            &OAuthError::invalid_scope("no"),
        );
        assert_eq!(
            url,
            "https://app.example/cb?x=1&error=invalid_scope&error_description=no&state=a%20b&iss=https%3A%2F%2Fcapsid.example"
        );
    }
}
