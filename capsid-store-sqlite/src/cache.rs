//! Bounded read caches for the hottest reads of every call (the bearer key's agent row, one
//! document as `read` returns it), valid across processes.
//!
//! Every SQLite statement runs on the driver's worker thread, so a read costs two thread
//! wake-ups whatever it reads; a hot read answered from memory costs none. A cache here must
//! never answer what the file no longer holds, and the file has other writers besides this
//! store's own (the CLI's `agents revoke`, `tick` and `backup`, a second server on the same
//! folder). So every entry is tagged with the database's **data version**, read from the WAL
//! index (the `-shm` file) that every connection to the database, in any process, updates
//! when it commits: its header (<https://www.sqlite.org/walformat.html>, "The WAL-Index
//! Header") holds `iChange`, incremented by every transaction, `mxFrame`, the last committed
//! frame, and the WAL's salts, changed at each reset. When that header differs from the one an
//! entry was read under, the whole cache is dropped first.
//!
//! The header is read (one `pread` of its two copies) *before* the statement that fills an
//! entry, so an entry is never tagged with a version older than what it holds. When the two
//! copies differ (a commit is writing them), the header cannot be read whole, the index does
//! not exist (not WAL mode) or its file was unlinked under the open handle, nothing is cached
//! and the read goes to the database. A header with no frames (`mxFrame` 0: an index just
//! rebuilt, which reads the same however the database changed before) is not cached under
//! either, and an index file unlinked and made anew starts a new generation of versions.
//!
//! The index file stays open until the store's pools are closed: closing any descriptor of a
//! file drops every POSIX lock the process holds on it, SQLite's own locks on the index
//! included. A store dropped without [`crate::SqliteStore::close`] leaves it open.

use std::fs::File;
use std::hash::Hash;
use std::num::NonZeroUsize;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use lru::LruCache;

/// The WAL-index header: 48 bytes, stored twice at the start of the `-shm` file.
const HEADER: usize = 48;
/// Offset of `isInit` in the header (non-zero once the index is built).
const IS_INIT: usize = 12;
/// Offset of `mxFrame` in the header (the last valid frame, native byte order).
const MX_FRAME: std::ops::Range<usize> = 16..20;

/// One reading of the WAL-index header, with the generation of the index file it was read
/// from: equal readings mean no transaction committed between them, in any process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Version {
    generation: u64,
    header: [u8; HEADER],
}

/// Reads the database's data version from its WAL index.
#[derive(Debug)]
pub(crate) struct DataVersion {
    shm: PathBuf,
    file: Mutex<Option<Arc<File>>>,
    /// Bumped whenever an open index file is found unlinked.
    generation: AtomicU64,
}

impl DataVersion {
    /// The data version of the database file at `db`.
    pub(crate) fn new(db: &Path) -> DataVersion {
        let mut shm = db.as_os_str().to_owned();
        shm.push("-shm");
        DataVersion {
            shm: PathBuf::from(shm),
            file: Mutex::new(None),
            generation: AtomicU64::new(0),
        }
    }

    /// Closes the index file: only once no connection of this store is open (see the module
    /// documentation).
    pub(crate) fn release(&self) {
        *self.file.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn handle(&self) -> Option<Arc<File>> {
        let mut slot = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = File::open(&self.shm).ok().map(Arc::new);
        }
        slot.clone()
    }

    /// Drops a handle whose file was unlinked. Closing it is safe: SQLite unlinks the index
    /// only as the last connection to the database, in any process, closes.
    fn forget(&self) {
        *self.file.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    /// The current version, or `None` when it cannot be read as one stable header.
    pub(crate) fn current(&self) -> Option<Version> {
        let file = self.handle()?;
        let mut both = [0u8; 2 * HEADER];
        let read = file.read_exact_at(&mut both, 0);
        // The index was removed (the last connection to the database closed) and may be
        // recreated by the next one: this handle no longer sees commits.
        if file.metadata().map_or(true, |m| m.nlink() == 0) {
            self.forget();
            return None;
        }
        read.ok()?;
        let (first, second) = both.split_at(HEADER);
        if first != second || first[IS_INIT] == 0 || first[MX_FRAME].iter().all(|b| *b == 0) {
            return None;
        }
        let mut header = [0u8; HEADER];
        header.copy_from_slice(first);
        Some(Version {
            generation: self.generation.load(Ordering::Relaxed),
            header,
        })
    }
}

impl Drop for DataVersion {
    fn drop(&mut self) {
        // Not released by `close`: the pools' connections may still be open, and closing
        // this descriptor would drop their locks on the index. Left open instead.
        let open = self
            .file
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        std::mem::forget(open);
    }
}

/// Hits and misses of one cache, for tests and `store-bench`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Reads answered from memory.
    pub hits: u64,
    /// Reads that went to the database.
    pub misses: u64,
}

struct Entries<K: Hash + Eq, V> {
    version: Option<Version>,
    map: LruCache<K, (V, usize)>,
    bytes: usize,
}

/// An LRU cache of at most `capacity` entries and `max_bytes` bytes (as the caller sizes its
/// values), valid for one data version at a time.
pub(crate) struct ReadCache<K: Hash + Eq, V> {
    entries: Mutex<Entries<K, V>>,
    max_bytes: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<K: Hash + Eq, V: Clone> ReadCache<K, V> {
    /// A cache of at most `capacity` entries (at least one) and `max_bytes` bytes.
    pub(crate) fn new(capacity: usize, max_bytes: usize) -> ReadCache<K, V> {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        ReadCache {
            entries: Mutex::new(Entries {
                version: None,
                map: LruCache::new(capacity),
                bytes: 0,
            }),
            max_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The value cached for `key` under `version`; a cache of another version is emptied.
    pub(crate) fn get(&self, version: Version, key: &K) -> Option<V> {
        let mut e = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if e.version != Some(version) {
            e.map.clear();
            e.bytes = 0;
            e.version = Some(version);
        }
        let found = e.map.get(key).map(|(v, _)| v.clone());
        drop(e);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `value` (read after `version` was) unless the cache moved to another version
    /// meanwhile or the value alone is over the byte bound; evicts the least recently used
    /// entries to stay within both bounds.
    pub(crate) fn put(&self, version: Version, key: K, value: V, size: usize) {
        if size > self.max_bytes / 8 {
            return;
        }
        let mut e = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if e.version != Some(version) {
            return;
        }
        if let Some((_, (_, old))) = e.map.push(key, (value, size)) {
            e.bytes -= old;
        }
        e.bytes += size;
        while e.bytes > self.max_bytes {
            match e.map.pop_lru() {
                Some((_, (_, gone))) => e.bytes -= gone,
                None => break,
            }
        }
    }

    pub(crate) fn counts(&self) -> CacheCounts {
        CacheCounts {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes
    }
}

/// Reads `key` through `cache`: from memory when the data version has not moved since it was
/// cached, otherwise with `load` (whose answer is kept, sized by `size` with its key).
pub(crate) async fn read_through<K, V, E, F>(
    version: &DataVersion,
    cache: &ReadCache<K, V>,
    key: K,
    size: impl FnOnce(&K, &V) -> usize,
    load: F,
) -> Result<V, E>
where
    K: Hash + Eq,
    V: Clone,
    F: Future<Output = Result<V, E>>,
{
    let Some(before) = version.current() else {
        return load.await;
    };
    if let Some(value) = cache.get(before, &key) {
        return Ok(value);
    }
    let value = load.await?;
    let bytes = size(&key, &value);
    cache.put(before, key, value.clone(), bytes);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(n: u8) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[IS_INIT] = 1;
        h[8] = n;
        h[MX_FRAME.start] = 1;
        h
    }

    fn version(n: u8) -> Version {
        Version {
            generation: 0,
            header: header(n),
        }
    }

    fn cache(entries: usize, bytes: usize) -> ReadCache<&'static str, String> {
        ReadCache::new(entries, bytes)
    }

    #[test]
    fn another_version_empties_the_cache() {
        let c = cache(8, 1_000);
        assert_eq!(c.get(version(1), &"a"), None);
        c.put(version(1), "a", "one".to_owned(), 3);
        assert_eq!(c.get(version(1), &"a").as_deref(), Some("one"));
        assert_eq!(c.get(version(2), &"a"), None);
        // Back to the first version: the entry is gone for good.
        assert_eq!(c.get(version(1), &"a"), None);
        assert_eq!(c.counts(), CacheCounts { hits: 1, misses: 3 });
    }

    #[test]
    fn a_value_read_under_an_old_version_is_not_kept() {
        let c = cache(8, 1_000);
        assert_eq!(c.get(version(1), &"a"), None);
        // Meanwhile another reader saw the next version.
        assert_eq!(c.get(version(2), &"b"), None);
        c.put(version(1), "a", "stale".to_owned(), 5);
        assert_eq!(c.get(version(2), &"a"), None);
    }

    #[test]
    fn both_bounds_hold() {
        let c = cache(3, 100);
        c.get(version(1), &"x");
        for (k, size) in [("a", 10), ("b", 10), ("c", 10), ("d", 10)] {
            c.put(version(1), k, k.to_owned(), size);
        }
        // Three entries at most: the least recently used went.
        assert_eq!(c.get(version(1), &"a"), None);
        assert_eq!(c.bytes(), 30);
        // A value over an eighth of the byte bound is never kept.
        c.put(version(1), "big", "big".to_owned(), 13);
        assert_eq!(c.get(version(1), &"big"), None);
        // Bytes evict too.
        let c = cache(100, 100);
        c.get(version(1), &"x");
        for k in ["a", "b", "c", "d", "e", "f", "g", "h", "i"] {
            c.put(version(1), k, k.to_owned(), 12);
        }
        assert!(c.bytes() <= 100, "{} bytes", c.bytes());
        assert_eq!(c.get(version(1), &"a"), None);
        assert_eq!(c.get(version(1), &"i").as_deref(), Some("i"));
    }

    #[test]
    fn a_missing_torn_or_empty_index_reads_as_no_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("x.db");
        let v = DataVersion::new(&db);
        assert_eq!(v.current(), None, "no -shm file");
        let shm = dir.path().join("x.db-shm");
        let write = |first: [u8; HEADER], second: [u8; HEADER]| {
            std::fs::write(&shm, [first, second].concat()).expect("write");
        };
        write(header(7), header(8));
        assert_eq!(v.current(), None, "copies differ: a commit is writing them");
        let mut empty = header(7);
        empty[MX_FRAME].fill(0);
        write(empty, empty);
        assert_eq!(v.current(), None, "no frames: an index just rebuilt");
        write(header(7), header(7));
        let seven = v.current().expect("a version");
        assert_eq!(seven, version(7));
        // Unlinked and made anew with the very same header: another generation.
        std::fs::remove_file(&shm).expect("unlink");
        assert_eq!(v.current(), None);
        write(header(7), header(7));
        let again = v.current().expect("a version");
        assert_ne!(
            again, seven,
            "the same bytes in a new file are another version"
        );
        v.release();
        assert_eq!(
            v.current(),
            Some(again),
            "released, then opened again on demand"
        );
    }
}
