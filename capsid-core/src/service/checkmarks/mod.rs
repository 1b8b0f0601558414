//! The checkmarks area: `checkpoint` (an agent records where it stands and appends a log
//! entry), `checkmarks` (list, get, log and feed read; answer, resume and promote write) and `shared`
//! (get and list read; set and delete write with `can_write_shared`). The rules are in
//! [`crate::checkmarks`]; the requirements per action are in the registrations below, so the
//! one check asks them before any handler here runs.

mod answer;
pub mod args;
mod checkpoint;
mod ci_poll;
mod promote;
mod read;
mod shared;

pub use args::{CheckmarksArgs, CheckpointArgs, SharedArgs};

use crate::caller::{Caller, Principal};
use crate::error::{Error, Result};
use crate::ports::{AgentStore, CheckmarkStore, JobStore, NamespaceStore, Notifier};
use crate::scope::Scopes;
use crate::time::Clock;

/// What the checkmarks area's handlers reach: checkmarks, the log and the shared context,
/// registered namespaces, the agents (whose checkmark the admin writes), the jobs (a
/// checkmark's job) and the notifier.
#[derive(Clone, Copy)]
pub struct CheckmarksCx<'a> {
    /// Checkmarks, log and shared context.
    pub checkmarks: &'a dyn CheckmarkStore,
    /// Registered namespaces.
    pub namespaces: &'a dyn NamespaceStore,
    /// Minted agents.
    pub agents: &'a dyn AgentStore,
    /// Jobs.
    pub jobs: &'a dyn JobStore,
    /// Who is told when an agent asks or blocks.
    pub notifier: &'a Option<std::sync::Arc<dyn Notifier>>,
    /// Now.
    pub clock: &'a dyn Clock,
}

impl super::Area for CheckmarksCx<'_> {
    fn clock(&self) -> &dyn Clock {
        self.clock
    }
}

impl CheckmarksCx<'_> {
    /// The agent whose checkmark `caller` writes in `namespace`: a minted agent writes only
    /// its own; the admin names any live agent that may work in the namespace.
    async fn writer_for(
        &self,
        caller: &Caller,
        named: Option<&str>,
        namespace: &str,
    ) -> Result<String> {
        match &caller.principal {
            Principal::Agent { name, .. } => match named {
                Some(other) if other != name => Err(Error::Forbidden(format!(
                    "checkpoint: an agent writes only its own checkmark; {name} may not write {other}'s"
                ))),
                _ => Ok(name.clone()),
            },
            // A run credential writes its driver's checkmark, for its own job only.
            Principal::Run { driver, .. } => match named {
                Some(other) if other != driver => Err(Error::Forbidden(format!(
                    "checkpoint: a run credential writes only its driver's checkmark ({driver}), not {other}'s"
                ))),
                _ => Ok(driver.clone()),
            },
            _ if caller.is_admin() => {
                let Some(name) = named else {
                    return Err(Error::Invalid(
                        "checkpoint: agent is required when the admin writes a checkmark".into(),
                    ));
                };
                let row =
                    self.agents.agent_by_name(name).await?.ok_or_else(|| {
                        Error::NotFound(format!("checkpoint: no agent named {name}"))
                    })?;
                if row.revoked_at.is_some() {
                    return Err(Error::Conflict(format!(
                        "checkpoint: agent {name} is revoked"
                    )));
                }
                let scopes = Scopes::parse(Some(&row.scopes));
                if !scopes.namespaces.allows(namespace) {
                    return Err(Error::Conflict(format!(
                        "checkpoint: agent {name} does not work in {namespace} (its namespaces: {})",
                        scopes.namespaces.describe()
                    )));
                }
                Ok(row.name)
            }
            _ => Err(Error::Forbidden(
                "checkpoint: only a minted agent, or the admin on its behalf, writes a checkmark"
                    .into(),
            )),
        }
    }
}

/// `namespace`, or the refusal naming the action that needs it.
fn required<'a>(what: &str, action: &str, value: Option<&'a str>) -> Result<&'a str> {
    value.ok_or_else(|| Error::Invalid(format!("checkmarks {action}: {what} is required")))
}

mod registered {
    //! The area's tools as the registry serves them.
    use super::*;
    use crate::scope::Flag;
    use crate::service::Areas;
    use crate::service::Confirmer;
    use crate::service::registry::{Tool, ToolFuture};
    use crate::tools::{Requirement, Rule, ToolGroup, ToolSpec, action};

    /// `checkpoint`.
    #[derive(Debug)]
    pub struct Checkpoint;
    impl Tool for Checkpoint {
        type Args = CheckpointArgs;
        type Answer = checkpoint::Checkpointed;
        const SPEC: ToolSpec = ToolSpec::new(
            "checkpoint",
            ToolGroup::Checkmarks,
            Requirement::Fixed(Rule::write()),
            "Record your checkmark in a namespace (status, where you stopped, next steps, open question, tests and build status) and append a log entry; returns both ids. done needs tests_status pass.",
        )
        // A question or a block posts to the owner's webhook when one is configured.
        .open_world()
        .titled("Record an agent checkpoint");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: CheckpointArgs,
            _: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.checkmarks().checkpoint(c, a).await })
        }
    }

    /// `checkmarks`.
    #[derive(Debug)]
    pub struct Checkmarks;
    impl Tool for Checkmarks {
        type Args = CheckmarksArgs;
        type Answer = read::CheckmarksAnswer;
        const SPEC: ToolSpec = ToolSpec::new(
            "checkmarks",
            ToolGroup::Checkmarks,
            Requirement::PerAction {
                default: "list",
                actions: &[
                    action("list", Rule::read()),
                    action("get", Rule::read()),
                    action("log", Rule::read()),
                    action("feed", Rule::read()),
                    action("answer", Rule::write()),
                    action("resume", Rule::write()),
                    action("promote", WRITE_SHARED),
                ],
            },
            "Agents' checkmarks and the log: list, get, log (paged) and feed (global entries) read; answer an open question or resume an agent with its answer; promote a log entry to global (needs can_write_shared).",
        )
        .titled("Agents' checkmarks and log");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: CheckmarksArgs,
            _: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.checkmarks().checkmarks(c, a).await })
        }
    }

    const WRITE_SHARED: Rule = Rule::write().with_flags(&[Flag::CanWriteShared]);

    /// `shared`.
    #[derive(Debug)]
    pub struct Shared;
    impl Tool for Shared {
        type Args = SharedArgs;
        type Answer = shared::SharedAnswer;
        const SPEC: ToolSpec = ToolSpec::new(
            "shared",
            ToolGroup::Checkmarks,
            Requirement::PerAction {
                default: "list",
                actions: &[
                    action("get", Rule::read()),
                    action("list", Rule::read()),
                    action("set", WRITE_SHARED),
                    action("delete", WRITE_SHARED),
                ],
            },
            "The shared context every namespace reads: get and list; set and delete need the can_write_shared flag.",
        )
        .destructive()
        .titled("Shared context");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            a: SharedArgs,
            _: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.checkmarks().shared(c, a).await })
        }
    }
}
pub use registered::{Checkmarks, Checkpoint, Shared};

#[cfg(test)]
mod tests;
