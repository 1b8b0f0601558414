//! The durability child: opens a SQLite store at the given path, migrates, writes `count`
//! documents (`durable/<i>.md`, bodies from `textgen::durable_body(seed, i)`), printing
//! `ACK <sha256 of the body>` after each acknowledged write, then blocks reading stdin until
//! its parent kills it.
//!
//! Usage: `durability_child <db-path> <count> <seed>`

use std::io::{Read, Write};

use capsid_core::crypto::sha256_hex;
use capsid_core::ports::{AuditEntry, DocumentStore, DocumentWrite, WriteGuard};
use capsid_core::time::Timestamp;
use capsid_store_sqlite::SqliteStore;
use capsid_tests::textgen::durable_body;

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, count, seed] = args.as_slice() else {
        anyhow::bail!("usage: durability_child <db-path> <count> <seed>");
    };
    let (count, seed): (usize, u64) = (count.parse()?, seed.parse()?);
    let store = SqliteStore::open(&format!("sqlite://{path}")).await?;
    store.migrate().await?;
    let mut stdout = std::io::stdout().lock();
    for i in 0..count {
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
        writeln!(stdout, "ACK {}", sha256_hex(&body))?;
        stdout.flush()?;
    }
    drop(stdout);
    // Wait to be killed: the parent never writes, so this blocks until SIGKILL.
    let mut sink = Vec::new();
    std::io::stdin().read_to_end(&mut sink)?;
    Ok(())
}
