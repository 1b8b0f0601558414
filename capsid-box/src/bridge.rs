//! Bridges: the only ways out of a box without a network. The outside end is a [`Door`], a
//! Unix socket in a folder only the supervisor and the box see, bound into the box at
//! `/run/doors/<name>.sock`; each connection is forwarded to a TCP address on the host or
//! served in-process by an axum [`Router`], and recorded ([`ConnectionRecord`]: door, target,
//! bytes each way, start, end) in a [`RecordLog`] the caller reads. The inside end,
//! [`serve_inside`], runs in the box (the `capsid` binary's hidden subcommand, or the
//! `capsid-door` test binary): it listens on the box's loopback and pipes each connection to
//! its door's socket, so tools inside speak plain TCP to `127.0.0.1:<port>`.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tower::ServiceExt;

/// A log of records the supervisor reads while the box runs and after: appended by the doors,
/// read by [`RecordLog::records`], waited on by [`RecordLog::wait_for`].
#[derive(Debug)]
pub struct RecordLog<T> {
    records: Arc<watch::Sender<Vec<T>>>,
}

impl<T> Clone for RecordLog<T> {
    fn clone(&self) -> Self {
        RecordLog {
            records: Arc::clone(&self.records),
        }
    }
}

impl<T: Clone> Default for RecordLog<T> {
    fn default() -> Self {
        RecordLog::new()
    }
}

impl<T: Clone> RecordLog<T> {
    /// An empty log.
    pub fn new() -> RecordLog<T> {
        RecordLog {
            records: Arc::new(watch::Sender::new(Vec::new())),
        }
    }

    /// Appends one record.
    pub fn push(&self, record: T) {
        self.records.send_modify(|records| records.push(record));
    }

    /// Every record so far, oldest first.
    pub fn records(&self) -> Vec<T> {
        self.records.borrow().clone()
    }

    /// Waits until `ready` holds of the records, at most `timeout`; the records then, or
    /// `None` when the time ran out.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        mut ready: impl FnMut(&[T]) -> bool,
    ) -> Option<Vec<T>> {
        let mut rx = self.records.subscribe();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|r| ready(r))).await;
        match waited {
            Ok(Ok(records)) => Some(records.clone()),
            _ => None,
        }
    }
}

/// What a door's connection reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DoorEnd {
    /// A TCP address on the host.
    Tcp {
        /// Its host.
        host: String,
        /// Its port.
        port: u16,
    },
    /// A service in the supervisor's process.
    InProcess,
}

/// One connection through a door, recorded when it ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConnectionRecord {
    /// The door's name.
    pub door: String,
    /// What it reached.
    pub target: DoorEnd,
    /// Bytes from the box.
    pub bytes_up: u64,
    /// Bytes to the box.
    pub bytes_down: u64,
    /// When the box connected.
    pub started: SystemTime,
    /// When the connection ended.
    pub ended: SystemTime,
    /// Why the target could not be reached, when it could not.
    pub failure: Option<String>,
}

/// Where a door forwards its connections.
#[derive(Clone, Debug)]
pub enum DoorTarget {
    /// Pipe bytes to this TCP address on the host.
    Tcp(SocketAddr),
    /// Serve HTTP/1.1 (with upgrades, so `CONNECT` works) with this router in-process. Each
    /// request carries the door's [`DoorClosing`] as an extension.
    Http(Router),
}

/// Handed to in-process services as a request extension: resolves when the door closes, so a
/// tunnel the service spawned ends with the door.
#[derive(Clone, Debug)]
pub struct DoorClosing(watch::Receiver<bool>);

impl DoorClosing {
    /// Resolves when the door closes (or is dropped).
    pub async fn closed(&self) {
        closed(self.0.clone()).await;
    }
}

async fn closed(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|closing| *closing).await;
}

/// The outside end of a bridge: a Unix socket the supervisor owns, recording each connection.
/// [`Door::close`] (or dropping it) stops accepting and ends live connections.
#[derive(Debug)]
pub struct Door {
    name: String,
    socket: PathBuf,
    closing: watch::Sender<bool>,
    accepting: Option<JoinHandle<()>>,
}

impl Door {
    /// Listens at `socket` (a stale socket file there is replaced; the socket is made 0600) and
    /// forwards each connection to `target`, recording it in `log` as door `name`.
    pub async fn open(
        name: impl Into<String>,
        socket: impl Into<PathBuf>,
        target: DoorTarget,
        log: RecordLog<ConnectionRecord>,
    ) -> io::Result<Door> {
        let (name, socket) = (name.into(), socket.into());
        if let Ok(meta) = std::fs::symlink_metadata(&socket)
            && meta.file_type().is_socket()
        {
            std::fs::remove_file(&socket)?;
        }
        let listener = UnixListener::bind(&socket).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("door '{name}' cannot listen at {}: {e}", socket.display()),
            )
        })?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
        let (closing, rx) = watch::channel(false);
        let accepting = tokio::spawn(accept(name.clone(), listener, target, log, rx));
        Ok(Door {
            name,
            socket,
            closing,
            accepting: Some(accepting),
        })
    }

    /// The door's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The socket on the host (what [`capsid_core::drive::box_plan::BoxSpec::door`] binds).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Stops accepting, ends every live connection, waits until each is recorded, and removes
    /// the socket.
    pub async fn close(mut self) {
        let _ = self.closing.send(true);
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.await;
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl Drop for Door {
    fn drop(&mut self) {
        let _ = self.closing.send(true);
    }
}

async fn accept(
    door: String,
    listener: UnixListener,
    target: DoorTarget,
    log: RecordLog<ConnectionRecord>,
    closing: watch::Receiver<bool>,
) {
    let mut live = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let connection = Connection {
                        door: door.clone(),
                        log: log.clone(),
                        closing: closing.clone(),
                    };
                    live.spawn(connection.serve(stream, target.clone()));
                }
                Err(e) => tracing::warn!(door, error = %e, "door accept failed"),
            },
            _ = closed(closing.clone()) => break,
            Some(_) = live.join_next(), if !live.is_empty() => {}
        }
    }
    drop(listener);
    while live.join_next().await.is_some() {}
}

struct Connection {
    door: String,
    log: RecordLog<ConnectionRecord>,
    closing: watch::Receiver<bool>,
}

impl Connection {
    async fn serve(self, stream: UnixStream, target: DoorTarget) {
        let started = SystemTime::now();
        let counters = Arc::new(Counters::default());
        let (done, dropped) = oneshot::channel();
        let mut inside = Counting {
            inner: stream,
            counters: Arc::clone(&counters),
            read_is_up: true,
            _done: Some(done),
        };
        let mut failure = None;
        let end = match target {
            DoorTarget::Tcp(addr) => {
                tokio::select! {
                    outcome = async {
                        let mut out = TcpStream::connect(addr).await?;
                        let _ = out.set_nodelay(true);
                        tokio::io::copy_bidirectional(&mut inside, &mut out).await
                    } => {
                        if let Err(e) = outcome {
                            failure = Some(format!("{addr}: {e}"));
                        }
                    }
                    _ = closed(self.closing.clone()) => {}
                }
                drop(inside);
                DoorEnd::Tcp {
                    host: addr.ip().to_string(),
                    port: addr.port(),
                }
            }
            DoorTarget::Http(router) => {
                let closing = DoorClosing(self.closing.clone());
                let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                    let mut req = req.map(axum::body::Body::new);
                    req.extensions_mut().insert(closing.clone());
                    router.clone().oneshot(req)
                });
                let serving = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(inside), service)
                    .with_upgrades();
                tokio::select! {
                    _ = serving => {}
                    _ = closed(self.closing.clone()) => {}
                }
                // An upgraded connection (a CONNECT tunnel) still holds the stream: the
                // connection ends when the service lets go of it.
                tokio::select! {
                    _ = dropped => {}
                    _ = closed(self.closing.clone()) => {}
                }
                DoorEnd::InProcess
            }
        };
        self.log.push(ConnectionRecord {
            door: self.door,
            target: end,
            bytes_up: counters.up.load(Ordering::Relaxed),
            bytes_down: counters.down.load(Ordering::Relaxed),
            started,
            ended: SystemTime::now(),
            failure,
        });
    }
}

/// Bytes through a stream, each way.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) up: AtomicU64,
    pub(crate) down: AtomicU64,
}

/// A stream that counts what passes: reads count as `up` when `read_is_up` (the box's end),
/// as `down` otherwise (an upstream's end). Dropping it drops `_done`.
pub(crate) struct Counting<S> {
    pub(crate) inner: S,
    pub(crate) counters: Arc<Counters>,
    pub(crate) read_is_up: bool,
    pub(crate) _done: Option<oneshot::Sender<()>>,
}

impl<S> Counting<S> {
    fn read_counter(&self) -> &AtomicU64 {
        if self.read_is_up {
            &self.counters.up
        } else {
            &self.counters.down
        }
    }

    fn write_counter(&self) -> &AtomicU64 {
        if self.read_is_up {
            &self.counters.down
        } else {
            &self.counters.up
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counting<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let n = (buf.filled().len() - before) as u64;
            self.read_counter().fetch_add(n, Ordering::Relaxed);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counting<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.write_counter().fetch_add(n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One inside pair: listen on the box's loopback, pipe to a door's socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsidePair {
    /// Where tools inside connect (`127.0.0.1:9000`).
    pub listen: SocketAddr,
    /// The door's socket inside the box (`/run/doors/model.sock`).
    pub to: PathBuf,
}

/// What the inside end is asked: its pairs, and optionally the program to run once every
/// listener is up (the inside end then exits with that program's status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InsideArgs {
    /// The pairs, at least one.
    pub pairs: Vec<InsidePair>,
    /// The program and its arguments, after `--`.
    pub program: Option<(OsString, Vec<OsString>)>,
}

/// Arguments the inside end cannot run with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InsideArgsError {
    /// An argument that is not `--listen`, `--to` or `--`.
    #[error("unknown argument {0:?}: expected --listen ADDR --to SOCKET [...] [-- PROGRAM ARGS]")]
    Unknown(String),
    /// A flag without its value.
    #[error("{0} needs a value")]
    Missing(&'static str),
    /// `--listen` that is not an address with a port.
    #[error("--listen {0:?} is not an address with a port (127.0.0.1:9000)")]
    Listen(String),
    /// `--listen` and `--to` not in pairs.
    #[error("each --listen needs one --to after it, and at least one pair is needed")]
    Unpaired,
}

/// Parses `--listen 127.0.0.1:9000 --to /run/doors/x.sock` (repeated), then optionally
/// `-- PROGRAM ARGS...`.
pub fn parse_inside_args(
    args: impl IntoIterator<Item = OsString>,
) -> Result<InsideArgs, InsideArgsError> {
    let mut args = args.into_iter();
    let mut pairs = Vec::new();
    let mut listen: Option<SocketAddr> = None;
    let mut program = None;
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--listen") => {
                let value = args.next().ok_or(InsideArgsError::Missing("--listen"))?;
                let text = value.to_string_lossy().into_owned();
                if listen.is_some() {
                    return Err(InsideArgsError::Unpaired);
                }
                listen = Some(text.parse().map_err(|_| InsideArgsError::Listen(text))?);
            }
            Some("--to") => {
                let to = args.next().ok_or(InsideArgsError::Missing("--to"))?;
                let listen = listen.take().ok_or(InsideArgsError::Unpaired)?;
                pairs.push(InsidePair {
                    listen,
                    to: to.into(),
                });
            }
            Some("--") => {
                let name = args.next().ok_or(InsideArgsError::Missing("--"))?;
                program = Some((name, args.by_ref().collect()));
            }
            _ => {
                return Err(InsideArgsError::Unknown(arg.to_string_lossy().into_owned()));
            }
        }
    }
    if listen.is_some() || pairs.is_empty() {
        return Err(InsideArgsError::Unpaired);
    }
    Ok(InsideArgs { pairs, program })
}

/// The inside end: binds every pair's listener (an error names the address), pipes each
/// connection to its socket, and, given a program, runs it once all listen and returns its
/// exit code (128 + signal when it was killed); without one, serves until killed.
pub async fn serve_inside(args: InsideArgs) -> io::Result<i32> {
    let mut listeners = Vec::new();
    for pair in &args.pairs {
        let listener = TcpListener::bind(pair.listen).await.map_err(|e| {
            io::Error::new(e.kind(), format!("cannot listen on {}: {e}", pair.listen))
        })?;
        listeners.push((listener, pair.to.clone()));
    }
    let mut serving = JoinSet::new();
    for (listener, to) in listeners {
        serving.spawn(pipe_to_door(listener, to));
    }
    match args.program {
        Some((program, program_args)) => {
            let status = tokio::process::Command::new(&program)
                .args(program_args)
                .status()
                .await
                .map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot run {}: {e}", Path::new(&program).display()),
                    )
                })?;
            Ok(status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1))
        }
        None => {
            while serving.join_next().await.is_some() {}
            Ok(0)
        }
    }
}

async fn pipe_to_door(listener: TcpListener, to: PathBuf) {
    loop {
        let Ok((mut tcp, _)) = listener.accept().await else {
            continue;
        };
        let to = to.clone();
        tokio::spawn(async move {
            let _ = tcp.set_nodelay(true);
            match UnixStream::connect(&to).await {
                Ok(mut door) => {
                    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut door).await;
                }
                Err(e) => eprintln!("capsid door: cannot reach {}: {e}", to.display()),
            }
        });
    }
}

impl fmt::Display for DoorEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DoorEnd::Tcp { host, port } => write!(f, "{host}:{port}"),
            DoorEnd::InProcess => f.write_str("in-process"),
        }
    }
}

#[cfg(test)]
mod tests;
