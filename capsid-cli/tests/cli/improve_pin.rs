//! The real binary: `capsid improve pin <ns> [--json]` pins the Anchors checksum of
//! `<ns>/improve/scores.md` and prints it (and the pin it replaced); a namespace without the
//! document, or with a document that has problems, is refused (exit 2) and nothing is stored.
//! The scores document is written into the same SQLite file through the service, as the CLI's
//! admin caller, between runs of the binary.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use capsid_core::caller::Caller;
use capsid_core::improve::anchors::anchors_checksum;
use capsid_core::improve::keys::anchor_key;
use capsid_core::ports::SettingsStore;
use capsid_core::service::{NoConfirmer, Service, ServiceConfig};
use capsid_core::time::{Clock, ManualClock, Timestamp};
use capsid_store_sqlite::SqliteStore;
use capsid_tests::server::TestEntropy;
use serde_json::json;

const SCORES_MD: &str = "# Scores\n\n## Anchors\n- tests_pass: required\n\n## Secondary\n- bundle_kb: minimize weight 1\n";

fn capsid(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capsid"))
        .args(args)
        .env("CAPSID_DATA_DIR", data)
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .env_remove("CAPSID_MEDIA_URL")
        .env_remove("CAPSID_HOLDOUT_URL")
        .env_remove("CAPSID_GITHUB_APP_CLIENT_ID")
        .env_remove("CAPSID_GITHUB_APP_PRIVATE_KEY")
        .env("CAPSID_LOG", "warn")
        .output()
        .expect("run capsid")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The SQLite file the binary uses, and the service over it.
async fn open(data: &Path) -> (Arc<SqliteStore>, Service) {
    let url = format!("sqlite://{}", data.join("capsid.db").display());
    let store = Arc::new(SqliteStore::open(&url).await.expect("open the store"));
    let clock: Arc<dyn Clock> =
        Arc::new(ManualClock::new(Timestamp::from_millis(1_800_000_000_000)));
    let service = Service::new(
        store.clone(),
        clock,
        Arc::new(TestEntropy),
        ServiceConfig {
            signing_secret: None,
            operator_keys: Vec::new(),
            ..Default::default()
        },
    );
    (store, service)
}

async fn write_scores(service: &Service, ns: &str, body: &str) {
    let wrote = service
        .call_tool(
            &Caller::cli("test"),
            "write",
            json!({"namespace": ns, "path": "improve/scores.md", "title": "Scores",
                   "body": body, "allow_improve_paths": true, "confirm": true}),
            &NoConfirmer,
        )
        .await
        .expect("write scores.md");
    assert!(wrote.to_string().contains("scores.md"), "{wrote}");
}

async fn pin_of(store: &SqliteStore, ns: &str) -> Option<String> {
    store
        .setting(&anchor_key(ns), Timestamp::from_millis(1_800_000_000_000))
        .await
        .expect("setting")
}

#[tokio::test]
async fn capsid_improve_pin_prints_the_checksum_it_pins() {
    let dir = tempfile::tempdir().expect("a folder");
    let data = dir.path().join("data");
    let migrated = capsid(&data, &["migrate"]);
    assert!(migrated.status.success(), "{}", text(&migrated));
    for ns in ["capsid", "alpha"] {
        let registered = capsid(
            &data,
            &[
                "namespaces",
                "register",
                ns,
                "--repo",
                &format!("octo/{ns}"),
            ],
        );
        assert!(registered.status.success(), "{}", text(&registered));
    }
    // The roster starts empty: capsid is put on it the way a user would.
    let rostered = capsid(&data, &["improve", "roster", "add", "capsid"]);
    assert!(rostered.status.success(), "{}", text(&rostered));
    let (store, service) = open(&data).await;

    // No scores document yet: refused, nothing stored.
    let missing = capsid(&data, &["improve", "pin", "capsid"]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        text(&missing).contains("capsid/improve/scores.md does not exist"),
        "{}",
        text(&missing)
    );
    assert_eq!(pin_of(&store, "capsid").await, None);

    // A document with problems: refused naming them, nothing stored.
    write_scores(&service, "capsid", "## Anchors\n- tests_pass: min\n").await;
    let bad = capsid(&data, &["improve", "pin", "capsid", "--json"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    let answer: serde_json::Value = serde_json::from_slice(&bad.stdout).expect("json");
    assert_eq!(answer["ok"], false);
    assert!(
        answer["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("declares min with no bound"),
        "{answer}"
    );
    assert_eq!(pin_of(&store, "capsid").await, None);

    // A good document: the checksum is printed and stored.
    write_scores(&service, "capsid", SCORES_MD).await;
    let first = anchors_checksum(SCORES_MD);
    let pinned = capsid(&data, &["improve", "pin", "capsid"]);
    assert!(pinned.status.success(), "{}", text(&pinned));
    assert_eq!(
        String::from_utf8_lossy(&pinned.stdout).trim(),
        format!("pinned capsid: {first} (previous: none)")
    );
    assert_eq!(pin_of(&store, "capsid").await, Some(first.clone()));

    // A re-pin after the Anchors change reports the pin it replaced.
    let edited = SCORES_MD.replace("- tests_pass: required", "- tests_pass: min 2");
    write_scores(&service, "capsid", &edited).await;
    let again = capsid(&data, &["improve", "pin", "capsid", "--json"]);
    assert!(again.status.success(), "{}", text(&again));
    let answer: serde_json::Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(answer["checksum"], anchors_checksum(&edited).as_str());
    assert_eq!(answer["previous"], first.as_str());
    assert_eq!(answer["on_roster"], true);
    assert_eq!(
        pin_of(&store, "capsid").await,
        Some(anchors_checksum(&edited))
    );

    // Off the roster: pinned, and the answer says the loop will not run it yet.
    write_scores(&service, "alpha", SCORES_MD).await;
    let alpha = capsid(&data, &["improve", "pin", "alpha"]);
    assert!(alpha.status.success(), "{}", text(&alpha));
    let out = String::from_utf8_lossy(&alpha.stdout);
    assert!(out.contains(&first), "{out}");
    assert!(out.contains("alpha is not on the roster"), "{out}");

    // An unregistered namespace is refused by name.
    let unknown = capsid(&data, &["improve", "pin", "nosuch"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(text(&unknown).contains("nosuch"), "{}", text(&unknown));
}
