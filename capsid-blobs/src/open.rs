//! Opening a store from its setting (`CAPSID_MEDIA_URL`, `CAPSID_HOLDOUT_URL`): `s3://bucket`
//! or `s3://bucket/prefix` (credentials, region and endpoint from the `AWS_*` environment),
//! `file:///abs/folder`, or a plain folder path (created when missing).

use std::path::PathBuf;
use std::sync::Arc;

use capsid_core::ports::BlobError;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;

use crate::ObjectBlobStore;

/// A store location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlobUrl {
    /// A local folder.
    Folder(PathBuf),
    /// An S3-compatible bucket and a key prefix inside it (empty, or ending in `/`).
    S3 {
        /// Bucket name.
        bucket: String,
        /// Key prefix.
        prefix: String,
    },
}

/// Parses a store setting.
pub fn parse_blob_url(url: &str) -> Result<BlobUrl, String> {
    let url = url.trim();
    if let Some(rest) = url.strip_prefix("s3://") {
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!(
                "{url}: an s3:// URL names a bucket: s3://bucket[/prefix]"
            ));
        }
        let prefix = prefix.trim_matches('/');
        let prefix = if prefix.is_empty() {
            String::new()
        } else {
            format!("{prefix}/")
        };
        return Ok(BlobUrl::S3 {
            bucket: bucket.to_owned(),
            prefix,
        });
    }
    if let Some(path) = url.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(format!(
                "{url}: a file:// URL names an absolute folder: file:///path"
            ));
        }
        return Ok(BlobUrl::Folder(PathBuf::from(path)));
    }
    if url.contains("://") {
        return Err(format!(
            "{url}: use file:///folder, a folder path, or s3://bucket[/prefix]"
        ));
    }
    if url.is_empty() {
        return Err("an empty blob store location".to_owned());
    }
    Ok(BlobUrl::Folder(PathBuf::from(url)))
}

impl ObjectBlobStore {
    /// Opens the store `url` names (a folder is created when missing).
    pub fn open(url: &str) -> Result<ObjectBlobStore, BlobError> {
        match parse_blob_url(url).map_err(BlobError::Backend)? {
            BlobUrl::Folder(folder) => Self::folder(folder),
            BlobUrl::S3 { bucket, prefix } => Self::s3(&bucket, &prefix),
        }
    }

    /// A local folder.
    pub fn folder(folder: PathBuf) -> Result<ObjectBlobStore, BlobError> {
        std::fs::create_dir_all(&folder)
            .map_err(|e| BlobError::Backend(format!("cannot create {}: {e}", folder.display())))?;
        let store = LocalFileSystem::new_with_prefix(&folder)
            .map_err(|e| BlobError::Backend(e.to_string()))?
            .with_automatic_cleanup(true);
        Ok(ObjectBlobStore {
            store: Arc::new(store),
            signer: None,
            prefix: String::new(),
            described: format!("folder {}", folder.display()),
        })
    }

    /// An S3-compatible bucket, configured from the `AWS_*` environment.
    pub fn s3(bucket: &str, prefix: &str) -> Result<ObjectBlobStore, BlobError> {
        Self::s3_with(bucket, prefix, &[])
    }

    /// As [`ObjectBlobStore::s3`], with `config` pairs (`aws_endpoint`, `aws_allow_http`, …)
    /// set over the environment's.
    pub fn s3_with(
        bucket: &str,
        prefix: &str,
        config: &[(&str, &str)],
    ) -> Result<ObjectBlobStore, BlobError> {
        // Every HTTPS client of the process uses ring (no C toolchain needed).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
        for (key, value) in config {
            let key = key
                .parse()
                .map_err(|e| BlobError::Backend(format!("S3 setting {key}: {e}")))?;
            builder = builder.with_config(key, *value);
        }
        let s3 = builder
            .build()
            .map_err(|e| BlobError::Backend(format!("S3 bucket {bucket}: {e}")))?;
        let s3 = Arc::new(s3);
        Ok(ObjectBlobStore {
            store: s3.clone(),
            signer: Some(s3),
            prefix: prefix.to_owned(),
            described: format!("s3://{bucket}/{prefix}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse() {
        assert_eq!(
            parse_blob_url("s3://bkt/a/b/").expect("s3"),
            BlobUrl::S3 {
                bucket: "bkt".into(),
                prefix: "a/b/".into()
            }
        );
        assert_eq!(
            parse_blob_url("s3://bkt").expect("s3"),
            BlobUrl::S3 {
                bucket: "bkt".into(),
                prefix: String::new()
            }
        );
        assert_eq!(
            parse_blob_url("file:///srv/media").expect("file"),
            BlobUrl::Folder("/srv/media".into())
        );
        assert_eq!(
            parse_blob_url("./data/media").expect("folder"),
            BlobUrl::Folder("./data/media".into())
        );
        assert!(parse_blob_url("s3://").is_err());
        assert!(parse_blob_url("gs://x").is_err());
        assert!(parse_blob_url("file://relative").is_err());
    }
}
