//! `git http-backend` as CGI: its environment (the mirror's hooks pinned, the decision and the
//! upstream credential for a push), the request body streamed in and bounded, the response
//! streamed out, and a push recorded when git is done with it.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use capsid_core::drive::push_policy::PushDecision;
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdout, Command};
use tokio::sync::OwnedRwLockReadGuard;

use super::{Forwarded, Inner, over_limit, plain};

/// The mirror's `pre-receive` hook. It reads only variables the gateway sets on the
/// `http-backend` it starts; a push that did not come through the gateway has none of them
/// and is refused.
pub(super) const PRE_RECEIVE: &str = r#"#!/bin/sh
# Written by Capsid's git gateway (rewritten whenever a gateway starts on this mirror).
# It confirms that the ref updates git is about to make are exactly the ones the gateway
# decided, refuses with the gateway's report, and forwards an accepted push upstream before
# git answers the pusher.
set -f
expected=${CAPSID_GATEWAY_EXPECTED-}
if [ -z "$expected" ] || [ -z "${CAPSID_GATEWAY_STATUS-}" ]; then
  echo "capsid gateway: push refused, it did not come through the gateway." >&2
  exit 1
fi
got=$(cat)
if [ "$got" != "$expected" ]; then
  echo "capsid gateway: push refused, the ref updates git received differ from the ones the gateway read; nothing was updated." >&2
  exit 1
fi
if [ "${CAPSID_GATEWAY_VERDICT-}" != accept ] || [ -z "${CAPSID_GATEWAY_REFSPECS-}" ]; then
  printf '%s\n' "$CAPSID_GATEWAY_REPORT" >&2
  exit 1
fi
# The path rule: the job's lease, checked on the quarantined objects by Capsid's checker.
if [ -n "${CAPSID_GATEWAY_LEASE-}" ]; then
  if ! printf '%s\n' "$got" | "$CAPSID_GATEWAY_CHECKER" $CAPSID_GATEWAY_CHECKER_ARGS check-push-paths; then
    echo outside-lease >"$CAPSID_GATEWAY_STATUS"
    exit 1
  fi
fi
# The quarantined objects stay visible through GIT_OBJECT_DIRECTORY and its alternates;
# GIT_QUARANTINE_PATH only forbids ref updates, and a local upstream's receive-pack would
# inherit it and refuse.
unset GIT_QUARANTINE_PATH
if git push --atomic --porcelain --no-verify "$CAPSID_GATEWAY_UPSTREAM" $CAPSID_GATEWAY_REFSPECS >"$CAPSID_GATEWAY_STATUS.out" 2>&1; then
  echo forwarded >"$CAPSID_GATEWAY_STATUS"
  printf '%s\n' "$CAPSID_GATEWAY_REPORT" >&2
  exit 0
fi
echo upstream-refused >"$CAPSID_GATEWAY_STATUS"
echo "capsid gateway: push refused, the upstream repository did not take it; nothing was updated." >&2
exit 1
"#;

/// The longest CGI header block read from `http-backend`.
pub(super) const CGI_HEADERS_MAX: usize = 64 * 1024;

/// The CGI environment of one `http-backend` run (besides the fixed part).
pub(super) struct Cgi {
    pub(super) vars: Vec<(String, String)>,
}

impl Cgi {
    pub(super) fn from_request(gw: &Inner, req: &Request, rest: &str, query: &str) -> Cgi {
        let mut vars = vec![
            ("REQUEST_METHOD".to_owned(), req.method().to_string()),
            ("PATH_INFO".to_owned(), format!("/{}{rest}", gw.name)),
            ("QUERY_STRING".to_owned(), query.to_owned()),
        ];
        let copy = [
            (header::CONTENT_TYPE, "CONTENT_TYPE"),
            (header::CONTENT_ENCODING, "HTTP_CONTENT_ENCODING"),
        ];
        for (name, var) in copy {
            if let Some(v) = req.headers().get(name).and_then(|v| v.to_str().ok()) {
                vars.push((var.to_owned(), v.to_owned()));
            }
        }
        if let Some(v) = req
            .headers()
            .get("git-protocol")
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.bytes().all(|b| b.is_ascii_graphic()))
        {
            vars.push(("HTTP_GIT_PROTOCOL".to_owned(), v.to_owned()));
        }
        Cgi { vars }
    }
}

/// The request body: bytes already read, then the rest of the stream, counted.
pub(super) struct BodySource {
    pub(super) prefix: Bytes,
    pub(super) rest: axum::body::BodyDataStream,
}

impl BodySource {
    pub(super) fn new(prefix: Bytes, body: Body) -> BodySource {
        BodySource {
            prefix,
            rest: body.into_data_stream(),
        }
    }
}

/// Why copying the request body to git stopped.
#[derive(Debug)]
pub(super) enum Feed {
    TooLarge,
    Failed,
}

pub(super) async fn feed(
    mut stdin: tokio::process::ChildStdin,
    mut body: BodySource,
    max: u64,
) -> Result<(), Feed> {
    let mut sent = body.prefix.len() as u64;
    if sent > max {
        return Err(Feed::TooLarge);
    }
    stdin
        .write_all(&body.prefix)
        .await
        .map_err(|_| Feed::Failed)?;
    while let Some(chunk) = body.rest.next().await {
        let chunk = chunk.map_err(|_| Feed::Failed)?;
        sent += chunk.len() as u64;
        if sent > max {
            drop(stdin);
            drain(&mut body.rest).await;
            return Err(Feed::TooLarge);
        }
        stdin.write_all(&chunk).await.map_err(|_| Feed::Failed)?;
    }
    stdin.shutdown().await.map_err(|_| Feed::Failed)
}

/// How much of a refused body the gateway reads on (and throws away) so that the pusher,
/// still sending, gets to read the refusal instead of a broken pipe.
pub(super) const DRAIN_MAX: u64 = 64 * 1024 * 1024;
const DRAIN_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads a refused body to its end and discards it, at most [`DRAIN_MAX`] bytes and for at
/// most 30 seconds: past either the connection is closed, which only a client pushing far
/// beyond any bound meets.
pub(super) async fn drain(rest: &mut axum::body::BodyDataStream) {
    let read = async {
        let mut read = 0u64;
        while let Some(Ok(chunk)) = rest.next().await {
            read += chunk.len() as u64;
            if read > DRAIN_MAX {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_FOR, read).await;
}

/// What a push carries into `http-backend`, and what is done when it ends.
pub(super) struct Push {
    pub(super) decision: PushDecision,
    pub(super) status_file: PathBuf,
    pub(super) _guard: OwnedRwLockReadGuard<()>,
}

pub(super) fn backend_command(gw: &Inner, cgi: &Cgi, push: bool) -> Command {
    let mut cmd = Command::new(&gw.config.git);
    cmd.arg("http-backend");
    cmd.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        cmd.env("PATH", path);
    }
    let mut config: Vec<(String, String)> = vec![
        (
            "core.hooksPath".to_owned(),
            gw.mirror
                .join("capsid-gateway")
                .join("hooks")
                .to_string_lossy()
                .into_owned(),
        ),
        ("http.receivepack".to_owned(), "true".to_owned()),
    ];
    if push && let Some(h) = &gw.config.upstream.header {
        config.push((
            format!("http.{}.extraHeader", gw.config.upstream.url),
            h.expose().to_owned(),
        ));
    }
    let parent = gw.mirror.parent().unwrap_or(Path::new("/"));
    cmd.env("GIT_PROJECT_ROOT", parent)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REMOTE_USER", "capsid-job")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("HOME", gw.mirror.join("capsid-gateway"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_COUNT", config.len().to_string());
    for (i, (k, v)) in config.iter().enumerate() {
        cmd.env(format!("GIT_CONFIG_KEY_{i}"), k)
            .env(format!("GIT_CONFIG_VALUE_{i}"), v);
    }
    for (k, v) in &cgi.vars {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

pub(super) async fn run_backend(
    gw: Arc<Inner>,
    cgi: Cgi,
    body: BodySource,
    push: Option<Push>,
) -> Response {
    let mut child = match backend_command(&gw, &cgi, push.is_some()).spawn() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "git gateway: could not start git http-backend");
            if let Some(p) = &push {
                gw.record(&p.decision, Forwarded::No);
            }
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "capsid gateway: could not start git.",
            );
        }
    };
    let (Some(stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "capsid gateway: could not talk to git.",
        );
    };
    let feeder = tokio::spawn(feed(stdin, body, gw.config.max_request_bytes));
    let (head, leftover) = match read_cgi_head(&mut stdout).await {
        Ok(h) => h,
        Err(why) => {
            // git wrote no response head: most likely the body broke off or was too large.
            let fed = feeder.await;
            let _ = child.kill().await;
            if let Some(p) = &push {
                gw.record(&p.decision, Forwarded::No);
            }
            if matches!(fed, Ok(Err(Feed::TooLarge))) {
                return over_limit(&gw);
            }
            tracing::warn!(%why, "git gateway: http-backend gave no response");
            return plain(
                StatusCode::BAD_GATEWAY,
                "capsid gateway: git gave no answer.",
            );
        }
    };
    if push.is_some() {
        // A push's answer comes only after its whole body, so wait for the body: an
        // over-large push is then refused with a status the pusher can read.
        match feeder.await {
            Ok(Ok(())) => {}
            Ok(Err(Feed::TooLarge)) => {
                let _ = child.kill().await;
                if let Some(p) = &push {
                    gw.record(&p.decision, Forwarded::No);
                }
                return over_limit(&gw);
            }
            Ok(Err(Feed::Failed)) | Err(_) => {
                let _ = child.kill().await;
                if let Some(p) = &push {
                    gw.record(&p.decision, Forwarded::No);
                }
                return plain(
                    StatusCode::BAD_REQUEST,
                    "capsid gateway: push refused, its body broke off.",
                );
            }
        }
    }
    let mut builder = Response::builder().status(head.status);
    for (k, v) in head.headers {
        builder = builder.header(k, v);
    }
    let state = Streaming {
        gw,
        child: Some(child),
        stdout: Some(stdout),
        leftover: Some(leftover),
        push,
    };
    let stream = futures::stream::unfold(state, |mut s| async move {
        if let Some(first) = s.leftover.take().filter(|b| !b.is_empty()) {
            return Some((Ok::<Bytes, io::Error>(first), s));
        }
        s.child.as_ref()?;
        let mut buf = BytesMut::with_capacity(32 * 1024);
        let read = match s.stdout.as_mut() {
            Some(out) => out.read_buf(&mut buf).await,
            None => Ok(0),
        };
        match read {
            Ok(n) if n > 0 => Some((Ok(buf.freeze()), s)),
            _ => {
                s.finish().await;
                None
            }
        }
    });
    builder.body(Body::from_stream(stream)).unwrap_or_else(|_| {
        plain(
            StatusCode::BAD_GATEWAY,
            "capsid gateway: bad answer from git.",
        )
    })
}

/// The response body being streamed from `http-backend`; a push is recorded when it ends,
/// before the pusher's connection sees the end of the answer.
pub(super) struct Streaming {
    gw: Arc<Inner>,
    child: Option<Child>,
    stdout: Option<ChildStdout>,
    leftover: Option<Bytes>,
    push: Option<Push>,
}

impl Drop for Streaming {
    /// The pusher went away before the answer ended: git is left to finish (killing
    /// `http-backend` would leave its hook forwarding unseen) while the push still holds the
    /// in-flight lock, so [`Gateway::close`] waits for it, and its records are written.
    fn drop(&mut self) {
        if self.child.is_none() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut rest = Streaming {
            gw: self.gw.clone(),
            child: self.child.take(),
            stdout: self.stdout.take(),
            leftover: None,
            push: self.push.take(),
        };
        runtime.spawn(async move {
            if let Some(mut out) = rest.stdout.take() {
                let _ = tokio::io::copy(&mut out, &mut tokio::io::sink()).await;
            }
            rest.finish().await;
        });
    }
}

impl Streaming {
    async fn finish(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.wait().await;
        }
        if let Some(push) = self.push.take() {
            let status = tokio::fs::read_to_string(&push.status_file)
                .await
                .unwrap_or_default();
            let forwarded = match status.trim() {
                "forwarded" => Forwarded::Yes,
                "upstream-refused" => Forwarded::UpstreamRefused,
                "outside-lease" => Forwarded::OutsideLease,
                _ => Forwarded::No,
            };
            if forwarded == Forwarded::UpstreamRefused {
                let detail = tokio::fs::read_to_string(out_file(&push.status_file))
                    .await
                    .unwrap_or_default();
                tracing::warn!(detail = %detail.trim(), "git gateway: the upstream refused a push");
            }
            let _ = tokio::fs::remove_file(&push.status_file).await;
            let _ = tokio::fs::remove_file(out_file(&push.status_file)).await;
            self.gw.record(&push.decision, forwarded);
        }
    }
}

/// Where the hook leaves the upstream push's output (`<status file>.out`).
pub(super) fn out_file(status_file: &Path) -> PathBuf {
    let mut out = status_file.as_os_str().to_owned();
    out.push(".out");
    PathBuf::from(out)
}

/// The CGI response head: the status and the headers to pass on.
pub(super) struct CgiHead {
    status: StatusCode,
    headers: Vec<(String, String)>,
}

pub(super) async fn read_cgi_head(stdout: &mut ChildStdout) -> Result<(CgiHead, Bytes), String> {
    let mut buf = BytesMut::new();
    loop {
        let end = buf
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|p| (p, 4))
            .or_else(|| buf.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2)));
        if let Some((pos, sep)) = end {
            let head = String::from_utf8_lossy(&buf[..pos]).into_owned();
            let rest = buf.split_off(pos + sep).freeze();
            return Ok((parse_cgi_head(&head), rest));
        }
        if buf.len() > CGI_HEADERS_MAX {
            return Err("the CGI head is too long".to_owned());
        }
        let n = stdout.read_buf(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("git http-backend ended before its response head".to_owned());
        }
    }
}

pub(super) fn parse_cgi_head(head: &str) -> CgiHead {
    let mut status = StatusCode::OK;
    let mut headers = Vec::new();
    for line in head.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("status") {
            status = v
                .split(' ')
                .next()
                .and_then(|c| c.parse::<u16>().ok())
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::BAD_GATEWAY);
        } else if http::HeaderName::from_bytes(k.as_bytes()).is_ok()
            && HeaderValue::from_str(v).is_ok()
        {
            headers.push((k.to_owned(), v.to_owned()));
        }
    }
    CgiHead { status, headers }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgi_head_gives_status_and_headers() {
        let h = parse_cgi_head("Status: 403 Forbidden\r\nContent-Type: text/plain\r\nbad line");
        assert_eq!(h.status, StatusCode::FORBIDDEN);
        assert_eq!(
            h.headers,
            vec![("Content-Type".to_owned(), "text/plain".to_owned())]
        );
        assert_eq!(parse_cgi_head("Expires: x").status, StatusCode::OK);
    }
}
