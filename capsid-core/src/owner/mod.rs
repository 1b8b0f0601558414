//! The owner's surfaces, apart from the tool service: the authorization server in front of
//! `/mcp` (`oauth.rs`: registration, the authorization request, the GitHub round trip;
//! `token.rs`: codes, refresh tokens and every request's access token) and the admin console
//! (`console.rs`: its sessions, twelve actions and view; `checkmarks.rs`: its checkmarks
//! panel; `attention.rs`: what waits on the owner; `documents.rs`: a namespace's documents, read-only; `local.rs`: the one-time
//! sign-in links of `capsid console login`). The console's actions and panels run the tools' own functions through
//! [`OwnerService::tools`].

mod attention;
mod checkmarks;
mod console;
mod documents;
mod local;
mod oauth;
mod token;

pub use attention::{failing_tail, status_following_job, waits_for_answer};
pub use checkmarks::{CONSOLE_FEED_ROWS, CONSOLE_LOG_ROWS, LogSelection};
pub use console::{
    ACTIVITY_ROWS, CONSOLE_ACTIONS, CONSOLE_RUNNER_FIELDS, ConsoleAction, DOOR_ROWS,
};
pub use local::{LOCAL_SESSION_ID, LOCAL_USER_MAX, LocalLoginLink, SessionOwner, local_user_ok};
pub use oauth::{AuthorizeCheck, ConsoleLogin, RateExceeded, console_return_path_ok};
pub use token::{AccessRefusal, TokenRequest};

use std::sync::Arc;

use serde_json::Value;

use crate::caller::Caller;
use crate::ids::Entropy;
use crate::ports::{AgentStore, AuditEntry, AuditLog, JobStore, OAuthStore};
use crate::service::Service;
use crate::time::{Clock, Timestamp};

/// The owner's service: OAuth and the console over their own ports, and the tool service
/// the console's actions call.
#[derive(Clone)]
pub struct OwnerService {
    /// The tool service.
    pub tools: Service,
    oauth: Arc<dyn OAuthStore>,
    audit_log: Arc<dyn AuditLog>,
    agents: Arc<dyn AgentStore>,
    jobs: Arc<dyn JobStore>,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
}

impl std::fmt::Debug for OwnerService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnerService").finish_non_exhaustive()
    }
}

impl OwnerService {
    /// The owner's service over the same store, clock and entropy as `tools`.
    pub fn new(tools: Service) -> OwnerService {
        let store = tools.store().clone();
        OwnerService {
            oauth: store.clone(),
            audit_log: store.clone(),
            agents: store.clone(),
            jobs: store,
            clock: tools.clock.clone(),
            entropy: tools.entropy.clone(),
            tools,
        }
    }

    /// Now.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn audit(
        &self,
        caller: &Caller,
        action: &str,
        namespace: Option<&str>,
        path: Option<&str>,
        params: Value,
    ) -> AuditEntry {
        AuditEntry {
            actor: caller.actor(),
            action: action.to_owned(),
            namespace: namespace.map(str::to_owned),
            path: path.map(str::to_owned),
            params,
            at: self.now(),
        }
    }
}
