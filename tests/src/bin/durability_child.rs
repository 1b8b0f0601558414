//! The durability child: opens a SQLite store at the given path, migrates, writes `count`
//! documents (`durable/<i>.md`, bodies from `textgen::durable_body(seed, i)`), printing
//! `ACK <sha256 of the body>` after each acknowledged write, then blocks reading stdin until
//! its parent kills it. With `<writers>` above 1, that many tasks write at once (document `i`
//! by task `i % writers`, so their writes share group commits) and each acknowledgement is
//! printed as `ACK <i> <sha256>`, in the order the writes were acknowledged.
//!
//! Usage: `durability_child <db-path> <count> <seed> [<writers>]`

use std::io::{Read, Write};

use capsid_core::crypto::sha256_hex;
use capsid_core::ports::{AuditEntry, DocumentStore, DocumentWrite, WriteGuard};
use capsid_core::time::Timestamp;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::textgen::durable_body;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (path, count, seed, writers) = match args.as_slice() {
        [_, path, count, seed] => (path, count, seed, "1"),
        [_, path, count, seed, writers] => (path, count, seed, writers.as_str()),
        _ => anyhow::bail!("usage: durability_child <db-path> <count> <seed> [<writers>]"),
    };
    let (count, seed, writers): (usize, u64, usize) =
        (count.parse()?, seed.parse()?, writers.parse()?);
    let store = SqliteStore::open(&format!("sqlite://{path}")).await?;
    store.migrate().await?;
    let mut stdout = std::io::stdout().lock();
    if writers <= 1 {
        for i in 0..count {
            let body = write_one(&store, seed, i).await?;
            writeln!(stdout, "ACK {}", sha256_hex(&body))?;
            stdout.flush()?;
        }
    } else {
        let (acks, mut acknowledged) = tokio::sync::mpsc::unbounded_channel();
        for w in 0..writers {
            let (store, acks) = (store.clone(), acks.clone());
            tokio::spawn(async move {
                for i in (w..count).step_by(writers) {
                    let body = write_one(&store, seed, i).await?;
                    if acks.send((i, sha256_hex(&body))).is_err() {
                        break;
                    }
                }
                anyhow::Ok(())
            });
        }
        drop(acks);
        while let Some((i, hash)) = acknowledged.recv().await {
            writeln!(stdout, "ACK {i} {hash}")?;
            stdout.flush()?;
        }
    }
    drop(stdout);
    // Wait to be killed: the parent never writes, so this blocks until SIGKILL.
    let mut sink = Vec::new();
    std::io::stdin().read_to_end(&mut sink)?;
    Ok(())
}

/// Writes document `i` and returns its body once the write is acknowledged.
async fn write_one(store: &SqliteStore, seed: u64, i: usize) -> anyhow::Result<String> {
    let body = durable_body(seed, i);
    let at = Timestamp::from_millis(1_767_225_600_000 + i as i64);
    let path = format!("durable/{i}.md");
    let write = DocumentWrite {
        namespace: "durable".into(),
        path: path.clone(),
        title: Some(format!("Durable {i}")),
        body: Some(body.clone()),
        doc_type: None,
        status: None,
        tags: None,
        links: None,
        at,
    };
    let audit = AuditEntry {
        actor: "agent:durability".into(),
        action: "write".into(),
        namespace: Some("durable".into()),
        path: Some(path),
        params: serde_json::json!({ "i": i }),
        at,
    };
    store
        .write_document(write, WriteGuard::Create, vec![audit])
        .await?;
    Ok(body)
}
