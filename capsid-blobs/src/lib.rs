//! capsid-blobs: the core's [`BlobStore`] port over the `object_store` crate: a local folder
//! (`file://…` or a plain path; the default `<data-dir>/media` and `<data-dir>/holdout`) or
//! any S3-compatible bucket (`s3://bucket/prefix`, configured by the standard `AWS_*`
//! variables `object_store` reads, `AWS_ENDPOINT` and `AWS_ALLOW_HTTP` included).
//!
//! Large objects stream: writes through `object_store`'s buffered writer (one put, or a
//! multipart upload once past its buffer), reads chunk by chunk. `put_new` is the store's
//! conditional create (`PutMode::Create`: a file created exclusively, or S3's
//! `If-None-Match: *`). Keys are `/`-separated; each segment is percent-encoded on the way in
//! and decoded on the way out, so any key the core builds lists back exactly as it was.

#![forbid(unsafe_code)]

mod keys;
mod open;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use capsid_core::ports::{BlobError, BlobMeta, BlobReader, BlobStore, BlobWriter};
use capsid_core::time::Timestamp;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use object_store::buffered::BufWriter;
use object_store::signer::Signer;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use tokio::io::AsyncWriteExt;

pub use keys::{key_of_path, path_of_key};
pub use open::{BlobUrl, parse_blob_url};

/// Objects written or deleted at once by `put_many` and `delete_many`.
const CONCURRENCY: usize = 20;

/// A blob store: a local folder or an S3 bucket (with an optional key prefix).
#[derive(Clone)]
pub struct ObjectBlobStore {
    store: Arc<dyn ObjectStore>,
    /// The S3 store again, for signing read URLs (a local folder cannot sign).
    signer: Option<Arc<dyn Signer>>,
    /// The key prefix inside the bucket (`s3://bucket/prefix`), applied to every key.
    prefix: String,
    described: String,
}

impl std::fmt::Debug for ObjectBlobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectBlobStore")
            .field("at", &self.described)
            .finish_non_exhaustive()
    }
}

fn backend(e: object_store::Error) -> BlobError {
    match e {
        object_store::Error::NotFound { path, .. } => BlobError::NotFound(path),
        object_store::Error::AlreadyExists { path, .. } => BlobError::Exists(path),
        object_store::Error::Precondition { path, .. } => BlobError::Exists(path),
        object_store::Error::InvalidPath { source } => BlobError::InvalidKey(source.to_string()),
        other => BlobError::Backend(other.to_string()),
    }
}

impl ObjectBlobStore {
    /// Where this store keeps its objects, for logs and `capsid doctor` (no secrets).
    pub fn describe(&self) -> &str {
        &self.described
    }

    fn path(&self, key: &str) -> Result<object_store::path::Path, BlobError> {
        path_of_key(&format!("{}{key}", self.prefix))
    }

    fn key(&self, path: &object_store::path::Path) -> Option<String> {
        key_of_path(path)
            .strip_prefix(&self.prefix)
            .map(str::to_owned)
    }

    async fn list_all(&self, prefix: &str) -> Result<Vec<BlobMeta>, BlobError> {
        let full = format!("{}{prefix}", self.prefix);
        // List the folder that holds the prefix, then keep what starts with it.
        let folder = match full.rfind('/') {
            Some(at) if at > 0 => Some(path_of_key(&full[..at])?),
            _ => None,
        };
        let listing: BoxStream<'static, object_store::Result<object_store::ObjectMeta>> =
            self.store.list(folder.as_ref());
        let mut out: Vec<BlobMeta> = listing
            .map_err(backend)
            .try_filter_map(|meta| {
                let found = self
                    .key(&meta.location)
                    .filter(|k| k.starts_with(prefix))
                    .map(|key| BlobMeta {
                        key,
                        size: meta.size,
                        last_modified: Timestamp::from_millis(
                            meta.last_modified.timestamp_millis(),
                        ),
                    });
                futures::future::ready(Ok(found))
            })
            .try_collect()
            .await
            .or_else(|e| match e {
                BlobError::NotFound(_) => Ok(Vec::new()),
                other => Err(other),
            })?;
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }
}

struct Writer(BufWriter);

#[async_trait]
impl BlobWriter for Writer {
    async fn write(&mut self, bytes: Vec<u8>) -> Result<(), BlobError> {
        self.0
            .write_all(&bytes)
            .await
            .map_err(|e| BlobError::Backend(e.to_string()))
    }

    async fn finish(mut self: Box<Self>) -> Result<(), BlobError> {
        self.0
            .shutdown()
            .await
            .map_err(|e| BlobError::Backend(e.to_string()))
    }

    async fn abort(mut self: Box<Self>) -> Result<(), BlobError> {
        self.0.abort().await.map_err(backend)
    }
}

struct Reader(BoxStream<'static, object_store::Result<Vec<u8>>>);

#[async_trait]
impl BlobReader for Reader {
    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BlobError> {
        match self.0.next().await {
            Some(Ok(bytes)) => Ok(Some(bytes)),
            Some(Err(e)) => Err(backend(e)),
            None => Ok(None),
        }
    }
}

#[async_trait]
impl BlobStore for ObjectBlobStore {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        let path = self.path(key)?;
        self.store
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn put_new(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        let path = self.path(key)?;
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        self.store
            .put_opts(&path, PutPayload::from(bytes), options)
            .await
            .map_err(|e| match e {
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. } => BlobError::Exists(key.to_owned()),
                other => backend(other),
            })?;
        Ok(())
    }

    async fn put_many(&self, objects: Vec<(String, Vec<u8>)>) -> Result<(), BlobError> {
        futures::stream::iter(objects)
            .map(|(key, bytes)| async move { self.put(&key, bytes).await })
            .buffer_unordered(CONCURRENCY)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        let path = self.path(key)?;
        let got = self.store.get(&path).await.map_err(backend)?;
        Ok(got.bytes().await.map_err(backend)?.to_vec())
    }

    async fn writer(&self, key: &str) -> Result<Box<dyn BlobWriter>, BlobError> {
        let path = self.path(key)?;
        Ok(Box::new(Writer(BufWriter::new(self.store.clone(), path))))
    }

    async fn reader(&self, key: &str) -> Result<Box<dyn BlobReader>, BlobError> {
        let path = self.path(key)?;
        let got = self.store.get(&path).await.map_err(backend)?;
        Ok(Box::new(Reader(
            got.into_stream().map_ok(|b| b.to_vec()).boxed(),
        )))
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        Ok(self
            .list_all(prefix)
            .await?
            .into_iter()
            .map(|m| m.key)
            .collect())
    }

    async fn list_meta(&self, prefix: &str) -> Result<Vec<BlobMeta>, BlobError> {
        self.list_all(prefix).await
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(backend(e)),
        }
    }

    async fn delete_many(&self, keys: Vec<String>) -> Result<(), BlobError> {
        futures::stream::iter(keys)
            .map(|key| async move { self.delete(&key).await })
            .buffer_unordered(CONCURRENCY)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    async fn signed_read_url(
        &self,
        key: &str,
        expires_in_ms: i64,
    ) -> Result<Option<String>, BlobError> {
        let Some(signer) = &self.signer else {
            return Ok(None);
        };
        let path = self.path(key)?;
        let expires = Duration::from_millis(u64::try_from(expires_in_ms).unwrap_or(0));
        let url = signer
            .signed_url(object_store::signer::Method::GET, &path, expires)
            .await
            .map_err(backend)?;
        Ok(Some(url.to_string()))
    }
}
