//! What the box tests share: the bubblewrap requirement (loud in CI), a fixture of host
//! folders for one agent box, and a look at the host's process table.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use capsid_box::sandbox::{AgentBox, Bwrap, Unavailable, probe};

/// Where the inside end of the bridges sits in a test box.
pub const DOOR_INSIDE: &str = "/opt/capsid/capsid-door";

/// The `bwrap` to start boxes with, or `None` (printed as not run) when bubblewrap is not
/// installed; in CI (`CI=true`) a missing or unusable bubblewrap fails the case.
pub async fn require_bwrap(case: &str) -> Option<Bwrap> {
    match probe().await {
        Ok(bwrap) => Some(bwrap),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "{case}: {e}; scripts/test.sh installs bubblewrap and CI requires the box cases to run"
        ),
        Err(Unavailable::NotInstalled) => {
            eprintln!("NOT RUN {case}: bubblewrap is not installed");
            None
        }
        Err(e) => {
            eprintln!("NOT RUN {case}: {e}");
            None
        }
    }
}

/// The host folders of one agent box, and a forbidden data folder with a secret in it.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub clone: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
    pub etc: PathBuf,
    pub doors: PathBuf,
    pub data: PathBuf,
    pub secret: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let root = std::fs::canonicalize(dir.path()).expect("its real path");
        let sub = |name: &str| {
            let path = root.join(name);
            std::fs::create_dir_all(&path).expect("a fixture folder");
            path
        };
        let (clone, home, tmp, etc, doors, data) = (
            sub("runs/job-1/clone"),
            sub("runs/job-1/home"),
            sub("runs/job-1/tmp"),
            sub("supervisor/etc"),
            sub("supervisor/doors"),
            sub("data"),
        );
        let secret = data.join("signing.key");
        std::fs::write(&secret, "the signing key").expect("a secret on the host");
        Fixture {
            dir,
            clone,
            home,
            tmp,
            etc,
            doors,
            data,
            secret,
        }
    }

    /// The default agent box over these folders, with the inside end of the bridges bound at
    /// [`DOOR_INSIDE`].
    pub fn agent(&self) -> AgentBox {
        let mut agent = AgentBox::new(&self.clone, &self.home, &self.tmp, &self.etc);
        agent.tools.push((
            PathBuf::from(env!("CARGO_BIN_EXE_capsid-door")),
            PathBuf::from(DOOR_INSIDE),
        ));
        agent
    }

    /// What a box must never show: the data folder and the supervisor's own folder.
    pub fn forbidden(&self) -> Vec<PathBuf> {
        vec![
            self.data.clone(),
            self.etc.parent().expect("supervisor").join("keys"),
        ]
    }
}

/// Host pids of live (not zombie) processes whose command line holds `marker`, this test's
/// own process excluded.
pub fn processes_with(marker: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            let proc_dir = Path::new("/proc").join(pid.to_string());
            let cmdline = std::fs::read(proc_dir.join("cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
            // The state follows the command's closing parenthesis: Z is a zombie (dead, not
            // yet reaped), X is dead.
            let state = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next());
            String::from_utf8_lossy(&cmdline).contains(marker)
                && !matches!(state, Some('Z') | Some('X') | None)
        })
        .collect()
}

/// Polls `check` until it holds or `limit` passes; whether it held.
pub async fn within(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A marker no other process on the host carries: a number, so it can be `sleep`'s argument.
pub fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("7{:09}{}", nanos, std::process::id() % 1000)
}
