//! The holdout-manifest sidecar (`_holdout-manifests.json`): counts only. The holdout store
//! itself is never handed to the service: the composition root wraps it in
//! [`HoldoutCounts`], which can read nothing but each roster namespace's manifest count.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::ports::{BlobError, BlobStore};

/// One namespace's holdout manifest, as the sidecar records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HoldoutCount {
    /// Namespace.
    pub namespace: String,
    /// Tests in its hidden suite.
    pub total: u64,
    /// When the manifest was last updated, as it says.
    pub updated_at: Option<String>,
}

/// `improve/holdout/<ns>/manifest.json` in the holdout store.
pub fn holdout_manifest_key(namespace: &str) -> String {
    format!("improve/holdout/{namespace}/manifest.json")
}

/// A counts-only view of the holdout store.
#[derive(Clone)]
pub struct HoldoutCounts {
    store: Arc<dyn BlobStore>,
}

impl std::fmt::Debug for HoldoutCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoldoutCounts").finish_non_exhaustive()
    }
}

impl HoldoutCounts {
    /// Wraps the holdout store; nothing else of it is reachable through this view.
    pub fn new(store: Arc<dyn BlobStore>) -> HoldoutCounts {
        HoldoutCounts { store }
    }

    /// The count of every roster namespace that has a readable manifest.
    pub async fn counts(&self, roster: &[String]) -> Result<Vec<HoldoutCount>, BlobError> {
        let mut out = Vec::new();
        for namespace in roster {
            let bytes = match self.store.get(&holdout_manifest_key(namespace)).await {
                Ok(bytes) => bytes,
                Err(BlobError::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            let Ok(manifest) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            let Some(total) = manifest.get("total").and_then(Value::as_u64) else {
                continue;
            };
            out.push(HoldoutCount {
                namespace: namespace.to_owned(),
                total,
                updated_at: manifest
                    .get("updated_at")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        }
        Ok(out)
    }
}
