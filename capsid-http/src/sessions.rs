//! The MCP sessions of `capsid serve --mcp-sessions`: which caller opened each (so a session
//! id is useless to anyone else), the bounds (sessions per caller and in total: the one over
//! a bound is refused with a JSON-RPC error, never by forgetting another caller's session),
//! and the eviction of idle sessions. An evicted or ended session is also closed in rmcp's
//! session manager, which this map shares with both MCP routes, so the process holds no
//! session the map does not count.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use capsid_core::time::Timestamp;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// The bounds of session mode (`--mcp-sessions-per-caller`, `--mcp-sessions-max`,
/// `--mcp-session-idle-secs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// Sessions one caller (one actor) may hold at once (at least one).
    pub per_caller: usize,
    /// Sessions the server holds at once, all callers together (at least one).
    pub total: usize,
    /// A session unused this long is ended.
    pub idle: Duration,
}

impl SessionLimits {
    /// Sessions per caller by default.
    pub const PER_CALLER: usize = 16;
    /// Sessions in total by default.
    pub const TOTAL: usize = 1024;
    /// Idle time before a session is ended, by default: 30 minutes.
    pub const IDLE: Duration = Duration::from_secs(30 * 60);
}

impl Default for SessionLimits {
    fn default() -> SessionLimits {
        SessionLimits {
            per_caller: SessionLimits::PER_CALLER,
            total: SessionLimits::TOTAL,
            idle: SessionLimits::IDLE,
        }
    }
}

/// Why a caller may not open another session.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionRefusal {
    /// The caller holds its bound.
    #[error(
        "too many MCP sessions: {actor} already holds {limit}, the most one caller may hold at once; end one (DELETE with its Mcp-Session-Id) or wait until one is unused for {idle_secs} s and is ended"
    )]
    Caller {
        /// Who asked.
        actor: String,
        /// The bound per caller.
        limit: usize,
        /// The idle time after which a session is ended.
        idle_secs: u64,
    },
    /// The server holds its bound.
    #[error(
        "too many MCP sessions: the server holds {limit}, the most it keeps at once; try again once a session is ended (sessions unused for {idle_secs} s are)"
    )]
    Total {
        /// The bound in total.
        limit: usize,
        /// The idle time after which a session is ended.
        idle_secs: u64,
    },
}

#[derive(Debug)]
struct Entry {
    actor: String,
    last_used: Timestamp,
}

/// The map under its lock. `per_caller` counts each caller's sessions and its reservations
/// (sessions being opened); `pending` counts the reservations.
#[derive(Debug, Default)]
struct Map {
    sessions: HashMap<String, Entry>,
    per_caller: HashMap<String, usize>,
    pending: usize,
}

impl Map {
    fn release(&mut self, actor: &str) {
        if let Some(n) = self.per_caller.get_mut(actor) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_caller.remove(actor);
            }
        }
    }

    fn remove(&mut self, id: &str) -> bool {
        match self.sessions.remove(id) {
            Some(entry) => {
                self.release(&entry.actor);
                true
            }
            None => false,
        }
    }

    fn refusal(&self, actor: &str, limits: &SessionLimits) -> Option<SessionRefusal> {
        let idle_secs = limits.idle.as_secs();
        if self.per_caller.get(actor).copied().unwrap_or(0) >= limits.per_caller {
            return Some(SessionRefusal::Caller {
                actor: actor.to_owned(),
                limit: limits.per_caller,
                idle_secs,
            });
        }
        if self.sessions.len() + self.pending >= limits.total {
            return Some(SessionRefusal::Total {
                limit: limits.total,
                idle_secs,
            });
        }
        None
    }
}

/// Which caller opened each MCP session, within [`SessionLimits`]. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct SessionOwners {
    map: Arc<Mutex<Map>>,
    limits: SessionLimits,
    transport: Arc<LocalSessionManager>,
}

impl Default for SessionOwners {
    fn default() -> SessionOwners {
        SessionOwners::new(SessionLimits::default())
    }
}

impl SessionOwners {
    /// An empty map with `limits` (bounds below one are taken as one).
    pub fn new(limits: SessionLimits) -> SessionOwners {
        let limits = SessionLimits {
            per_caller: limits.per_caller.max(1),
            total: limits.total.max(1),
            idle: limits.idle,
        };
        let mut transport = LocalSessionManager::default();
        // rmcp's own idle timer is the safety net for a server whose sweep does not run.
        transport.session_config.keep_alive = Some(limits.idle.max(Duration::from_secs(1)));
        SessionOwners {
            map: Arc::new(Mutex::new(Map::default())),
            limits,
            transport: Arc::new(transport),
        }
    }

    /// The bounds.
    pub fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// rmcp's session manager, shared by every MCP route.
    pub(crate) fn transport(&self) -> Arc<LocalSessionManager> {
        self.transport.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Map> {
        // A panic while holding the lock leaves the map consistent (every change is one
        // statement), so a poisoned lock is taken as it is.
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sessions the map holds.
    pub fn len(&self) -> usize {
        self.lock().sessions.len()
    }

    /// Whether the map holds no session.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sessions open in rmcp's session manager (what memory follows).
    pub async fn open_in_transport(&self) -> usize {
        self.transport.sessions.read().await.len()
    }

    /// Who opened session `id`, marking it used at `now`; `None` for a session not known here.
    pub(crate) fn owner(&self, id: &str, now: Timestamp) -> Option<String> {
        let mut map = self.lock();
        let entry = map.sessions.get_mut(id)?;
        entry.last_used = now;
        Some(entry.actor.clone())
    }

    /// A place for one more session of `actor`, or why not. Idle sessions are ended first;
    /// at a bound, sessions rmcp already ended on its own are dropped from the count before
    /// the refusal is decided.
    pub(crate) async fn reserve(
        &self,
        actor: &str,
        now: Timestamp,
    ) -> Result<Reservation, SessionRefusal> {
        self.evict_idle(now).await;
        if self.lock().refusal(actor, &self.limits).is_some() {
            self.drop_closed().await;
        }
        let mut map = self.lock();
        if let Some(refusal) = map.refusal(actor, &self.limits) {
            return Err(refusal);
        }
        *map.per_caller.entry(actor.to_owned()).or_default() += 1;
        map.pending += 1;
        Ok(Reservation {
            owners: self.clone(),
            actor: actor.to_owned(),
        })
    }

    /// Forgets session `id` (the client ended it).
    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Ends every session unused for the idle time at `now`, here and in rmcp; how many. The
    /// server's sweep calls it, and so does every session opening.
    pub async fn evict_idle(&self, now: Timestamp) -> usize {
        let idle_ms = i64::try_from(self.limits.idle.as_millis()).unwrap_or(i64::MAX);
        let expired: Vec<String> = {
            let mut map = self.lock();
            let expired: Vec<String> = map
                .sessions
                .iter()
                .filter(|(_, e)| now.as_millis().saturating_sub(e.last_used.as_millis()) >= idle_ms)
                .map(|(id, _)| id.clone())
                .collect();
            for id in &expired {
                map.remove(id);
            }
            expired
        };
        for id in &expired {
            if let Err(e) = self.transport.close_session(&id.as_str().into()).await {
                tracing::warn!(error = %e, "closing an idle MCP session failed");
            }
        }
        if !expired.is_empty() {
            tracing::info!(sessions = expired.len(), "ended idle MCP sessions");
        }
        expired.len()
    }

    /// Drops from the map the sessions rmcp no longer holds (its own idle timer, a worker
    /// that ended).
    async fn drop_closed(&self) {
        let ids: Vec<String> = self.lock().sessions.keys().cloned().collect();
        let open = self.transport.sessions.read().await;
        let gone: Vec<String> = ids
            .into_iter()
            .filter(|id| !open.contains_key(id.as_str()))
            .collect();
        drop(open);
        let mut map = self.lock();
        for id in gone {
            map.remove(&id);
        }
    }
}

/// A place held for a session being opened: [`Reservation::fill`] records the session the
/// response opened; dropped unfilled, the place is given back.
#[derive(Debug)]
pub(crate) struct Reservation {
    owners: SessionOwners,
    actor: String,
}

impl Reservation {
    /// Records session `id` as the reserving caller's, opened (and last used) at `now`.
    pub(crate) fn fill(self, id: String, now: Timestamp) {
        {
            let mut map = self.owners.lock();
            // The reservation's count moves to the session: taken here, given back on drop.
            *map.per_caller.entry(self.actor.clone()).or_default() += 1;
            let actor = self.actor.clone();
            if let Some(old) = map.sessions.insert(
                id,
                Entry {
                    actor,
                    last_used: now,
                },
            ) {
                map.release(&old.actor);
            }
        }
        drop(self);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut map = self.owners.lock();
        map.pending = map.pending.saturating_sub(1);
        map.release(&self.actor);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_caller: usize, total: usize) -> SessionLimits {
        SessionLimits {
            per_caller,
            total,
            idle: Duration::from_secs(60),
        }
    }

    /// Opens a session in rmcp's manager (as the transport does for an `initialize`) and
    /// records it under `actor`.
    async fn open(
        owners: &SessionOwners,
        actor: &str,
        now: Timestamp,
    ) -> Result<String, SessionRefusal> {
        let place = owners.reserve(actor, now).await?;
        let (id, transport) = owners.transport.create_session().await.expect("a session");
        drop(transport);
        place.fill(id.to_string(), now);
        Ok(id.to_string())
    }

    #[tokio::test]
    async fn bounds_per_caller_and_in_total_and_idle_sessions_go() {
        let owners = SessionOwners::new(limits(2, 3));
        let t0 = Timestamp::from_millis(1_000_000);
        let a1 = open(&owners, "a", t0).await.expect("a1");
        let held = owners.reserve("a", t0).await.expect("a2");
        assert!(
            matches!(
                owners.reserve("a", t0).await,
                Err(SessionRefusal::Caller { limit: 2, .. })
            ),
            "a reservation counts against the caller's bound"
        );
        drop(held);
        let a2 = open(&owners, "a", t0).await.expect("a2 again");
        let b1 = open(&owners, "b", t0).await.expect("b1");
        assert!(matches!(
            open(&owners, "c", t0).await,
            Err(SessionRefusal::Total { limit: 3, .. })
        ));
        assert_eq!(owners.len(), 3);
        owners.forget(&b1);
        let c1 = open(&owners, "c", t0).await.expect("c1");

        let later = t0.plus_millis(40_000);
        assert_eq!(owners.owner(&a1, later).as_deref(), Some("a"));
        assert_eq!(
            owners.evict_idle(t0.plus_millis(70_000)).await,
            2,
            "a2 and c1 idle"
        );
        assert_eq!(owners.owner(&a2, later), None);
        assert_eq!(owners.owner(&c1, later), None);
        assert_eq!(owners.owner(&a1, later).as_deref(), Some("a"));
        assert_eq!(owners.len(), 1);
        assert!(
            owners.reserve("a", later).await.is_ok(),
            "a holds one of two again"
        );
    }

    #[test]
    fn refusals_name_the_caller_and_the_bound() {
        let r = SessionRefusal::Caller {
            actor: "agent:reader".into(),
            limit: 16,
            idle_secs: 1800,
        };
        let text = r.to_string();
        assert!(text.contains("agent:reader") && text.contains("16") && text.contains("1800"));
    }
}
