//! Throwaway stores for restore rehearsals (the core's `ScratchStores` port): a temporary
//! SQLite file in its own folder, or a scratch database on the Postgres server the database
//! URL names; removed afterwards. `capsid restore --rehearse` and the server's weekly
//! rehearsal both make theirs here.

use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use capsid_core::ports::{ScratchStore, ScratchStores};

use crate::config::{self, GlobalArgs};

/// Makes throwaway stores of the engine `global`'s database URL names.
pub struct ScratchTargets {
    global: GlobalArgs,
    made: AtomicU64,
}

impl ScratchTargets {
    /// Throwaway stores beside the store `global` names (same engine, same server).
    pub fn new(global: &GlobalArgs) -> ScratchTargets {
        ScratchTargets {
            global: global.clone(),
            made: AtomicU64::new(0),
        }
    }

    fn tag(&self) -> String {
        format!(
            "capsid_rehearsal_{}_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis()),
            self.made.fetch_add(1, Ordering::Relaxed)
        )
    }
}

#[async_trait]
impl ScratchStores for ScratchTargets {
    async fn create(&self) -> Result<ScratchStore, String> {
        let tag = self.tag();
        let mut target = self.global.clone();
        let name = if self.global.is_postgres() {
            let url =
                capsid_store_postgres::create_scratch_database(&self.global.database_url(), &tag)
                    .await
                    .map_err(|e| format!("creating the scratch database {tag}: {e}"))?;
            target.database_url = Some(url);
            tag
        } else {
            let folder = std::env::temp_dir().join(&tag);
            std::fs::create_dir_all(&folder)
                .map_err(|e| format!("creating {}: {e}", folder.display()))?;
            target.database_url = Some(format!("sqlite://{}", folder.join("capsid.db").display()));
            target.data_dir = folder.clone();
            folder.display().to_string()
        };
        match config::open_store(&target, true).await {
            Ok((store, _)) => Ok(ScratchStore { store, name }),
            Err(e) => {
                self.discard(&name).await;
                Err(format!("{e:#}"))
            }
        }
    }

    async fn discard(&self, name: &str) {
        if self.global.is_postgres() {
            if let Err(e) =
                capsid_store_postgres::drop_scratch_database(&self.global.database_url(), name)
                    .await
            {
                eprintln!("note: could not drop the scratch database {name}: {e}");
                tracing::warn!(database = name, error = %e, "could not drop a rehearsal's scratch database");
            }
        } else if let Err(e) = std::fs::remove_dir_all(name) {
            tracing::warn!(folder = name, error = %e, "could not remove a rehearsal's scratch folder");
        }
    }
}
