//! What clients watch, and the one watcher that reads it again: the two ways MCP has to be
//! told of a change, served side by side.
//!
//! - Handshake-era clients (`initialize`, 2025-11-25 and before), with `--mcp-sessions`:
//!   `resources/subscribe` on a document, a job's mirror or an agent's checkmark, answered by
//!   `notifications/resources/updated` on the session's stream, and the session's visible tools
//!   (`notifications/tools/list_changed` after a `tools/list`).
//! - 2026-07-28 clients (no handshake, no session): `subscriptions/listen` (SEP-2575), one
//!   long-lived request whose SSE response carries the notifications it asked for, each tagged
//!   with the request's id ([`streams`]).
//!
//! Both are admitted by the same check: every URI is read first through
//! [`Service::read_resource`], as `resources/read` reads it, so a URI the caller may not read
//! (or that does not exist) is refused exactly as the read is. Both count against one bound
//! per caller ([`MAX_PER_CALLER`] watched resources over its sessions and its streams).
//!
//! One watcher task per server reads every watched resource again each [`POLL`], as its
//! watcher: the caller is first resolved again from the credential its request carried
//! ([`Recheck`]: a revoked key, an ended run, narrowed scopes, a revoked or expired owner's
//! token take effect at the next poll, for every kind of caller), then the resource is read
//! through [`Service::read_resource`]. A body that changed (or appeared, or went) sends
//! `notifications/resources/updated`. A read the check now refuses ends a session's
//! subscription without telling what changed, and ends a listen stream with an error saying
//! it ended, which is the only way a stream can be told. Because it reads the store, a change
//! made through another server on the same database (Postgres replicas, or the CLI on the
//! SQLite file) is seen as one made here. Nothing is kept but the caller, the URIs and a digest
//! of what was last seen.

mod streams;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use capsid_core::caller::Caller;
use capsid_core::crypto::sha256_hex;
use capsid_core::error::Error;
use capsid_core::service::Service;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::{Peer, RoleServer};
use tokio::sync::watch;

use crate::recheck::{Now, Recheck};

use streams::Stream;
pub(crate) use streams::{Admitted, Ended};

/// How often the watcher reads what is watched again.
pub const POLL: Duration = Duration::from_millis(250);

/// The most resources one session may watch at once.
pub const MAX_PER_SESSION: usize = 64;

/// The most resources one caller (one key, the owner) may watch at once over all its
/// sessions and listen streams: each is read again every 250 ms, so this bounds what one key
/// costs the store.
pub const MAX_PER_CALLER: usize = 64;

/// The most `subscriptions/listen` streams one caller may hold open at once (as many as it
/// may hold sessions, by default): each is a connection and a re-check every 250 ms.
pub const MAX_STREAMS_PER_CALLER: usize = 16;

/// One watched resource of a session.
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
    /// Listen streams, by the number each was admitted under.
    streams: HashMap<u64, Stream>,
    /// The number the next admitted stream gets.
    next_stream: u64,
    /// Whether the watcher task runs.
    running: bool,
    /// Set when the server shuts down: every stream was ended and no new one is admitted.
    closing: bool,
}

impl Watched {
    /// How many resources `actor` watches, over its sessions and its streams.
    fn watched_by(&self, actor: &str) -> usize {
        let in_sessions = self
            .resources
            .values()
            .flat_map(HashMap::values)
            .filter(|w| w.caller.actor() == actor)
            .count();
        let in_streams: usize = self
            .streams
            .values()
            .filter(|s| s.caller.actor() == actor)
            .map(Stream::watched)
            .sum();
        in_sessions + in_streams
    }
}

/// Why a subscription or a listen stream was refused.
#[derive(Debug)]
pub enum Refused {
    /// Reading `uri` was refused or failed: the same error as `resources/read`.
    Read {
        /// The resource.
        uri: String,
        /// What the read answered.
        error: Error,
    },
    /// The session watches [`MAX_PER_SESSION`] resources already.
    TooMany,
    /// The caller would watch more than [`MAX_PER_CALLER`] resources over its sessions and
    /// streams.
    TooManyForCaller,
    /// The caller holds [`MAX_STREAMS_PER_CALLER`] listen streams already.
    TooManyStreams,
    /// The server is shutting down.
    Closing,
}

impl Refused {
    /// The sentence the client reads.
    pub(crate) fn explain(&self, actor: &str) -> String {
        match self {
            Refused::Read { error, .. } => error.to_string(),
            Refused::TooMany => format!(
                "this session watches {MAX_PER_SESSION} resources already; unsubscribe from one first"
            ),
            Refused::TooManyForCaller => format!(
                "{actor} may watch at most {MAX_PER_CALLER} resources over its sessions and listen streams; stop watching one first"
            ),
            Refused::TooManyStreams => format!(
                "{actor} holds {MAX_STREAMS_PER_CALLER} subscriptions/listen streams already; close one first"
            ),
            Refused::Closing => "the server is shutting down; listen again shortly".to_owned(),
        }
    }
}

/// Every session's subscriptions and every listen stream on one server.
pub struct Subscriptions {
    service: Service,
    watched: Mutex<Watched>,
    /// How many listen streams are admitted, for whoever waits on it (shutdown, tests).
    streams_open: watch::Sender<usize>,
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
            streams_open: watch::Sender::new(0),
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
            .map_err(|error| Refused::Read {
                uri: uri.to_owned(),
                error,
            })?;
        {
            let mut watched = self.lock();
            let again = watched
                .resources
                .get(session)
                .is_some_and(|mine| mine.contains_key(uri));
            if !again && watched.watched_by(&caller.actor()) >= MAX_PER_CALLER {
                return Err(Refused::TooManyForCaller);
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
        }
        self.ensure_watcher();
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
        self.lock().tools.insert(
            session.to_owned(),
            ToolView {
                recheck,
                peer,
                names,
            },
        );
        self.ensure_watcher();
    }

    /// How many resources are watched, over every session and stream.
    pub fn watched(&self) -> usize {
        let watched = self.lock();
        watched.resources.values().map(HashMap::len).sum::<usize>()
            + watched.streams.values().map(Stream::watched).sum::<usize>()
    }

    /// How many `subscriptions/listen` streams are admitted, as it changes.
    pub fn streams(&self) -> watch::Receiver<usize> {
        self.streams_open.subscribe()
    }

    /// Ends every listen stream gracefully (the final `SubscriptionsListenResult`, which tells
    /// the client the server closed it on purpose) and admits no new one: call it when the
    /// server shuts down, so that connections holding a stream can finish.
    pub fn close(&self) {
        let ended = {
            let mut watched = self.lock();
            watched.closing = true;
            let ended: Vec<Stream> = watched.streams.drain().map(|(_, s)| s).collect();
            self.streams_open.send_replace(0);
            ended
        };
        for stream in ended {
            stream.end(Ended::Closing);
        }
    }

    /// Starts the watcher task unless it runs.
    fn ensure_watcher(self: &Arc<Self>) {
        let start = !std::mem::replace(&mut self.lock().running, true);
        if start {
            tokio::spawn(watch_loop(Arc::downgrade(self)));
        }
    }

    /// One round: every watched resource, tool list and stream read again, as its watcher.
    async fn poll(&self) {
        let (resources, tools, streams) = {
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
            let streams: Vec<(u64, streams::Snapshot)> = watched
                .streams
                .iter()
                .filter_map(|(id, s)| s.snapshot().map(|snap| (*id, snap)))
                .collect();
            (resources, tools, streams)
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
        for (id, snapshot) in streams {
            self.poll_stream(id, snapshot).await;
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
        let now = match self.read_again(&caller, uri).await {
            Read::Seen(now) => now,
            Read::Unknown => return Poll::Same,
            Read::Refused => return Poll::End("the subscriber may no longer read it"),
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

    /// `uri` read again as `caller`: the digest of what is there now (`None`: nothing is).
    async fn read_again(&self, caller: &Caller, uri: &str) -> Read {
        match self.service.read_resource(caller, uri).await {
            Ok(body) => Read::Seen(Some(digest(&body))),
            Err(Error::NotFound(_)) => Read::Seen(None),
            Err(Error::StoreUnavailable(_) | Error::Internal(_)) => Read::Unknown,
            Err(_) => Read::Refused,
        }
    }

    /// The names of the tools `caller` sees now.
    fn tool_names(&self, caller: &Caller) -> Vec<&'static str> {
        self.service
            .tools_for(caller)
            .iter()
            .map(|t| t.spec.name)
            .collect()
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
            Now::Caller(caller) => self.tool_names(&caller),
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

/// A watched resource read again.
enum Read {
    /// The digest of what is there now (`None`: nothing is).
    Seen(Option<String>),
    /// The store could not be asked: try again next round.
    Unknown,
    /// The check now refuses the read.
    Refused,
}

/// The watcher: polls while the server (its [`Subscriptions`]) lives.
async fn watch_loop(subscriptions: Weak<Subscriptions>) {
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
