//! A dump's table files as streams: [`DumpWriter`] is the sink an export writes into (one
//! streaming object per table, settings filtered to the sidecar's allowlist, each file's
//! SHA-256 taken over the bytes as they are written), and [`TableFile`] reads one back a page
//! of rows at a time (hashing what it reads, so an import can tell the file it verified from
//! one changed since); [`file_digest`] reads a whole file for its digest.

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::backup::manifest::{SETTINGS_SIDECAR, run_key, table_key};
use crate::backup::rows::{
    Cell, FILE_CLOSING, FileHeader, Row, RowSplitter, file_opening, row_from_json, row_line,
};
use crate::backup::sidecar::carried_setting;
use crate::backup::summary::Progress;
use crate::backup::tables::{SETTINGS, TableSpec};
use crate::crypto::Sha256Stream;
use crate::improve::roster::Roster;
use crate::ports::{BlobReader, BlobStore, BlobWriter, DumpSink};

/// Bytes gathered before one write to the blob store.
const WRITE_CHUNK: usize = 1 << 20;

/// Why an export stopped when its caller cancelled it.
pub(crate) const CANCELLED: &str = "the backup was cancelled by its caller";

/// The blob key of `table`'s file in `run` (settings go to the sidecar).
pub(crate) fn file_key(run: &str, table: &TableSpec) -> String {
    if table.name == SETTINGS.name {
        run_key(run, SETTINGS_SIDECAR)
    } else {
        table_key(run, table.name)
    }
}

/// The sink of an export: each table streamed to its own object.
pub(crate) struct DumpWriter<'a> {
    media: Arc<dyn BlobStore>,
    run: String,
    exported_at: String,
    progress: &'a dyn Progress,
    current: Option<Open>,
    counts: Vec<Written>,
    roster: Roster,
}

/// One table file as written: its table, rows and SHA-256.
pub(crate) struct Written {
    pub(crate) table: &'static TableSpec,
    pub(crate) rows: u64,
    pub(crate) sha256: String,
}

struct Open {
    table: &'static TableSpec,
    writer: Box<dyn BlobWriter>,
    buffer: Vec<u8>,
    rows: u64,
    digest: Sha256Stream,
}

impl Open {
    async fn flush(&mut self) -> Result<(), String> {
        let chunk = std::mem::take(&mut self.buffer);
        self.digest.update(&chunk);
        self.writer.write(chunk).await.map_err(|e| e.to_string())
    }
}

impl<'a> DumpWriter<'a> {
    pub(crate) fn new(
        media: Arc<dyn BlobStore>,
        run: &str,
        exported_at: &str,
        progress: &'a dyn Progress,
        roster: Roster,
    ) -> DumpWriter<'a> {
        DumpWriter {
            media,
            run: run.to_owned(),
            exported_at: exported_at.to_owned(),
            progress,
            current: None,
            counts: Vec::new(),
            roster,
        }
    }

    /// The files written, in export order.
    pub(crate) fn into_counts(self) -> Vec<Written> {
        self.counts
    }

    /// Abandons a table left open by a failed export.
    pub(crate) async fn abandon(&mut self) {
        if let Some(open) = self.current.take() {
            let _ = open.writer.abort().await;
        }
    }

    /// A cancelled run's undoing: the open table abandoned and every table file already
    /// written deleted, so no part of the run is left behind.
    pub(crate) async fn discard(&mut self) -> Result<(), String> {
        self.abandon().await;
        let keys = self
            .counts
            .drain(..)
            .map(|w| file_key(&self.run, w.table))
            .collect();
        self.media
            .delete_many(keys)
            .await
            .map_err(|e| e.to_string())
    }

    /// Stops the export when its caller cancelled it.
    fn go_on(&self) -> Result<(), String> {
        if self.progress.cancelled() {
            Err(CANCELLED.to_owned())
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl DumpSink for DumpWriter<'_> {
    async fn begin_table(&mut self, table: &'static TableSpec) -> Result<(), String> {
        self.abandon().await;
        self.go_on()?;
        let key = file_key(&self.run, table);
        let writer = self.media.writer(&key).await.map_err(|e| e.to_string())?;
        self.progress.table_started(table.name, None);
        self.current = Some(Open {
            table,
            writer,
            buffer: file_opening(&self.exported_at, table.name),
            rows: 0,
            digest: Sha256Stream::default(),
        });
        Ok(())
    }

    async fn rows(&mut self, rows: Vec<Row>) -> Result<(), String> {
        self.go_on()?;
        let Some(open) = self.current.as_mut() else {
            return Err("rows arrived before their table".to_owned());
        };
        let mut kept = 0;
        for row in rows {
            // The settings sidecar carries allowlisted keys only.
            if open.table.name == SETTINGS.name
                && !matches!(row.first(), Some(Cell::Text(key)) if carried_setting(key, &self.roster))
            {
                continue;
            }
            open.buffer
                .extend(row_line(open.table, &row, open.rows == 0));
            open.rows += 1;
            kept += 1;
            if open.buffer.len() >= WRITE_CHUNK {
                open.flush().await?;
            }
        }
        self.progress.rows_done(kept);
        Ok(())
    }

    async fn end_table(&mut self) -> Result<(), String> {
        let Some(mut open) = self.current.take() else {
            return Err("a table ended that never began".to_owned());
        };
        open.buffer.extend_from_slice(FILE_CLOSING);
        open.flush().await?;
        open.writer.finish().await.map_err(|e| e.to_string())?;
        self.progress.table_done(open.table.name, open.rows);
        self.counts.push(Written {
            table: open.table,
            rows: open.rows,
            sha256: open.digest.finish_hex(),
        });
        Ok(())
    }
}

/// One table file read back as a stream of rows.
pub(crate) struct TableFile {
    table: &'static TableSpec,
    reader: Box<dyn BlobReader>,
    splitter: RowSplitter,
    pending: VecDeque<Vec<u8>>,
    ended: bool,
    rows: u64,
    digest: Sha256Stream,
}

/// The SHA-256 of the whole file at `key`, read as a stream.
pub(crate) async fn file_digest(
    media: &dyn BlobStore,
    key: &str,
) -> Result<String, crate::ports::BlobError> {
    let mut reader = media.reader(key).await?;
    let mut digest = Sha256Stream::default();
    while let Some(chunk) = reader.next_chunk().await? {
        digest.update(&chunk);
    }
    Ok(digest.finish_hex())
}

impl TableFile {
    /// Opens `key` as the file of `table`.
    pub(crate) async fn open(
        media: &dyn BlobStore,
        key: &str,
        table: &'static TableSpec,
    ) -> Result<TableFile, crate::ports::BlobError> {
        Ok(TableFile {
            table,
            reader: media.reader(key).await?,
            splitter: RowSplitter::default(),
            pending: VecDeque::new(),
            ended: false,
            rows: 0,
            digest: Sha256Stream::default(),
        })
    }

    async fn pull(&mut self) -> Result<bool, String> {
        if self.ended {
            return Ok(false);
        }
        match self.reader.next_chunk().await.map_err(|e| e.to_string())? {
            Some(chunk) => {
                self.digest.update(&chunk);
                let rows = self.splitter.feed(&chunk)?;
                self.pending.extend(rows);
                Ok(true)
            }
            None => {
                self.ended = true;
                self.splitter.finish()?;
                Ok(false)
            }
        }
    }

    /// Reads until the opening members (`table`, `exported_at`) are known, or the file ends.
    pub(crate) async fn header(&mut self) -> Result<&FileHeader, String> {
        while !(self.splitter.header().text("table").is_some()
            && self.splitter.header().text("exported_at").is_some())
        {
            if !self.pull().await? {
                break;
            }
        }
        Ok(self.splitter.header())
    }

    /// Up to `n` more rows, or `None` once the file is done (and closed properly).
    pub(crate) async fn next_page(&mut self, n: usize) -> Result<Option<Vec<Row>>, String> {
        while self.pending.len() < n && self.pull().await? {}
        if self.pending.is_empty() {
            return Ok(None);
        }
        let take = self.pending.len().min(n);
        let mut page = Vec::with_capacity(take);
        for raw in self.pending.drain(..take) {
            let object: Map<String, Value> = serde_json::from_slice(&raw)
                .map_err(|e| format!("{}: a row is not a JSON object: {e}", self.table.name))?;
            page.push(row_from_json(self.table, object)?);
        }
        self.rows += page.len() as u64;
        Ok(Some(page))
    }

    /// The SHA-256 of the bytes read, once the file has been read to its end.
    pub(crate) fn digest(&self) -> Option<String> {
        self.ended.then(|| self.digest.clone().finish_hex())
    }

    /// Rows read so far.
    pub(crate) fn rows_read(&self) -> u64 {
        self.rows
    }

    /// The file's opening members (complete once the file has been read to its end).
    pub(crate) fn members(&self) -> &FileHeader {
        self.splitter.header()
    }
}
