//! Two real `capsid serve` processes over one Postgres database, each on its own loopback
//! port, sharing one test clock (a file both read): a write on one is read on the other, the
//! lease sweep runs once per tick across both, a claim race across them never hands a job out
//! twice, and `kill -9` of one leaves its claimed jobs to the other's sweep.
//!
//! Time moves only when the test rewrites the clock file; the servers tick every 50 ms of
//! real time and act only when the clock says a task is due. Waiting is bounded polling.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use capsid_core::caller::Caller;
use capsid_core::service::{NoConfirmer, Service, ServiceConfig};
use capsid_core::time::{Clock, MINUTE_MS, ManualClock, Timestamp};
use capsid_store_postgres::PgStore;
use capsid_tests::harness::{Probe, fresh_database};
use capsid_tests::server::{Client, TEST_SECRET, TestEntropy};
use serde_json::{Value, json};

/// One `capsid serve` child.
struct Replica {
    child: Child,
    url: String,
}

impl Replica {
    /// Starts the binary on a free port over `database` with the shared clock file, and waits
    /// (bounded) for `/health` to answer 200.
    async fn start(
        database: &str,
        clock_file: &std::path::Path,
        data: &std::path::Path,
    ) -> Replica {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capsid"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("CAPSID_DATABASE_URL", database)
            .env("CAPSID_DATA_DIR", data)
            .env("CAPSID_SIGNING_SECRET", TEST_SECRET)
            .env("CAPSID_TEST_CLOCK_FILE", clock_file)
            .env("CAPSID_TICK_INTERVAL_MS", "50")
            .env("CAPSID_LOG", "info")
            .env("CAPSID_LOG_FORMAT", "json")
            .env_remove("CAPSID_OPERATOR_KEY_HASH")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn capsid serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel::<String>();
        // Drain the log for the process's whole life, so a full pipe never stalls it.
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
        let replica = Replica { child, url };
        for _ in 0..300 {
            if let Ok(r) = reqwest::get(format!("{}/health", replica.url)).await
                && r.status().as_u16() == 200
            {
                return replica;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("{} never became healthy", replica.url);
    }

    fn ops(&self) -> String {
        format!("{}/ops/mcp", self.url)
    }

    /// `kill -9`.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// This replica's scheduler ticks of the lease sweep, by outcome, from its `/metrics`.
    async fn ticks(&self, key: &str) -> (f64, f64) {
        let body = reqwest::Client::new()
            .get(format!("{}/metrics", self.url))
            .bearer_auth(key)
            .send()
            .await
            .expect("scrape")
            .text()
            .await
            .expect("body");
        let scrape =
            prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("parse");
        let count = |outcome: &str| {
            scrape
                .samples
                .iter()
                .filter(|s| {
                    s.metric == "capsid_scheduler_ticks_total"
                        && s.labels.get("task") == Some("sweep")
                        && s.labels.get("outcome") == Some(outcome)
                })
                .map(|s| match s.value {
                    prometheus_parse::Value::Counter(v) => v,
                    _ => 0.0,
                })
                .sum::<f64>()
        };
        (count("ran"), count("ran_elsewhere"))
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The shared clock: a file of epoch milliseconds (written whole, then renamed into place),
/// and the same instant for the test's own service.
struct SharedClock {
    path: std::path::PathBuf,
    local: Arc<ManualClock>,
}

impl SharedClock {
    fn new(dir: &std::path::Path) -> SharedClock {
        let start = Timestamp::parse("2026-06-01T12:00:00Z").expect("start");
        let clock = SharedClock {
            path: dir.join("now"),
            local: Arc::new(ManualClock::new(start)),
        };
        clock.set(start);
        clock
    }

    fn set(&self, at: Timestamp) {
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, at.as_millis().to_string()).expect("write the clock");
        std::fs::rename(&tmp, &self.path).expect("move the clock into place");
        self.local.set(at);
    }

    fn advance(&self, ms: i64) {
        self.set(self.local.now().plus_millis(ms));
    }
}

/// Everything a replica test needs: a fresh database, the test's own service over it (the
/// CLI's admin role), the clock, two replicas.
struct Cluster {
    service: Service,
    probe: Probe,
    clock: SharedClock,
    a: Replica,
    b: Replica,
    _dirs: tempfile::TempDir,
}

impl Cluster {
    async fn start(case: &str) -> Option<(Cluster, capsid_tests::harness::TestDatabase)> {
        capsid_http::install_tls_provider();
        let (database, url) = fresh_database(case).await?;
        let store = PgStore::connect(&url).await.expect("connect");
        store.migrate().await.expect("migrate");
        let probe = Probe::Postgres(store.pool().clone());
        let dirs = tempfile::tempdir().expect("temporary folder");
        let clock = SharedClock::new(dirs.path());
        let service = Service::new(
            Arc::new(store),
            clock.local.clone(),
            Arc::new(TestEntropy),
            ServiceConfig {
                signing_secret: Some(TEST_SECRET.into()),
                operator_keys: Vec::new(),
                ..Default::default()
            },
        );
        std::fs::create_dir_all(dirs.path().join("a")).expect("a");
        std::fs::create_dir_all(dirs.path().join("b")).expect("b");
        let a = Replica::start(&url, &clock.path, &dirs.path().join("a")).await;
        let b = Replica::start(&url, &clock.path, &dirs.path().join("b")).await;
        Some((
            Cluster {
                service,
                probe,
                clock,
                a,
                b,
                _dirs: dirs,
            },
            database,
        ))
    }

    async fn admin(&self, tool: &str, args: Value) -> Value {
        self.service
            .call_tool(&Caller::cli("test"), tool, args, &NoConfirmer)
            .await
            .unwrap_or_else(|e| panic!("admin {tool}: {e}"))
    }

    async fn mint(&self, name: &str, kind: &str, grants: &[&str]) -> String {
        let out = self
            .admin(
                "agents",
                json!({"action": "mint", "name": name, "kind": kind, "namespaces": ["*"], "grants": grants}),
            )
            .await;
        out["key"].as_str().expect("a key").to_owned()
    }

    /// Polls both replicas' sweep counters until together they ran the sweep `due` times,
    /// then keeps watching a little (many ticks of both) so a second run would show; returns
    /// how many runs each made. Bounded.
    async fn settle(&self, key: &str, due: f64) -> (f64, f64) {
        for _ in 0..400 {
            let (a_ran, _) = self.a.ticks(key).await;
            let (b_ran, _) = self.b.ticks(key).await;
            if a_ran + b_ran >= due {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let (a_ran, _) = self.a.ticks(key).await;
                let (b_ran, _) = self.b.ticks(key).await;
                return (a_ran, b_ran);
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the replicas never ran the sweep {due} times together");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_writes_and_lead_each_periodic_task_once_per_tick() {
    let Some((cluster, database)) = Cluster::start("replicas_share").await else {
        return;
    };
    cluster
        .admin(
            "register_namespace",
            json!({"namespace": "shared", "repo": "octo/shared"}),
        )
        .await;
    let writer = cluster.mint("writer", "session", &["read", "write"]).await;
    let scraper = cluster.mint("scraper", "session", &["read"]).await;

    // A write acknowledged by A is what B reads, and B's update is what A reads.
    let on_a = Client::connect(&cluster.a.ops(), &writer, ()).await;
    let on_b = Client::connect(&cluster.b.ops(), &writer, ()).await;
    on_a.ok(
        "write",
        json!({"namespace": "shared", "path": "notes/x.md", "title": "x", "body": "from A\n"}),
    )
    .await;
    let read = on_b
        .ok("read", json!({"namespace": "shared", "path": "notes/x.md"}))
        .await;
    assert_eq!(read["body"], "from A\n", "{read}");
    on_b.ok(
        "write",
        json!({"namespace": "shared", "path": "notes/x.md", "mode": "append", "body": "and B\n"}),
    )
    .await;
    let read = on_a
        .ok("read", json!({"namespace": "shared", "path": "notes/x.md"}))
        .await;
    assert_eq!(read["body"], "from A\n\nand B\n", "{read}");

    // The sweep is due at start and every five minutes of the shared clock: each time,
    // exactly one of the replicas runs it.
    for round in 1..=4u32 {
        let (a_ran, b_ran) = cluster.settle(&scraper, f64::from(round)).await;
        assert_eq!(
            a_ran + b_ran,
            f64::from(round),
            "round {round}: the lease sweep ran {a_ran} times on A and {b_ran} on B"
        );
        cluster.clock.advance(5 * MINUTE_MS);
    }
    drop(cluster);
    database.remove().await;
}

/// Claims and completes until nothing is queued; returns the ids claimed.
async fn claim_all(url: String, key: String) -> Vec<String> {
    let client = Client::connect(&url, &key, ()).await;
    let mut mine = Vec::new();
    loop {
        let out = client
            .ok("jobs", json!({"action": "claim", "namespace": "race"}))
            .await;
        if out["ok"] != true {
            let why = out["refusal"].as_str().unwrap_or_default().to_owned();
            assert!(
                !why.contains("already holds"),
                "a claimer held two jobs: {why}"
            );
            if why.contains("no queued jobs") {
                return mine;
            }
            continue;
        }
        let id = out["job"]["id"].as_str().expect("an id").to_owned();
        let done = client
            .ok("jobs", json!({"action": "complete", "id": id, "namespace": "race", "result_summary": "done"}))
            .await;
        assert_eq!(done["ok"], true, "{done}");
        mine.push(id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_race_across_replicas_never_double_claims_and_a_killed_replica_leaves_its_claims_to_the_other()
 {
    let Some((mut cluster, database)) = Cluster::start("replicas_race").await else {
        return;
    };
    cluster
        .admin(
            "register_namespace",
            json!({"namespace": "race", "repo": "octo/race"}),
        )
        .await;
    const JOBS: usize = 60;
    for j in 0..JOBS {
        let out = cluster
            .admin("jobs", json!({"action": "post", "namespace": "race", "title": format!("job {j}"), "body": format!("Do {j}.\n")}))
            .await;
        assert_eq!(out["ok"], true, "{out}");
    }
    let mut tasks = Vec::new();
    for c in 0..8 {
        let key = cluster
            .mint(&format!("claimer-{c}"), "driver", &["read", "write"])
            .await;
        let url = if c % 2 == 0 {
            cluster.a.ops()
        } else {
            cluster.b.ops()
        };
        tasks.push(tokio::spawn(claim_all(url, key)));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.extend(t.await.expect("a claimer"));
    }
    let claimed = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(
        (claimed, ids.len()),
        (JOBS, JOBS),
        "every job claimed exactly once across both replicas"
    );
    assert_eq!(
        cluster
            .probe
            .count("SELECT count(*) FROM jobs WHERE status = 'done'")
            .await,
        JOBS as i64
    );

    // A driver claims through A, and more claims are in flight to A, when A is killed.
    for j in 0..4 {
        cluster
            .admin("jobs", json!({"action": "post", "namespace": "race", "title": format!("late {j}"), "body": "Late.\n"}))
            .await;
    }
    let holder = cluster.mint("holder", "driver", &["read", "write"]).await;
    let on_a = Client::connect(&cluster.a.ops(), &holder, ()).await;
    let held = on_a
        .ok("jobs", json!({"action": "claim", "namespace": "race"}))
        .await;
    assert_eq!(held["ok"], true, "{held}");
    let held_id = held["job"]["id"].as_str().expect("an id").to_owned();
    let mut in_flight = Vec::new();
    for c in 0..3 {
        let key = cluster
            .mint(&format!("late-{c}"), "driver", &["read", "write"])
            .await;
        let url = cluster.a.ops();
        in_flight.push(tokio::spawn(async move {
            let client = Client::try_connect(&url, &key, ()).await.ok()?;
            client
                .call("jobs", json!({"action": "claim", "namespace": "race"}))
                .await
                .ok()
        }));
    }
    cluster.a.kill();
    for t in in_flight {
        let _ = t.await;
    }
    let status =
        |id: &str| format!("SELECT count(*) FROM jobs WHERE id = '{id}' AND status = 'claimed'");
    assert_eq!(
        cluster.probe.count(&status(&held_id)).await,
        1,
        "the kill left the claim in place"
    );

    // Past the four-hour lease (and the sweep's cadence), B's scheduler returns every job the
    // dead replica's claimers held to the queue.
    cluster
        .clock
        .advance(4 * 60 * MINUTE_MS + 5 * MINUTE_MS + 1_000);
    let mut swept = false;
    for _ in 0..400 {
        if cluster
            .probe
            .count("SELECT count(*) FROM jobs WHERE status = 'claimed'")
            .await
            == 0
        {
            swept = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        swept,
        "B's lease sweep never returned the dead replica's claims"
    );
    let audit = cluster
        .probe
        .count(&format!("SELECT count(*) FROM audit_log WHERE action = 'job-lease-expired' AND params LIKE '%{held_id}%'"))
        .await;
    assert!(audit >= 1, "the sweep audited the return of {held_id}");
    // Another driver, through B, gets work again; the held job is queued, not lost.
    assert_eq!(
        cluster
            .probe
            .count(&format!(
                "SELECT count(*) FROM jobs WHERE id = '{held_id}' AND status = 'queued'"
            ))
            .await,
        1
    );
    let rescuer = cluster.mint("rescuer", "driver", &["read", "write"]).await;
    let on_b = Client::connect(&cluster.b.ops(), &rescuer, ()).await;
    let again = on_b
        .ok(
            "jobs",
            json!({"action": "claim", "id": held_id, "namespace": "race"}),
        )
        .await;
    assert_eq!(again["ok"], true, "{again}");
    drop(cluster);
    database.remove().await;
}
