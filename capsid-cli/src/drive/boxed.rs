//! A boxed run (issue 48, `capsid drive --box`): the job's own clone of a Capsid-owned mirror,
//! the agent in a bubblewrap box with no network of its own, and the doors the driver owns:
//! the metered model door, Capsid's MCP endpoint, the git gateway (the clone's only remote and
//! the push gate) and the CONNECT door to the package registries. The project's checkout, the
//! driver's keys, the run folder, the mirror and other jobs' folders are not in the box at
//! all. Every connection through a door is recorded; what the driver decides afterwards comes
//! from the gateway's log and the mirror (what was pushed), the model door (what it cost) and
//! its own test run on a fresh checkout of the pushed head.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use capsid_box::bridge::{ConnectionRecord, Door, DoorTarget, RecordLog};
use capsid_box::connect::{ConnectAttempt, ConnectProxy, SystemResolver};
use capsid_box::gateway::{
    Forwarded, Gateway, GatewayConfig, KnownApprovals, PushRecord, Secret, Upstream,
};
use capsid_box::sandbox::{AgentBox, BoxStdio, Bwrap, check};
use capsid_core::drive::egress::Egress;
use capsid_core::drive::gate::GateRun;
use capsid_core::drive::push_policy::{Accepted, Approval, Decision, PushTerms, RefUpdate};

use super::Ready;
use super::agent::{AgentRun, feed_and_take, follow_output};
use super::model_door::{self, Metered};
use super::proc::git;

/// The box's loopback ports of its doors.
const MODEL_PORT: u16 = 7401;
const MCP_PORT: u16 = 7402;
const GIT_PORT: u16 = 7403;
const EGRESS_PORT: u16 = 7404;

/// What `--box` resolved before the claim: a `bwrap` that starts a box here, and where the
/// jobs' folders live.
#[derive(Clone, Debug)]
pub(crate) struct BoxSettings {
    pub bwrap: Bwrap,
    pub dir: PathBuf,
}

impl BoxSettings {
    /// The box (the default; `--unboxed` opts out): bubblewrap must start a box here (the refusal names what is missing), and the
    /// folder of the boxes is `--box-dir`, else `~/.cache/capsid/boxes`.
    pub async fn resolve(dir: Option<&Path>) -> std::result::Result<BoxSettings, String> {
        let bwrap = capsid_box::sandbox::probe()
            .await
            .map_err(|e| {
                format!(
                    "the agent's box cannot start here: {e}. Or pass --unboxed to run the agent as your own user with your files and network (each job's record then says so)"
                )
            })?;
        let dir = match dir {
            Some(d) => d.to_path_buf(),
            None => PathBuf::from(
                std::env::var_os("HOME")
                    .ok_or("--box: HOME is not set; name the folder of the boxes with --box-dir")?,
            )
            .join(".cache")
            .join("capsid")
            .join("boxes"),
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("--box-dir {}: cannot create it: {e}", dir.display()))?;
        let dir =
            std::fs::canonicalize(&dir).map_err(|e| format!("--box-dir {}: {e}", dir.display()))?;
        Ok(BoxSettings { bwrap, dir })
    }
}

/// One job's folders: `<box dir>/<namespace>/<job>/{clone,home,tmp,etc,doors,verify}`, and the
/// namespace's mirror `<box dir>/<namespace>/mirror.git`.
pub(crate) struct Place {
    pub base: PathBuf,
    pub clone: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
    pub etc: PathBuf,
    pub doors: PathBuf,
    pub run_dir: PathBuf,
    pub mirror: PathBuf,
}

fn private_dir(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("restricting {}", path.display()))
}

/// The project's upstream: `origin`'s URL in the project's checkout (which no agent can reach
/// in a boxed run).
async fn upstream_url(root: &Path) -> Result<String> {
    git(root, &["remote", "get-url", "origin"])
        .await
        .context("a boxed run pushes through the gateway to the project's `origin`, and the project has none")
}

/// Makes the job's folders: the namespace's mirror fetched fresh from the upstream, a clean
/// clone of it on `capsid/<job>` at `base_sha`, whose only remote is the gateway. A resumed
/// job keeps its folders (its clone and the session in its `HOME`); any other folder left for
/// the job (a crashed run) is removed first.
pub(crate) async fn place(
    r: &Ready,
    settings: &BoxSettings,
    id: &str,
    base_sha: &str,
    resuming: bool,
) -> Result<Place> {
    let ns_dir = settings.dir.join(&r.namespace);
    private_dir(&ns_dir)?;
    let mirror = ns_dir.join("mirror.git");
    let upstream = upstream_url(&r.root).await?;
    if mirror.join("HEAD").is_file() {
        git(&mirror, &["remote", "set-url", "origin", &upstream]).await?;
        git(
            &mirror,
            &[
                "fetch",
                "--quiet",
                "--prune",
                "origin",
                "+refs/heads/*:refs/heads/*",
            ],
        )
        .await
        .context("refreshing the namespace's mirror from the project's origin")?;
    } else {
        let _ = std::fs::remove_dir_all(&mirror);
        git(
            &ns_dir,
            &[
                "clone",
                "--quiet",
                "--bare",
                &upstream,
                &mirror.display().to_string(),
            ],
        )
        .await
        .context("making the namespace's mirror of the project's origin")?;
    }
    // The base commit may be only in the project's checkout (not pushed yet).
    if git(
        &mirror,
        &["cat-file", "-e", &format!("{base_sha}^{{commit}}")],
    )
    .await
    .is_err()
    {
        git(
            &mirror,
            &["fetch", "--quiet", &r.root.display().to_string(), base_sha],
        )
        .await
        .with_context(|| format!("bringing the job's base {base_sha} into the mirror"))?;
    }
    let base = ns_dir.join(id);
    let place = Place {
        clone: base.join("clone"),
        home: base.join("home"),
        tmp: base.join("tmp"),
        etc: base.join("etc"),
        doors: base.join("doors"),
        run_dir: base.join("home").join(".capsid-run"),
        mirror,
        base,
    };
    if resuming && place.clone.join(".git").is_dir() && place.home.is_dir() {
        eprintln!(
            "capsid drive: {id} resumes in its own clone {}",
            place.clone.display()
        );
        return Ok(place);
    }
    let base = place.base.clone();
    if base.exists() {
        eprintln!(
            "capsid drive: removing {} left by an earlier run of {id}",
            base.display()
        );
        std::fs::remove_dir_all(&base).with_context(|| format!("removing {}", base.display()))?;
    }
    private_dir(&base)?;
    for d in [
        &place.home,
        &place.tmp,
        &place.etc,
        &place.doors,
        &place.run_dir,
    ] {
        private_dir(d)?;
    }
    // A clone of its own: objects copied, not borrowed (the mirror is not in the box).
    git(
        &place.base,
        &[
            "clone",
            "--quiet",
            "--no-local",
            "--no-checkout",
            &place.mirror.display().to_string(),
            &place.clone.display().to_string(),
        ],
    )
    .await
    .context("cloning the mirror for the job")?;
    git(
        &place.clone,
        &[
            "checkout",
            "--quiet",
            "-B",
            &format!("capsid/{id}"),
            base_sha,
        ],
    )
    .await?;
    // Commits carry the driver's git identity (the box has no global configuration).
    for key in ["user.name", "user.email"] {
        let value = git(&r.root, &["config", "--get", key])
            .await
            .unwrap_or_else(|_| {
                if key == "user.name" {
                    "Capsid agent".to_owned()
                } else {
                    "agent@capsid.invalid".to_owned()
                }
            });
        git(&place.clone, &["config", key, &value]).await?;
    }
    Ok(place)
}

/// The doors of one boxed run, open.
pub(crate) struct Doors {
    pub model: model_door::Door,
    gateway: Gateway,
    git: Door,
    mcp: Door,
    egress: Door,
    connections: RecordLog<ConnectionRecord>,
    attempts: RecordLog<ConnectAttempt>,
}

/// What the doors saw, once closed.
pub(crate) struct Seen {
    pub metered: Metered,
    pub pushes: Vec<PushRecord>,
    pub connections: Vec<ConnectionRecord>,
    pub attempts: Vec<ConnectAttempt>,
}

/// The server's base URL and its MCP endpoint's path, which the box's MCP door serves (and
/// nothing else of the server), or why a boxed run cannot reach it.
pub(crate) fn mcp_door_target(url: &str) -> std::result::Result<(String, String), String> {
    let mcp = super::mcp::mcp_url(url);
    let rest = mcp.strip_prefix("http://").ok_or_else(|| {
        format!("a boxed run reaches Capsid's server through a door that forwards plain HTTP; give the server's http:// URL, not {url} (a TLS server is not supported in a boxed run yet)")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/ops/mcp"),
    };
    if authority.is_empty() {
        return Err(format!("the server URL {url} names no host"));
    }
    Ok((format!("http://{authority}"), path.to_owned()))
}

/// What the run's git gateway holds the job's pushes to.
pub(crate) struct GateTerms<'a> {
    /// The protected updates a person approved (a resumed job's).
    pub approvals: Vec<Approval>,
    /// The job's role (one that ships nothing pushes nothing).
    pub role: Option<&'a capsid_core::jobs::role::Role>,
    /// The branches only a person moves.
    pub protected: &'a [String],
    /// The job's path lease (`None`: the whole repository).
    pub lease: Option<capsid_box::gateway::paths::PathLease>,
}

/// Opens the run's doors in `place.doors`; the gateway lets through the protected updates
/// `gate.approvals` allow (a resumed job's, approved by the person who resumed it).
pub(crate) async fn open(
    r: &Ready,
    model: &model_door::ModelSettings,
    id: &str,
    place: &Place,
    gate: GateTerms<'_>,
) -> Result<Doors> {
    let GateTerms {
        approvals,
        role,
        protected,
        lease,
    } = gate;
    let connections = RecordLog::new();
    let attempts = RecordLog::new();
    let model = model_door::open_boxed(
        model,
        &place.doors.join("model.sock"),
        format!("http://127.0.0.1:{MODEL_PORT}"),
        connections.clone(),
    )
    .await?;
    let mut token_bytes = [0u8; 24];
    rand::fill(&mut token_bytes[..]);
    let token: String = token_bytes.iter().map(|b| format!("{b:02x}")).collect();
    // The clone's only remote: the gateway, with this run's token (good for this run only).
    let gateway_url = format!("http://capsid:{token}@127.0.0.1:{GIT_PORT}/mirror.git");
    git(&place.clone, &["remote", "set-url", "origin", &gateway_url]).await?;
    let upstream_url = upstream_url(&r.root).await?;
    let upstream = match (&r.credential, upstream_url.starts_with("https://")) {
        (Some(secret), true) => Upstream::github(&upstream_url, &Secret::new(secret.clone())),
        _ => Upstream::plain(upstream_url),
    };
    let mut terms = PushTerms::new(id, &Vec::<String>::new(), protected)
        .map_err(|e| anyhow::anyhow!("the job's push terms: {e}"))?;
    // A role that ships no code pushes nothing: the gateway is the rule.
    if let Some(role) = role.filter(|r| capsid_core::jobs::role::ships_nothing_by_design(Some(r))) {
        terms = terms.shipping_nothing(&role.name);
    }
    let mut config = GatewayConfig::new(&place.mirror, upstream, Secret::new(token.clone()), terms);
    config.lease = lease;
    let gateway = Gateway::new(config, Arc::new(KnownApprovals(approvals)), None)
        .context("opening the git gateway")?;
    let git = Door::open(
        "git",
        place.doors.join("git.sock"),
        DoorTarget::Http(gateway.router()),
        connections.clone(),
    )
    .await
    .context("opening the box's git door")?;
    // Capsid's MCP endpoint, and only it: every request re-sent under the server's own Host.
    let (server, mcp_path) = mcp_door_target(&r.url).map_err(anyhow::Error::msg)?;
    let mcp = Door::open(
        "mcp",
        place.doors.join("mcp.sock"),
        DoorTarget::Http(
            capsid_box::http_door::router(&server, &[&mcp_path]).context("the box's MCP door")?,
        ),
        connections.clone(),
    )
    .await
    .context("opening the box's MCP door")?;
    let egress = Door::open(
        "egress",
        place.doors.join("egress.sock"),
        DoorTarget::Http(
            ConnectProxy::new(Egress::registries(), SystemResolver, attempts.clone()).router(),
        ),
        connections.clone(),
    )
    .await
    .context("opening the box's egress door")?;
    Ok(Doors {
        model,
        gateway,
        git,
        mcp,
        egress,
        connections,
        attempts,
    })
}

impl Doors {
    /// Closes every door (nothing the box left behind reaches anything after this) and says
    /// what they saw.
    pub async fn close(self) -> Seen {
        self.gateway.close().await;
        let metered = self.model.close().await;
        self.git.close().await;
        self.mcp.close().await;
        self.egress.close().await;
        Seen {
            metered,
            pushes: self.gateway.log(),
            connections: self.connections.records(),
            attempts: self.attempts.records(),
        }
    }
}

/// The agent program's folder on the host `PATH`, and what to bind for it: the folder of an
/// npm install (`.../node_modules` for `.../node_modules/.bin/claude`), else the folder itself
/// (nothing under `/usr`, which the box has).
fn program_binds(command: &str) -> (Option<PathBuf>, Vec<PathBuf>) {
    let program = command.split_whitespace().next().unwrap_or("claude");
    let found = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(program))
                .find(|c| c.is_file())
        })
    };
    let Some(found) = found else {
        return (None, Vec::new());
    };
    let dir = found.parent().map(Path::to_path_buf);
    let mut binds = Vec::new();
    if let Some(d) = &dir {
        let bind = if d.file_name().is_some_and(|n| n == ".bin") {
            d.parent().map(Path::to_path_buf)
        } else {
            Some(d.clone())
        };
        if let Some(b) = bind.filter(|b| !b.starts_with("/usr")) {
            binds.push(b);
        }
    }
    if let Ok(real) = std::fs::canonicalize(&found)
        && let Some(real_dir) = real.parent()
        && !real_dir.starts_with("/usr")
        && !binds.iter().any(|b| real_dir.starts_with(b))
    {
        binds.push(real_dir.to_path_buf());
    }
    (dir, binds)
}

/// What must never be in the box: the project's checkout (and its run folders), the driver's
/// key folder, the mirror, and every other job's folder.
fn forbidden(r: &Ready, settings: &BoxSettings, place: &Place) -> Vec<PathBuf> {
    let mut out = vec![r.root.clone(), place.mirror.clone()];
    if let Some(home) = std::env::var_os("HOME") {
        out.push(PathBuf::from(home).join(".capsid"));
    }
    if let Ok(entries) = std::fs::read_dir(settings.dir.join(&r.namespace)) {
        out.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p != &place.base && p != &place.mirror),
        );
    }
    if let Ok(entries) = std::fs::read_dir(&settings.dir) {
        out.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| !place.base.starts_with(p)),
        );
    }
    out
}

/// The in-box URL of Capsid's MCP endpoint.
pub(crate) fn inside_mcp_url(r: &Ready) -> String {
    let path = super::mcp::mcp_url(&r.url);
    let path = path
        .strip_prefix("http://")
        .and_then(|rest| rest.find('/').map(|i| rest[i..].to_owned()))
        .unwrap_or_else(|| "/ops/mcp".to_owned());
    format!("http://127.0.0.1:{MCP_PORT}{path}")
}

/// Runs `command` (the agent, with `input` on its standard input) in the job's box: its
/// variables are exactly `envs`, the doors' and the runtime's switches; its processes all end
/// when it ends.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    r: &Ready,
    settings: &BoxSettings,
    agent: &str,
    id: &str,
    place: &Place,
    command: &str,
    input: &str,
    envs: &[(String, String)],
) -> Result<AgentRun> {
    let capsid = std::env::current_exe().context("finding the capsid binary's own path")?;
    let capsid = std::fs::canonicalize(&capsid).unwrap_or(capsid);
    let (program_dir, binds) = program_binds(command);
    let mut spec = AgentBox::new(&place.clone, &place.home, &place.tmp, &place.etc);
    spec.doors = ["model", "mcp", "git", "egress"]
        .iter()
        .map(|d| ((*d).to_owned(), place.doors.join(format!("{d}.sock"))))
        .collect();
    spec.tools.push((capsid.clone(), capsid.clone()));
    for b in binds {
        spec.tools.push((b.clone(), b));
    }
    spec.path = program_dir
        .into_iter()
        .chain(capsid.parent().map(Path::to_path_buf))
        .chain(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from))
        .collect();
    spec.proxy_port = Some(EGRESS_PORT);
    spec.env = r.runtime.box_env();
    spec.env.extend(envs.iter().cloned());
    let built = spec.spec().context("building the job's box")?;
    let checked = check(built, &forbidden(r, settings, place))
        .map_err(|e| anyhow::anyhow!("the job's box would expose what it must not: {e}"))?;
    let mut args: Vec<String> = vec!["door".into()];
    for (port, door) in [
        (MODEL_PORT, "model"),
        (MCP_PORT, "mcp"),
        (GIT_PORT, "git"),
        (EGRESS_PORT, "egress"),
    ] {
        args.extend([
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--to".into(),
            format!("/run/doors/{door}.sock"),
        ]);
    }
    args.extend(["--".into(), "sh".into(), "-c".into(), command.to_owned()]);
    if r.tmux {
        return run_in_tmux(
            r, settings, agent, id, place, &checked, &capsid, &args, input,
        )
        .await;
    }
    let mut child = settings
        .bwrap
        .spawn(
            &checked,
            &capsid,
            &args,
            BoxStdio {
                stdin: std::process::Stdio::piped(),
                stdout: std::process::Stdio::piped(),
                stderr: std::process::Stdio::inherit(),
            },
        )
        .context("starting the job's box")?;
    eprintln!(
        "capsid drive: {id} runs boxed in {} (no network; doors: model, mcp, git, egress)",
        place.clone.display()
    );
    let stdout = feed_and_take(child.stdin(), child.stdout(), input).await?;
    let out = follow_output(r, id, stdout).await;
    // The box's first process ended (or its output broke): end the box, every process in it.
    let status = child.kill().await.context("ending the job's box")?;
    let stdout = out?;
    Ok(AgentRun {
        exit: status.code(),
        stdout,
    })
}

/// [`run`] with `--tmux`: the box started by the shell of a tmux session on the driver's
/// private server, a person can attach to and watch. The server starts with exactly the box's
/// variables (bubblewrap passes them on; none is on a command line), the box's command line is
/// the one [`run`] would start, and the output and exit code go through files in the job's
/// folder outside the box. Ending the server (the run's end, or a person failing the job) ends
/// bubblewrap, and every process in the box dies with it.
#[allow(clippy::too_many_arguments)]
async fn run_in_tmux(
    r: &Ready,
    settings: &BoxSettings,
    agent: &str,
    id: &str,
    place: &Place,
    checked: &capsid_core::drive::box_plan::CheckedBox,
    capsid: &Path,
    args: &[String],
    input: &str,
) -> Result<AgentRun> {
    let mut words: Vec<String> = vec![settings.bwrap.path().display().to_string()];
    for a in checked.bwrap_args() {
        words.push(
            a.into_string()
                .map_err(|a| anyhow::anyhow!("a box path is not UTF-8: {a:?}"))?,
        );
    }
    words.push("--".into());
    words.push(capsid.display().to_string());
    words.extend(args.iter().cloned());
    let line = words
        .iter()
        .map(|w| capsid_core::drive::hooks::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    let env: Vec<(String, String)> = checked
        .environment()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let files = place.base.join("tmux");
    private_dir(&files)?;
    eprintln!(
        "capsid drive: {id} runs boxed in {} (no network; doors: model, mcp, git, egress)",
        place.clone.display()
    );
    super::agent::run_line_in_tmux(
        r,
        agent,
        id,
        &files,
        &place.base,
        &line,
        input,
        super::agent::TmuxEnv::Exactly(env),
    )
    .await
}

/// The head the run shipped, from the gateway's log: the last update that reached the
/// upstream (the job's own branch, or a protected one a person approved).
pub(crate) fn pushed_head(pushes: &[PushRecord]) -> Option<String> {
    pushes
        .iter()
        .rev()
        .find(|p| p.forwarded == Forwarded::Yes && p.decision.is_accept() && !p.update.is_delete())
        .map(|p| p.update.new.as_str().to_owned())
}

/// The updates the gateway held for a person (a push to a protected branch), each once, in
/// the order they were first held.
pub(crate) fn held(pushes: &[PushRecord]) -> Vec<RefUpdate> {
    let mut out: Vec<RefUpdate> = Vec::new();
    for p in pushes {
        if let Decision::Hold(u) = &p.decision
            && !out.contains(u)
        {
            out.push(u.clone());
        }
    }
    out
}

/// The protected updates the gateway forwarded on a person's approval, each a ref and the
/// sha it went to: what lets a protected branch move during the run.
pub(crate) fn approved(pushes: &[PushRecord]) -> Vec<capsid_core::drive::judge::Approved> {
    pushes
        .iter()
        .filter(|p| {
            p.forwarded == Forwarded::Yes && p.decision == Decision::Accept(Accepted::Approved)
        })
        .map(|p| (p.update.refname.clone(), p.update.new.to_string()))
        .collect()
}

/// A fresh checkout of `sha` from the mirror, where the driver runs its own tests (nothing the
/// agent left in its clone is read).
pub(crate) async fn checkout(place: &Place, sha: &str) -> Result<PathBuf> {
    let verify = place.base.join("verify");
    let _ = std::fs::remove_dir_all(&verify);
    git(
        &place.base,
        &[
            "clone",
            "--quiet",
            "--no-checkout",
            &place.mirror.display().to_string(),
            &verify.display().to_string(),
        ],
    )
    .await?;
    git(&verify, &["checkout", "--quiet", "--detach", sha]).await?;
    Ok(verify)
}

/// What the driver's own test run in its fresh box saw through its one door (egress).
#[derive(Default)]
pub(crate) struct Verified {
    pub connections: Vec<ConnectionRecord>,
    pub attempts: Vec<ConnectAttempt>,
}

/// Runs `command` (the project's test command or build check) the driver's way in `at`, a
/// fresh checkout of the pushed head, **in a fresh box of its own**: the code it runs is the
/// agent's, so it gets what the agent's box got and no more (the system read-only, a new
/// `HOME` and `TMPDIR`, no network but the CONNECT door to the package registries), and none
/// of the agent's clone, home or leftovers. Standard error is folded into the output, of
/// which the tail is kept; every process it started ends with it.
pub(crate) async fn verify(
    r: &Ready,
    settings: &BoxSettings,
    place: &Place,
    at: &Path,
    command: &str,
    seen: &mut Verified,
) -> Result<GateRun> {
    let dir = place.base.join("verify-box");
    let _ = std::fs::remove_dir_all(&dir);
    let (home, tmp, etc, doors) = (
        dir.join("home"),
        dir.join("tmp"),
        dir.join("etc"),
        dir.join("doors"),
    );
    for d in [&dir, &home, &tmp, &etc, &doors] {
        private_dir(d)?;
    }
    let connections = RecordLog::new();
    let attempts = RecordLog::new();
    let socket = doors.join("egress.sock");
    let egress = Door::open(
        "verify-egress",
        &socket,
        DoorTarget::Http(
            ConnectProxy::new(Egress::registries(), SystemResolver, attempts.clone()).router(),
        ),
        connections.clone(),
    )
    .await
    .context("opening the test box's egress door")?;
    let capsid = std::env::current_exe().context("finding the capsid binary's own path")?;
    let capsid = std::fs::canonicalize(&capsid).unwrap_or(capsid);
    let mut spec = AgentBox::new(at, &home, &tmp, &etc);
    spec.doors = vec![("egress".to_owned(), socket)];
    spec.tools.push((capsid.clone(), capsid.clone()));
    spec.proxy_port = Some(EGRESS_PORT);
    let built = spec.spec().context("building the test box")?;
    let checked = check(built, &forbidden(r, settings, place))
        .map_err(|e| anyhow::anyhow!("the test box would expose what it must not: {e}"))?;
    let args = [
        "door".to_owned(),
        "--listen".to_owned(),
        format!("127.0.0.1:{EGRESS_PORT}"),
        "--to".to_owned(),
        "/run/doors/egress.sock".to_owned(),
        "--".to_owned(),
        "sh".to_owned(),
        "-c".to_owned(),
        format!("exec 2>&1\n{command}"),
    ];
    let run = async {
        let mut child = settings
            .bwrap
            .spawn(&checked, &capsid, &args, BoxStdio::piped_output())
            .context("starting the test box")?;
        let out = tokio::spawn(read_all(child.stdout()));
        let err = tokio::spawn(read_all(child.stderr()));
        let status = child.wait().await.context("waiting for the test box")?;
        // The box's first process ended, and every process in it with it (a test's leftover
        // server included), so its pipes end too.
        let _ = child.kill().await;
        let mut bytes = out.await.unwrap_or_default();
        bytes.extend_from_slice(&err.await.unwrap_or_default());
        anyhow::Ok(GateRun {
            command: command.to_owned(),
            exit_code: status.code(),
            output: super::proc::keep_tail(&bytes),
        })
    };
    let result = run.await;
    egress.close().await;
    seen.connections.extend(connections.records());
    seen.attempts.extend(attempts.records());
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The agent's clone as it was left: how many commits it holds beyond `base` and whether its
/// tree is clean, read by git **in a box** (the clone's git configuration is the agent's, and
/// git obeys it: `core.fsmonitor` or a diff driver would run a program). `None` when it
/// cannot be read (the verdict then takes the tree as not clean).
pub(crate) async fn clone_state(
    r: &Ready,
    settings: &BoxSettings,
    place: &Place,
    base: &str,
    seen: &mut Verified,
) -> Option<(u64, bool)> {
    let probe = format!("git rev-list --count {base}..HEAD && git status --porcelain");
    let run = verify(r, settings, place, &place.clone, &probe, seen)
        .await
        .ok()
        .filter(GateRun::passed)?;
    let mut lines = run.output.lines();
    let commits = lines.next()?.trim().parse().ok()?;
    let clean = lines.all(|l| l.trim().is_empty());
    Some((commits, clean))
}

/// Everything `pipe` gives until it ends (nothing when there is no pipe or it breaks).
async fn read_all(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(mut p) = pipe {
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut p, &mut buf).await;
    }
    buf
}

/// Removes the folders of boxed jobs that failed more than a day ago (the same marks the
/// worktrees are pruned by; a blocked job's folder stays however long the human takes).
pub(crate) fn prune_stale(r: &Ready, settings: &BoxSettings) {
    let Ok(marks) = std::fs::read_dir(r.root.join(".capsid").join("failed")) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for mark in marks.flatten() {
        let old = mark
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > super::worktree::KEEP_FAILED);
        let id = mark.file_name().to_string_lossy().into_owned();
        let dir = settings.dir.join(&r.namespace).join(&id);
        if old && !id.contains('/') && id != "mirror.git" && dir.is_dir() {
            remove(&dir);
        }
    }
}

/// Removes the job's folders (the job is done).
pub(crate) fn remove(place_base: &Path) {
    if let Err(e) = std::fs::remove_dir_all(place_base) {
        eprintln!(
            "capsid drive: could not remove {}: {e}",
            place_base.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::mcp_door_target;

    #[test]
    fn the_mcp_door_targets_the_servers_endpoint_over_plain_http_only() {
        assert_eq!(
            mcp_door_target("http://127.0.0.1:8787"),
            Ok(("http://127.0.0.1:8787".to_owned(), "/ops/mcp".to_owned()))
        );
        assert_eq!(
            mcp_door_target("http://capsid.internal:9000/ops/mcp"),
            Ok((
                "http://capsid.internal:9000".to_owned(),
                "/ops/mcp".to_owned()
            ))
        );
        let why = mcp_door_target("https://capsid.example.org").unwrap_err();
        assert!(why.contains("plain HTTP"), "{why}");
    }
}
