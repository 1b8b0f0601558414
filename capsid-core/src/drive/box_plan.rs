//! The box a driven agent runs in, built from nothing (issue 48): [`BoxSpec::new`] exposes no
//! host path, sets no variable and opens no door; every widening is a named entry (a read-only
//! or read-write bind, a tmpfs, a symlink, a variable, a door). [`BoxSpec::validate`] refuses a
//! spec that would show the agent a forbidden path (the data folder, the signing key, key
//! files, the run folder, the project's checkout, other jobs' clones) before anything starts,
//! and [`CheckedBox::bwrap_args`] renders the bubblewrap argv `capsid-box` runs.
//!
//! Paths are compared as written (absolute, no `..`): resolving symlinks is IO, so the adapter
//! canonicalizes the host paths before it asks ([`BoxSpec::map_host_paths`]).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// The uid and gid the agent runs as inside the box unless [`BoxSpec::user`] says otherwise.
pub const AGENT_ID: u32 = 1000;

/// The folder inside the box under which doors appear: `/run/doors/<name>.sock`.
pub const DOORS_INSIDE: &str = "/run/doors";

/// The parts of `/etc` a process inside needs, bound read-only when the host has them: the CA
/// certificates and OpenSSL's config (not `/etc/ssl/private`: key files), Debian's
/// alternatives (`awk`, `editor` are symlinks through it), the dynamic linker's cache,
/// name-service order and the time zone. `/etc/passwd`, `/etc/group` and `/etc/hosts` are
/// written for the box instead (the host's list its users and names); `/etc/resolv.conf` is
/// absent (no network); the host's `/etc/gitconfig` is absent (it may carry credential helpers
/// or headers; a job's git settings belong in the box's `HOME`).
pub const SYSTEM_ETC: &[&str] = &[
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/nsswitch.conf",
    "/etc/localtime",
];

/// The usr-merge symlinks at the root (`/bin -> usr/bin`, ...), as Debian 12 lays it out.
pub const USR_MERGE: &[(&str, &str)] = &[
    ("usr/bin", "/bin"),
    ("usr/sbin", "/sbin"),
    ("usr/lib", "/lib"),
    ("usr/lib64", "/lib64"),
];

/// One entry of the box's filesystem, applied in the order of its inside path's depth.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mount {
    /// `--ro-bind host inside`: readable, not writable.
    ReadOnly {
        /// The host path shown.
        host: PathBuf,
        /// Where the box sees it.
        inside: PathBuf,
    },
    /// `--bind host inside`: readable and writable (the clone, `HOME`, `TMPDIR`).
    ReadWrite {
        /// The host path shown.
        host: PathBuf,
        /// Where the box sees it.
        inside: PathBuf,
    },
    /// `--tmpfs inside`: an empty writable folder that dies with the box.
    Tmpfs {
        /// Where the box sees it.
        inside: PathBuf,
    },
    /// `--symlink target inside`: a symlink that shows no host path by itself.
    Symlink {
        /// What the link points at (inside the box).
        target: PathBuf,
        /// The link.
        inside: PathBuf,
    },
}

impl Mount {
    /// The path inside the box this entry creates.
    pub fn inside(&self) -> &Path {
        match self {
            Mount::ReadOnly { inside, .. }
            | Mount::ReadWrite { inside, .. }
            | Mount::Tmpfs { inside }
            | Mount::Symlink { inside, .. } => inside,
        }
    }

    /// The host path it shows, if any.
    pub fn host(&self) -> Option<&Path> {
        match self {
            Mount::ReadOnly { host, .. } | Mount::ReadWrite { host, .. } => Some(host),
            Mount::Tmpfs { .. } | Mount::Symlink { .. } => None,
        }
    }

    fn field(&self) -> &'static str {
        match self {
            Mount::ReadOnly { .. } => "read-only bind",
            Mount::ReadWrite { .. } => "read-write bind",
            Mount::Tmpfs { .. } => "tmpfs",
            Mount::Symlink { .. } => "symlink",
        }
    }
}

/// A door: the host Unix socket a supervisor's bridge listens on, bound into the box at
/// `/run/doors/<name>.sock`. The only way out of a box without a network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoorMount {
    /// The door's name (`model`, `git`, `mcp`, `egress`): `[a-z0-9_-]{1,32}`.
    pub name: String,
    /// The socket on the host.
    pub host: PathBuf,
}

impl DoorMount {
    /// Where the box sees the socket.
    pub fn inside(&self) -> PathBuf {
        Path::new(DOORS_INSIDE).join(format!("{}.sock", self.name))
    }
}

/// A box under construction: nothing in it until a named call puts it there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoxSpec {
    mounts: Vec<Mount>,
    env: BTreeMap<String, String>,
    doors: Vec<DoorMount>,
    uid: u32,
    gid: u32,
    cwd: Option<PathBuf>,
}

impl Default for BoxSpec {
    fn default() -> Self {
        BoxSpec::new()
    }
}

impl BoxSpec {
    /// An empty box: no mounts, no variables (nothing is inherited), no doors, the agent's
    /// uid and gid ([`AGENT_ID`]), the working directory `/`.
    pub fn new() -> BoxSpec {
        BoxSpec {
            mounts: Vec::new(),
            env: BTreeMap::new(),
            doors: Vec::new(),
            uid: AGENT_ID,
            gid: AGENT_ID,
            cwd: None,
        }
    }

    /// The system a process needs, read-only: `/usr`, the usr-merge symlinks, the parts of
    /// [`SYSTEM_ETC`] for which `host_has` is true, and a fresh `/tmp`. Still no variable, no
    /// writable host path and no door.
    pub fn system(host_has: impl Fn(&Path) -> bool) -> BoxSpec {
        let mut spec = BoxSpec::new().read_only("/usr", "/usr");
        for (target, link) in USR_MERGE {
            spec = spec.symlink(target, link);
        }
        for etc in SYSTEM_ETC {
            if host_has(Path::new(etc)) {
                spec = spec.read_only(etc, etc);
            }
        }
        spec.tmpfs("/tmp")
    }

    /// Shows `host` read-only at `inside`.
    pub fn read_only(mut self, host: impl Into<PathBuf>, inside: impl Into<PathBuf>) -> Self {
        let (host, inside) = (host.into(), inside.into());
        self.mounts.push(Mount::ReadOnly { host, inside });
        self
    }

    /// Shows `host` read-write at `inside` (the clone, `HOME`, `TMPDIR`).
    pub fn read_write(mut self, host: impl Into<PathBuf>, inside: impl Into<PathBuf>) -> Self {
        let (host, inside) = (host.into(), inside.into());
        self.mounts.push(Mount::ReadWrite { host, inside });
        self
    }

    /// An empty writable folder at `inside`, gone with the box.
    pub fn tmpfs(mut self, inside: impl Into<PathBuf>) -> Self {
        self.mounts.push(Mount::Tmpfs {
            inside: inside.into(),
        });
        self
    }

    /// A symlink at `inside` pointing at `target`.
    pub fn symlink(mut self, target: impl Into<PathBuf>, inside: impl Into<PathBuf>) -> Self {
        let (target, inside) = (target.into(), inside.into());
        self.mounts.push(Mount::Symlink { target, inside });
        self
    }

    /// Sets the variable `name` (a later call replaces an earlier value).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Opens the door `name`: the host socket `host` appears at `/run/doors/<name>.sock`.
    pub fn door(mut self, name: impl Into<String>, host: impl Into<PathBuf>) -> Self {
        self.doors.push(DoorMount {
            name: name.into(),
            host: host.into(),
        });
        self
    }

    /// The uid and gid the agent runs as inside.
    pub fn user(mut self, uid: u32, gid: u32) -> Self {
        self.uid = uid;
        self.gid = gid;
        self
    }

    /// The working directory the program starts in.
    pub fn cwd(mut self, inside: impl Into<PathBuf>) -> Self {
        self.cwd = Some(inside.into());
        self
    }

    /// The mounts, in the order they were named.
    pub fn mounts(&self) -> &[Mount] {
        &self.mounts
    }

    /// The doors.
    pub fn doors(&self) -> &[DoorMount] {
        &self.doors
    }

    /// The variables set, exactly: nothing is inherited. Bubblewrap adds one, `PWD`, the
    /// working directory ([`BoxSpec::working_directory`]).
    pub fn environment(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    /// The working directory the program starts in (`/` unless [`BoxSpec::cwd`] named one).
    pub fn working_directory(&self) -> &Path {
        self.cwd.as_deref().unwrap_or(Path::new("/"))
    }

    /// The same spec with every host path passed through `map` (the adapter's symlink
    /// resolution before [`BoxSpec::validate`]); inside paths are untouched.
    pub fn map_host_paths(mut self, mut map: impl FnMut(&Path) -> PathBuf) -> Self {
        for mount in &mut self.mounts {
            if let Mount::ReadOnly { host, .. } | Mount::ReadWrite { host, .. } = mount {
                *host = map(host);
            }
        }
        for door in &mut self.doors {
            door.host = map(&door.host);
        }
        self
    }

    /// Every host path the box would show, with the kind of entry that shows it.
    pub fn exposed(&self) -> Vec<(String, &Path)> {
        let mounts = self
            .mounts
            .iter()
            .filter_map(|m| m.host().map(|h| (m.field().to_owned(), h)));
        let doors = self
            .doors
            .iter()
            .map(|d| (format!("door '{}'", d.name), d.host.as_path()));
        mounts.chain(doors).collect()
    }

    /// Checks the spec: every path absolute and without `..`, names and values well formed,
    /// no two entries at one inside path, and no host path it shows is a forbidden path, an
    /// ancestor of one, or under one. The first problem is refused, named.
    pub fn validate(&self, forbidden: &[PathBuf]) -> Result<CheckedBox, BoxRefusal> {
        for path in forbidden {
            check_path("forbidden path", path)?;
        }
        for mount in &self.mounts {
            check_path(mount.field(), mount.inside())?;
            if mount.inside() == Path::new("/") {
                return Err(invalid(
                    mount.field(),
                    mount.inside(),
                    "must not replace the root",
                ));
            }
            match mount {
                Mount::ReadOnly { host, .. } | Mount::ReadWrite { host, .. } => {
                    check_path(mount.field(), host)?;
                }
                Mount::Symlink { target, .. } => check_text("symlink target", target)?,
                Mount::Tmpfs { .. } => {}
            }
        }
        for door in &self.doors {
            let field = format!("door '{}'", door.name);
            let name_ok = !door.name.is_empty()
                && door.name.len() <= 32
                && door.name.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_'
                });
            if !name_ok {
                return Err(BoxRefusal::Invalid {
                    field: "door name".into(),
                    value: door.name.clone(),
                    rule: "must be 1 to 32 of a-z, 0-9, '-', '_'",
                });
            }
            check_path(&field, &door.host)?;
        }
        for (name, value) in &self.env {
            let name_ok = !name.is_empty()
                && !name.contains('=')
                && !name.contains('\0')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            if !name_ok {
                return Err(BoxRefusal::Invalid {
                    field: "variable name".into(),
                    value: name.clone(),
                    rule: "must be non-empty, not start with a digit, and hold no '=' or NUL",
                });
            }
            if value.contains('\0') {
                return Err(BoxRefusal::Invalid {
                    field: format!("variable {name}"),
                    value: "(not shown)".into(),
                    rule: "must hold no NUL",
                });
            }
        }
        if let Some(cwd) = &self.cwd {
            check_path("working directory", cwd)?;
        }
        let mut seen: Vec<PathBuf> = Vec::new();
        let insides = self
            .mounts
            .iter()
            .map(|m| (m.field().to_owned(), m.inside().to_path_buf()))
            .chain(
                self.doors
                    .iter()
                    .map(|d| (format!("door '{}'", d.name), d.inside())),
            );
        for (field, inside) in insides {
            if seen.contains(&inside) {
                return Err(invalid(
                    &field,
                    &inside,
                    "another entry already uses this inside path",
                ));
            }
            seen.push(inside);
        }
        for (field, host) in self.exposed() {
            for path in forbidden {
                if let Some(how) = exposure(host, path) {
                    return Err(BoxRefusal::Exposes {
                        field,
                        host: host.to_path_buf(),
                        forbidden: path.clone(),
                        how,
                    });
                }
            }
        }
        Ok(CheckedBox { spec: self.clone() })
    }

    /// The bubblewrap argv (without `bwrap` itself and without the program) this spec renders.
    /// Variables are not on it (a value on a command line is readable by every host user): the
    /// adapter starts `bwrap` with exactly [`BoxSpec::environment`] as its own environment,
    /// which bubblewrap hands to the program unchanged.
    pub fn to_bwrap_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--hostname",
            "box",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        args.push("--uid".into());
        args.push(self.uid.to_string().into());
        args.push("--gid".into());
        args.push(self.gid.to_string().into());
        args.extend(["--proc", "/proc", "--dev", "/dev"].map(OsString::from));
        // Parents before children: a mount named later at a shallower path would hide one
        // under it. The sort is stable, so siblings keep the order they were named in.
        let mut mounts: Vec<&Mount> = self.mounts.iter().collect();
        mounts.sort_by_key(|m| m.inside().components().count());
        for mount in mounts {
            let (flag, first, second) = match mount {
                Mount::ReadOnly { host, inside } => ("--ro-bind", host.as_os_str(), Some(inside)),
                Mount::ReadWrite { host, inside } => ("--bind", host.as_os_str(), Some(inside)),
                Mount::Tmpfs { inside } => ("--tmpfs", inside.as_os_str(), None),
                Mount::Symlink { target, inside } => {
                    ("--symlink", target.as_os_str(), Some(inside))
                }
            };
            args.push(flag.into());
            args.push(first.to_owned());
            if let Some(second) = second {
                args.push(second.as_os_str().to_owned());
            }
        }
        for door in &self.doors {
            args.push("--ro-bind".into());
            args.push(door.host.as_os_str().to_owned());
            args.push(door.inside().into_os_string());
        }
        // The root bubblewrap builds is a tmpfs: once everything is mounted on it, it becomes
        // read-only, so only the named writable entries are writable.
        args.push("--remount-ro".into());
        args.push("/".into());
        args.push("--chdir".into());
        args.push(self.working_directory().as_os_str().to_owned());
        args
    }
}

/// A spec [`BoxSpec::validate`] accepted: the only thing a box can be started from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedBox {
    spec: BoxSpec,
}

impl CheckedBox {
    /// The spec that was checked.
    pub fn spec(&self) -> &BoxSpec {
        &self.spec
    }

    /// The bubblewrap argv ([`BoxSpec::to_bwrap_args`]).
    pub fn bwrap_args(&self) -> Vec<OsString> {
        self.spec.to_bwrap_args()
    }

    /// The variables set ([`BoxSpec::environment`]; bubblewrap adds `PWD`).
    pub fn environment(&self) -> &BTreeMap<String, String> {
        &self.spec.env
    }
}

/// How a host path the box shows meets a forbidden path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposure {
    /// The forbidden path itself.
    Same,
    /// A folder holding the forbidden path.
    Ancestor,
    /// Something inside the forbidden path.
    Inside,
}

impl fmt::Display for Exposure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Exposure::Same => "it is that path",
            Exposure::Ancestor => "it holds that path",
            Exposure::Inside => "it lies inside that path",
        })
    }
}

/// Why a spec was refused before any box started.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BoxRefusal {
    /// A host path the box would show is, holds, or lies inside a forbidden path.
    #[error("the box's {field} {} exposes the forbidden path {} ({how})", host.display(), forbidden.display())]
    Exposes {
        /// Which entry (`read-only bind`, `read-write bind`, `door 'model'`).
        field: String,
        /// The host path it shows.
        host: PathBuf,
        /// The forbidden path it exposes.
        forbidden: PathBuf,
        /// How.
        how: Exposure,
    },
    /// An entry is malformed.
    #[error("the box's {field} {value:?} {rule}")]
    Invalid {
        /// Which entry.
        field: String,
        /// Its value (a variable's value is never shown).
        value: String,
        /// The rule it breaks.
        rule: &'static str,
    },
}

fn invalid(field: &str, path: &Path, rule: &'static str) -> BoxRefusal {
    BoxRefusal::Invalid {
        field: field.to_owned(),
        value: path.display().to_string(),
        rule,
    }
}

fn check_text(field: &str, path: &Path) -> Result<(), BoxRefusal> {
    if path.as_os_str().is_empty() || path.as_os_str().as_encoded_bytes().contains(&0) {
        return Err(invalid(field, path, "must be non-empty and hold no NUL"));
    }
    Ok(())
}

fn check_path(field: &str, path: &Path) -> Result<(), BoxRefusal> {
    check_text(field, path)?;
    if !path.is_absolute() {
        return Err(invalid(field, path, "must be an absolute path"));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(invalid(field, path, "must not contain '..'"));
    }
    Ok(())
}

/// How `shown` meets `forbidden`, compared component by component (so `/data` does not hold
/// `/database`).
pub fn exposure(shown: &Path, forbidden: &Path) -> Option<Exposure> {
    let shown: Vec<Component<'_>> = shown.components().collect();
    let forbidden: Vec<Component<'_>> = forbidden.components().collect();
    if shown == forbidden {
        Some(Exposure::Same)
    } else if forbidden.starts_with(&shown) {
        Some(Exposure::Ancestor)
    } else if shown.starts_with(&forbidden) {
        Some(Exposure::Inside)
    } else {
        None
    }
}

#[cfg(test)]
mod tests;
