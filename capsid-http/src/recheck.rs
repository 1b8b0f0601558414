//! How a watch that outlives its request (a resource subscription, a session's tool view)
//! re-checks the caller that started it: with the credential that request carried, resolved
//! again as its route resolves it. A bearer key of `/ops/mcp` goes through the core's
//! `resolve_bearer` (a revoked agent, a run credential whose claim ended, narrowed scopes),
//! an access token of `/mcp` through the owner's token check (a revoked or expired token, a
//! login that is no longer the owner's). Every kind of caller is re-checked the same way.

use std::sync::Arc;

use capsid_core::caller::Caller;
use capsid_core::owner::{AccessRefusal, OwnerService};
use capsid_core::service::Service;

use crate::{AppState, Owner};

/// The credential a watch was started with, and how to resolve it again: what of the server's
/// state resolving it needs, never the state itself (which holds the watches).
#[derive(Clone)]
pub(crate) struct Recheck {
    service: Service,
    owner_service: OwnerService,
    owner: Option<Arc<Owner>>,
    credential: Credential,
}

#[derive(Clone)]
enum Credential {
    /// The `Authorization` header of an `/ops/mcp` request.
    Bearer(String),
    /// The access token of an `/mcp` request.
    Owner(String),
}

impl std::fmt::Debug for Recheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.credential {
            Credential::Bearer(_) => "bearer",
            Credential::Owner(_) => "owner",
        };
        f.debug_struct("Recheck")
            .field("credential", &kind)
            .finish_non_exhaustive()
    }
}

/// What resolving the credential again found.
pub(crate) enum Now {
    /// The caller as it stands now.
    Caller(Caller),
    /// It no longer resolves to anyone allowed (revoked, expired, not the owner).
    Gone,
    /// The store could not be asked: try again later.
    Unknown,
}

impl Recheck {
    /// `/ops/mcp`: the request's `Authorization` header.
    pub(crate) fn bearer(state: &AppState, authorization: &str) -> Recheck {
        Recheck::with(state, Credential::Bearer(authorization.to_owned()))
    }

    /// `/mcp`: the owner's access token.
    pub(crate) fn owner(state: &AppState, token: &str) -> Recheck {
        Recheck::with(state, Credential::Owner(token.to_owned()))
    }

    fn with(state: &AppState, credential: Credential) -> Recheck {
        Recheck {
            service: state.service.clone(),
            owner_service: state.owner_service.clone(),
            owner: state.owner.clone(),
            credential,
        }
    }

    /// The caller the credential resolves to now.
    pub(crate) async fn now(&self) -> Now {
        match &self.credential {
            Credential::Bearer(header) => match self.service.resolve_bearer(Some(header)).await {
                Ok(resolved) => resolved.caller().cloned().map_or(Now::Gone, Now::Caller),
                Err(_) => Now::Unknown,
            },
            Credential::Owner(token) => {
                let Some(owner) = &self.owner else {
                    return Now::Gone;
                };
                match self
                    .owner_service
                    .oauth_access(&owner.settings, token)
                    .await
                {
                    Ok(caller) => Now::Caller(caller),
                    Err(AccessRefusal::Unavailable(_)) => Now::Unknown,
                    Err(AccessRefusal::Invalid(_) | AccessRefusal::NotOwner(_)) => Now::Gone,
                }
            }
        }
    }
}
