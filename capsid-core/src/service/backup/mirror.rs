//! The markdown mirror (`backups/markdown/<ns>/<path>`): every document body of the snapshot,
//! read back from the dump just written (so it is the same instant), written a batch at a
//! time; mirror files whose document is gone are deleted.

use std::collections::HashSet;

use crate::backup::manifest::{MARKDOWN_PREFIX, Manifest, markdown_key};
use crate::backup::rows::Cell;
use crate::backup::tables::DOCUMENTS;
use crate::backup::{MIRROR_BATCH, PAGE_ROWS};
use crate::error::{Error, Result};
use crate::ports::BlobStore;

use super::blob_error;
use super::files::TableFile;

/// What the mirror did.
pub(crate) struct Mirrored {
    pub(crate) written: u64,
    pub(crate) pruned: u64,
}

fn column(name: &str) -> usize {
    DOCUMENTS
        .column_names()
        .position(|c| c == name)
        .unwrap_or_else(|| unreachable!("documents has a {name} column"))
}

fn text(row: &[Cell], at: usize) -> Option<&str> {
    match row.get(at) {
        Some(Cell::Text(s)) => Some(s),
        _ => None,
    }
}

/// Mirrors the documents of `manifest`'s dump and prunes stale mirror files.
pub(crate) async fn mirror_documents(
    media: &dyn BlobStore,
    manifest: &Manifest,
) -> Result<Mirrored> {
    let (ns_at, path_at, body_at) = (column("namespace"), column("path"), column("body"));
    let listed = manifest
        .table(&DOCUMENTS)
        .ok_or_else(|| Error::Internal("the manifest lists no documents".to_owned()))?;
    let mut file = TableFile::open(media, &listed.key, &DOCUMENTS)
        .await
        .map_err(blob_error)?;
    let mut live = HashSet::new();
    let mut written = 0u64;
    let mut batch = Vec::with_capacity(MIRROR_BATCH);
    while let Some(page) = file
        .next_page(PAGE_ROWS)
        .await
        .map_err(|e| Error::Internal(format!("reading back the documents dump: {e}")))?
    {
        for row in page {
            let (Some(ns), Some(path)) = (text(&row, ns_at), text(&row, path_at)) else {
                continue;
            };
            let key = markdown_key(ns, path);
            let body = text(&row, body_at).unwrap_or("").as_bytes().to_vec();
            live.insert(key.clone());
            batch.push((key, body));
            if batch.len() >= MIRROR_BATCH {
                written += batch.len() as u64;
                media
                    .put_many(std::mem::take(&mut batch))
                    .await
                    .map_err(blob_error)?;
            }
        }
    }
    written += batch.len() as u64;
    media.put_many(batch).await.map_err(blob_error)?;
    let stale: Vec<String> = media
        .list(MARKDOWN_PREFIX)
        .await
        .map_err(blob_error)?
        .into_iter()
        .filter(|k| !live.contains(k))
        .collect();
    let pruned = stale.len() as u64;
    media.delete_many(stale).await.map_err(blob_error)?;
    Ok(Mirrored { written, pruned })
}
