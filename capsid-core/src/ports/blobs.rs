//! The blob store port: backups, reports and the holdout suites (a local folder or an
//! S3-compatible bucket).

use async_trait::async_trait;

/// Why a blob operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BlobError {
    /// No object at that key.
    #[error("no blob at {0}")]
    NotFound(String),
    /// The store failed.
    #[error("blob store error: {0}")]
    Backend(String),
}

/// Objects by key.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Writes `bytes` at `key`, replacing any object there.
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError>;
    /// Reads the object at `key`.
    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError>;
    /// Keys under `prefix`, sorted.
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError>;
    /// Removes the object at `key` (absent is fine).
    async fn delete(&self, key: &str) -> Result<(), BlobError>;
}
