//! `subscriptions/listen` streams (SEP-2575, protocol 2026-07-28): one long-lived request
//! whose SSE response carries the change notifications its filter asked for, each tagged with
//! the request's id under `_meta["io.modelcontextprotocol/subscriptionId"]` (rmcp's
//! [`SubscriptionSink`] does the tagging and refuses any kind the acknowledgment left out).
//!
//! A stream lives in three steps. [`Subscriptions::admit`] runs before rmcp sees the request
//! (from [`crate::jsonrpc`], because rmcp acknowledges a listen before its handler runs and
//! asks the handler for the accepted filter without saying who asks): every URI is read as
//! the caller through the same check as `resources/read`, the caller's bounds are taken, and a
//! refusal is the request's error, before any acknowledgment. An admitted stream holds its
//! place in the bounds through an [`Admitted`] ticket in the request's extensions; rmcp then
//! acknowledges what was asked and the capabilities offer, and the handler [`open`]s the
//! stream on its sink. It ends when the client closes it (the request is cancelled, the
//! ticket drops), when the watcher's re-check refuses its caller or one of its resources (an
//! error ends the request: the client learns the stream is over and why, and listens again
//! to be told what it may watch), or when the server shuts down ([`Subscriptions::close`]: the
//! graceful final result).
//!
//! [`open`]: Subscriptions::open

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};

use capsid_core::caller::Caller;
use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionSink;
use tokio::sync::oneshot;

use super::{
    MAX_PER_CALLER, MAX_STREAMS_PER_CALLER, Read, Refused, Subscriptions, Watched, digest,
};
use crate::recheck::{Now, Recheck};

/// Why a listen stream ended on the server's side.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The server is shutting down: the graceful final result.
    Closing,
    /// The re-check refused what the stream watches: the request's error, saying why.
    Refused(String),
}

/// One admitted listen stream.
pub(super) struct Stream {
    pub(super) caller: Caller,
    recheck: Recheck,
    /// Each watched URI with the digest of the body last seen (`None`: nothing there).
    uris: BTreeMap<String, Option<String>>,
    /// The tools the caller was last seen to have, when the stream asked for
    /// `toolsListChanged`.
    tools: Option<Vec<&'static str>>,
    /// Set once rmcp acknowledged the stream and its handler holds it.
    open: Option<Open>,
}

struct Open {
    sink: SubscriptionSink,
    end: oneshot::Sender<Ended>,
}

/// What one poll of a stream reads, taken under the lock.
pub(super) struct Snapshot {
    recheck: Recheck,
    sink: SubscriptionSink,
    uris: BTreeMap<String, Option<String>>,
    tools: Option<Vec<&'static str>>,
}

impl Stream {
    /// How many resources it watches.
    pub(super) fn watched(&self) -> usize {
        self.uris.len()
    }

    /// What the watcher reads of it, once it is open.
    pub(super) fn snapshot(&self) -> Option<Snapshot> {
        let open = self.open.as_ref()?;
        Some(Snapshot {
            recheck: self.recheck.clone(),
            sink: open.sink.clone(),
            uris: self.uris.clone(),
            tools: self.tools.clone(),
        })
    }

    /// Tells its handler that it ended (nothing to tell while it is not open yet).
    pub(super) fn end(self, why: Ended) {
        if let Some(open) = self.open {
            let _ = open.end.send(why);
        }
    }
}

/// A listen stream's place in the bounds, from its admission until the request ends: put in
/// the request's extensions by [`crate::jsonrpc`], read by the handler. The stream leaves the
/// bounds when the last copy drops.
#[derive(Clone, Debug)]
pub(crate) struct Admitted(Arc<Ticket>);

#[derive(Debug)]
struct Ticket {
    subscriptions: Weak<Subscriptions>,
    id: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(subscriptions) = self.subscriptions.upgrade() {
            let gone = subscriptions.remove_stream(self.id);
            if gone.is_some() {
                tracing::debug!(stream = self.id, "listen stream closed");
            }
        }
    }
}

impl Watched {
    /// Whether `actor` may open one more stream watching `more` resources.
    fn admits(&self, actor: &str, more: usize) -> Result<(), Refused> {
        if self.closing {
            return Err(Refused::Closing);
        }
        let streams = self
            .streams
            .values()
            .filter(|s| s.caller.actor() == actor)
            .count();
        if streams >= MAX_STREAMS_PER_CALLER {
            return Err(Refused::TooManyStreams);
        }
        if self.watched_by(actor) + more > MAX_PER_CALLER {
            return Err(Refused::TooManyForCaller);
        }
        Ok(())
    }
}

impl Subscriptions {
    /// Admits a `subscriptions/listen` stream with `filter` for `caller`: each URI read first
    /// as `resources/read` reads it (a URI the caller may not read, or that does not exist, is
    /// refused as the read is), within the caller's bounds. Asking for a URI twice watches it
    /// once.
    pub(crate) async fn admit(
        self: &Arc<Self>,
        caller: &Caller,
        recheck: Recheck,
        filter: &SubscriptionFilter,
    ) -> Result<Admitted, Refused> {
        let asked: BTreeSet<&str> = filter
            .resource_subscriptions
            .iter()
            .flatten()
            .map(String::as_str)
            .collect();
        let actor = caller.actor();
        // Before any read, so a request naming more than the bound costs nothing.
        self.lock().admits(&actor, asked.len())?;
        let mut uris = BTreeMap::new();
        for uri in asked {
            let body = self
                .service
                .read_resource(caller, uri)
                .await
                .map_err(|error| Refused::Read {
                    uri: uri.to_owned(),
                    error,
                })?;
            uris.insert(uri.to_owned(), Some(digest(&body)));
        }
        let tools = (filter.tools_list_changed == Some(true)).then(|| self.tool_names(caller));
        let id = {
            let mut watched = self.lock();
            // Again under the lock: another stream of the caller may have opened meanwhile.
            watched.admits(&actor, uris.len())?;
            let id = watched.next_stream;
            watched.next_stream += 1;
            watched.streams.insert(
                id,
                Stream {
                    caller: caller.clone(),
                    recheck,
                    uris,
                    tools,
                    open: None,
                },
            );
            self.streams_open.send_replace(watched.streams.len());
            id
        };
        self.ensure_watcher();
        tracing::debug!(stream = id, actor, "listen stream admitted");
        Ok(Admitted(Arc::new(Ticket {
            subscriptions: Arc::downgrade(self),
            id,
        })))
    }

    /// Opens the admitted stream on `sink`, acknowledged by rmcp: the watcher sends to it from
    /// now on. What it returns says when the server ended the stream; `None` when it was ended
    /// before it opened.
    pub(crate) fn open(
        &self,
        admitted: &Admitted,
        sink: SubscriptionSink,
    ) -> Option<oneshot::Receiver<Ended>> {
        let mut watched = self.lock();
        let stream = watched.streams.get_mut(&admitted.0.id)?;
        let (end, ended) = oneshot::channel();
        stream.open = Some(Open { sink, end });
        Some(ended)
    }

    fn remove_stream(&self, id: u64) -> Option<Stream> {
        let mut watched = self.lock();
        let gone = watched.streams.remove(&id);
        self.streams_open.send_replace(watched.streams.len());
        gone
    }

    /// Ends stream `id` for `why`, telling its handler.
    fn end_stream(&self, id: u64, why: String) {
        tracing::debug!(stream = id, why, "listen stream ended");
        if let Some(stream) = self.remove_stream(id) {
            stream.end(Ended::Refused(why));
        }
    }

    /// One stream read again as its caller is now.
    pub(super) async fn poll_stream(&self, id: u64, snapshot: Snapshot) {
        let Snapshot {
            recheck,
            sink,
            mut uris,
            mut tools,
        } = snapshot;
        let caller = match recheck.now().await {
            Now::Caller(caller) => caller,
            Now::Gone => {
                return self.end_stream(
                    id,
                    "the credential it was opened with no longer resolves (revoked, expired, or no longer the owner's)".to_owned(),
                );
            }
            // The store could not be asked: try again next round.
            Now::Unknown => return,
        };
        for (uri, seen) in &mut uris {
            let now = match self.read_again(&caller, uri).await {
                Read::Seen(now) => now,
                Read::Unknown => continue,
                Read::Refused => {
                    return self
                        .end_stream(id, format!("{} may no longer read {uri}", caller.actor()));
                }
            };
            if now == *seen {
                continue;
            }
            if sink.notify_resource_updated(uri.clone()).await.is_err() {
                return self.end_stream(id, "the notification could not be sent".to_owned());
            }
            *seen = now;
        }
        if let Some(names) = &mut tools {
            let visible = self.tool_names(&caller);
            if visible != *names {
                if sink.notify_tool_list_changed().await.is_err() {
                    return self.end_stream(id, "the notification could not be sent".to_owned());
                }
                *names = visible;
            }
        }
        let mut watched = self.lock();
        if let Some(stream) = watched.streams.get_mut(&id) {
            stream.uris = uris;
            stream.tools = tools;
        }
    }
}
