//! The blob store port: backups, reports and the holdout suites (a local folder or an
//! S3-compatible bucket). Keys are `/`-separated; large objects are written and read as
//! streams, so a dump never sits in memory whole.

use async_trait::async_trait;

use crate::time::Timestamp;

/// Why a blob operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// No object at that key.
    #[error("no blob at {0}")]
    NotFound(String),
    /// A conditional create found an object already there; nothing was written.
    #[error("a blob already exists at {0}")]
    Exists(String),
    /// The key cannot name an object in this store.
    #[error("invalid blob key {0:?}")]
    InvalidKey(String),
    /// The store failed.
    #[error("blob store error: {0}")]
    Backend(String),
}

/// An object's listing entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobMeta {
    /// Its key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written.
    pub last_modified: Timestamp,
}

/// A streaming write of one object: visible at its key only after [`BlobWriter::finish`].
#[async_trait]
pub trait BlobWriter: Send {
    /// Appends `bytes`.
    async fn write(&mut self, bytes: Vec<u8>) -> Result<(), BlobError>;
    /// Completes the object.
    async fn finish(self: Box<Self>) -> Result<(), BlobError>;
    /// Abandons the object (nothing appears at its key).
    async fn abort(self: Box<Self>) -> Result<(), BlobError>;
}

/// A streaming read of one object.
#[async_trait]
pub trait BlobReader: Send {
    /// The next chunk, or `None` at the end.
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BlobError>;
}

/// Objects by key.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Writes `bytes` at `key`, replacing any object there.
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError>;
    /// Writes `bytes` at `key` only if nothing is there ([`BlobError::Exists`] otherwise),
    /// with the store's conditional create.
    async fn put_new(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError>;
    /// Writes several objects, a bounded number at a time.
    async fn put_many(&self, objects: Vec<(String, Vec<u8>)>) -> Result<(), BlobError>;
    /// Reads the object at `key`.
    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError>;
    /// Starts a streaming write at `key`.
    async fn writer(&self, key: &str) -> Result<Box<dyn BlobWriter>, BlobError>;
    /// Starts a streaming read of `key`.
    async fn reader(&self, key: &str) -> Result<Box<dyn BlobReader>, BlobError>;
    /// Keys under `prefix`, sorted.
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError>;
    /// Objects under `prefix` with size and modification time, sorted by key.
    async fn list_meta(&self, prefix: &str) -> Result<Vec<BlobMeta>, BlobError>;
    /// Removes the object at `key` (absent is fine).
    async fn delete(&self, key: &str) -> Result<(), BlobError>;
    /// Removes several objects (absent ones are fine).
    async fn delete_many(&self, keys: Vec<String>) -> Result<(), BlobError>;
    /// A URL that reads `key` without other credentials until `expires_in_ms` from now, when
    /// the store can sign one (S3); `None` for a store that cannot (a local folder).
    async fn signed_read_url(
        &self,
        key: &str,
        expires_in_ms: i64,
    ) -> Result<Option<String>, BlobError>;
}
