//! `capsid service install`: a systemd unit and an environment file for `capsid serve`,
//! printed (the default) or written (`--apply`). The data folder is systemd's state directory
//! for the service (`/var/lib/<name>`, or `~/.local/state/<name>` with `--user`); secrets are
//! never written into either file: each `--credential VAR=/path` becomes a `LoadCredential=`
//! and `VAR=file:%d/<id>`, which `serve` already reads as a secret reference, so the secret
//! stays in its own file and reaches the process through systemd's credentials directory.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::config::{GlobalArgs, Origin};

/// `capsid service`.
#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Print (or with --apply write) a systemd unit and an environment file for `capsid serve`.
    Install(InstallArgs),
}

/// `capsid service install`.
#[derive(Debug, Clone, Args)]
pub struct InstallArgs {
    /// A user service (~/.config/systemd/user), run as you, instead of a system service
    /// (/etc/systemd/system) run as a dynamic, unprivileged user.
    #[arg(long)]
    pub user: bool,
    /// Write the files (refusing to replace one that exists, unless --force). Without it
    /// nothing is written: the files are printed with where they would go.
    #[arg(long)]
    pub apply: bool,
    /// With --apply: replace files that exist.
    #[arg(long, requires = "apply")]
    pub force: bool,
    /// The unit's name (<name>.service; its state directory and environment file follow it).
    #[arg(long, default_value = "capsid", value_parser = parse_name)]
    pub name: String,
    /// The address `serve` listens on.
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub listen: std::net::SocketAddr,
    /// The public URL browsers and clients use (CAPSID_PUBLIC_URL), when not http://<listen>.
    #[arg(long)]
    pub public_url: Option<String>,
    /// A secret handed to `serve` as a systemd credential: VAR=/absolute/path, where VAR is
    /// one of CAPSID_SIGNING_SECRET, CAPSID_GITHUB_APP_PRIVATE_KEY, CAPSID_GITHUB_CLIENT_SECRET,
    /// CAPSID_COOKIE_KEY, CAPSID_ANTHROPIC_API_KEY. Repeatable.
    #[arg(long = "credential", value_name = "VAR=PATH", value_parser = parse_credential)]
    pub credentials: Vec<Credential>,
    /// The capsid binary the unit runs. Default: this binary.
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// Print JSON (the files and their paths) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The settings that take a secret reference (`env:`, `file:`, `cmd:`), so they can come from
/// a systemd credential.
const SECRET_VARS: [&str; 5] = [
    "CAPSID_SIGNING_SECRET",
    "CAPSID_GITHUB_APP_PRIVATE_KEY",
    "CAPSID_GITHUB_CLIENT_SECRET",
    "CAPSID_COOKIE_KEY",
    "CAPSID_ANTHROPIC_API_KEY",
];

/// One `--credential VAR=PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    var: String,
    path: PathBuf,
}

impl Credential {
    /// The credential's id in systemd's credentials directory: the variable, lower case.
    fn id(&self) -> String {
        self.var.to_ascii_lowercase().replace('_', "-")
    }
}

fn parse_credential(raw: &str) -> Result<Credential, String> {
    let (var, path) = raw
        .split_once('=')
        .ok_or_else(|| format!("expected VAR=/absolute/path (got {raw:?})"))?;
    if !SECRET_VARS.contains(&var) {
        return Err(format!(
            "{var} is not a setting that takes a secret; one of {}",
            SECRET_VARS.join(", ")
        ));
    }
    let path = PathBuf::from(path);
    if !path.is_absolute() {
        return Err(format!(
            "the path of {var} must be absolute, as systemd reads it (got {:?})",
            path.display().to_string()
        ));
    }
    if path
        .to_str()
        .is_none_or(|p| p.chars().any(char::is_whitespace))
    {
        return Err(format!(
            "the path of {var} must be UTF-8 without spaces (a unit file line cannot quote it)"
        ));
    }
    Ok(Credential {
        var: var.to_owned(),
        path,
    })
}

fn parse_name(raw: &str) -> Result<String, String> {
    let ok = !raw.is_empty()
        && raw.len() <= 64
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !raw.starts_with(['-', '.']);
    if ok {
        Ok(raw.to_owned())
    } else {
        Err(format!(
            "a unit name is 1-64 letters, digits, '-', '_' or '.', not starting with '-' or '.' (got {raw:?})"
        ))
    }
}

/// The two files and where they go.
#[derive(Debug)]
struct Plan {
    unit_path: PathBuf,
    unit: String,
    env_path: PathBuf,
    env: String,
    systemctl: String,
}

/// Where a user's systemd units and configuration live.
fn user_config_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| anyhow!("--user needs HOME (or XDG_CONFIG_HOME) to find ~/.config"))?;
    Ok(PathBuf::from(home).join(".config"))
}

/// The folder of `binary` that a system unit's `ProtectHome=yes` hides (`/home`, `/root`,
/// `/run/user`, or the installing user's home), if any: a binary there never starts.
fn hidden_from_system_units(binary: &Path) -> Option<String> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h != Path::new("/"));
    ["/home", "/root", "/run/user"]
        .into_iter()
        .map(PathBuf::from)
        .chain(home)
        .find(|dir| binary.starts_with(dir))
        .map(|dir| dir.display().to_string())
}

fn plan(global: &GlobalArgs, args: &InstallArgs) -> Result<Plan> {
    let binary = match &args.binary {
        Some(b) => b.clone(),
        None => {
            std::env::current_exe().context("cannot tell where this binary is; give --binary")?
        }
    };
    let binary = std::fs::canonicalize(&binary)
        .with_context(|| format!("--binary {}: no such file", binary.display()))?;
    let binary_text = binary
        .to_str()
        .filter(|b| !b.chars().any(char::is_whitespace))
        .ok_or_else(|| {
            anyhow!(
                "the binary's path {} has spaces or is not UTF-8; give --binary",
                binary.display()
            )
        })?
        .to_owned();
    if !args.user
        && let Some(hidden) = hidden_from_system_units(&binary)
    {
        bail!(
            "the system unit would run {}, but its ProtectHome=yes hides {hidden} from the service, so it could not start; install the binary outside it (sudo install -m 0755 {} /usr/local/bin/capsid) and give --binary /usr/local/bin/capsid, or make a --user service",
            binary.display(),
            binary.display()
        );
    }
    for credential in &args.credentials {
        if let Err(e) = std::fs::metadata(&credential.path)
            && e.kind() == std::io::ErrorKind::NotFound
        {
            bail!(
                "--credential {}={}: no such file; create it first (a new signing secret: `openssl rand -hex 32 | sudo tee {} >/dev/null && sudo chmod 600 {}`)",
                credential.var,
                credential.path.display(),
                credential.path.display(),
                credential.path.display()
            );
        }
    }
    let name = &args.name;
    let (unit_dir, env_dir) = if args.user {
        let config = user_config_dir()?;
        (config.join("systemd/user"), config.join(name))
    } else {
        (
            PathBuf::from("/etc/systemd/system"),
            PathBuf::from("/etc").join(name),
        )
    };
    let env_path = env_dir.join(format!("{name}.env"));
    let env_text = env_path
        .to_str()
        .filter(|p| !p.chars().any(char::is_whitespace))
        .ok_or_else(|| {
            anyhow!(
                "the environment file's path {} has spaces",
                env_path.display()
            )
        })?
        .to_owned();

    let mut unit = String::new();
    let _ = writeln!(unit, "# Written by `capsid service install`.");
    let _ = writeln!(unit, "[Unit]");
    let _ = writeln!(
        unit,
        "Description=Capsid MCP server (a control plane for AI agents)"
    );
    if !args.user {
        let _ = writeln!(unit, "Wants=network-online.target");
        let _ = writeln!(unit, "After=network-online.target");
    }
    let _ = writeln!(unit);
    let _ = writeln!(unit, "[Service]");
    let _ = writeln!(unit, "Type=exec");
    let _ = writeln!(unit, "ExecStart={binary_text} serve");
    let _ = writeln!(unit, "EnvironmentFile={env_text}");
    // The data folder: systemd's state directory for this unit, created with the right owner.
    let _ = writeln!(unit, "StateDirectory={name}");
    let _ = writeln!(unit, "StateDirectoryMode=0700");
    let _ = writeln!(unit, "Environment=CAPSID_DATA_DIR=%S/{name}");
    for credential in &args.credentials {
        let id = credential.id();
        let _ = writeln!(unit, "LoadCredential={id}:{}", credential.path.display());
        let _ = writeln!(unit, "Environment={}=file:%d/{id}", credential.var);
    }
    let _ = writeln!(unit, "Restart=on-failure");
    let _ = writeln!(unit, "RestartSec=2s");
    // serve drains in-flight calls on SIGTERM.
    let _ = writeln!(unit, "TimeoutStopSec=30s");
    let _ = writeln!(unit, "UMask=0077");
    let _ = writeln!(unit, "NoNewPrivileges=yes");
    if !args.user {
        for line in [
            "DynamicUser=yes",
            "ProtectSystem=strict",
            "ProtectHome=yes",
            "PrivateTmp=yes",
            "PrivateDevices=yes",
            "ProtectKernelTunables=yes",
            "ProtectKernelModules=yes",
            "ProtectKernelLogs=yes",
            "ProtectControlGroups=yes",
            "ProtectClock=yes",
            "ProtectHostname=yes",
            "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
            "RestrictNamespaces=yes",
            "RestrictRealtime=yes",
            "RestrictSUIDSGID=yes",
            "LockPersonality=yes",
            "SystemCallArchitectures=native",
        ] {
            let _ = writeln!(unit, "{line}");
        }
    }
    let _ = writeln!(unit);
    let _ = writeln!(unit, "[Install]");
    let _ = writeln!(
        unit,
        "WantedBy={}",
        if args.user {
            "default.target"
        } else {
            "multi-user.target"
        }
    );

    let mut env = String::new();
    let _ = writeln!(
        env,
        "# capsid serve's settings for {name}.service (`capsid serve --help` lists each one)."
    );
    let _ = writeln!(
        env,
        "# Secrets do not belong here: pass them with `capsid service install --credential VAR=/path`."
    );
    let _ = writeln!(env, "CAPSID_LISTEN={}", args.listen);
    match &args.public_url {
        Some(url) => {
            let _ = writeln!(env, "CAPSID_PUBLIC_URL={url}");
        }
        None => {
            let _ = writeln!(env, "# CAPSID_PUBLIC_URL=https://capsid.example.org");
        }
    }
    match (&global.database_url, global.database_url_origin) {
        (Some(url), Origin::Flag | Origin::Env) => {
            let _ = writeln!(env, "CAPSID_DATABASE_URL={url}");
        }
        _ => {
            let _ = writeln!(
                env,
                "# Default: SQLite in the state directory. Several replicas share Postgres:"
            );
            let _ = writeln!(
                env,
                "# CAPSID_DATABASE_URL=postgres://capsid@db.internal/capsid"
            );
        }
    }
    let _ = writeln!(env, "CAPSID_LOG=info");
    let _ = writeln!(env, "CAPSID_LOG_FORMAT=json");

    let user_flag = if args.user { " --user" } else { "" };
    let systemctl = format!(
        "systemctl{user_flag} daemon-reload && systemctl{user_flag} enable --now {name}.service"
    );
    Ok(Plan {
        unit_path: unit_dir.join(format!("{name}.service")),
        unit,
        env_path,
        env,
        systemctl,
    })
}

/// Writes `text` to `path` with `mode`, creating its folder; refuses an existing file unless
/// `force` (then replaced whole, through a temporary file in the same folder).
fn write_file(path: &Path, text: &str, mode: u32, force: bool) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = path
        .parent()
        .ok_or_else(|| anyhow!("{} has no folder", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if path.exists() && !force {
        bail!(
            "{} exists: not replaced (add --force to replace it)",
            path.display()
        );
    }
    let tmp = dir.join(format!(
        ".{}.capsid-tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file")
    ));
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The environment file as printed: the database URL's password hidden (it is written to the
/// owner-only file, never to a terminal, a log or a pipe).
fn shown_env(env: &str) -> String {
    env.lines()
        .map(|line| match line.strip_prefix("CAPSID_DATABASE_URL=") {
            Some(url) => format!("CAPSID_DATABASE_URL={}\n", crate::config::redact_url(url)),
            None => format!("{line}\n"),
        })
        .collect()
}

/// `capsid service`.
pub fn run(global: &GlobalArgs, cmd: ServiceCommand) -> ExitCode {
    let ServiceCommand::Install(args) = cmd;
    let plan = match plan(global, &args) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("capsid service install: {e:#}");
            return ExitCode::from(2);
        }
    };
    if matches!(global.data_dir_origin, Origin::Flag | Origin::Env) {
        eprintln!(
            "capsid service install: note: the service keeps its data in its state directory (%S/{}), not in {}; move a store there with `capsid backup` and `capsid restore`",
            args.name,
            global.data_dir.display()
        );
    }
    if args.apply {
        // Both files are checked before either is written: a refusal changes nothing.
        if !args.force
            && let Some(existing) = [&plan.env_path, &plan.unit_path]
                .into_iter()
                .find(|p| p.exists())
        {
            eprintln!(
                "capsid service install: {} exists: nothing was written (add --force to replace both files)",
                existing.display()
            );
            return ExitCode::from(2);
        }
        // The unit is readable by all (systemd reads it); the environment file only by its owner.
        for (path, text, mode) in [
            (&plan.env_path, &plan.env, 0o600),
            (&plan.unit_path, &plan.unit, 0o644),
        ] {
            if let Err(e) = write_file(path, text, mode, args.force) {
                eprintln!("capsid service install: {e:#}");
                return ExitCode::from(2);
            }
        }
    }
    if args.json {
        println!(
            "{}",
            json!({
                "ok": true,
                "applied": args.apply,
                "unit_path": plan.unit_path,
                "unit": plan.unit,
                "env_path": plan.env_path,
                "env": shown_env(&plan.env),
                "next": plan.systemctl,
            })
        );
        return ExitCode::SUCCESS;
    }
    println!("# {}\n{}", plan.unit_path.display(), plan.unit);
    println!("# {}\n{}", plan.env_path.display(), shown_env(&plan.env));
    if args.apply {
        println!(
            "wrote {} and {} (mode 0600); start it with:\n  {}",
            plan.unit_path.display(),
            plan.env_path.display(),
            plan.systemctl
        );
    } else {
        println!(
            "nothing written: add --apply to write both files, then:\n  {}",
            plan.systemctl
        );
    }
    ExitCode::SUCCESS
}
