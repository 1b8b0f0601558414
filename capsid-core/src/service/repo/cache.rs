//! The repo read tools' short cache: answers kept for a minute per repository, and every
//! entry of a repository dropped when a mutation through Capsid lands on it, so a read after
//! a write never serves what the write replaced. Process memory only: a restarted or second
//! replica loses nothing but this cache (another replica's entries expire within the TTL).
//! Bounded in entries and in bytes (SPEC 8): past either bound, expired answers go first,
//! then the oldest; an answer larger than the whole byte budget is not kept.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::ports::RepoRef;
use crate::time::Timestamp;

/// Most entries kept.
const MAX_ENTRIES: usize = 512;
/// Most bytes of answers kept (their JSON text).
pub const MAX_BYTES: usize = 16 * 1024 * 1024;

/// The size of an answer: the length of its JSON text, counted without writing it out
/// (`usize::MAX`, never kept, if it does not render).
fn size_of<T: serde::Serialize>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

struct Entry {
    expires: Timestamp,
    /// The typed answer (each key holds one tool's answer type).
    value: Arc<dyn Any + Send + Sync>,
    bytes: usize,
    /// Insertion order: the smallest is the oldest.
    seq: u64,
}

#[derive(Default)]
struct Entries {
    map: HashMap<(RepoRef, String), Entry>,
    bytes: usize,
    next_seq: u64,
}

impl Entries {
    fn remove(&mut self, key: &(RepoRef, String)) {
        if let Some(old) = self.map.remove(key) {
            self.bytes -= old.bytes;
        }
    }

    /// Makes room for one more answer of `bytes`: expired answers first, then the oldest.
    fn make_room(&mut self, bytes: usize, now: Timestamp) {
        let full = |e: &Entries| e.map.len() >= MAX_ENTRIES || e.bytes + bytes > MAX_BYTES;
        if full(self) {
            let expired: Vec<_> = self
                .map
                .iter()
                .filter(|(_, e)| e.expires <= now)
                .map(|(k, _)| k.clone())
                .collect();
            for key in expired {
                self.remove(&key);
            }
        }
        while full(self) {
            let Some(oldest) = self
                .map
                .iter()
                .min_by_key(|(_, e)| e.seq)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.remove(&oldest);
        }
    }
}

/// Cached read answers, keyed by repository and by the tool's question.
#[derive(Default)]
pub struct RepoReadCache {
    entries: Mutex<Entries>,
}

impl std::fmt::Debug for RepoReadCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.lock();
        f.debug_struct("RepoReadCache")
            .field("entries", &e.map.len())
            .field("bytes", &e.bytes)
            .finish()
    }
}

impl RepoReadCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answer to `key` on `repo`, when it has not expired at `now` (and is a `T`).
    pub fn get<T: Clone + 'static>(&self, repo: &RepoRef, key: &str, now: Timestamp) -> Option<T> {
        let entries = self.lock();
        match entries.map.get(&(repo.clone(), key.to_owned())) {
            Some(e) if e.expires > now => e.value.downcast_ref::<T>().cloned(),
            _ => None,
        }
    }

    /// Keeps `value` as the answer to `key` on `repo` until `expires`.
    pub fn put<T: serde::Serialize + Send + Sync + 'static>(
        &self,
        repo: &RepoRef,
        key: &str,
        value: T,
        expires: Timestamp,
    ) {
        let bytes = size_of(&value);
        let mut entries = self.lock();
        let k = (repo.clone(), key.to_owned());
        entries.remove(&k);
        if bytes > MAX_BYTES {
            return;
        }
        let now_ish = expires.plus_millis(-crate::service::repo::READ_CACHE_TTL_MS);
        entries.make_room(bytes, now_ish);
        let seq = entries.next_seq;
        entries.next_seq += 1;
        entries.bytes += bytes;
        entries.map.insert(
            k,
            Entry {
                expires,
                value: Arc::new(value),
                bytes,
                seq,
            },
        );
    }

    /// Drops every answer about `repo`.
    pub fn invalidate(&self, repo: &RepoRef) {
        let mut entries = self.lock();
        let keys: Vec<_> = entries
            .map
            .keys()
            .filter(|(r, _)| r == repo)
            .cloned()
            .collect();
        for key in keys {
            entries.remove(&key);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

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
        assert_eq!(cache.get::<Value>(&a, "tree", t0), Some(json!(1)));
        assert_eq!(cache.get::<Value>(&a, "tree", t0.plus_millis(60_000)), None);
        cache.invalidate(&a);
        assert_eq!(cache.get::<Value>(&a, "tree", t0), None);
        assert_eq!(cache.get::<Value>(&b, "tree", t0), Some(json!(2)));
        for i in 0..(MAX_ENTRIES + 3) {
            cache.put(&a, &format!("k{i}"), json!(i), t0.plus_millis(60_000));
        }
        assert!(cache.len() <= MAX_ENTRIES);
    }

    #[test]
    fn the_cache_is_bounded_in_bytes_not_only_in_entries() {
        let cache = RepoReadCache::default();
        let repo = RepoRef::parse("o/a").unwrap();
        let t0 = Timestamp::from_millis(1_000_000);
        let mib = "x".repeat(1024 * 1024);
        for i in 0..64 {
            cache.put(
                &repo,
                &format!("file{i}"),
                json!({"content": mib}),
                t0.plus_millis(60_000),
            );
        }
        // 64 answers of 1 MiB each would hold 64 MiB; the cache keeps at most 16 MiB.
        assert!(cache.len() <= 16, "{} entries kept", cache.len());
        assert!(cache.len() >= 8, "the newest still fit: {}", cache.len());
        assert_eq!(
            cache.get::<Value>(&repo, "file63", t0),
            Some(json!({"content": mib})),
            "the newest answer is kept"
        );
        assert_eq!(
            cache.get::<Value>(&repo, "file0", t0),
            None,
            "the oldest went first"
        );
        // An answer larger than the whole budget is never kept.
        let huge = "y".repeat(17 * 1024 * 1024);
        cache.put(
            &repo,
            "huge",
            json!({"content": huge}),
            t0.plus_millis(60_000),
        );
        assert_eq!(cache.get::<Value>(&repo, "huge", t0), None);
    }
}
