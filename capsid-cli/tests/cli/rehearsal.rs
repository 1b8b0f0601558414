//! The weekly restore rehearsal (issue 56, item 3) through the real binary, on SQLite and on
//! Postgres: `capsid serve` over a store with a dump rehearses it at its first tick (the
//! newest dump into a throwaway store, counts and seal compared), records the verdict, and
//! `capsid doctor` and `/metrics` show it; a week less a minute later it does not run again, a
//! week later it does; a dump altered on disk is then recorded as failed, naming the file.
//! Time moves only when the test rewrites the server's clock file; waits are bounded polls of
//! what the server reports (its scheduler's tick counters), never sleeps standing for time.
//! A bad `--rehearse-every-days` stops `serve`, naming the setting.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use capsid_core::time::{DAY_MS, MINUTE_MS, Timestamp};
use capsid_tests::server::TEST_SECRET;
use serde_json::Value;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_capsid");

/// Where a case keeps its store: a data folder, and a Postgres URL or none (SQLite).
pub(crate) struct Place {
    pub(crate) data: PathBuf,
    pub(crate) database: Option<String>,
}

impl Place {
    /// `capsid <args>` on this store, with the test's signing secret.
    pub(crate) fn capsid(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        self.env(&mut cmd);
        cmd.output().expect("run capsid")
    }

    /// As [`Place::capsid`], failing the test unless it exits 0; its stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.capsid(args);
        assert!(
            out.status.success(),
            "capsid {args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env("CAPSID_DATA_DIR", &self.data)
            .env("CAPSID_SIGNING_SECRET", TEST_SECRET)
            .env_remove("CAPSID_MEDIA_URL")
            .env_remove("CAPSID_HOLDOUT_URL")
            .env_remove("CAPSID_OPERATOR_KEY_HASH")
            .env_remove("CAPSID_TEST_CLOCK_FILE")
            .env_remove("CAPSID_REHEARSE_EVERY_DAYS")
            .env_remove("CAPSID_BACKUP_PULL_KEY")
            .env_remove("CAPSID_BACKUP_SERVER")
            .env("CAPSID_LOG", "warn");
        match &self.database {
            Some(url) => cmd.env("CAPSID_DATABASE_URL", url),
            None => cmd.env_remove("CAPSID_DATABASE_URL"),
        };
    }

    /// A migrated store with a namespace, a document and a reader's key (for `/metrics`), and
    /// one dump of it in `<data>/media`; the key.
    pub(crate) fn seeded_with_a_dump(&self) -> String {
        self.ok(&["migrate"]);
        self.ok(&["namespaces", "register", "alpha", "--repo", "octo/alpha"]);
        let minted: Value = serde_json::from_str(&self.ok(&[
            "agents",
            "mint",
            "--name",
            "reader",
            "--namespaces",
            "*",
            "--grants",
            "read",
            "--json",
        ]))
        .expect("mint --json");
        let backup: Value = serde_json::from_str(&self.ok(&["backup", "--json"])).expect("json");
        assert_eq!(backup["ran"], true, "{backup}");
        minted["key"].as_str().expect("a key").to_owned()
    }

    /// The newest run's folder in the media store.
    pub(crate) fn newest_run(&self) -> PathBuf {
        let json = self.data.join("media/backups/json");
        let mut runs: Vec<PathBuf> = std::fs::read_dir(&json)
            .expect("runs")
            .map(|e| e.expect("entry").path())
            .collect();
        runs.sort();
        runs.pop().expect("a run")
    }
}

/// A SQLite place in `dir`.
pub(crate) fn sqlite_place(dir: &Path) -> Place {
    Place {
        data: dir.join("data"),
        database: None,
    }
}

/// A child killed should the test fail before it ends.
pub(crate) struct Serve {
    child: Child,
    pub(crate) url: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// `capsid serve` on a free port over `place`, with `extra` settings; waits (bounded) for
    /// its listening line.
    pub(crate) fn start(place: &Place, extra: &[(&str, &str)]) -> Serve {
        capsid_http::install_tls_provider();
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--listen", "127.0.0.1:0"]);
        place.env(&mut cmd);
        cmd.env("CAPSID_LOG", "info")
            .env("CAPSID_LOG_FORMAT", "json")
            .env("CAPSID_TICK_INTERVAL_MS", "50");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn capsid serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let url = serde_json::from_str::<Value>(&line).ok().and_then(|v| {
                    (v["fields"]["message"] == "capsid listening")
                        .then(|| v["fields"]["url"].as_str().map(str::to_owned))
                        .flatten()
                });
                if let Some(url) = url {
                    let _ = tx.send(url);
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("capsid serve logged its URL");
        Serve { child, url }
    }

    /// `/metrics` with `key`.
    pub(crate) async fn metrics(&self, key: &str) -> prometheus_parse::Scrape {
        let body = reqwest::Client::new()
            .get(format!("{}/metrics", self.url))
            .bearer_auth(key)
            .send()
            .await
            .expect("scrape")
            .text()
            .await
            .expect("body");
        prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("parse")
    }
}

fn sample(scrape: &prometheus_parse::Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
        .reduce(|a, b| a + b)
}

/// The server's clock: a file of epoch milliseconds, written whole and renamed into place.
struct ClockFile {
    path: PathBuf,
    now: Timestamp,
}

impl ClockFile {
    fn new(dir: &Path, at: &str) -> ClockFile {
        let mut clock = ClockFile {
            path: dir.join("now"),
            now: Timestamp::parse(at).expect("an instant"),
        };
        clock.set(clock.now);
        clock
    }

    fn set(&mut self, at: Timestamp) {
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, at.as_millis().to_string()).expect("write the clock");
        std::fs::rename(&tmp, &self.path).expect("move the clock into place");
        self.now = at;
    }
}

/// The rehearsal check of `capsid doctor --json`.
fn doctor_rehearsal(place: &Place) -> Value {
    let out = place.capsid(&["doctor", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor --json ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == "restore rehearsal")
        .cloned()
        .unwrap_or_else(|| panic!("no rehearsal check in {report}"))
}

/// The rehearsal task's turns so far, from the server's tick counters.
fn turns(scrape: &prometheus_parse::Scrape) -> f64 {
    sample(
        scrape,
        "capsid_scheduler_ticks_total",
        &[("task", "rehearsal"), ("outcome", "ran")],
    )
    .unwrap_or(0.0)
}

/// Moves the clock to `at` and waits (bounded) until the rehearsal task has taken its `turn`th
/// turn (one per clock position: each is more than the task's five-minute cadence after the
/// last, and a position never yields a second); the rehearsal gauges after it. Counting turns
/// rather than waiting for "one more" keeps a tick still finishing at the previous position
/// from passing for this one.
async fn tick_at(
    s: &Serve,
    key: &str,
    clock: &mut ClockFile,
    at: Timestamp,
    turn: f64,
) -> (Option<f64>, Option<f64>) {
    clock.set(at);
    for _ in 0..1500 {
        let scrape = s.metrics(key).await;
        if turns(&scrape) >= turn {
            return (
                sample(&scrape, "capsid_backup_rehearsal_timestamp_seconds", &[]),
                sample(&scrape, "capsid_backup_rehearsal_ok", &[]),
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the rehearsal task took no turn at {at}");
}

fn secs(at: Timestamp) -> f64 {
    at.as_millis() as f64 / 1000.0
}

async fn a_weekly_rehearsal_is_recorded_and_shown(place: Place) {
    let key = place.seeded_with_a_dump();
    let clock_dir = tempfile::tempdir().expect("clock folder");
    // The dump above was taken at the real time, after this clock: no scheduled dump is due,
    // so the newest dump stays the one this test altered.
    let mut clock = ClockFile::new(clock_dir.path(), "2026-06-01T12:00:00Z");
    assert_eq!(
        doctor_rehearsal(&place)["ok"],
        Value::Null,
        "nothing recorded before the server ran"
    );
    let clock_path = clock.path.display().to_string();
    let s = Serve::start(&place, &[("CAPSID_TEST_CLOCK_FILE", &clock_path)]);

    // The first tick finds no record and a dump: it rehearses it, at the clock's time.
    let t0 = clock.now;
    let mut first = (None, None);
    for _ in 0..1500 {
        let scrape = s.metrics(&key).await;
        first = (
            sample(&scrape, "capsid_backup_rehearsal_timestamp_seconds", &[]),
            sample(&scrape, "capsid_backup_rehearsal_ok", &[]),
        );
        if turns(&scrape) >= 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(first, (Some(secs(t0)), Some(1.0)));
    let check = doctor_rehearsal(&place);
    assert_eq!(check["ok"], true, "{check}");
    let last = &check["last"];
    assert_eq!(last["outcome"], "verified", "{check}");
    let run = place.newest_run();
    let run_id = run.file_name().and_then(|n| n.to_str()).expect("run id");
    assert_eq!(last["run"], run_id, "{check}");
    assert_eq!(
        last["key"],
        format!("backups/json/{run_id}/manifest.json"),
        "{check}"
    );
    let rows = |table: &str| {
        last["tables"]
            .as_array()
            .expect("tables")
            .iter()
            .find(|t| t["table"] == table)
            .map(|t| (t["expected"].as_u64(), t["restored"].as_u64()))
    };
    assert_eq!(rows("agents"), Some((Some(1), Some(1))), "{check}");
    assert_eq!(rows("namespaces"), Some((Some(1), Some(1))), "{check}");
    assert!(
        check["value"]
            .as_str()
            .is_some_and(|v| v.starts_with("ok at ")),
        "{check}"
    );

    // A week less ten minutes later the task takes its turn (each task's turns are five
    // minutes apart) but does not rehearse again.
    let (at, _) = tick_at(
        &s,
        &key,
        &mut clock,
        t0.plus_millis(7 * DAY_MS - 10 * MINUTE_MS),
        2.0,
    )
    .await;
    assert_eq!(at, Some(secs(t0)), "not rehearsed again within the week");
    // A week later it does.
    let t1 = t0.plus_millis(7 * DAY_MS);
    let (at, ok) = tick_at(&s, &key, &mut clock, t1, 3.0).await;
    assert_eq!((at, ok), (Some(secs(t1)), Some(1.0)));

    // A dump altered on disk: the next week's rehearsal is recorded as failed, naming the
    // file.
    let agents = run.join("agents.json");
    let mut bytes = std::fs::read(&agents).expect("agents.json");
    let at_brace = bytes.iter().rposition(|b| *b == b'}').expect("a brace");
    bytes.insert(at_brace, b' ');
    std::fs::write(&agents, bytes).expect("alter the dump");
    let t2 = t1.plus_millis(7 * DAY_MS);
    let (at, ok) = tick_at(&s, &key, &mut clock, t2, 4.0).await;
    assert_eq!((at, ok), (Some(secs(t2)), Some(0.0)));
    let check = doctor_rehearsal(&place);
    assert_eq!(check["ok"], false, "{check}");
    assert_eq!(check["last"]["outcome"], "refused", "{check}");
    let reason = check["last"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("agents.json"), "{check}");
    assert!(
        check["value"]
            .as_str()
            .is_some_and(|v| v.contains("FAILED")),
        "{check}"
    );
    drop(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weekly_rehearsal_is_recorded_and_shown_sqlite() {
    let dir = tempfile::tempdir().expect("a folder");
    a_weekly_rehearsal_is_recorded_and_shown(sqlite_place(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weekly_rehearsal_is_recorded_and_shown_postgres() {
    let Some((database, url)) = capsid_tests::harness::fresh_database("cli_rehearsal").await else {
        return;
    };
    let dir = tempfile::tempdir().expect("a folder");
    a_weekly_rehearsal_is_recorded_and_shown(Place {
        data: dir.path().join("data"),
        database: Some(url),
    })
    .await;
    database.remove().await;
}

#[test]
fn a_bad_rehearsal_interval_stops_serve_naming_the_setting() {
    let dir = tempfile::tempdir().expect("a folder");
    let place = sqlite_place(dir.path());
    for bad in ["0", "91", "weekly"] {
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--listen", "127.0.0.1:0"]);
        place.env(&mut cmd);
        let out = cmd
            .env("CAPSID_REHEARSE_EVERY_DAYS", bad)
            .output()
            .expect("run");
        assert!(!out.status.success(), "{bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("CAPSID_REHEARSE_EVERY_DAYS") && err.contains("1 to 90"),
            "{bad}: {err}"
        );
    }
}
