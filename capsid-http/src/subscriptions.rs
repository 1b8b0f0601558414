//! What a session watches, with `--mcp-sessions`: resource subscriptions
//! (`resources/subscribe` on a document, a job's mirror or an agent's checkmark) and the
//! caller's visible tools (`notifications/tools/list_changed`).
//!
//! One watcher task per server reads every watched resource again each [`POLL`], as its
//! subscriber: the caller is first resolved again from the credential its request carried
//! ([`Recheck`]: a revoked key, an ended run, narrowed scopes, a revoked or expired owner's
//! token take effect at the next poll, for every kind of caller), then the resource is read
//! through [`Service::read_resource`], the same check as
//! `resources/read`. A body that changed (or appeared, or went) sends
//! `notifications/resources/updated`; a read the check now refuses ends the subscription
//! without telling what changed. Because it reads the store, a change made through another
//! server on the same database (Postgres replicas, or the CLI on the SQLite file) is seen as
//! one made here. Nothing is kept but the caller, the URI and a digest of what was last seen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use capsid_core::caller::Caller;
use capsid_core::crypto::sha256_hex;
use capsid_core::error::Error;
use capsid_core::service::Service;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::{Peer, RoleServer};

use crate::recheck::{Now, Recheck};

/// How often the watcher reads what is watched again.
pub const POLL: Duration = Duration::from_millis(250);

/// The most resources one session may watch at once.
pub const MAX_PER_SESSION: usize = 64;

/// The most resources one caller (one key, the owner) may watch at once over all its
/// sessions: each is read again every 250 ms, so this bounds what one key costs the store.
pub const MAX_PER_CALLER: usize = 64;

/// One watched resource.
#[derive(Clone)]
struct Watch {
    caller: Caller,
    recheck: Recheck,
    peer: Peer<RoleServer>,
    /// The digest of the body last seen; `None` while the resource does not exist.
    seen: Option<String>,
}

/// One session's view of the tools, for `tools/list_changed`.
#[derive(Clone)]
struct ToolView {
    recheck: Recheck,
    peer: Peer<RoleServer>,
    names: Vec<&'static str>,
}

#[derive(Default)]
struct Watched {
    /// By session id, then URI.
    resources: HashMap<String, HashMap<String, Watch>>,
    /// By session id.
    tools: HashMap<String, ToolView>,
    /// Whether the watcher task runs.
    running: bool,
}

/// Why a subscription was refused.
#[derive(Debug)]
pub enum Refused {
    /// Reading the resource was refused or failed: the same error as `resources/read`.
    Read(Error),
    /// The session watches [`MAX_PER_SESSION`] resources already.
    TooMany,
    /// The caller watches [`MAX_PER_CALLER`] resources already, over its sessions.
    TooManyForCaller,
}

/// Every session's subscriptions on one server.
pub struct Subscriptions {
    service: Service,
    watched: Mutex<Watched>,
}

impl std::fmt::Debug for Subscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriptions").finish_non_exhaustive()
    }
}

fn digest(body: &str) -> String {
    sha256_hex(body)
}

impl Subscriptions {
    /// Subscriptions over `service`'s store.
    pub fn new(service: Service) -> Arc<Subscriptions> {
        Arc::new(Subscriptions {
            service,
            watched: Mutex::new(Watched::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Watched> {
        self.watched
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Subscribes `session` to `uri` for `caller`, after reading it as `resources/read` would
    /// (so a URI the caller may not read, or that does not exist, is refused exactly as the
    /// read is). Subscribing again to the same URI keeps one subscription.
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        session: &str,
        uri: &str,
        caller: &Caller,
        recheck: Recheck,
        peer: Peer<RoleServer>,
    ) -> Result<(), Refused> {
        let body = self
            .service
            .read_resource(caller, uri)
            .await
            .map_err(Refused::Read)?;
        let start = {
            let mut watched = self.lock();
            let again = watched
                .resources
                .get(session)
                .is_some_and(|mine| mine.contains_key(uri));
            if !again {
                let actor = caller.actor();
                let callers = watched
                    .resources
                    .values()
                    .flat_map(HashMap::values)
                    .filter(|w| w.caller.actor() == actor)
                    .count();
                if callers >= MAX_PER_CALLER {
                    return Err(Refused::TooManyForCaller);
                }
            }
            let mine = watched.resources.entry(session.to_owned()).or_default();
            if !again && mine.len() >= MAX_PER_SESSION {
                return Err(Refused::TooMany);
            }
            mine.insert(
                uri.to_owned(),
                Watch {
                    caller: caller.clone(),
                    recheck,
                    peer,
                    seen: Some(digest(&body)),
                },
            );
            !std::mem::replace(&mut watched.running, true)
        };
        if start {
            self.start();
        }
        tracing::debug!(session, uri, "resource subscribed");
        Ok(())
    }

    /// Ends `session`'s subscription to `uri`; whether there was one.
    pub fn unsubscribe(&self, session: &str, uri: &str) -> bool {
        let mut watched = self.lock();
        let Some(mine) = watched.resources.get_mut(session) else {
            return false;
        };
        let had = mine.remove(uri).is_some();
        if mine.is_empty() {
            watched.resources.remove(session);
        }
        had
    }

    /// Notes the tools `session`'s caller was just shown, so that a change to them is told.
    pub(crate) fn listed_tools(
        self: &Arc<Self>,
        session: &str,
        recheck: Recheck,
        peer: Peer<RoleServer>,
        names: Vec<&'static str>,
    ) {
        let start = {
            let mut watched = self.lock();
            watched.tools.insert(
                session.to_owned(),
                ToolView {
                    recheck,
                    peer,
                    names,
                },
            );
            !std::mem::replace(&mut watched.running, true)
        };
        if start {
            self.start();
        }
    }

    /// How many resources are watched, over every session.
    pub fn watched(&self) -> usize {
        self.lock().resources.values().map(HashMap::len).sum()
    }

    fn start(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(watch(weak));
    }

    /// One round: every watched resource and tool list read again, as its subscriber.
    async fn poll(&self) {
        let (resources, tools) = {
            let watched = self.lock();
            let resources: Vec<(String, String, Watch)> = watched
                .resources
                .iter()
                .flat_map(|(session, mine)| {
                    mine.iter()
                        .map(move |(uri, w)| (session.clone(), uri.clone(), w.clone()))
                })
                .collect();
            let tools: Vec<(String, ToolView)> = watched
                .tools
                .iter()
                .map(|(session, view)| (session.clone(), view.clone()))
                .collect();
            (resources, tools)
        };
        for (session, uri, w) in resources {
            match self
                .poll_resource(&uri, &w.recheck, &w.peer, w.seen.as_deref())
                .await
            {
                Poll::Same => {}
                Poll::Changed(now) => {
                    let mut watched = self.lock();
                    if let Some(w) = watched
                        .resources
                        .get_mut(&session)
                        .and_then(|m| m.get_mut(&uri))
                    {
                        w.seen = now;
                    }
                }
                Poll::End(why) => {
                    tracing::debug!(session, uri, why, "subscription ended");
                    self.unsubscribe(&session, &uri);
                }
            }
        }
        for (session, view) in tools {
            match self
                .poll_tools(&view.recheck, &view.peer, &view.names)
                .await
            {
                Poll::Same => {}
                Poll::Changed(_) | Poll::End(_) => {
                    self.lock().tools.remove(&session);
                }
            }
        }
    }

    async fn poll_resource(
        &self,
        uri: &str,
        recheck: &Recheck,
        peer: &Peer<RoleServer>,
        seen: Option<&str>,
    ) -> Poll {
        if peer.is_transport_closed() {
            return Poll::End("the session is gone");
        }
        let caller = match recheck.now().await {
            Now::Caller(caller) => caller,
            Now::Gone => return Poll::End("the subscriber's credential no longer resolves"),
            // The store could not be asked: try again next round.
            Now::Unknown => return Poll::Same,
        };
        let now = match self.service.read_resource(&caller, uri).await {
            Ok(body) => Some(digest(&body)),
            Err(Error::NotFound(_)) => None,
            Err(Error::StoreUnavailable(_) | Error::Internal(_)) => return Poll::Same,
            Err(_) => return Poll::End("the subscriber may no longer read it"),
        };
        if now.as_deref() == seen {
            return Poll::Same;
        }
        match peer
            .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
            .await
        {
            Ok(()) => Poll::Changed(now),
            Err(_) => Poll::End("the notification could not be sent"),
        }
    }

    async fn poll_tools(
        &self,
        recheck: &Recheck,
        peer: &Peer<RoleServer>,
        names: &[&'static str],
    ) -> Poll {
        if peer.is_transport_closed() {
            return Poll::End("the session is gone");
        }
        let visible: Vec<&'static str> = match recheck.now().await {
            Now::Caller(caller) => self
                .service
                .tools_for(&caller)
                .iter()
                .map(|t| t.spec.name)
                .collect(),
            Now::Gone => Vec::new(),
            Now::Unknown => return Poll::Same,
        };
        if visible == names {
            return Poll::Same;
        }
        // Told once: the client lists the tools again, which notes the new view.
        let _ = peer.notify_tool_list_changed().await;
        Poll::Changed(None)
    }
}

enum Poll {
    Same,
    Changed(Option<String>),
    End(&'static str),
}

/// The watcher: polls while the server (its [`Subscriptions`]) lives.
async fn watch(subscriptions: Weak<Subscriptions>) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(subs) = subscriptions.upgrade() else {
            return;
        };
        subs.poll().await;
    }
}
