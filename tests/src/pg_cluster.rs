//! A PostgreSQL cluster of a test's own, for faults that would break every other test on the
//! shared one (a restart under load): the same commands as `scripts/postgres.sh` (initdb as
//! the `postgres` user when running as root, a free loopback port, `fsync=off`), stopped and
//! removed on drop. Missing server programs are reported (and fail under `CI=true`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A throwaway cluster on a loopback port.
pub struct PgCluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

fn as_cluster_owner(program: &Path) -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if root {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn server_programs() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").exists())
        .collect();
    found.sort();
    found.pop()
}

impl PgCluster {
    /// Initializes and starts a cluster, or `None` (reported loudly; a panic under `CI=true`)
    /// when the server programs are not installed.
    pub fn start(case: &str) -> Option<PgCluster> {
        let Some(bin) = server_programs() else {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!(
                    "no PostgreSQL server programs under /usr/lib/postgresql: {case} cannot run, and CI must not skip it"
                );
            }
            eprintln!(
                "\n!!!!! POSTGRES FAULT CASE NOT RUN: {case}: no server programs under /usr/lib/postgresql. This is NOT a pass.\n"
            );
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("capsid-pg-fault.")
            .tempdir()
            .expect("temporary folder");
        let _ = Command::new("chmod").arg("755").arg(dir.path()).status();
        let _ = Command::new("chown")
            .arg("postgres:")
            .arg(dir.path())
            .stderr(Stdio::null())
            .status();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let init = as_cluster_owner(&bin.join("initdb"))
            .arg("-D")
            .arg(dir.path().join("data"))
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run initdb");
        assert!(init.success(), "initdb failed");
        let cluster = PgCluster { bin, dir, port };
        cluster.start_server();
        Some(cluster)
    }

    fn pg_ctl(&self) -> Command {
        let mut cmd = as_cluster_owner(&self.bin.join("pg_ctl"));
        cmd.arg("-D").arg(self.dir.path().join("data"));
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        cmd
    }

    /// Starts the server (again) and waits until it accepts connections.
    pub fn start_server(&self) {
        let options = format!(
            "-h 127.0.0.1 -p {} -k {} -c fsync=off -c full_page_writes=off -c max_connections=100",
            self.port,
            self.dir.path().display()
        );
        let started = self
            .pg_ctl()
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .args(["-w", "-o", &options, "start"])
            .status()
            .expect("run pg_ctl start");
        assert!(started.success(), "the PostgreSQL server did not start");
    }

    /// Stops the server at once (`-m immediate`: connections are cut, as in a crash).
    pub fn stop_server(&self) {
        let stopped = self
            .pg_ctl()
            .args(["-m", "immediate", "-w", "stop"])
            .status()
            .expect("run pg_ctl stop");
        assert!(stopped.success(), "the PostgreSQL server did not stop");
    }

    /// The admin database's URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self
            .pg_ctl()
            .args(["-m", "immediate", "-w", "stop"])
            .status();
    }
}
