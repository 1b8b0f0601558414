//! `backup`: a backup run on demand over MCP, the same run `POST /ops/backup` starts under the
//! same rule (the write grant, every namespace and `can_backup`; one run per interval per
//! caller). A client that sent a `progressToken` hears each table, its rows and each later
//! step as they happen; a client that cancels stops the run before its manifest, and the run
//! removes what it had written.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use futures::StreamExt;
use futures::channel::mpsc;

use super::MaintenanceCx;
use crate::backup::summary::{BackupSummary, Progress};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::service::{Confirmer, OnDemandBackup};

/// The backup run as the maintenance area asks for it: the service's own maintenance,
/// reached through this one method (as the scheduler is through the improve area's ticker).
pub trait BackupRunner: Send + Sync {
    /// A run on demand for `caller`, reporting to `progress`; refused as
    /// `POST /ops/backup` refuses.
    fn backup<'a>(
        &'a self,
        caller: &'a Caller,
        progress: &'a dyn Progress,
    ) -> Pin<Box<dyn Future<Output = Result<OnDemandBackup>> + Send + 'a>>;
}

/// One progress notification: how far (strictly more than the last), and what is happening.
type Note = (u64, String);

/// Turns the run's progress into notifications for the client: every event moves the count
/// on (a table begun or done by one, a page of rows by its rows, a step by one), so the
/// client sees it strictly grow, as MCP asks.
struct Relay<'a> {
    notes: mpsc::UnboundedSender<Note>,
    state: Mutex<RelayState>,
    client: &'a dyn Confirmer,
}

#[derive(Default)]
struct RelayState {
    done: u64,
    table: String,
    rows: u64,
}

impl Relay<'_> {
    /// Moves the count on by `by` (at least one), after `update` (which says what to tell)
    /// saw the state, and queues the note.
    fn tell(&self, by: u64, update: impl FnOnce(&mut RelayState) -> String) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let message = update(&mut state);
        state.done += by.max(1);
        // The receiver lives as long as the call: a send fails only after it ended.
        let _ = self.notes.unbounded_send((state.done, message));
    }
}

impl Progress for Relay<'_> {
    fn table_started(&self, table: &str, _rows: Option<u64>) {
        self.tell(1, |s| {
            s.table = table.to_owned();
            s.rows = 0;
            format!("exporting {table}")
        });
    }

    fn rows_done(&self, rows: u64) {
        if rows == 0 {
            return;
        }
        self.tell(rows, |s| {
            s.rows += rows;
            format!("exporting {}: {} rows", s.table, s.rows)
        });
    }

    fn table_done(&self, table: &str, rows: u64) {
        self.tell(1, |_| format!("exported {table}: {rows} rows"));
    }

    fn step(&self, what: &str) {
        self.tell(1, |_| what.to_owned());
    }

    fn cancelled(&self) -> bool {
        self.client.cancelled()
    }
}

impl MaintenanceCx<'_> {
    /// `backup`: runs one now and answers its summary (`ran: false, skipped: "lease-held"`
    /// when another run holds the lease). Within the caller's interval it is refused with the
    /// seconds to wait; cancelled, it keeps nothing of the run.
    pub async fn backup(&self, caller: &Caller, client: &dyn Confirmer) -> Result<BackupSummary> {
        let (notes, mut heard) = mpsc::unbounded::<Note>();
        let relay = Relay {
            notes,
            state: Mutex::new(RelayState::default()),
            client,
        };
        let runner = self.backups;
        let run = async move {
            let outcome = runner.backup(caller, &relay).await;
            // The last note is queued: ending the channel lets the relay below finish.
            drop(relay);
            outcome
        };
        let tell = async {
            while let Some((done, message)) = heard.next().await {
                client.progress(done, None, &message).await;
            }
        };
        let (outcome, ()) = futures::join!(run, tell);
        match outcome? {
            OnDemandBackup::Ran(summary) => Ok(summary),
            OnDemandBackup::TooSoon { message, .. } => Err(Error::Conflict(message)),
        }
    }
}

pub use registered::*;
mod registered {
    //! The backup tool as the registry serves it.
    use super::*;
    use crate::scope::Flag;
    use crate::service::Areas;
    use crate::service::documents::NoArgs;
    use crate::service::registry::{Tool, ToolFuture};
    use crate::tools::{Requirement::Fixed, Rule, ToolGroup::Maintenance, ToolSpec};

    /// `backup`.
    #[derive(Debug)]
    pub struct Backup;
    impl Tool for Backup {
        type Args = NoArgs;
        type Answer = BackupSummary;
        const SPEC: ToolSpec = ToolSpec::new(
            "backup",
            Maintenance,
            Fixed(
                Rule::write()
                    .global("a backup dumps every namespace")
                    .with_flags(&[Flag::CanBackup]),
            ),
            "Run a backup now, as the daily one runs: every table to the media store under a sealed manifest, the Markdown mirror, then retention and history pruning. Needs the write grant, every namespace and can_backup; one run per interval per caller. Send a progressToken to follow its tables and steps; a cancelled run keeps nothing.",
        )
        .destructive()
        .titled("Run a backup");
        fn run<'a>(
            s: Areas<'a>,
            c: &'a Caller,
            _a: NoArgs,
            k: &'a dyn Confirmer,
        ) -> ToolFuture<'a, Self::Answer> {
            Box::pin(async move { s.maintenance().backup(c, k).await })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use async_trait::async_trait;
    use futures::executor::block_on;

    use super::*;
    use crate::service::Consent;

    /// A run that reports a table of 503 rows in three pages (one empty), then a step, and
    /// notes whether it saw its caller cancel.
    struct Scripted {
        outcome: fn() -> OnDemandBackup,
        saw_cancel: AtomicBool,
    }

    impl BackupRunner for Scripted {
        fn backup<'a>(
            &'a self,
            _: &'a Caller,
            progress: &'a dyn Progress,
        ) -> Pin<Box<dyn Future<Output = Result<OnDemandBackup>> + Send + 'a>> {
            Box::pin(async move {
                progress.table_started("documents", None);
                progress.rows_done(0);
                progress.rows_done(500);
                progress.rows_done(3);
                progress.table_done("documents", 503);
                progress.step("preflight");
                self.saw_cancel
                    .store(progress.cancelled(), Ordering::SeqCst);
                Ok((self.outcome)())
            })
        }
    }

    /// A client that hears progress, and may have cancelled.
    #[derive(Default)]
    struct Listener {
        heard: Mutex<Vec<(u64, Option<u64>, String)>>,
        cancelled: bool,
    }

    #[async_trait]
    impl Confirmer for Listener {
        async fn confirm(&self, _: &str) -> Consent {
            Consent::Unsupported
        }
        async fn progress(&self, done: u64, total: Option<u64>, message: &str) {
            let mut heard = self.heard.lock().unwrap_or_else(|p| p.into_inner());
            heard.push((done, total, message.to_owned()));
        }
        fn cancelled(&self) -> bool {
            self.cancelled
        }
    }

    fn ran() -> OnDemandBackup {
        OnDemandBackup::Ran(BackupSummary {
            ran: true,
            json_keys: vec!["backups/json/r/manifest.json".into()],
            json_key_count: 1,
            ..BackupSummary::default()
        })
    }

    fn too_soon() -> OnDemandBackup {
        OnDemandBackup::TooSoon {
            retry_after_secs: 42,
            message: "agent:ops ran a backup on demand less than 10 minutes ago; retry in 42 s"
                .into(),
        }
    }

    fn call(runner: &Scripted, client: &Listener) -> Result<BackupSummary> {
        let clock = crate::time::ManualClock::new(crate::time::Timestamp::from_millis(0));
        let rest = crate::service::recording_store::RecordingStore::default();
        let host = None;
        let reads = crate::service::repo::RepoReadCache::default();
        let cx = MaintenanceCx {
            docs: &rest,
            namespaces: &rest,
            repo: crate::service::repo::RepoCx {
                namespaces: &rest,
                audit_log: &rest,
                reviews: &rest,
                jobs: &rest,
                repo_host: &host,
                repo_reads: &reads,
                clock: &clock,
            },
            clock: &clock,
            backups: runner,
        };
        block_on(cx.backup(&Caller::admin("owner"), client))
    }

    #[test]
    fn progress_only_grows_and_says_the_table_and_its_rows() {
        let runner = Scripted {
            outcome: ran,
            saw_cancel: AtomicBool::new(true),
        };
        let client = Listener::default();
        let summary = call(&runner, &client).expect("the run's summary");
        assert!(summary.ran);
        assert_eq!(summary.json_keys, ["backups/json/r/manifest.json"]);
        let heard = client.heard.into_inner().unwrap_or_else(|p| p.into_inner());
        let expected: Vec<(u64, Option<u64>, String)> = [
            (1, "exporting documents"),
            (501, "exporting documents: 500 rows"),
            (504, "exporting documents: 503 rows"),
            (505, "exported documents: 503 rows"),
            (506, "preflight"),
        ]
        .into_iter()
        .map(|(done, m)| (done, None, m.to_owned()))
        .collect();
        assert_eq!(heard, expected);
        assert!(!runner.saw_cancel.load(Ordering::SeqCst));
    }

    #[test]
    fn a_run_sees_its_client_cancel() {
        let runner = Scripted {
            outcome: ran,
            saw_cancel: AtomicBool::new(false),
        };
        let client = Listener {
            cancelled: true,
            ..Listener::default()
        };
        call(&runner, &client).expect("the scripted run ends");
        assert!(runner.saw_cancel.load(Ordering::SeqCst));
    }

    #[test]
    fn a_second_run_within_the_interval_is_refused_with_the_wait() {
        let runner = Scripted {
            outcome: too_soon,
            saw_cancel: AtomicBool::new(false),
        };
        let err = call(&runner, &Listener::default()).expect_err("too soon");
        assert!(
            matches!(&err, Error::Conflict(m) if m.contains("retry in 42 s")),
            "{err:?}"
        );
    }
}
