//! The application service's error: what a tool call can fail with, business variants first
//! and one opaque catch-all. The HTTP adapter maps each to a tool error or a status code.

use crate::ports::{RepoHostError, StoreError};
use crate::scope::ScopeRefusal;

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The scope check refused the call.
    #[error("{0}")]
    Denied(#[from] ScopeRefusal),
    /// A domain refusal of a tool that answers them as `{ok:false, action, refusal}` (`jobs`,
    /// `agents`, `improve_run`); [`crate::service::Service::call_tool`] turns it into that
    /// answer.
    #[error("{refusal}")]
    Refused {
        /// The action refused.
        action: String,
        /// Why, naming what is missing.
        refusal: String,
    },
    /// The caller is not allowed, for a reason other than scopes (e.g. admin only).
    #[error("{0}")]
    Forbidden(String),
    /// Bad input: the message names the field and the rule. Nothing was read or written.
    #[error("{0}")]
    Invalid(String),
    /// The thing named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A guard or a uniqueness rule refused the change; nothing was written.
    #[error("{0}")]
    Conflict(String),
    /// A destructive change needs `confirm: true` (or a human's confirmation).
    #[error("{0}")]
    ConfirmationRequired(String),
    /// The human declined the confirmation.
    #[error("{0}")]
    Declined(String),
    /// A dependency (GitHub, the blob store) is not configured or not reachable.
    #[error("{0}")]
    Unavailable(String),
    /// The client cancelled the call before it finished; nothing was changed.
    #[error("{0}")]
    Cancelled(String),
    /// The store cannot serve the call now (connection lost, pool exhausted, disk full):
    /// nothing was changed, and the same call may be retried once the store recovers. The
    /// HTTP adapter answers it with 503 and `Retry-After`.
    #[error("the store is unavailable ({0}); nothing was changed; retry shortly")]
    StoreUnavailable(String),
    /// Something failed inside Capsid; details are in the logs, not in the message.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(m) => Error::NotFound(m),
            StoreError::Conflict(m) => Error::Conflict(m),
            StoreError::Backend(m) => Error::Internal(m),
            StoreError::Unavailable(m) => Error::StoreUnavailable(m),
        }
    }
}

impl From<RepoHostError> for Error {
    fn from(e: RepoHostError) -> Self {
        match e {
            RepoHostError::NotConfigured => Error::Unavailable(e.to_string()),
            RepoHostError::NotFound(_) => Error::NotFound(e.to_string()),
            RepoHostError::Failed(_) | RepoHostError::RateLimited(_) => {
                Error::Unavailable(e.to_string())
            }
            RepoHostError::Forbidden(_) => Error::Forbidden(e.to_string()),
            RepoHostError::Conflict(_) | RepoHostError::Rejected(_) => {
                Error::Conflict(e.to_string())
            }
        }
    }
}

impl From<crate::jobs::state::IllegalTransition> for Error {
    fn from(e: crate::jobs::state::IllegalTransition) -> Self {
        Error::Conflict(e.to_string())
    }
}

/// Shorthand for service results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
