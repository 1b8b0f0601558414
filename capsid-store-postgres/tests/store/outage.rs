//! A server that cannot be reached is named with the real cause, at once: connecting to a
//! port nobody listens on says "connection refused at 127.0.0.1:<port>" (not that no pooled
//! connection became free in time), never echoes the URL's password, and a reachable server
//! has no outage cause.

use crate::common;

use std::time::Duration;

use capsid_core::ports::{StoreError, StoreHealth};
use capsid_store_postgres::{PgStore, PgTimeouts};

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

#[tokio::test]
async fn a_refused_connection_is_named_with_host_and_port_and_no_password() {
    let port = closed_port();
    let url = format!("postgres://capsid:hunter2-secret@127.0.0.1:{port}/capsid");
    let timeouts = PgTimeouts {
        acquire: Duration::from_secs(30),
        connect: Duration::from_secs(30),
    };
    let error = PgStore::connect_timeouts(&url, 2, timeouts)
        .await
        .expect_err("nothing listens there");
    assert_eq!(
        error,
        StoreError::Unavailable(format!("connection refused at 127.0.0.1:{port}")),
        "the real cause, without waiting out the 30 s acquire timeout"
    );
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[tokio::test]
async fn a_reachable_server_has_no_outage_cause() {
    let Some(db) = common::TestDb::new("a_reachable_server_has_no_outage_cause", 2).await else {
        return;
    };
    assert_eq!(db.store.outage_cause().await, None);
    db.finish().await;
}
