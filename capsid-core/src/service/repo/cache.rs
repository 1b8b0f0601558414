//! The repo read tools' short cache: answers kept for a minute per repository, and every
//! entry of a repository dropped when a mutation through Capsid lands on it, so a read after
//! a write never serves what the write replaced. Process memory only: a restarted or second
//! replica loses nothing but this cache (another replica's entries expire within the TTL).

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::ports::RepoRef;
use crate::time::Timestamp;

/// Most entries kept; past it, expired entries go first, then everything.
const MAX_ENTRIES: usize = 512;

/// Cached read answers, keyed by repository and by the tool's question.
#[derive(Debug, Default)]
pub struct RepoReadCache {
    entries: Mutex<HashMap<(RepoRef, String), (Timestamp, Value)>>,
}

impl RepoReadCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(RepoRef, String), (Timestamp, Value)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answer to `key` on `repo`, when it has not expired at `now`.
    pub fn get(&self, repo: &RepoRef, key: &str, now: Timestamp) -> Option<Value> {
        let map = self.lock();
        match map.get(&(repo.clone(), key.to_owned())) {
            Some((expires, value)) if *expires > now => Some(value.clone()),
            _ => None,
        }
    }

    /// Keeps `value` as the answer to `key` on `repo` until `expires`.
    pub fn put(&self, repo: &RepoRef, key: &str, value: Value, expires: Timestamp) {
        let mut map = self.lock();
        if map.len() >= MAX_ENTRIES {
            let now_ish = expires.plus_millis(-crate::service::repo::READ_CACHE_TTL_MS);
            map.retain(|_, (e, _)| *e > now_ish);
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
        }
        map.insert((repo.clone(), key.to_owned()), (expires, value));
    }

    /// Drops every answer about `repo`.
    pub fn invalidate(&self, repo: &RepoRef) {
        self.lock().retain(|(r, _), _| r != repo);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_expire_and_writes_drop_only_their_repository() {
        let cache = RepoReadCache::default();
        let (a, b) = (
            RepoRef::parse("o/a").unwrap(),
            RepoRef::parse("o/b").unwrap(),
        );
        let t0 = Timestamp::from_millis(1_000_000);
        cache.put(&a, "tree", json!(1), t0.plus_millis(60_000));
        cache.put(&b, "tree", json!(2), t0.plus_millis(60_000));
        assert_eq!(cache.get(&a, "tree", t0), Some(json!(1)));
        assert_eq!(cache.get(&a, "tree", t0.plus_millis(60_000)), None);
        cache.invalidate(&a);
        assert_eq!(cache.get(&a, "tree", t0), None);
        assert_eq!(cache.get(&b, "tree", t0), Some(json!(2)));
        for i in 0..(MAX_ENTRIES + 3) {
            cache.put(&a, &format!("k{i}"), json!(i), t0.plus_millis(60_000));
        }
        assert!(cache.len() <= MAX_ENTRIES);
    }
}
