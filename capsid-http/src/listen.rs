//! Serving the router over TCP with bounds a slow or greedy client cannot get around (SPEC 8):
//! a deadline on reading a request's headers (an idle keep-alive connection waiting for its
//! next request counts as reading headers), a deadline on reading its body (408), and a bound
//! on concurrent connections (past it a connection is answered 503 and closed). The socket
//! peer is put in each request as `ConnectInfo`, for the per-address rate limits.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt;

/// The bounds of [`serve`].
#[derive(Clone, Copy, Debug)]
pub struct ServeLimits {
    /// How long a client may take to send a request's headers (and how long an idle
    /// keep-alive connection stays open).
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body, from the end of its headers.
    pub body_timeout: Duration,
    /// Connections served at once; one more is answered 503 and closed.
    pub max_connections: usize,
}

impl Default for ServeLimits {
    fn default() -> ServeLimits {
        ServeLimits {
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(60),
            max_connections: 1024,
        }
    }
}

/// What a connection past the bound reads before it is closed.
fn busy_response(max: usize) -> Vec<u8> {
    let body = json!({
        "error": "too_many_connections",
        "error_description": format!("the server is serving its limit of {max} connections; retry shortly"),
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\ncache-control: no-store\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Answers a connection past the bound with 503, then drains what the client already sent
/// (briefly, and bounded) so closing does not reset the connection before it reads the answer.
async fn refuse(mut tcp: TcpStream, answer: Arc<Vec<u8>>) {
    let work = async {
        tcp.write_all(&answer).await?;
        tcp.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut drained = 0usize;
        while drained < 64 * 1024 {
            match tcp.read(&mut sink).await? {
                0 => break,
                n => drained += n,
            }
        }
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), work).await;
}

/// The 408 of a body that did not arrive in time.
fn body_too_slow(timeout: Duration) -> Response {
    let mut resp = (
        StatusCode::REQUEST_TIMEOUT,
        axum::Json(json!({
            "error": "request_timeout",
            "error_description": format!("the request body was not received within {} seconds", timeout.as_secs_f64()),
        })),
    )
        .into_response();
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Gives the request's body a deadline, `timeout` from now: a read past it fails, and the
/// answer is 408 whatever the route made of the failed read.
async fn body_deadline(timeout: Duration, req: Request, next: Next) -> Response {
    if req.body().is_end_stream() {
        return next.run(req).await;
    }
    let expired = Arc::new(AtomicBool::new(false));
    let flag = expired.clone();
    let deadline = tokio::time::Instant::now() + timeout;
    let req = req.map(move |body| {
        let chunks = body.into_data_stream();
        Body::from_stream(futures::stream::unfold(
            (chunks, flag, false),
            move |(mut chunks, flag, done)| async move {
                if done {
                    return None;
                }
                // Data already received wins over the deadline (the inner read is polled first).
                match tokio::time::timeout_at(deadline, chunks.next()).await {
                    Ok(Some(item)) => Some((item, (chunks, flag, false))),
                    Ok(None) => None,
                    Err(_) => {
                        flag.store(true, Ordering::SeqCst);
                        let e = axum::Error::new("the request body was not received in time");
                        Some((Err(e), (chunks, flag, true)))
                    }
                }
            },
        ))
    });
    let resp = next.run(req).await;
    if expired.load(Ordering::SeqCst) {
        return body_too_slow(timeout);
    }
    resp
}

/// Serves `router` on `listener` under `limits` until `shutdown` resolves, then finishes the
/// requests in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let body_timeout = limits.body_timeout;
    let router = router.layer(axum::middleware::from_fn(move |req, next| {
        body_deadline(body_timeout, req, next)
    }));
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    // Refusals are short, but bounded too: past this many at once a connection is just closed.
    let refusals = Arc::new(Semaphore::new(limits.max_connections));
    let answer = Arc::new(busy_response(limits.max_connections));
    let (signal_tx, signal_rx) = watch::channel(());
    tokio::spawn(async move {
        shutdown.await;
        drop(signal_rx);
    });
    let (close_tx, close_rx) = watch::channel(());
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Per-connection errors are the client's; others (out of file
                    // descriptors) pass with time, so wait a little rather than spin.
                    if !matches!(e.kind(), std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionRefused) {
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    continue;
                }
            },
            () = signal_tx.closed() => break,
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::warn!(%peer, max = limits.max_connections, "connection refused: at the connection bound");
            if let Ok(slot) = refusals.clone().try_acquire_owned() {
                let answer = answer.clone();
                tokio::spawn(async move {
                    refuse(tcp, answer).await;
                    drop(slot);
                });
            }
            continue;
        };
        let service = router.clone().map_request(move |req: Request<Incoming>| {
            let mut req = req.map(Body::new);
            req.extensions_mut().insert(ConnectInfo(peer));
            req
        });
        let signal_tx = signal_tx.clone();
        let close_rx = close_rx.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let conn =
                builder.serve_connection(TokioIo::new(tcp), TowerToHyperService::new(service));
            let mut conn = std::pin::pin!(conn);
            let mut signalled = std::pin::pin!(signal_tx.closed());
            let mut draining = false;
            loop {
                tokio::select! {
                    result = conn.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(%peer, error = %e, "connection ended");
                        }
                        break;
                    }
                    () = &mut signalled, if !draining => {
                        draining = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            // The permit goes back before the socket closes (the connection drops after).
            drop(permit);
            drop(close_rx);
        });
    }
    drop(close_rx);
    drop(listener);
    close_tx.closed().await;
}
