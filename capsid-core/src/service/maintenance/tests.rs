//! The namespace handlers against a mock of the one port they touch (everything else is a
//! recording store that must stay untouched).

use futures::executor::block_on;
use mockall::predicate::eq;
use serde_json::json;

use std::future::Future;
use std::pin::Pin;

use super::{BackupRunner, MaintenanceCx};
use crate::backup::summary::Progress;
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::ports::{MockNamespaceStore, StoreError};
use crate::service::OnDemandBackup;
use crate::service::recording_store::RecordingStore;
use crate::service::repo::{RepoCx, RepoReadCache};
use crate::service::{NoConfirmer, args::parse_args};
use crate::time::{ManualClock, Timestamp};

const AT: i64 = 1_800_000_000_000;

/// A backup runner the namespace handlers must never reach.
struct Unreached;

impl BackupRunner for Unreached {
    fn backup<'a>(
        &'a self,
        _: &'a Caller,
        _: &'a dyn Progress,
    ) -> Pin<Box<dyn Future<Output = Result<OnDemandBackup>> + Send + 'a>> {
        Box::pin(async { Err(Error::Internal("a namespace handler ran a backup".into())) })
    }
}

fn with<T>(
    namespaces: &MockNamespaceStore,
    run: impl FnOnce(MaintenanceCx<'_>) -> T,
) -> (T, Vec<&'static str>) {
    let rest = RecordingStore::default();
    let clock = ManualClock::new(Timestamp::from_millis(AT));
    let host = None;
    let reads = RepoReadCache::default();
    let cx = MaintenanceCx {
        docs: &rest,
        namespaces,
        repo: RepoCx {
            namespaces,
            audit_log: &rest,
            reviews: &rest,
            jobs: &rest,
            repo_host: &host,
            repo_reads: &reads,
            clock: &clock,
        },
        clock: &clock,
        backups: &Unreached,
    };
    let out = run(cx);
    (out, rest.touches())
}

#[test]
fn register_writes_the_mapping_and_its_audit_row_in_one_call() {
    let mut ns = MockNamespaceStore::new();
    ns.expect_register_namespace()
        .withf(|name, repos, at, audit| {
            name == "alpha"
                && repos == r#"[{"repo":"octo/alpha","label":"primary"}]"#
                && at.as_millis() == AT
                && audit.action == "register_namespace"
                && audit.actor == "github:owner"
                && audit.namespace.as_deref() == Some("alpha")
        })
        .times(1)
        .returning(|_, _, _, _| Ok(()));
    let args = parse_args(
        "register_namespace",
        json!({"namespace": "alpha", "repo": "octo/alpha"}),
    )
    .expect("valid arguments");
    let (out, touched) = with(&ns, |cx| {
        block_on(cx.register_namespace(&Caller::admin("owner"), args, &NoConfirmer))
    });
    let out = serde_json::to_value(out.expect("registered")).expect("an answer renders");
    assert_eq!(out["action"], "registered");
    assert_eq!(out["repos"][0]["label"], "primary");
    assert!(touched.is_empty(), "only the namespace port: {touched:?}");
}

#[test]
fn register_of_an_existing_namespace_points_at_update() {
    let mut ns = MockNamespaceStore::new();
    ns.expect_register_namespace()
        .returning(|_, _, _, _| Err(StoreError::Conflict("exists".into())));
    let args = parse_args(
        "register_namespace",
        json!({"namespace": "alpha", "repo": "octo/alpha"}),
    )
    .expect("valid arguments");
    let (out, _) = with(&ns, |cx| {
        block_on(cx.register_namespace(&Caller::admin("owner"), args, &NoConfirmer))
    });
    let err = out.expect_err("a conflict");
    assert!(err.to_string().contains("update_namespace"), "{err}");
}

#[test]
fn update_of_a_missing_namespace_changes_nothing() {
    let mut ns = MockNamespaceStore::new();
    ns.expect_namespace()
        .with(eq("ghost"))
        .times(1)
        .returning(|_| Ok(None));
    // No expectation for update_namespace: calling it would fail the test.
    let args = parse_args(
        "update_namespace",
        json!({"namespace": "ghost", "repos": r#"[{"repo":"octo/g","label":"primary"}]"#}),
    )
    .expect("valid arguments");
    let (out, touched) = with(&ns, |cx| {
        block_on(cx.update_namespace(&Caller::admin("owner"), args, &NoConfirmer))
    });
    let err = out.expect_err("not found");
    assert!(err.to_string().contains("register_namespace"), "{err}");
    assert!(touched.is_empty(), "{touched:?}");
}
