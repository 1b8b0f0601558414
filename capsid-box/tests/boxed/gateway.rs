//! The git gateway with real git: an "origin" bare repository standing for GitHub, the
//! gateway's own bare mirror cloned from it, and the agent's clone cloned through the
//! gateway's URL. Every refused push leaves origin's refs (`git for-each-ref`) unchanged, and
//! the refusal reaches the pusher as `remote:` lines naming the rule.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use capsid_box::gateway::paths::PathLease;
use capsid_box::gateway::{
    ApprovalSource, Forwarded, Gateway, GatewayConfig, NoApprovals, PushRecord, Secret, Upstream,
};
use capsid_core::drive::push_policy::{Accepted, Approval, Decision, PushTerms, RefUpdate};
use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "run-token-7f3a";
const JOB: &str = "j1";
/// The time the test's clock always reads.
const AT: std::time::SystemTime = std::time::UNIX_EPOCH;

/// Runs git with no user or system configuration, no prompt, and a fixed identity.
async fn git_in(dir: &Path, args: &[&str]) -> Output {
    let dir = dir.to_owned();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        std::process::Command::new("git")
            .current_dir(&dir)
            .args(&args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "Agent")
            .env("GIT_AUTHOR_EMAIL", "agent@example.com")
            .env("GIT_COMMITTER_NAME", "Agent")
            .env("GIT_COMMITTER_EMAIL", "agent@example.com")
            .output()
            .expect("git runs")
    })
    .await
    .expect("git task")
}

async fn ok(dir: &Path, args: &[&str]) -> String {
    let out = git_in(dir, args).await;
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The approvals the test grants, as the server would (bound to this job).
#[derive(Default)]
struct Granted(Mutex<Vec<Approval>>);

impl ApprovalSource for Granted {
    fn approvals<'a>(&'a self, _held: &'a [RefUpdate]) -> BoxFuture<'a, Vec<Approval>> {
        let all = self.0.lock().unwrap().clone();
        Box::pin(async move { all })
    }
}

struct Fixture {
    _tmp: tempfile::TempDir,
    origin: PathBuf,
    mirror: PathBuf,
    agent: PathBuf,
    gateway: Gateway,
    granted: Arc<Granted>,
    url: String,
    port: u16,
    _server: tokio::task::JoinHandle<std::io::Result<()>>,
}

struct Options {
    upstream_refuses: bool,
    max_request_bytes: Option<u64>,
    /// The job's path lease (issue 51); `None`: the whole repository.
    lease: Option<&'static [&'static str]>,
}

const DEFAULT: Options = Options {
    upstream_refuses: false,
    max_request_bytes: None,
    lease: None,
};

impl Fixture {
    async fn new(opts: Options) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_owned();
        let origin = root.join("origin.git");
        let mirror = root.join("mirror.git");
        let seed = root.join("seed");
        let agent = root.join("agent");
        ok(&root, &["init", "-q", "--bare", "-b", "main", "origin.git"]).await;
        ok(&root, &["init", "-q", "-b", "main", "seed"]).await;
        std::fs::write(seed.join("README"), "seed\n").unwrap();
        ok(&seed, &["add", "README"]).await;
        ok(&seed, &["commit", "-q", "-m", "seed"]).await;
        ok(&seed, &["push", "-q", origin.to_str().unwrap(), "main"]).await;
        ok(
            &root,
            &["clone", "-q", "--bare", "origin.git", "mirror.git"],
        )
        .await;
        if opts.upstream_refuses {
            let hook = origin.join("hooks").join("pre-receive");
            std::fs::write(&hook, "#!/bin/sh\necho 'origin says no' >&2\nexit 1\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        }

        let terms = PushTerms::new(JOB, &["feature-x"], &["main", "master"]).unwrap();
        let mut config = GatewayConfig::new(
            &mirror,
            Upstream::plain(origin.to_str().unwrap()),
            Secret::new(TOKEN),
            terms,
        );
        if let Some(max) = opts.max_request_bytes {
            config.max_request_bytes = max;
        }
        if let Some(patterns) = opts.lease {
            config.lease = Some(PathLease {
                base: ok(&mirror, &["rev-parse", "main"]).await,
                patterns: patterns.iter().map(|p| (*p).to_owned()).collect(),
                checker: vec![env!("CARGO_BIN_EXE_capsid-door").into()],
            });
        }
        let granted = Arc::new(Granted::default());
        let clock: capsid_box::gateway::Clock = Arc::new(|| AT);
        let gateway = Gateway::new(config, granted.clone(), Some(clock)).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn({
            let g = gateway.clone();
            async move { g.serve_tcp(listener).await }
        });
        let url = format!("http://job:{TOKEN}@127.0.0.1:{port}{}", gateway.path());
        ok(&root, &["clone", "-q", &url, "agent"]).await;
        let f = Fixture {
            _tmp: tmp,
            origin,
            mirror,
            agent,
            gateway,
            granted,
            url,
            port,
            _server: server,
        };
        f.commit("work.txt", "the job's work\n").await;
        f
    }

    async fn commit(&self, file: &str, text: &str) -> String {
        std::fs::write(self.agent.join(file), text).unwrap();
        ok(&self.agent, &["add", file]).await;
        ok(&self.agent, &["commit", "-q", "-m", file]).await;
        self.head().await
    }

    async fn head(&self) -> String {
        ok(&self.agent, &["rev-parse", "HEAD"]).await
    }

    async fn refs(repo: &Path) -> String {
        ok(repo, &["for-each-ref", "--format=%(refname) %(objectname)"]).await
    }

    async fn origin_refs(&self) -> String {
        Fixture::refs(&self.origin).await
    }

    async fn origin_ref(&self, refname: &str) -> Option<String> {
        let out = git_in(&self.origin, &["rev-parse", "--verify", "-q", refname]).await;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    async fn agent_git(&self, args: &[&str]) -> Output {
        git_in(&self.agent, args).await
    }

    /// Runs a push that must be refused: it fails, its stderr shows `remote:` lines with
    /// `says`, and neither origin's nor the mirror's refs moved.
    async fn refused(&self, args: &[&str], says: &str) -> String {
        let origin_before = self.origin_refs().await;
        let mirror_before = Fixture::refs(&self.mirror).await;
        let out = self.agent_git(args).await;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "git {args:?} succeeded: {stderr}");
        assert!(
            stderr.contains("remote: capsid gateway: push refused"),
            "git {args:?}: no remote refusal in {stderr}"
        );
        assert!(
            stderr.contains(says),
            "git {args:?}: {says:?} missing in {stderr}"
        );
        assert_eq!(
            self.origin_refs().await,
            origin_before,
            "origin moved: {args:?}"
        );
        assert_eq!(
            Fixture::refs(&self.mirror).await,
            mirror_before,
            "mirror moved: {args:?}"
        );
        stderr
    }

    fn last(&self) -> PushRecord {
        self.gateway.log().last().cloned().expect("a record")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_to_the_job_branch_lands_on_origin_and_is_recorded() {
    let f = Fixture::new(DEFAULT).await;
    let head = f.head().await;
    let out = f.agent_git(&["push", "origin", "HEAD:capsid/j1"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("remote: capsid gateway: push accepted."),
        "{stderr}"
    );
    assert_eq!(
        f.origin_ref("refs/heads/capsid/j1").await,
        Some(head.clone())
    );
    let rec = f.last();
    assert_eq!(rec.update.refname, "refs/heads/capsid/j1");
    assert_eq!(rec.update.new.as_str(), head);
    assert!(rec.update.is_create());
    assert_eq!(rec.decision, Decision::Accept(Accepted::OwnBranch));
    assert_eq!(rec.forwarded, Forwarded::Yes);
    assert_eq!(rec.at, AT);

    // A rewrite of its own branch (force) is the job's to make.
    ok(&f.agent, &["commit", "-q", "--amend", "-m", "rewritten"]).await;
    let amended = f.head().await;
    ok(
        &f.agent,
        &["push", "-q", "--force", "origin", "HEAD:capsid/j1"],
    )
    .await;
    assert_eq!(f.origin_ref("refs/heads/capsid/j1").await, Some(amended));
    // So is a branch the job names.
    ok(&f.agent, &["push", "-q", "origin", "HEAD:feature-x"]).await;
    assert!(f.origin_ref("refs/heads/feature-x").await.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_to_main_is_refused_at_the_gateway_however_it_is_spelled() {
    let f = Fixture::new(DEFAULT).await;
    let held = "refs/heads/main: held, a protected branch moves only with a person's approval";
    for args in [
        vec!["push", "origin", "HEAD:main"],
        vec!["push", "--no-verify", "origin", "HEAD:main"],
        vec![
            "-c",
            "core.hooksPath=/dev/null",
            "push",
            "origin",
            "HEAD:main",
        ],
        vec!["push", "origin", "+HEAD:refs/heads/main"],
        vec!["push", "--force", "origin", "HEAD:refs/heads/main"],
        vec!["push", f.url.as_str(), "HEAD:main"],
    ] {
        f.refused(&args, held).await;
    }
    // Main and the job's branch in one push: nothing lands, not even the job's branch.
    let stderr = f
        .refused(&["push", "origin", "HEAD:main", "HEAD:capsid/j1"], held)
        .await;
    assert!(stderr.contains("nothing was updated"), "{stderr}");
    assert_eq!(f.origin_ref("refs/heads/capsid/j1").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_deletions_and_other_branches_are_refused_with_their_rule() {
    let f = Fixture::new(DEFAULT).await;
    ok(&f.agent, &["tag", "v1"]).await;
    f.refused(
        &["push", "origin", "v1"],
        "refs/tags/v1: refused, a job may not push tags; push your commits to refs/heads/capsid/j1 instead.",
    )
    .await;
    f.refused(
        &["push", "origin", "HEAD:other"],
        "refs/heads/other: refused, this branch is not the job's; push to refs/heads/capsid/j1 instead.",
    )
    .await;
    f.refused(
        &["push", "origin", "HEAD:refs/notes/x"],
        "refs/notes/x: refused, a job may push only branches",
    )
    .await;
    f.refused(
        &["push", "origin", "--delete", "main"],
        "refs/heads/main: refused, a job may not delete a ref",
    )
    .await;
    ok(&f.agent, &["push", "-q", "origin", "HEAD:capsid/j1"]).await;
    f.refused(
        &["push", "origin", ":capsid/j1"],
        "refs/heads/capsid/j1: refused, a job may not delete a ref",
    )
    .await;
    let deletion = f.last();
    assert!(deletion.update.is_delete());
    assert_eq!(deletion.forwarded, Forwarded::No);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_update_is_reported_and_goes_through_only_with_an_approval_of_that_sha() {
    let f = Fixture::new(DEFAULT).await;
    let mut events = f.gateway.subscribe();
    let head = f.head().await;
    let main_before = f.origin_ref("refs/heads/main").await.unwrap();
    f.refused(&["push", "origin", "HEAD:main"], "held").await;

    let rec = events.recv().await.unwrap();
    let Decision::Hold(question) = &rec.decision else {
        panic!("not held: {rec:?}");
    };
    assert_eq!(question.refname, "refs/heads/main");
    assert_eq!(question.old.as_str(), main_before);
    assert_eq!(question.new.as_str(), head);
    assert_eq!(rec.forwarded, Forwarded::No);
    assert_eq!(f.last(), rec);

    // An approval of main for another sha does not count.
    f.granted
        .0
        .lock()
        .unwrap()
        .push(Approval::for_branch("main", &main_before).unwrap());
    f.refused(&["push", "origin", "HEAD:main"], "held").await;

    // The approval of exactly (main, head) lets the same push through, forwarded.
    f.granted
        .0
        .lock()
        .unwrap()
        .push(Approval::for_branch("main", &head).unwrap());
    let out = f.agent_git(&["push", "origin", "HEAD:main"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(f.origin_ref("refs/heads/main").await, Some(head.clone()));
    let rec = f.last();
    assert_eq!(rec.decision, Decision::Accept(Accepted::Approved));
    assert_eq!(rec.forwarded, Forwarded::Yes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_close_even_the_job_branch_is_refused() {
    let f = Fixture::new(DEFAULT).await;
    assert!(f.gateway.is_open());
    f.gateway.close().await;
    assert!(!f.gateway.is_open());
    f.refused(
        &["push", "origin", "HEAD:capsid/j1"],
        "refs/heads/capsid/j1: refused, the job's run has ended and the gateway takes no more pushes for it.",
    )
    .await;
    // Fetching still works: the closed run only stops pushes.
    ok(&f.agent, &["fetch", "-q", "origin"]).await;
}

/// One raw HTTP/1.1 request to the gateway; the whole answer, head and body.
async fn raw(port: u16, request: &[u8]) -> Vec<u8> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(request).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    out
}

fn basic(password: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("job:{password}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_gets_401_and_changes_nothing() {
    let f = Fixture::new(DEFAULT).await;
    let before = f.origin_refs().await;
    let wrong = f.url.replace(TOKEN, "not-the-token");
    let out = f.agent_git(&["push", &wrong, "HEAD:capsid/j1"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("Authentication failed"), "{stderr}");
    assert_eq!(f.origin_refs().await, before);
    assert!(f.gateway.log().is_empty());

    let path = f.gateway.path();
    for auth in [
        String::new(),
        format!("Authorization: Basic {}\r\n", basic("nope")),
        format!("Authorization: Bearer {TOKEN}\r\n"),
    ] {
        let req = format!(
            "GET {path}/info/refs?service=git-receive-pack HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
        );
        let answer = String::from_utf8_lossy(&raw(f.port, req.as_bytes()).await).into_owned();
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
        assert!(answer.contains("www-authenticate: Basic"), "{answer}");
    }
    let req = format!(
        "GET {path}/info/refs?service=git-receive-pack HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {}\r\nConnection: close\r\n\r\n",
        basic(TOKEN)
    );
    let answer = String::from_utf8_lossy(&raw(f.port, req.as_bytes()).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

fn pkt(s: &str) -> Vec<u8> {
    let mut out = format!("{:04x}", s.len() + 4).into_bytes();
    out.extend_from_slice(s.as_bytes());
    out
}

/// The body of a raw HTTP/1.1 answer, de-chunked when it is chunked.
fn answer_body(answer: &[u8]) -> Vec<u8> {
    let p = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP head");
    let head = String::from_utf8_lossy(&answer[..p]).to_ascii_lowercase();
    let mut rest = &answer[p + 4..];
    if !head.contains("transfer-encoding: chunked") {
        return rest.to_vec();
    }
    let mut body = Vec::new();
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size");
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap().trim(), 16)
            .expect("a hex chunk size");
        if size == 0 {
            return body;
        }
        body.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
        rest = &rest[eol + 2 + size + 2..];
    }
}

/// The side-band-2 text (what git prints as `remote:` lines) of a receive-pack answer.
fn progress_text(answer: &[u8]) -> String {
    let body = answer_body(answer);
    let mut rest = body.as_slice();
    let mut text = Vec::new();
    while rest.len() >= 4 {
        let len = usize::from_str_radix(std::str::from_utf8(&rest[..4]).unwrap(), 16).unwrap();
        if len == 0 {
            rest = &rest[4..];
            continue;
        }
        if rest[4] == 2 {
            text.extend_from_slice(&rest[5..len]);
        }
        rest = &rest[len..];
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// `git send-pack` does not speak HTTP itself (it is what git's HTTP helper drives with
/// `--stateless-rpc`), so this speaks receive-pack by hand, as any client could: the commands
/// and a pack made with `git pack-objects`, posted with the right token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_made_receive_pack_request_is_refused_at_the_gateway() {
    let f = Fixture::new(DEFAULT).await;
    let out = f
        .agent_git(&["send-pack", &f.url, "HEAD:refs/heads/main"])
        .await;
    assert!(!out.status.success());
    let before = f.origin_refs().await;
    let mirror_before = Fixture::refs(&f.mirror).await;
    let head = f.head().await;
    let old = f.origin_ref("refs/heads/main").await.unwrap();
    let pack = {
        let agent = f.agent.clone();
        let revs = format!("{head}\n^{old}\n");
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = std::process::Command::new("git")
                .current_dir(&agent)
                .args(["pack-objects", "--stdout", "--revs", "-q"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(revs.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap().stdout
        })
        .await
        .unwrap()
    };
    assert!(pack.starts_with(b"PACK"));
    let post = |body: Vec<u8>, extra: &str| {
        let mut req = format!(
            "POST {}/git-receive-pack HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {}\r\n\
             Content-Type: application/x-git-receive-pack-request\r\n{extra}\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            f.gateway.path(),
            basic(TOKEN),
            body.len()
        )
        .into_bytes();
        req.extend(body);
        req
    };
    let mut body = pkt(&format!(
        "{old} {head} refs/heads/main\0report-status side-band-64k\n"
    ));
    body.extend(b"0000");
    body.extend(&pack);
    let answer = raw(f.port, &post(body.clone(), "")).await;
    let text = progress_text(&answer);
    assert!(
        text.contains("capsid gateway: refs/heads/main: held"),
        "{text:?} in {:?}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(f.origin_refs().await, before);

    // A compressed body, or one that is not a command list, is refused before git sees it.
    let gz = String::from_utf8_lossy(
        &raw(f.port, &post(body.clone(), "Content-Encoding: gzip\r\n")).await,
    )
    .into_owned();
    assert!(gz.starts_with("HTTP/1.1 415"), "{gz}");
    let junk =
        String::from_utf8_lossy(&raw(f.port, &post(b"PACKjunk".to_vec(), "")).await).into_owned();
    assert!(junk.starts_with("HTTP/1.1 400"), "{junk}");
    assert!(junk.contains("not pkt-line framed"), "{junk}");
    assert_eq!(f.origin_refs().await, before);
    assert_eq!(Fixture::refs(&f.mirror).await, mirror_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_the_upstream_refuses_is_not_reported_as_success() {
    let f = Fixture::new(Options {
        upstream_refuses: true,
        max_request_bytes: None,
        lease: None,
    })
    .await;
    let stderr = f
        .refused(
            &["push", "origin", "HEAD:capsid/j1"],
            "the upstream repository did not take it",
        )
        .await;
    assert!(
        !stderr.contains("origin says no"),
        "the upstream's text stays inside: {stderr}"
    );
    let rec = f.last();
    assert_eq!(rec.decision, Decision::Accept(Accepted::OwnBranch));
    assert_eq!(rec.forwarded, Forwarded::UpstreamRefused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_large_push_is_refused_with_413() {
    let f = Fixture::new(Options {
        upstream_refuses: false,
        max_request_bytes: Some(64 * 1024),
        lease: None,
    })
    .await;
    // Incompressible content well over the bound.
    let mut noise = Vec::with_capacity(512 * 1024);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while noise.len() < 512 * 1024 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.extend_from_slice(&x.to_le_bytes());
    }
    std::fs::write(f.agent.join("big.bin"), &noise).unwrap();
    ok(&f.agent, &["add", "big.bin"]).await;
    ok(&f.agent, &["commit", "-q", "-m", "big"]).await;
    let before = f.origin_refs().await;
    // Under git's post buffer the body comes with a Content-Length: refused before anything
    // is read or decided.
    let out = f.agent_git(&["push", "origin", "HEAD:capsid/j1"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("413"), "{stderr}");
    assert_eq!(f.origin_refs().await, before);
    assert!(f.gateway.log().is_empty());
    // Chunked (a post buffer smaller than the pack, git probes first with an empty command
    // list): the gateway reads the commands, decides, counts the body and stops at the bound.
    let out = f
        .agent_git(&[
            "-c",
            "http.postBuffer=4096",
            "push",
            "origin",
            "HEAD:capsid/j1",
        ])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("413"), "{stderr}");
    assert_eq!(f.origin_refs().await, before);
    let rec = f.last();
    assert_eq!(rec.update.refname, "refs/heads/capsid/j1");
    assert_eq!(rec.forwarded, Forwarded::No);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_chunked_push_within_the_bound_goes_through() {
    let f = Fixture::new(DEFAULT).await;
    let noise: String = (0..20_000)
        .map(|i| format!("{i:x}-{}\n", i * 7919 % 10007))
        .collect();
    let head = f.commit("many.txt", &noise).await;
    ok(
        &f.agent,
        &[
            "-c",
            "http.postBuffer=4096",
            "push",
            "-q",
            "origin",
            "HEAD:capsid/j1",
        ],
    )
    .await;
    assert_eq!(f.origin_ref("refs/heads/capsid/j1").await, Some(head));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_a_unix_socket_door() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_owned();
    ok(&root, &["init", "-q", "--bare", "-b", "main", "origin.git"]).await;
    ok(&root, &["init", "-q", "-b", "main", "seed"]).await;
    let seed = root.join("seed");
    std::fs::write(seed.join("f"), "x\n").unwrap();
    ok(&seed, &["add", "f"]).await;
    ok(&seed, &["commit", "-q", "-m", "seed"]).await;
    ok(&seed, &["push", "-q", "../origin.git", "main"]).await;
    ok(
        &root,
        &["clone", "-q", "--bare", "origin.git", "mirror.git"],
    )
    .await;
    let config = GatewayConfig::new(
        root.join("mirror.git"),
        Upstream::plain(root.join("origin.git").to_str().unwrap()),
        Secret::new(TOKEN),
        PushTerms::new(JOB, &[] as &[&str], &["main"]).unwrap(),
    );
    let gateway = Gateway::new(config, Arc::new(NoApprovals), None).unwrap();
    let sock = root.join("gateway.sock");
    let listener = tokio::net::UnixListener::bind(&sock).unwrap();
    let g = gateway.clone();
    tokio::spawn(async move { g.serve_unix(listener).await });

    // The box's side of the door: a loopback port relayed to the socket (as socat would).
    let relay = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = relay.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = relay.accept().await {
            let sock = sock.clone();
            tokio::spawn(async move {
                if let Ok(mut unix) = tokio::net::UnixStream::connect(&sock).await {
                    let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                }
            });
        }
    });
    let url = format!("http://job:{TOKEN}@127.0.0.1:{port}{}", gateway.path());
    ok(&root, &["clone", "-q", &url, "agent"]).await;
    let agent = root.join("agent");
    std::fs::write(agent.join("g"), "y\n").unwrap();
    ok(&agent, &["add", "g"]).await;
    ok(&agent, &["commit", "-q", "-m", "work"]).await;
    ok(&agent, &["push", "-q", "origin", "HEAD:capsid/j1"]).await;
    let out = git_in(&agent, &["push", "origin", "HEAD:main"]).await;
    assert!(!out.status.success());
    let head = ok(&agent, &["rev-parse", "HEAD"]).await;
    let origin = root.join("origin.git");
    assert_eq!(ok(&origin, &["rev-parse", "capsid/j1"]).await, head);
    assert_ne!(ok(&origin, &["rev-parse", "main"]).await, head);
}

/// Asks for approvals only when told to answer: the push stays being decided meanwhile.
struct Gate {
    asked: tokio::sync::Notify,
    answer: tokio::sync::Notify,
    approvals: Mutex<Vec<Approval>>,
}

impl ApprovalSource for Gate {
    fn approvals<'a>(&'a self, _held: &'a [RefUpdate]) -> BoxFuture<'a, Vec<Approval>> {
        Box::pin(async move {
            self.asked.notify_one();
            self.answer.notified().await;
            self.approvals.lock().unwrap().clone()
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_waits_for_a_push_being_decided_which_then_counts_as_after_the_run() {
    let f = Fixture::new(DEFAULT).await;
    let head = f.head().await;
    let gate = Arc::new(Gate {
        asked: tokio::sync::Notify::new(),
        answer: tokio::sync::Notify::new(),
        approvals: Mutex::new(vec![Approval::for_branch("main", &head).unwrap()]),
    });
    // A second gateway over the same mirror, whose approvals wait for the test.
    let config = GatewayConfig::new(
        &f.mirror,
        Upstream::plain(f.origin.to_str().unwrap()),
        Secret::new(TOKEN),
        PushTerms::new(JOB, &[] as &[&str], &["main"]).unwrap(),
    );
    let gateway = Gateway::new(config, gate.clone(), None).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let g = gateway.clone();
    tokio::spawn(async move { g.serve_tcp(listener).await });
    let url = format!("http://job:{TOKEN}@127.0.0.1:{port}{}", gateway.path());

    let agent = f.agent.clone();
    let url2 = url.clone();
    let push = tokio::spawn(async move { git_in(&agent, &["push", &url2, "HEAD:main"]).await });
    // Not a wait for time: a bound, so a gateway that never asks fails instead of hanging.
    tokio::time::timeout(std::time::Duration::from_secs(120), gate.asked.notified())
        .await
        .expect("the gateway asked for approvals");
    let mut close = Box::pin(gateway.close());
    assert!(
        futures::poll!(close.as_mut()).is_pending(),
        "close returned during a push"
    );
    assert!(!gateway.is_open());
    gate.answer.notify_one();
    let out = push.await.unwrap();
    close.await;
    // The approval came after the run ended: the push counts from that moment, refused.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("refs/heads/main: refused, the job's run has ended"),
        "{stderr}"
    );
    assert_ne!(f.origin_ref("refs/heads/main").await, Some(head));
    let out = f.agent_git(&["push", &url, "HEAD:capsid/j1"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("the job's run has ended"), "{stderr}");
    assert_eq!(f.origin_ref("refs/heads/capsid/j1").await, None);
}

/// The mirror's hook refuses unless the gateway told it exactly these updates: a push into
/// the mirror by any other path, or lines that differ from the ones the gateway read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hook_refuses_lines_it_was_not_told_about() {
    let f = Fixture::new(DEFAULT).await;
    let hook = f.mirror.join("capsid-gateway/hooks/pre-receive");
    let a = "1".repeat(40);
    let b = "2".repeat(40);
    let run = |env: Vec<(&'static str, String)>, stdin: String| {
        let hook = hook.clone();
        let mirror = f.mirror.clone();
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = std::process::Command::new(&hook)
                .current_dir(&mirror)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .envs(env)
                .stdin(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            // The hook may refuse before it reads its input: a broken pipe is fine here.
            let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
            child.wait_with_output().unwrap()
        })
    };
    let out = run(vec![], format!("{a} {b} refs/heads/main\n"))
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("did not come through the gateway"));

    let told = vec![
        (
            "CAPSID_GATEWAY_EXPECTED",
            format!("{a} {b} refs/heads/capsid/j1"),
        ),
        ("CAPSID_GATEWAY_VERDICT", "accept".to_owned()),
        (
            "CAPSID_GATEWAY_REPORT",
            "capsid gateway: push accepted.".to_owned(),
        ),
        (
            "CAPSID_GATEWAY_REFSPECS",
            format!("+{b}:refs/heads/capsid/j1"),
        ),
        (
            "CAPSID_GATEWAY_UPSTREAM",
            f.origin.to_string_lossy().into_owned(),
        ),
        (
            "CAPSID_GATEWAY_STATUS",
            f.mirror
                .join("capsid-gateway/pushes/t")
                .to_string_lossy()
                .into_owned(),
        ),
    ];
    let out = run(
        told,
        format!("{a} {b} refs/heads/capsid/j1\n{a} {b} refs/heads/main\n"),
    )
    .await
    .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("differ from the ones the gateway read"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Gateway A forwards to gateway B over HTTP (as it would to GitHub): the credential for B
/// goes in `http.<url>.extraHeader` through the environment, never on a command line; with
/// the wrong credential B answers 401 and the pusher of A is told the push failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarding_to_an_http_upstream_carries_its_credential_in_the_environment() {
    let f = Fixture::new(DEFAULT).await;
    let root = f.mirror.parent().unwrap().to_owned();
    let b_url = format!("http://127.0.0.1:{}{}", f.port, f.gateway.path());
    let mut front_urls = Vec::new();
    for (name, credential) in [("front.git", TOKEN), ("wrong.git", "not-b's-token")] {
        ok(&root, &["clone", "-q", "--bare", "origin.git", name]).await;
        let config = GatewayConfig::new(
            root.join(name),
            Upstream::github(b_url.clone(), &Secret::new(credential)),
            Secret::new("token-of-a"),
            PushTerms::new(JOB, &[] as &[&str], &["main"]).unwrap(),
        );
        let a = Gateway::new(config, Arc::new(NoApprovals), None).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = a.clone();
        tokio::spawn(async move { served.serve_tcp(listener).await });
        front_urls.push((
            format!("http://job:token-of-a@127.0.0.1:{port}{}", a.path()),
            a,
        ));
    }
    let head = f.head().await;

    let (wrong_url, wrong) = &front_urls[1];
    let out = f.agent_git(&["push", wrong_url, "HEAD:capsid/j1"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("the upstream repository did not take it"),
        "{stderr}"
    );
    let header = base64::engine::general_purpose::STANDARD.encode("x-access-token:not-b's-token");
    assert!(
        !stderr.contains("not-b's-token") && !stderr.contains(&header),
        "{stderr}"
    );
    assert_eq!(
        wrong.log().last().unwrap().forwarded,
        Forwarded::UpstreamRefused
    );
    assert_eq!(f.origin_ref("refs/heads/capsid/j1").await, None);

    let (front_url, front) = &front_urls[0];
    let out = f.agent_git(&["push", front_url, "HEAD:capsid/j1"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(front.log().last().unwrap().forwarded, Forwarded::Yes);
    assert_eq!(f.last().forwarded, Forwarded::Yes);
    assert_eq!(f.origin_ref("refs/heads/capsid/j1").await, Some(head));
}

/// Issue 51: the gateway is the path rule. A push whose changes since the job's base stay in
/// the lease goes through; one that changes a path outside it (however the file was written)
/// is refused naming the path and the lease, and reaches neither the mirror nor origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_changing_a_path_outside_the_lease_is_refused_naming_it() {
    let f = Fixture::new(Options {
        lease: Some(&["work.txt", "src/api/**"]),
        ..DEFAULT
    })
    .await;
    std::fs::create_dir_all(f.agent.join("src/api")).unwrap();
    f.commit("src/api/v1.rs", "fn v1() {}\n").await;
    let head = f.head().await;
    let out = f.agent_git(&["push", "origin", "HEAD:capsid/j1"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "inside the lease: {stderr}");
    assert_eq!(
        f.origin_ref("refs/heads/capsid/j1").await,
        Some(head.clone())
    );
    assert_eq!(f.last().forwarded, Forwarded::Yes);

    f.commit("Cargo.toml", "[package]\n").await;
    f.commit("src/web.rs", "fn web() {}\n").await;
    let said = f
        .refused(
            &["push", "origin", "HEAD:capsid/j1"],
            "it changes 2 path(s) outside this job's lease: `Cargo.toml`, `src/web.rs`",
        )
        .await;
    assert!(
        said.contains("The job holds `work.txt`, `src/api/**`"),
        "{said}"
    );
    assert_eq!(f.origin_ref("refs/heads/capsid/j1").await, Some(head));
    let rec = f.last();
    assert_eq!(rec.decision, Decision::Accept(Accepted::OwnBranch));
    assert_eq!(rec.forwarded, Forwarded::OutsideLease);
    // A branch the job names is held to the same lease.
    f.refused(
        &["push", "origin", "HEAD:feature-x"],
        "outside this job's lease",
    )
    .await;
}
