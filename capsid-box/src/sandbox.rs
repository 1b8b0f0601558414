//! The box over bubblewrap: [`probe`] says whether a box can start here (and what is missing
//! when not), [`Bwrap::spawn`] starts a program in a [`CheckedBox`], and [`BoxChild`] ends the
//! box with every process in it. The box's filesystem, environment and doors are
//! `capsid_core::drive::box_plan`'s; [`AgentBox`] gathers what an agent needs from the host
//! (the `/etc` parts it has, an `/etc/passwd` entry for the agent) into such a spec.
//!
//! How the box dies: the program is the box's first process, under bubblewrap's own init as PID
//! 1 of a new PID namespace. When the first process exits, that init exits, and the kernel kills
//! every process left in the namespace (a `setsid` double fork included). [`BoxChild::kill`]
//! kills the outer `bwrap`; `--die-with-parent` makes its init die with it, with the same
//! effect. The box must be spawned from a thread that outlives it (a runtime worker, not
//! `spawn_blocking`): `--die-with-parent` follows the thread that started `bwrap`.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use capsid_core::drive::box_plan::{AGENT_ID, BoxRefusal, BoxSpec, CheckedBox};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// Why no box can start on this host.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    /// No `bwrap` in any folder of `PATH`.
    #[error("bubblewrap is not installed: no `bwrap` on PATH (Debian: apt-get install bubblewrap)")]
    NotInstalled,
    /// `bwrap` is there but a trivial box did not start (user namespaces off, a seccomp
    /// profile, a container without the privilege).
    #[error("bubblewrap at {} could not start a box ({status}): {stderr}", bwrap.display())]
    CannotStart {
        /// The `bwrap` tried.
        bwrap: PathBuf,
        /// How the trivial box ended.
        status: String,
        /// What it printed (user namespaces off prints "No permissions to create new namespace").
        stderr: String,
    },
    /// Running `bwrap` failed.
    #[error("bubblewrap at {} could not be run: {source}", bwrap.display())]
    Io {
        /// The `bwrap` tried.
        bwrap: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// A `bwrap` that started a trivial box with user, PID and network namespaces.
#[derive(Clone, Debug)]
pub struct Bwrap {
    path: PathBuf,
    version: String,
    started_in: Duration,
}

impl Bwrap {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What `bwrap --version` printed (`bubblewrap 0.8.0`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// How long the probe's trivial box took from spawn to exit.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// Starts `program` with `args` in the box `checked`, with exactly the box's environment.
    /// The child is killed (with the whole box) when the [`BoxChild`] is dropped.
    pub fn spawn<S: AsRef<OsStr>>(
        &self,
        checked: &CheckedBox,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = S>,
        stdio: BoxStdio,
    ) -> io::Result<BoxChild> {
        let mut command = Command::new(&self.path);
        command
            .args(checked.bwrap_args())
            .arg("--")
            .arg(program)
            .args(args)
            // Variables go through bwrap's own environment, never its argv (see box_plan).
            .env_clear()
            .envs(checked.environment())
            .stdin(stdio.stdin)
            .stdout(stdio.stdout)
            .stderr(stdio.stderr)
            .kill_on_drop(true);
        let child = command.spawn()?;
        Ok(BoxChild { child })
    }
}

/// Finds `bwrap` on `PATH` and starts a trivial box (`true` with user, PID and network
/// namespaces) to prove the kernel lets it: the doctor's check, and the driver's before it
/// claims a job.
pub async fn probe() -> Result<Bwrap, Unavailable> {
    probe_path(&std::env::var_os("PATH").unwrap_or_default()).await
}

/// [`probe`] with `bwrap` looked for in the folders of `search` (a `PATH` value) instead of
/// this process's `PATH`.
pub async fn probe_path(search: &OsStr) -> Result<Bwrap, Unavailable> {
    let path = find_on_path(search, "bwrap").ok_or(Unavailable::NotInstalled)?;
    let io_err = |source| Unavailable::Io {
        bwrap: path.clone(),
        source,
    };
    let version = Command::new(&path)
        .arg("--version")
        .output()
        .await
        .map_err(io_err)?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    let trivial = BoxSpec::system(Path::exists)
        .validate(&[])
        .map_err(|e| io_err(io::Error::other(e)))?;
    let started = Instant::now();
    let output = Command::new(&path)
        .args(trivial.bwrap_args())
        .args(["--", "true"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(io_err)?;
    let started_in = started.elapsed();
    if !output.status.success() {
        return Err(Unavailable::CannotStart {
            bwrap: path,
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(Bwrap {
        path,
        version,
        started_in,
    })
}

fn find_on_path(search: &OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(search)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Where the box's standard streams go.
#[derive(Debug)]
pub struct BoxStdio {
    /// Standard input.
    pub stdin: Stdio,
    /// Standard output.
    pub stdout: Stdio,
    /// Standard error.
    pub stderr: Stdio,
}

impl BoxStdio {
    /// All three closed (`/dev/null`).
    pub fn null() -> BoxStdio {
        BoxStdio {
            stdin: Stdio::null(),
            stdout: Stdio::null(),
            stderr: Stdio::null(),
        }
    }

    /// Standard input closed, output and error piped to the supervisor.
    pub fn piped_output() -> BoxStdio {
        BoxStdio {
            stdin: Stdio::null(),
            stdout: Stdio::piped(),
            stderr: Stdio::piped(),
        }
    }
}

/// A running box. Dropping it kills the box and every process in it.
#[derive(Debug)]
pub struct BoxChild {
    child: Child,
}

impl BoxChild {
    /// The host pid of the outer `bwrap` (None once it has been waited for).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The box's standard input, if piped (taken once).
    pub fn stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    /// The box's standard output, if piped (taken once).
    pub fn stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// The box's standard error, if piped (taken once).
    pub fn stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Waits for the box's first process to exit; every other process in the box is gone
    /// with it. The status is the program's (bubblewrap passes it through).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Ends the box now (SIGKILL to `bwrap`, whose in-box init and every process under it die
    /// with it) and waits for it.
    pub async fn kill(&mut self) -> io::Result<ExitStatus> {
        // An already exited box makes start_kill fail with InvalidInput; wait still answers.
        let _ = self.child.start_kill();
        self.child.wait().await
    }
}

/// What an agent's box holds, beyond the read-only system: its clone, `HOME` and `TMPDIR`
/// read-write (each at the same path inside as outside), the doors, the tools bound read-only
/// (the runtime's install folder, the `capsid` binary), and the variables it is given.
#[derive(Clone, Debug)]
pub struct AgentBox {
    /// The job's clone, the working directory.
    pub clone: PathBuf,
    /// The agent's `HOME`.
    pub home: PathBuf,
    /// The agent's `TMPDIR`.
    pub tmp: PathBuf,
    /// A folder of the supervisor's, never bound into the box, where the box's `/etc/passwd`,
    /// `/etc/group` and `/etc/hosts` are written and bound read-only from.
    pub etc: PathBuf,
    /// Doors: name and host socket (inside at `/run/doors/<name>.sock`).
    pub doors: Vec<(String, PathBuf)>,
    /// Host paths bound read-only, and where inside.
    pub tools: Vec<(PathBuf, PathBuf)>,
    /// `PATH` inside (`/usr/local/bin:/usr/bin:/bin` when empty).
    pub path: Vec<PathBuf>,
    /// The in-box port of the egress door, if any: `HTTPS_PROXY`/`HTTP_PROXY` (and their
    /// lowercase spellings) point at it, `NO_PROXY` keeps the box's own loopback direct.
    pub proxy_port: Option<u16>,
    /// More variables (the model API's base URL, the offline switches, the run credential).
    pub env: Vec<(String, String)>,
}

impl AgentBox {
    /// An agent box for `clone`, `home` and `tmp`, its `/etc` files written under `etc`; no
    /// door, no tool, no proxy.
    pub fn new(
        clone: impl Into<PathBuf>,
        home: impl Into<PathBuf>,
        tmp: impl Into<PathBuf>,
        etc: impl Into<PathBuf>,
    ) -> AgentBox {
        AgentBox {
            clone: clone.into(),
            home: home.into(),
            tmp: tmp.into(),
            etc: etc.into(),
            doors: Vec::new(),
            tools: Vec::new(),
            path: Vec::new(),
            proxy_port: None,
            env: Vec::new(),
        }
    }

    /// Writes the box's `/etc` files and builds the spec: the system read-only
    /// ([`BoxSpec::system`] with the `/etc` parts this host has), the agent's `passwd` and
    /// `group` entries (uid and gid [`AGENT_ID`], named `agent`, its `HOME`), `hosts` naming
    /// only the loopback, the clone, `HOME` and `TMPDIR` read-write, the tools, the doors, and
    /// `HOME`, `TMPDIR`, `USER`, `LOGNAME`, `PATH`, `LANG`, `SHELL` and the proxy variables.
    /// Host paths are canonicalized (a symlink shows what it points at).
    pub fn spec(&self) -> io::Result<BoxSpec> {
        fs::create_dir_all(&self.etc)?;
        let home = canonical(&self.home)?;
        let tmp = canonical(&self.tmp)?;
        let clone = canonical(&self.clone)?;
        let etc = canonical(&self.etc)?;
        let id = AGENT_ID;
        let files = [
            (
                "passwd",
                format!(
                    "root:x:0:0:root:/root:/bin/sh\nagent:x:{id}:{id}:agent:{}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                    home.display()
                ),
            ),
            (
                "group",
                format!("root:x:0:\nagent:x:{id}:\nnogroup:x:65534:\n"),
            ),
            ("hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost\n".to_owned()),
        ];
        let mut spec = BoxSpec::system(Path::exists);
        for (name, text) in files {
            let host = etc.join(name);
            fs::write(&host, text)?;
            spec = spec.read_only(host, Path::new("/etc").join(name));
        }
        spec = spec
            .read_write(&clone, &clone)
            .read_write(&home, &home)
            .read_write(&tmp, &tmp)
            .cwd(&clone);
        for (host, inside) in &self.tools {
            spec = spec.read_only(canonical(host)?, inside);
        }
        for (name, socket) in &self.doors {
            spec = spec.door(name, canonical(socket)?);
        }
        let path = if self.path.is_empty() {
            OsString::from("/usr/local/bin:/usr/bin:/bin")
        } else {
            std::env::join_paths(&self.path).map_err(io::Error::other)?
        };
        spec = spec
            .env("HOME", home.to_string_lossy())
            .env("TMPDIR", tmp.to_string_lossy())
            .env("USER", "agent")
            .env("LOGNAME", "agent")
            .env("SHELL", "/bin/sh")
            .env("LANG", "C.UTF-8")
            .env("PATH", path.to_string_lossy());
        if let Some(port) = self.proxy_port {
            let proxy = format!("http://127.0.0.1:{port}");
            for name in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"] {
                spec = spec.env(name, proxy.clone());
            }
            for name in ["NO_PROXY", "no_proxy"] {
                spec = spec.env(name, "127.0.0.1,localhost,::1");
            }
        }
        for (name, value) in &self.env {
            spec = spec.env(name, value);
        }
        Ok(spec)
    }
}

/// Checks `spec` against `forbidden` with every host path resolved as the kernel will resolve
/// it when bubblewrap binds it (symlinks followed; a path that does not exist yet is taken as
/// written). The refusal names the entry and the forbidden path.
pub fn check(spec: BoxSpec, forbidden: &[PathBuf]) -> Result<CheckedBox, BoxRefusal> {
    let resolved: Vec<PathBuf> = forbidden
        .iter()
        .flat_map(|p| {
            let real = fs::canonicalize(p).ok();
            std::iter::once(p.clone()).chain(real)
        })
        .collect();
    spec.map_host_paths(|p| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()))
        .validate(&resolved)
}

fn canonical(path: &Path) -> io::Result<PathBuf> {
    fs::canonicalize(path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("the box's path {} cannot be resolved: {e}", path.display()),
        )
    })
}
