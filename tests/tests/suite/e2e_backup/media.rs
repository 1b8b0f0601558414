//! A media store with a fault at one table's file: its streaming write fails (the export
//! breaks midway), or waits until the test lets it go (the export is caught midway).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use capsid_core::ports::{BlobError, BlobMeta, BlobReader, BlobStore, BlobWriter};
use tokio::sync::{Notify, Semaphore};

/// What happens when a table's file is opened for writing.
enum Fault {
    /// The write fails: the disk is full.
    Fail,
    /// The first such write waits for [`FaultyMedia::release`].
    Hold {
        reached: Notify,
        held: AtomicBool,
        release: Semaphore,
    },
}

/// A media store whose streaming write of the file whose key holds `at` fails or waits.
pub struct FaultyMedia {
    inner: Arc<dyn BlobStore>,
    at: &'static str,
    fault: Fault,
}

impl FaultyMedia {
    /// Writing `at` fails.
    pub fn failing(inner: Arc<dyn BlobStore>, at: &'static str) -> FaultyMedia {
        FaultyMedia {
            inner,
            at,
            fault: Fault::Fail,
        }
    }

    /// The first write of `at` waits until [`FaultyMedia::release`].
    pub fn holding(inner: Arc<dyn BlobStore>, at: &'static str) -> FaultyMedia {
        FaultyMedia {
            inner,
            at,
            fault: Fault::Hold {
                reached: Notify::new(),
                held: AtomicBool::new(false),
                release: Semaphore::new(0),
            },
        }
    }

    /// Returns once a write waits at the held file.
    pub async fn reached(&self) {
        if let Fault::Hold { reached, held, .. } = &self.fault {
            let notified = reached.notified();
            if !held.load(Ordering::SeqCst) {
                notified.await;
            }
        }
    }

    /// Lets the held write go on.
    pub fn release(&self) {
        if let Fault::Hold { release, .. } = &self.fault {
            release.add_permits(1);
        }
    }
}

#[async_trait]
impl BlobStore for FaultyMedia {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        self.inner.put(key, bytes).await
    }
    async fn put_new(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        self.inner.put_new(key, bytes).await
    }
    async fn put_many(&self, objects: Vec<(String, Vec<u8>)>) -> Result<(), BlobError> {
        self.inner.put_many(objects).await
    }
    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        self.inner.get(key).await
    }
    async fn writer(&self, key: &str) -> Result<Box<dyn BlobWriter>, BlobError> {
        if key.contains(self.at) {
            match &self.fault {
                Fault::Fail => return Err(BlobError::Backend("the disk is full".into())),
                Fault::Hold {
                    reached,
                    held,
                    release,
                } => {
                    if !held.swap(true, Ordering::SeqCst) {
                        reached.notify_waiters();
                        let _ = release.acquire().await.map(|p| p.forget());
                    }
                }
            }
        }
        self.inner.writer(key).await
    }
    async fn reader(&self, key: &str) -> Result<Box<dyn BlobReader>, BlobError> {
        self.inner.reader(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        self.inner.list(prefix).await
    }
    async fn list_meta(&self, prefix: &str) -> Result<Vec<BlobMeta>, BlobError> {
        self.inner.list_meta(prefix).await
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.inner.delete(key).await
    }
    async fn delete_many(&self, keys: Vec<String>) -> Result<(), BlobError> {
        self.inner.delete_many(keys).await
    }
    async fn signed_read_url(&self, key: &str, ms: i64) -> Result<Option<String>, BlobError> {
        self.inner.signed_read_url(key, ms).await
    }
}
