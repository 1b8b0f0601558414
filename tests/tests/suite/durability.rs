//! Durability on SQLite: a child process acknowledges document writes and is killed with
//! SIGKILL (after its last write, or in the middle of a stream of writes); the reopened
//! database holds every acknowledged document byte for byte. The same with many writers at
//! once, whose writes share group commits.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use capsid_core::crypto::sha256_hex;
use capsid_core::ports::DocumentStore;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::textgen::durable_body;

/// Spawns the child on `db` with `writers` writers, reads `kill_after` ACK lines, kills it,
/// and returns each acknowledged document's index and hash.
fn acknowledged_then_killed(
    db: &std::path::Path,
    count: usize,
    seed: u64,
    kill_after: usize,
    writers: usize,
) -> Vec<(usize, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_durability_child"))
        .arg(db)
        .arg(count.to_string())
        .arg(seed.to_string())
        .arg(writers.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the durability child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut acks = Vec::new();
    // Kept open until after the kill, so the child is never stopped by a closed pipe.
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        let line = line.expect("read an ACK line");
        let rest = line
            .strip_prefix("ACK ")
            .unwrap_or_else(|| panic!("unexpected child output {line:?}"));
        let ack = match rest.split_once(' ') {
            Some((i, hash)) => (i.parse().expect("an ACK index"), hash.to_owned()),
            None => (acks.len(), rest.to_owned()),
        };
        acks.push(ack);
        if acks.len() == kill_after {
            break;
        }
    }
    assert_eq!(
        acks.len(),
        kill_after,
        "the child stopped before acknowledging {kill_after} writes"
    );
    // std's `Child::kill` sends SIGKILL on Unix: no destructor, no checkpoint, no clean close.
    child.kill().expect("SIGKILL the child");
    let status = child.wait().expect("reap the child");
    drop(lines);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "killed by SIGKILL: {status:?}"
    );
    acks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    // (documents the child writes, ACKs read before the kill, seed)
    let rounds = [
        (1, 1, 11),
        (1, 1, 12),
        (8, 8, 13),
        (400, 40, 14),
        (400, 150, 15),
    ];
    for (count, kill_after, seed) in rounds {
        survives(count, kill_after, seed, 1).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_acknowledged_writes_survive_sigkill() {
    // (documents, ACKs read before the kill, seed, concurrent writers in the child)
    for (count, kill_after, seed, writers) in [(400, 100, 21, 16), (600, 250, 22, 32)] {
        survives(count, kill_after, seed, writers).await;
    }
}

/// One round: the child acknowledges `kill_after` of `count` writes and is killed; every
/// acknowledged document is there byte for byte with its audit row, and no other is torn.
async fn survives(count: usize, kill_after: usize, seed: u64, writers: usize) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let db = dir.path().join("capsid.db");
    let acks = acknowledged_then_killed(&db, count, seed, kill_after, writers);
    let store = SqliteStore::open(&format!("sqlite://{}", db.display()))
        .await
        .expect("reopen after the crash");
    store.migrate().await.expect("migrate after the crash");
    let mut acknowledged = vec![false; count];
    for (i, ack) in &acks {
        let i = *i;
        acknowledged[i] = true;
        let want = durable_body(seed, i);
        assert_eq!(
            ack,
            &sha256_hex(&want),
            "round {seed}: the child acknowledged another body for {i}"
        );
        let document = store
            .document("durable", &format!("durable/{i}.md"))
            .await
            .expect("read after the crash")
            .unwrap_or_else(|| panic!("round {seed}: acknowledged document {i} was lost"));
        let body = document.body.expect("body");
        assert_eq!(
            body.as_bytes(),
            want.as_bytes(),
            "round {seed}: document {i} differs"
        );
        assert_eq!(sha256_hex(&body), *ack);
        assert_eq!(
            store
                .last_actor("durable", &format!("durable/{i}.md"))
                .await
                .expect("audit")
                .as_deref(),
            Some("agent:durability")
        );
    }
    // Writes not acknowledged before the kill may or may not have committed; none may be torn.
    for i in (0..count).filter(|i| !acknowledged[*i]) {
        if let Some(document) = store
            .document("durable", &format!("durable/{i}.md"))
            .await
            .expect("read")
        {
            assert_eq!(
                document.body.as_deref(),
                Some(durable_body(seed, i).as_str()),
                "round {seed}: document {i} is torn"
            );
        }
    }
    store.close().await;
}
