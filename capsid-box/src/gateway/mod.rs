//! The git gateway (issue 48): the job's clone's only remote. It serves smart HTTP over a bare
//! repository Capsid owns (the mirror) through `git http-backend`, on a listener the caller
//! provides (loopback TCP, or the Unix socket bound into the box), and applies
//! [`capsid_core::drive::push_policy`] to every ref update a push makes. It decides nothing
//! itself: it carries bytes, asks the policy, and reports.
//!
//! How a push is gated, whatever the client spelled (`--no-verify`, `-c core.hooksPath`,
//! `send-pack`, a `+refspec`):
//!
//! 1. the request must carry the run token as its HTTP Basic password (401 otherwise);
//! 2. the gateway reads the pkt-line command list at the start of the `git-receive-pack` body
//!    (a compressed, over-long or unparseable body is refused before git sees it) and decides
//!    the push with [`push_policy::decide_push`], asking the [`ApprovalSource`] only when an
//!    update is held;
//! 3. it runs `git http-backend` with the decision in the environment; the mirror's
//!    `pre-receive` hook, which this module writes and which git runs for every push however
//!    it was spelled, checks that git's own update lines equal exactly the ones decided,
//!    prints the report on stderr (the pusher sees `remote:` lines) and exits non-zero on a
//!    refusal. The hooks directory is named in git's command-line configuration
//!    (`core.hooksPath`), with the system and global configuration switched off, so no
//!    configuration file can move it;
//! 4. an accepted push is forwarded upstream from that hook, `--atomic`, where git exposes the
//!    quarantined objects to child processes, **before** the pusher is told anything: when the
//!    upstream refuses, the hook fails and the push fails. The upstream credential travels in
//!    the environment (`GIT_CONFIG_COUNT`, `http.<url>.extraHeader`), never on a command line
//!    or in a file;
//! 5. each decided update is recorded ([`PushRecord`]: ref, old, new, decision, forwarded or
//!    not, time) and broadcast, so the caller can block the job on a held update.
//!
//! After [`Gateway::close`] every push is refused with a sentence saying the run ended.
//! Fetches (`git-upload-pack`) pass through unchanged; both request and response bodies are
//! streamed, and a request body over [`GatewayConfig::max_request_bytes`] is refused.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use capsid_core::drive::push_policy::{
    self, Approval, Decision, PushDecision, PushTerms, RefUpdate,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use subtle::ConstantTimeEq;
use tokio::sync::{RwLock, broadcast};

mod backend;
mod commands;
pub mod paths;

use backend::{BodySource, Cgi, PRE_RECEIVE, Push, run_backend};
use commands::{COMMANDS_MAX, Commands, parse_commands};

/// A secret (the run token, the upstream's header): its `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Secret {
        Secret(secret.into())
    }

    /// The secret itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Where accepted pushes go: GitHub in production, a local bare repository in tests.
#[derive(Clone, Debug)]
pub struct Upstream {
    /// The repository's URL (or path), without credentials.
    pub url: String,
    /// A full header line sent to that URL only (`Authorization: Basic ...`), passed to git
    /// through the environment.
    pub header: Option<Secret>,
}

impl Upstream {
    /// An upstream reached without credentials (a local path in tests).
    pub fn plain(url: impl Into<String>) -> Upstream {
        Upstream {
            url: url.into(),
            header: None,
        }
    }

    /// A GitHub repository (`https://github.com/o/r.git`) pushed to with a GitHub App
    /// installation token, as GitHub takes it over HTTPS (Basic, user `x-access-token`).
    pub fn github(url: impl Into<String>, installation_token: &Secret) -> Upstream {
        let basic = base64::engine::general_purpose::STANDARD
            .encode(format!("x-access-token:{}", installation_token.expose()));
        Upstream {
            url: url.into(),
            header: Some(Secret(format!("Authorization: Basic {basic}"))),
        }
    }
}

/// How a gateway is set up for one job's run.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// The bare repository Capsid owns, which the agent's clone fetches from and pushes to.
    /// It is served as `/<its folder name>` (`http://host/mirror.git`). Its `pre-receive` hook
    /// is written by [`Gateway::new`].
    pub mirror: PathBuf,
    /// Where accepted pushes are forwarded.
    pub upstream: Upstream,
    /// The run's token: the HTTP Basic password every request must carry.
    pub run_token: Secret,
    /// The job's push terms.
    pub terms: PushTerms,
    /// The largest request body taken (a push's pack included).
    pub max_request_bytes: u64,
    /// The git program (`git`).
    pub git: PathBuf,
    /// The job's path lease, checked on every push's changes (`None`: the whole repository).
    pub lease: Option<paths::PathLease>,
}

impl GatewayConfig {
    /// A configuration with the defaults: `git` from `PATH` and a 512 MiB request bound.
    pub fn new(
        mirror: impl Into<PathBuf>,
        upstream: Upstream,
        run_token: Secret,
        terms: PushTerms,
    ) -> GatewayConfig {
        GatewayConfig {
            mirror: mirror.into(),
            upstream,
            run_token,
            terms,
            max_request_bytes: 512 * 1024 * 1024,
            git: PathBuf::from("git"),
            lease: None,
        }
    }
}

/// Where a held update's approvals come from (the driver asks the server, which binds them
/// to the job). Asked only when a push holds an update; an error should answer no approvals,
/// so the update stays held.
pub trait ApprovalSource: Send + Sync {
    /// The approvals bound to this job that exist for the `held` updates.
    fn approvals<'a>(&'a self, held: &'a [RefUpdate]) -> BoxFuture<'a, Vec<Approval>>;
}

/// No approvals, ever: every protected update stays held.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoApprovals;

impl ApprovalSource for NoApprovals {
    fn approvals<'a>(&'a self, _held: &'a [RefUpdate]) -> BoxFuture<'a, Vec<Approval>> {
        Box::pin(async { Vec::new() })
    }
}

/// Approvals already known when the run starts: a resumed job's, given by the person who
/// resumed it (the updates the job blocked on, read from the server's record of the job).
#[derive(Clone, Debug, Default)]
pub struct KnownApprovals(pub Vec<Approval>);

impl ApprovalSource for KnownApprovals {
    fn approvals<'a>(&'a self, held: &'a [RefUpdate]) -> BoxFuture<'a, Vec<Approval>> {
        let found = self
            .0
            .iter()
            .filter(|a| held.iter().any(|u| a.allows(u)))
            .cloned()
            .collect();
        Box::pin(async move { found })
    }
}

/// The clock the records are stamped with.
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// Whether a decided update reached the upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forwarded {
    /// Not tried: the push was refused or held (or never reached git).
    No,
    /// The upstream took the push.
    Yes,
    /// The push was accepted, the upstream refused it, and the pusher was told it failed.
    UpstreamRefused,
    /// The push's changes reach outside the job's lease (issue 51): refused in the hook, never
    /// forwarded.
    OutsideLease,
}

/// One decided update, as the gateway saw it. A record, not a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushRecord {
    /// The update.
    pub update: RefUpdate,
    /// What the policy decided (a [`Decision::Hold`] is the question to block the job with).
    pub decision: Decision,
    /// Whether it reached the upstream.
    pub forwarded: Forwarded,
    /// When the push ended, by the gateway's clock.
    pub at: SystemTime,
}

/// What can go wrong setting a gateway up.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// `mirror` is not a bare repository.
    #[error("`mirror` must be a bare git repository (with HEAD and objects/): {0}")]
    NotABareRepository(PathBuf),
    /// `mirror` has no folder name to serve it under.
    #[error("`mirror` must end in a folder name (it is served as /<name>): {0}")]
    NoName(PathBuf),
    /// Writing the hook or the status folder failed.
    #[error("could not write the gateway's hook into {path}: {source}")]
    Hook {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// The git gateway of one job's run. Cheap to clone (all clones are the same gateway).
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

impl fmt::Debug for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gateway")
            .field("mirror", &self.inner.config.mirror)
            .field("open", &self.inner.open.load(Ordering::SeqCst))
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: GatewayConfig,
    name: String,
    mirror: PathBuf,
    status_dir: PathBuf,
    approvals: Arc<dyn ApprovalSource>,
    clock: Clock,
    open: AtomicBool,
    in_flight: Arc<RwLock<()>>,
    log: Mutex<Vec<PushRecord>>,
    events: broadcast::Sender<PushRecord>,
}

impl Gateway {
    /// A gateway over `config.mirror`: writes the mirror's `pre-receive` hook and a private
    /// status folder inside it. `approvals` is asked for held updates; `clock` stamps records
    /// (`None`: the system clock). The gateway starts open.
    pub fn new(
        config: GatewayConfig,
        approvals: Arc<dyn ApprovalSource>,
        clock: Option<Clock>,
    ) -> Result<Gateway, GatewayError> {
        let mirror = std::path::absolute(&config.mirror)
            .map_err(|_| GatewayError::NotABareRepository(config.mirror.clone()))?;
        if !mirror.join("HEAD").is_file() || !mirror.join("objects").is_dir() {
            return Err(GatewayError::NotABareRepository(config.mirror.clone()));
        }
        let name = mirror
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| GatewayError::NoName(config.mirror.clone()))?
            .to_owned();
        let hooks = mirror.join("capsid-gateway").join("hooks");
        let status_dir = mirror.join("capsid-gateway").join("pushes");
        let hook = hooks.join("pre-receive");
        let write = || -> io::Result<()> {
            std::fs::create_dir_all(&hooks)?;
            std::fs::create_dir_all(&status_dir)?;
            std::fs::write(&hook, PRE_RECEIVE)?;
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))
        };
        write().map_err(|source| GatewayError::Hook {
            path: hook.clone(),
            source,
        })?;
        let (events, _) = broadcast::channel(256);
        Ok(Gateway {
            inner: Arc::new(Inner {
                config,
                name,
                mirror,
                status_dir,
                approvals,
                clock: clock.unwrap_or_else(|| Arc::new(SystemTime::now)),
                open: AtomicBool::new(true),
                in_flight: Arc::new(RwLock::new(())),
                log: Mutex::new(Vec::new()),
                events,
            }),
        })
    }

    /// The path the mirror is served under (`/mirror.git`): the clone's URL is
    /// `http://<host><path>`.
    pub fn path(&self) -> String {
        format!("/{}", self.inner.name)
    }

    /// The gateway as an axum router (every path; unknown ones answer 404).
    pub fn router(&self) -> Router {
        Router::new()
            .fallback(handle)
            .with_state(self.inner.clone())
    }

    /// Serves on a loopback TCP listener until the future is dropped.
    pub async fn serve_tcp(&self, listener: tokio::net::TcpListener) -> io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    /// Serves on a Unix socket listener (the door bound into the box) until the future is
    /// dropped.
    pub async fn serve_unix(&self, listener: tokio::net::UnixListener) -> io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    /// The run ended: every later push is refused. Returns once the pushes already being
    /// decided or forwarded have finished, so nothing lands after it returns.
    pub async fn close(&self) {
        self.inner.open.store(false, Ordering::SeqCst);
        let _all = self.inner.in_flight.write().await;
    }

    /// Whether the gateway still takes the job's pushes.
    pub fn is_open(&self) -> bool {
        self.inner.open.load(Ordering::SeqCst)
    }

    /// Every decided update so far, in order.
    pub fn log(&self) -> Vec<PushRecord> {
        self.inner
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The records as they happen (a held update is the job's question).
    pub fn subscribe(&self) -> broadcast::Receiver<PushRecord> {
        self.inner.events.subscribe()
    }
}

impl Inner {
    fn record(&self, decision: &PushDecision, forwarded: Forwarded) {
        let at = (self.clock)();
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        for (update, d) in &decision.updates {
            let forwarded = if d.is_accept() {
                forwarded
            } else {
                Forwarded::No
            };
            let rec = PushRecord {
                update: update.clone(),
                decision: d.clone(),
                forwarded,
                at,
            };
            tracing::info!(refname = %update.refname, old = %update.old, new = %update.new,
                decision = ?d, ?forwarded, "git gateway: ref update");
            log.push(rec.clone());
            let _ = self.events.send(rec);
        }
    }
}

/// Which smart-HTTP endpoint a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    InfoRefs,
    UploadPack,
    ReceivePack,
}

fn plain(status: StatusCode, text: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{text}\n"),
    )
        .into_response()
}

fn authorized(headers: &HeaderMap, token: &Secret) -> bool {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some(encoded) = value
        .strip_prefix("Basic ")
        .or_else(|| value.strip_prefix("basic "))
    else {
        return false;
    };
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
        return false;
    };
    let Some(colon) = decoded.iter().position(|&b| b == b':') else {
        return false;
    };
    let password = &decoded[colon + 1..];
    bool::from(password.ct_eq(token.expose().as_bytes()))
}

async fn handle(State(gw): State<Arc<Inner>>, req: Request) -> Response {
    if !authorized(req.headers(), &gw.config.run_token) {
        let mut r = plain(
            StatusCode::UNAUTHORIZED,
            "capsid gateway: authentication required (the run token as the HTTP Basic password).",
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"capsid gateway\""),
        );
        return r;
    }
    let path = req.uri().path().to_owned();
    let Some(rest) = path
        .strip_prefix('/')
        .and_then(|p| p.strip_prefix(gw.name.as_str()))
    else {
        return plain(StatusCode::NOT_FOUND, "capsid gateway: no such repository.");
    };
    let endpoint = match (req.method().as_str(), rest) {
        ("GET", "/info/refs") => Endpoint::InfoRefs,
        ("POST", "/git-upload-pack") => Endpoint::UploadPack,
        ("POST", "/git-receive-pack") => Endpoint::ReceivePack,
        _ => {
            return plain(
                StatusCode::NOT_FOUND,
                "capsid gateway: only smart HTTP is served (info/refs, git-upload-pack, \
                 git-receive-pack).",
            );
        }
    };
    let query = req.uri().query().unwrap_or("").to_owned();
    if endpoint == Endpoint::InfoRefs
        && query != "service=git-upload-pack"
        && query != "service=git-receive-pack"
    {
        return plain(
            StatusCode::FORBIDDEN,
            "capsid gateway: only smart HTTP is served (info/refs?service=...).",
        );
    }
    let length = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = length.filter(|&n| n > gw.config.max_request_bytes) {
        // Nothing of it is kept or decided on; it is read to its end (when that end is near)
        // only so that git, still sending, reads the 413 instead of a broken pipe.
        if n <= backend::DRAIN_MAX {
            backend::drain(&mut req.into_body().into_data_stream()).await;
        }
        return over_limit(&gw);
    }
    match endpoint {
        Endpoint::ReceivePack => receive_pack(gw, req, rest.to_owned()).await,
        Endpoint::InfoRefs | Endpoint::UploadPack => {
            let env = Cgi::from_request(&gw, &req, rest, &query);
            let body = BodySource::new(Bytes::new(), req.into_body());
            run_backend(gw, env, body, None).await
        }
    }
}

fn over_limit(gw: &Inner) -> Response {
    plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!(
            "capsid gateway: the request is larger than the gateway takes ({} bytes); push \
             fewer or smaller objects.",
            gw.config.max_request_bytes
        ),
    )
}

async fn receive_pack(gw: Arc<Inner>, req: Request, rest: String) -> Response {
    let encoding = req
        .headers()
        .get(header::CONTENT_ENCODING)
        .map(|v| v.as_bytes().to_vec());
    if encoding.is_some_and(|e| !e.eq_ignore_ascii_case(b"identity")) {
        return plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "capsid gateway: push refused, a compressed push body is not taken.",
        );
    }
    let env = Cgi::from_request(&gw, &req, &rest, "");
    let mut stream = req.into_body().into_data_stream();
    let mut head = BytesMut::new();
    let updates = loop {
        match parse_commands(&head) {
            Ok(Commands::Read(updates)) => break updates,
            Ok(Commands::Incomplete) => {}
            Err(why) => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    &format!("capsid gateway: push refused, {why}."),
                );
            }
        }
        if head.len() > COMMANDS_MAX {
            return plain(
                StatusCode::BAD_REQUEST,
                "capsid gateway: push refused, its command list is longer than 1 MiB.",
            );
        }
        match stream.next().await {
            Some(Ok(chunk)) => head.extend_from_slice(&chunk),
            Some(Err(_)) | None => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "capsid gateway: push refused, the body ended inside its command list.",
                );
            }
        }
    };

    if updates.is_empty() {
        let body = BodySource {
            prefix: head.freeze(),
            rest: stream,
        };
        return run_backend(gw, env, body, None).await;
    }
    // Held for the whole push: `close` waits for it, and a push that starts after `close`
    // sees the run closed.
    let guard = gw.in_flight.clone().read_owned().await;
    let open = gw.open.load(Ordering::SeqCst);
    let mut decision = push_policy::decide_push(&gw.config.terms, &updates, &[], open);
    let held: Vec<RefUpdate> = decision.held().into_iter().cloned().collect();
    if !held.is_empty() {
        let approvals = gw.approvals.approvals(&held).await;
        // The run may have ended while the approvals were asked: it counts from that moment.
        let open = gw.open.load(Ordering::SeqCst);
        decision = push_policy::decide_push(&gw.config.terms, &updates, &approvals, open);
    }

    // Unique in the process: gateways over one mirror share its status folder.
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, Ordering::SeqCst);
    let status_file = gw.status_dir.join(format!("{}-{seq}", std::process::id()));
    let _ = std::fs::remove_file(&status_file);
    let expected: Vec<String> = updates.iter().map(ToString::to_string).collect();
    let verdict = if decision.accepted() {
        "accept"
    } else {
        "refuse"
    };
    let mut env = env;
    env.vars.extend([
        ("CAPSID_GATEWAY_EXPECTED".to_owned(), expected.join("\n")),
        ("CAPSID_GATEWAY_VERDICT".to_owned(), verdict.to_owned()),
        ("CAPSID_GATEWAY_REPORT".to_owned(), decision.report()),
        (
            "CAPSID_GATEWAY_REFSPECS".to_owned(),
            decision.forward_refspecs().join(" "),
        ),
        (
            "CAPSID_GATEWAY_UPSTREAM".to_owned(),
            gw.config.upstream.url.clone(),
        ),
        (
            "CAPSID_GATEWAY_STATUS".to_owned(),
            status_file.to_string_lossy().into_owned(),
        ),
    ]);
    if let Some(lease) = &gw.config.lease {
        let (program, args) = lease.checker.split_first().unzip();
        env.vars.extend([
            (
                paths::LEASE_VAR.to_owned(),
                serde_json::json!(lease.patterns).to_string(),
            ),
            (paths::BASE_VAR.to_owned(), lease.base.clone()),
            (
                "CAPSID_GATEWAY_CHECKER".to_owned(),
                program.map_or_else(String::new, |p| p.to_string_lossy().into_owned()),
            ),
            (
                "CAPSID_GATEWAY_CHECKER_ARGS".to_owned(),
                args.unwrap_or_default()
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        ]);
    }
    let body = BodySource {
        prefix: head.freeze(),
        rest: stream,
    };
    let push = Push {
        decision,
        status_file,
        _guard: guard,
    };
    run_backend(gw, env, body, Some(push)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn known_approvals_answer_only_for_the_held_updates_they_allow() {
        let a = "1".repeat(40);
        let b = "2".repeat(40);
        let main = RefUpdate::parse(&a, &b, "refs/heads/main").unwrap();
        let other_sha = RefUpdate::parse(&a, &a, "refs/heads/main").unwrap();
        let master = RefUpdate::parse(&a, &b, "refs/heads/master").unwrap();
        let known = KnownApprovals(vec![Approval::for_branch("main", &b).unwrap()]);
        assert_eq!(
            known.approvals(std::slice::from_ref(&main)).await,
            known.0.clone()
        );
        assert!(known.approvals(&[other_sha, master]).await.is_empty());
        assert!(
            KnownApprovals::default()
                .approvals(&[main])
                .await
                .is_empty()
        );
    }

    #[test]
    fn basic_auth_takes_the_run_token_as_the_password_only() {
        let token = Secret::new("s3cret");
        let header = |user_pass: &str| {
            let mut h = HeaderMap::new();
            let v = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(user_pass)
            );
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(&v).unwrap());
            h
        };
        assert!(authorized(&header("x:s3cret"), &token));
        assert!(authorized(&header(":s3cret"), &token));
        assert!(!authorized(&header("s3cret:"), &token));
        assert!(!authorized(&header("x:s3cre"), &token));
        assert!(!authorized(&header("x:s3cret2"), &token));
        assert!(!authorized(&HeaderMap::new(), &token));
        assert_eq!(format!("{token:?}"), "Secret([redacted])");
    }

    #[test]
    fn a_github_upstream_carries_the_installation_token_as_basic_auth() {
        let up = Upstream::github("https://github.com/o/r.git", &Secret::new("ghs_x"));
        let header = up.header.as_ref().unwrap();
        assert_eq!(
            header.expose(),
            format!(
                "Authorization: Basic {}",
                base64::engine::general_purpose::STANDARD.encode("x-access-token:ghs_x")
            )
        );
        assert!(!format!("{up:?}").contains("ghs_x"));
        assert!(!format!("{up:?}").contains(header.expose()));
        assert!(Upstream::plain("/srv/origin.git").header.is_none());
    }
}
