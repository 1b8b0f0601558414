//! Why the database cannot be reached, in words a caller may read: one direct connection
//! attempt, bounded by the connect timeout, whose error names the real cause ("connection
//! refused at 127.0.0.1:5432") where the pool only says that no connection became free in
//! time (sqlx retries a refused connection silently until its acquire deadline). One attempt
//! runs at a time and its answer is kept briefly, so an outage that fails many calls at once
//! costs one connection attempt, not one per call.

use std::time::{Duration, Instant};

use capsid_core::ports::StoreError;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use tokio::sync::Mutex;

/// How long the answer of one attempt stands for every caller that asks.
const FRESH_FOR: Duration = Duration::from_millis(500);

/// SQLSTATE: the server is starting up or shutting down.
const CANNOT_CONNECT_NOW: &str = "57P03";
/// SQLSTATE: no connection slot is free.
const TOO_MANY_CONNECTIONS: &str = "53300";

/// Why one connection attempt failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConnectFailure {
    /// The cause in words, naming the server (never the URL, which may hold a password).
    pub(crate) cause: String,
    /// Whether waiting may cure it (the server is down, starting or full), as opposed to a
    /// refusal that stands (a wrong password, a database that does not exist).
    pub(crate) transient: bool,
}

impl From<ConnectFailure> for StoreError {
    fn from(failure: ConnectFailure) -> Self {
        if failure.transient {
            StoreError::Unavailable(failure.cause)
        } else {
            StoreError::Backend(failure.cause)
        }
    }
}

/// The server a connection attempt goes to, as a message names it.
pub(crate) fn target(options: &PgConnectOptions) -> String {
    let host = options.get_host();
    if let Some(dir) = options.get_socket() {
        return format!("socket {}/.s.PGSQL.{}", dir.display(), options.get_port());
    }
    if host.starts_with('/') {
        return format!("socket {host}/.s.PGSQL.{}", options.get_port());
    }
    if host.contains(':') && !host.starts_with('[') {
        return format!("[{host}]:{}", options.get_port());
    }
    format!("{host}:{}", options.get_port())
}

/// Describes why connecting to `target` failed with `error`.
pub(crate) fn describe(error: &sqlx::Error, target: &str) -> ConnectFailure {
    let transient = |cause: String| ConnectFailure {
        cause,
        transient: true,
    };
    match error {
        sqlx::Error::Io(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            transient(format!("connection refused at {target}"))
        }
        sqlx::Error::Io(e) => transient(format!("cannot connect to {target}: {e}")),
        sqlx::Error::Tls(e) => transient(format!("TLS with {target} failed: {e}")),
        sqlx::Error::Database(db) => {
            let code = db.code();
            let message = db.message();
            match code.as_deref() {
                Some(CANNOT_CONNECT_NOW) => transient(format!(
                    "the database server at {target} is starting up or shutting down ({message})"
                )),
                Some(TOO_MANY_CONNECTIONS) => transient(format!(
                    "the database server at {target} has no connection to spare ({message})"
                )),
                Some(c) if c.starts_with("08") || c.starts_with("57P") => {
                    transient(format!("the database server at {target}: {message}"))
                }
                _ => ConnectFailure {
                    cause: format!(
                        "the database server at {target} refused the connection: {message}"
                    ),
                    transient: false,
                },
            }
        }
        other => transient(format!("cannot connect to {target}: {other}")),
    }
}

/// One connection attempt to the server `options` name, bounded by `timeout`; the
/// connection is closed again at once.
pub(crate) async fn attempt(
    options: &PgConnectOptions,
    timeout: Duration,
) -> Result<(), ConnectFailure> {
    let target = target(options);
    match tokio::time::timeout(timeout, PgConnection::connect_with(options)).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(e)) => Err(describe(&e, &target)),
        Err(_) => Err(ConnectFailure {
            cause: format!("no answer from {target} within {} ms", timeout.as_millis()),
            transient: true,
        }),
    }
}

/// The store's account of its outages: the connect options to try and the latest answer.
pub(crate) struct Outage {
    options: PgConnectOptions,
    connect_timeout: Duration,
    last: Mutex<Option<(Instant, Option<String>)>>,
}

impl Outage {
    pub(crate) fn new(options: PgConnectOptions, connect_timeout: Duration) -> Outage {
        Outage {
            options,
            connect_timeout,
            last: Mutex::new(None),
        }
    }

    /// One connection attempt now (not shared with other callers).
    pub(crate) async fn attempt(&self) -> Result<(), ConnectFailure> {
        attempt(&self.options, self.connect_timeout).await
    }

    /// Why the server cannot be reached, or `None` when a connection attempt succeeds (a
    /// call that timed out then met a busy pool, not an outage).
    pub(crate) async fn cause(&self) -> Option<String> {
        let mut last = self.last.lock().await;
        if let Some((at, cause)) = last.as_ref()
            && at.elapsed() < FRESH_FOR
        {
            return cause.clone();
        }
        let cause = self.attempt().await.err().map(|f| f.cause);
        let changed = last.as_ref().is_none_or(|(_, before)| *before != cause);
        if changed {
            match &cause {
                Some(why) => tracing::warn!(cause = %why, "postgres cannot be reached"),
                None => tracing::info!("postgres can be reached"),
            }
        }
        *last = Some((Instant::now(), cause.clone()));
        cause
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    #[test]
    fn a_refused_connection_names_the_server_and_may_pass() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let failure = describe(&sqlx::Error::Io(refused), "127.0.0.1:5432");
        assert_eq!(failure.cause, "connection refused at 127.0.0.1:5432");
        assert!(failure.transient);
        assert_eq!(
            StoreError::from(failure),
            StoreError::Unavailable("connection refused at 127.0.0.1:5432".into())
        );
    }

    #[test]
    fn other_io_failures_keep_their_words() {
        let unreachable = std::io::Error::new(std::io::ErrorKind::HostUnreachable, "no route");
        let failure = describe(&sqlx::Error::Io(unreachable), "db.internal:5432");
        assert_eq!(
            failure.cause,
            "cannot connect to db.internal:5432: no route"
        );
        assert!(failure.transient);
    }

    #[test]
    fn targets_name_host_and_port_and_never_the_password() {
        let options =
            PgConnectOptions::from_str("postgres://capsid:s3cret@db.internal:6543/capsid")
                .expect("url");
        assert_eq!(target(&options), "db.internal:6543");
        let options = PgConnectOptions::from_str("postgres://u:p@[::1]:5432/x").expect("url");
        assert_eq!(target(&options), "[::1]:5432");
    }
}
