//! `POST /backup/credential` (reference 8.3) as the service answers it: the signed request
//! checked by the core's rules, its `jti` claimed once (scope `backup`), then a read token for
//! `backups/` good for an hour and the newest dump's objects, each with a URL the store signs
//! itself where it can (S3). Reads with the token go through [`Service::read_backup_object`].

use serde::Serialize;

use super::Service;
use super::blob_error;
use super::restore::read_manifest;
use crate::backup::credential::{
    CredentialRefusal, JTI_SCOPE, READ_TOKEN_TTL_MS, mint_read_token, read_token_allows,
    verify_request,
};
use crate::backup::manifest::{BACKUPS_PREFIX, JSON_PREFIX, MANIFEST, run_key, run_of_key};
use crate::error::{Error, Result};
use crate::ports::BlobReader;

/// One object of the newest dump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CredentialObject {
    /// Its key in the media store.
    pub key: String,
    /// A URL the store signed for it (S3), valid as long as the token; `None` for a local
    /// store (read it from this server with the token).
    pub signed_url: Option<String>,
}

/// What a verified credential request earns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BackupCredential {
    /// What the credential may read: every key under this prefix, nothing else.
    pub scope: String,
    /// Read-only: no write, list outside the prefix, or delete.
    pub access: String,
    /// When it stops working.
    pub expires_at: String,
    /// The bearer token for `GET /backup/objects/<key>` on this server.
    pub token: String,
    /// The newest complete dump, if any.
    pub newest_run: Option<String>,
    /// Its objects.
    pub objects: Vec<CredentialObject>,
}

/// A credential request's failure: a refusal of the request, or the store unavailable
/// (fail closed: no credential).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// The request was refused.
    #[error(transparent)]
    Refused(#[from] CredentialRefusal),
    /// The replay cache or the media store could not be reached.
    #[error("{0}")]
    Unavailable(String),
}

impl Service {
    /// Answers a backup credential request.
    pub async fn backup_credential(
        &self,
        timestamp: Option<&str>,
        signature: Option<&str>,
        body: &[u8],
    ) -> std::result::Result<BackupCredential, CredentialError> {
        let now = self.now();
        let root = self.config.signing_secret.as_deref();
        let jti = verify_request(root, timestamp, signature, body, now)?;
        let root = root.ok_or(CredentialRefusal::NotConfigured)?;
        let media = self
            .media()
            .map_err(|e| CredentialError::Unavailable(e.to_string()))?
            .clone();
        let fresh = self
            .store
            .claim_nonce(JTI_SCOPE, &jti, now)
            .await
            .map_err(|e| CredentialError::Unavailable(format!("the replay cache: {e}")))?;
        if !fresh {
            return Err(CredentialRefusal::Replayed(jti).into());
        }
        let expires = now.plus_millis(READ_TOKEN_TTL_MS);
        let unavailable = |e: crate::ports::BlobError| CredentialError::Unavailable(e.to_string());
        let keys = media.list(JSON_PREFIX).await.map_err(unavailable)?;
        let mut runs: Vec<&str> = keys.iter().filter_map(|k| run_of_key(k)).collect();
        runs.sort_unstable();
        runs.dedup();
        // The newest run whose manifest reads: a run still being written has none yet.
        let mut newest = None;
        for run in runs.iter().rev() {
            if read_manifest(media.as_ref(), run).await.is_ok() {
                newest = Some((*run).to_owned());
                break;
            }
        }
        let mut objects = Vec::new();
        if let Some(run) = &newest {
            let prefix = run_key(run, "");
            for key in keys.iter().filter(|k| k.starts_with(&prefix)) {
                let signed_url = media
                    .signed_read_url(key, READ_TOKEN_TTL_MS)
                    .await
                    .map_err(unavailable)?;
                objects.push(CredentialObject {
                    key: key.clone(),
                    signed_url,
                });
            }
            objects.sort_by_key(|o| o.key.ends_with(MANIFEST));
        }
        Ok(BackupCredential {
            scope: BACKUPS_PREFIX.to_owned(),
            access: "read".to_owned(),
            expires_at: expires.to_string(),
            token: mint_read_token(root, expires),
            newest_run: newest,
            objects,
        })
    }

    /// Opens `key` for the holder of a read token from [`Service::backup_credential`]:
    /// `Forbidden` unless the token is live and the key lies under `backups/`.
    pub async fn read_backup_object(&self, token: &str, key: &str) -> Result<Box<dyn BlobReader>> {
        let Some(root) = self.config.signing_secret.as_deref() else {
            return Err(Error::Unavailable(
                "the signing secret is not configured".to_owned(),
            ));
        };
        if !read_token_allows(root, token, key, self.now()) {
            return Err(Error::Forbidden(
                "the backup read token is missing, expired or not this server's, or the key is outside backups/".to_owned(),
            ));
        }
        self.media()?.reader(key).await.map_err(blob_error)
    }
}
