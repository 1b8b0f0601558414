//! The egress door: an HTTP `CONNECT` proxy served in-process behind a [`crate::bridge::Door`]
//! (tools in the box find it through `HTTPS_PROXY`). Each `CONNECT host:port` is asked of
//! `capsid_core::drive::egress` ([`Egress::allowed`]): a refused host gets a 403 whose body
//! names the rule, an allowed one is resolved ([`Resolve`]), connected and tunneled. Every
//! attempt is recorded ([`ConnectAttempt`]: host, port, decision, bytes each way, start, end).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use capsid_core::drive::egress::{Egress, public_address};
use futures::future::BoxFuture;
use http::{Method, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::net::TcpStream;

use crate::bridge::{Counters, Counting, DoorClosing, RecordLog};

/// Resolves a host name the egress rules allowed to the addresses to try, in order.
pub trait Resolve: Send + Sync + 'static {
    /// The addresses of `host:port`.
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>>;
}

/// The host's resolver, keeping only public addresses (`egress::public_address`): a
/// registry's name that resolves to the host's loopback or a private network is refused, so the
/// proxy cannot be turned into a way to the host's own services. An IP literal is taken as it
/// is: `egress` admits one only through a rule naming it exactly.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(async move {
            let literal = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
            if let Ok(ip) = literal.unwrap_or(host).parse::<std::net::IpAddr>() {
                return Ok(vec![SocketAddr::new(ip, port)]);
            }
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await?.collect();
            let public: Vec<SocketAddr> = all
                .iter()
                .copied()
                .filter(|a| public_address(a.ip()))
                .collect();
            if public.is_empty() {
                return Err(io::Error::other(format!(
                    "{host} resolves to no public address ({all:?})"
                )));
            }
            Ok(public)
        })
    }
}

/// Whether the proxy let an attempt through.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The rules admitted it.
    Allowed,
    /// Refused, with the reason the box was answered.
    Refused(String),
}

/// One `CONNECT` (or other request) to the egress door, recorded when it ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConnectAttempt {
    /// The host asked.
    pub host: String,
    /// The port asked.
    pub port: u16,
    /// Allowed or refused.
    pub decision: Decision,
    /// Bytes from the box through the tunnel.
    pub bytes_up: u64,
    /// Bytes to the box through the tunnel.
    pub bytes_down: u64,
    /// When it was asked.
    pub started: SystemTime,
    /// When it was refused, failed, or its tunnel closed.
    pub ended: SystemTime,
    /// Why an allowed host could not be reached.
    pub failure: Option<String>,
}

/// The `CONNECT` proxy: the allowlist, the resolver, the attempts' log.
#[derive(Clone)]
pub struct ConnectProxy {
    egress: Arc<Egress>,
    resolver: Arc<dyn Resolve>,
    log: RecordLog<ConnectAttempt>,
}

impl std::fmt::Debug for ConnectProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectProxy")
            .field("egress", &self.egress)
            .finish_non_exhaustive()
    }
}

impl ConnectProxy {
    /// A proxy applying `egress`, resolving with `resolver`, recording in `log`.
    pub fn new(
        egress: Egress,
        resolver: impl Resolve,
        log: RecordLog<ConnectAttempt>,
    ) -> ConnectProxy {
        ConnectProxy {
            egress: Arc::new(egress),
            resolver: Arc::new(resolver),
            log,
        }
    }

    /// The router to serve behind a door ([`crate::bridge::DoorTarget::Http`]).
    pub fn router(self) -> Router {
        Router::new().fallback(handle).with_state(self)
    }
}

fn answer(status: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text + "\n"));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

async fn handle(State(proxy): State<ConnectProxy>, mut req: Request) -> Response {
    let started = SystemTime::now();
    let host = req.uri().host().unwrap_or_default().to_owned();
    let port = req.uri().port_u16();
    let record = |port: u16, decision: Decision, failure: Option<String>| ConnectAttempt {
        host: host.clone(),
        port,
        decision,
        bytes_up: 0,
        bytes_down: 0,
        started,
        ended: SystemTime::now(),
        failure,
    };
    if req.method() != Method::CONNECT {
        let why = format!(
            "refused: the egress door only tunnels CONNECT (asked {} {})",
            req.method(),
            req.uri()
        );
        proxy.log.push(record(
            port.unwrap_or(0),
            Decision::Refused(why.clone()),
            None,
        ));
        return answer(StatusCode::METHOD_NOT_ALLOWED, why);
    }
    let Some(port) = port else {
        let why = format!("refused: CONNECT {} names no port", req.uri());
        proxy
            .log
            .push(record(0, Decision::Refused(why.clone()), None));
        return answer(StatusCode::BAD_REQUEST, why);
    };
    if let Err(refusal) = proxy.egress.allowed(&host, port) {
        let why = refusal.to_string();
        proxy
            .log
            .push(record(port, Decision::Refused(why.clone()), None));
        return answer(StatusCode::FORBIDDEN, why);
    }
    let upstream = match connect(proxy.resolver.as_ref(), &host, port).await {
        Ok(upstream) => upstream,
        Err(e) => {
            let failure = format!("{host}:{port} could not be reached: {e}");
            proxy
                .log
                .push(record(port, Decision::Allowed, Some(failure.clone())));
            return answer(StatusCode::BAD_GATEWAY, failure);
        }
    };
    let closing = req.extensions().get::<DoorClosing>().cloned();
    let upgrade = hyper::upgrade::on(&mut req);
    let log = proxy.log.clone();
    tokio::spawn(async move {
        let counters = Arc::new(Counters::default());
        let mut failure = None;
        let mut upstream = Counting {
            inner: upstream,
            counters: Arc::clone(&counters),
            read_is_up: false,
            _done: None,
        };
        let tunnel = async {
            let mut inside = TokioIo::new(upgrade.await.map_err(io::Error::other)?);
            tokio::io::copy_bidirectional(&mut inside, &mut upstream).await
        };
        let ended_by_door = async {
            match &closing {
                Some(closing) => closing.closed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            outcome = tunnel => if let Err(e) = outcome {
                failure = Some(e.to_string());
            },
            _ = ended_by_door => {}
        }
        log.push(ConnectAttempt {
            host,
            port,
            decision: Decision::Allowed,
            bytes_up: counters.up.load(std::sync::atomic::Ordering::Relaxed),
            bytes_down: counters.down.load(std::sync::atomic::Ordering::Relaxed),
            started,
            ended: SystemTime::now(),
            failure,
        });
    });
    Response::new(Body::empty())
}

async fn connect(resolver: &dyn Resolve, host: &str, port: u16) -> io::Result<TcpStream> {
    let mut last = io::Error::other("no address");
    for addr in resolver.resolve(host, port).await? {
        match TcpStream::connect(addr).await {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = io::Error::new(e.kind(), format!("{addr}: {e}")),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests;
