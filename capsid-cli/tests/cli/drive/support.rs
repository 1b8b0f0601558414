//! The drive suite's fixture: the real `capsid serve` on SQLite or a fresh Postgres database,
//! a human key and a driver key minted with the real CLI, real git projects in a temporary
//! folder (with a bare `origin`), and the real `capsid drive` run against them with the fake
//! agent script.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use capsid_tests::fake_claude::{FakeClaude, claude_env, require_claude};
use capsid_tests::fake_codex::{codex_env, require_codex};
use capsid_tests::harness::{TestDatabase, fresh_database};
use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_capsid");

/// Which real agent CLI a world's drives run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cli {
    /// Claude Code, against the fake Messages API.
    Claude,
    /// Codex, against the fake Responses API (`capsid drive --runtime codex`).
    Codex,
}

/// Which store the server runs on.
#[derive(Clone, Copy, Debug)]
pub enum Store {
    Sqlite,
    Postgres,
}

/// The server, stopped when dropped.
struct Serving {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One test's world.
pub struct World {
    pub dir: tempfile::TempDir,
    database_url: Option<String>,
    database: Option<TestDatabase>,
    server: Option<Serving>,
    /// `http://127.0.0.1:port`.
    pub url: String,
    /// The human's key (all namespaces, read and write).
    pub human: String,
    runtime: tokio::runtime::Runtime,
    /// Extra environment of every `capsid` this world runs (the GitHub App's settings).
    env: Vec<(String, String)>,
    /// The fake model API the real agent CLI talks to, once started, and the CLI's
    /// environment.
    claude: Option<(FakeClaude, Vec<(String, String)>)>,
    /// Which CLI the world's agent drives run.
    pub cli: Cli,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

impl World {
    /// A server on `store`, or `None` when the Postgres case cannot run here (it says so).
    pub fn start(store: Store, case: &str) -> Option<World> {
        World::start_with(store, case, Vec::new())
    }

    /// [`World::start`] with `env` set for the server and every CLI call (e.g. the GitHub
    /// App's settings pointing at a fake GitHub).
    pub fn start_with(store: Store, case: &str, env: Vec<(String, String)>) -> Option<World> {
        capsid_http::install_tls_provider();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let (database, database_url) = match store {
            Store::Sqlite => (None, None),
            Store::Postgres => {
                let (db, url) = runtime.block_on(fresh_database(case))?;
                (Some(db), Some(url))
            }
        };
        let dir = tempfile::tempdir().expect("temporary folder");
        let mut w = World {
            dir,
            database_url,
            database,
            server: None,
            url: String::new(),
            human: String::new(),
            runtime,
            env,
            claude: None,
            cli: Cli::Claude,
        };
        w.serve();
        let minted = w.cli_json(&[
            "agents",
            "mint",
            "--name",
            "owner",
            "--kind",
            "session",
            "--namespaces",
            "*",
            "--grants",
            "read,write",
            "--json",
        ]);
        w.human = minted["key"].as_str().expect("a key").to_owned();
        Some(w)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn command(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env("CAPSID_DATA_DIR", self.data_dir())
            .env_remove("CAPSID_SIGNING_SECRET")
            .env_remove("CAPSID_OPERATOR_KEY_HASH")
            .env_remove("CAPSID_KEY")
            .env_remove("CAPSID_TEST_COMMAND")
            .env_remove("CAPSID_BUILD_COMMAND")
            .env_remove("CAPSID_WEBHOOK_URL")
            .env_remove("CAPSID_MCP_SESSIONS")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        match &self.database_url {
            Some(u) => c.env("CAPSID_DATABASE_URL", u),
            None => c.env_remove("CAPSID_DATABASE_URL"),
        };
        c
    }

    fn serve(&mut self) {
        let mut child = self
            .command()
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("CAPSID_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn capsid serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut url = None;
        let mut seen = Vec::new();
        // With an operator key the server prints no first-run banner: its log line names the
        // URL, and that line is the last to wait for.
        let operator = self
            .env
            .iter()
            .any(|(k, _)| k == "CAPSID_OPERATOR_KEY_HASH");
        for line in lines.by_ref() {
            let line = line.expect("a line");
            if let Some(rest) = line.strip_prefix("capsid is serving MCP at ") {
                url = Some(rest.trim().trim_end_matches("/ops/mcp").to_owned());
            }
            let listening = line
                .split("capsid listening url=")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next());
            if operator && let Some(u) = listening {
                url = Some(u.to_owned());
            }
            let done = line.contains("namespaces register") || (operator && listening.is_some());
            seen.push(line);
            if done {
                break;
            }
        }
        self.url = url.unwrap_or_else(|| panic!("no banner in {seen:#?}"));
        // Keep reading the log so the server never blocks on a full pipe.
        let log = Arc::new(Mutex::new(seen));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(mut l) = sink.lock() {
                    l.push(line);
                }
            }
        });
        self.server = Some(Serving { child, log });
    }

    /// `capsid <args>`, which must succeed: stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = self.command().args(args).output().expect("run capsid");
        assert!(
            out.status.success(),
            "capsid {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// `capsid <args>` as `cli` runs it, its standard output read as JSON.
    pub fn cli_json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.cli(args)).expect("JSON output")
    }

    /// Registers `ns` and mints its driver `<ns>-driver`: the driver's key.
    pub fn namespace_with_driver(&self, ns: &str) -> String {
        self.cli(&["namespaces", "register", ns, "--repo", &format!("you/{ns}")]);
        let minted = self.cli_json(&[
            "agents",
            "mint",
            "--name",
            &format!("{ns}-driver"),
            "--kind",
            "driver",
            "--namespaces",
            ns,
            "--grants",
            "read,write",
            "--json",
        ]);
        minted["key"].as_str().expect("a key").to_owned()
    }

    /// A tool call with `key`: the tool's JSON answer.
    pub fn tool(&self, key: &str, tool: &str, args: Value) -> Value {
        let (error, value) = self.tool_raw(key, tool, args);
        assert!(!error, "{tool}: {value}");
        value
    }

    /// A tool call with `key` that must be a tool error: its text.
    pub fn tool_error(&self, key: &str, tool: &str, args: Value) -> String {
        let (error, value) = self.tool_raw(key, tool, args);
        assert!(error, "{tool} was not an error: {value}");
        value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned)
    }

    fn tool_raw(&self, key: &str, tool: &str, args: Value) -> (bool, Value) {
        let url = format!("{}/ops/mcp", self.url);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        let rpc: Value = self.runtime.block_on(async {
            reqwest::Client::new()
                .post(&url)
                .bearer_auth(key)
                .header("accept", "application/json, text/event-stream")
                .json(&body)
                .send()
                .await
                .expect("POST")
                .json()
                .await
                .expect("JSON-RPC answer")
        });
        let text = rpc["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{rpc}"));
        let error = rpc["result"]["isError"] == json!(true);
        (
            error,
            serde_json::from_str(text).unwrap_or_else(|_| json!(text)),
        )
    }

    /// A Handler API call: status and JSON body.
    pub fn api(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.url);
        self.runtime.block_on(async {
            let client = reqwest::Client::new();
            let mut req = match method {
                "POST" => client.post(&url),
                _ => client.get(&url),
            }
            .bearer_auth(&self.human);
            if let Some(b) = body {
                req = req.json(&b);
            }
            let resp = req.send().await.expect("API call");
            let status = resp.status().as_u16();
            (status, resp.json().await.unwrap_or(Value::Null))
        })
    }

    /// Posts a job to `ns` as the human: its id.
    pub fn post(&self, ns: &str, title: &str, body: &str) -> String {
        let posted = self.tool(
            &self.human,
            "jobs",
            json!({"action": "post", "namespace": ns, "title": title, "body": body}),
        );
        assert_eq!(posted["ok"], json!(true), "{posted}");
        posted["job"]["id"].as_str().expect("an id").to_owned()
    }

    /// Posts a job on `paths` as the human; its id.
    pub fn post_on(&self, ns: &str, title: &str, body: &str, paths: &[&str]) -> String {
        let posted = self.tool(
            &self.human,
            "jobs",
            json!({"action": "post", "namespace": ns, "title": title, "body": body,
                   "paths": paths}),
        );
        assert_eq!(posted["ok"], json!(true), "{posted}");
        posted["job"]["id"].as_str().expect("an id").to_owned()
    }

    /// The job `id` as `jobs list` shows it.
    pub fn job(&self, ns: &str, id: &str) -> Value {
        let listed = self.tool(
            &self.human,
            "jobs",
            json!({"action": "list", "namespace": ns}),
        );
        listed["jobs"]
            .as_array()
            .and_then(|js| js.iter().find(|j| j["id"] == json!(id)).cloned())
            .unwrap_or_else(|| panic!("no job {id} in {listed}"))
    }

    /// `jobs get` of `id` in `ns`: the job, its outcome and its ledger summed (`spend`).
    pub fn job_record(&self, ns: &str, id: &str) -> Value {
        let got = self.tool(
            &self.human,
            "jobs",
            json!({"action": "get", "namespace": ns, "id": id}),
        );
        assert_eq!(got["ok"], json!(true), "{got}");
        got
    }

    /// The checkmark of `agent` in `ns`.
    pub fn checkmark(&self, ns: &str, agent: &str) -> Value {
        let got = self.tool(
            &self.human,
            "checkmarks",
            json!({"action": "get", "namespace": ns, "agent": agent}),
        );
        got["checkmark"].clone()
    }

    /// A git project at `<dir>/<name>` with a test script, a build check and a bare origin.
    pub fn project(&self, name: &str) -> PathBuf {
        let origin = self.dir.path().join(format!("{name}-origin.git"));
        git(
            self.dir.path(),
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                &origin.display().to_string(),
            ],
        );
        let root = self.dir.path().join(name);
        std::fs::create_dir_all(&root).expect("project folder");
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["config", "user.name", "Capsid Test"]);
        git(&root, &["config", "user.email", "test@capsid.invalid"]);
        std::fs::write(
            root.join("test.sh"),
            "if [ -f state.txt ] && grep -q broken state.txt; then\n  echo 'test widgets ... FAILED'\n  echo 'assertion failed: widgets are broken'\n  exit 1\nfi\necho 'all tests passed'\n",
        )
        .expect("test.sh");
        std::fs::write(
            root.join("build.sh"),
            "if [ -f Dockerfile ] && grep -q 'COPY missing' Dockerfile; then\n  echo 'COPY failed: file not found in build context: missing'\n  exit 1\nfi\necho built\n",
        )
        .expect("build.sh");
        git(&root, &["add", "."]);
        git(&root, &["commit", "-qm", "The project"]);
        git(
            &root,
            &["remote", "add", "origin", &origin.display().to_string()],
        );
        git(&root, &["push", "-q", "origin", "main"]);
        root
    }

    /// `capsid drive` for `ns` on `root` with `key` and `extra` arguments, not yet waited on.
    pub fn drive(&self, ns: &str, key: &str, root: &Path, extra: &[&str]) -> Command {
        let mut c = self.command();
        c.args(["drive", "--once", "--namespace", ns, "--url", &self.url])
            .arg("--root-dir")
            .arg(root)
            .args([
                "--test-command",
                "sh test.sh",
                "--build-command",
                "sh build.sh",
            ])
            .arg("--agent-command")
            .arg(fake_agent())
            .args(unboxed_unless_asked(extra))
            .args(extra)
            .env("CAPSID_KEY", key)
            .env("FAKE_LOG", self.fake_log(ns))
            .env("GIT_AUTHOR_NAME", "Fake Agent")
            .env("GIT_AUTHOR_EMAIL", "agent@capsid.invalid")
            .env("GIT_COMMITTER_NAME", "Fake Agent")
            .env("GIT_COMMITTER_EMAIL", "agent@capsid.invalid");
        c
    }

    /// Runs `capsid drive` to its end.
    pub fn drive_once(&self, ns: &str, key: &str, root: &Path, extra: &[&str]) -> Output {
        self.drive(ns, key, root, extra)
            .output()
            .expect("run capsid drive")
    }

    /// Where the fake agent of `ns` logs its steps.
    pub fn fake_log(&self, ns: &str) -> PathBuf {
        self.dir.path().join(format!("fake-{ns}.log"))
    }

    /// The fake agent's log of `ns`.
    pub fn fake_said(&self, ns: &str) -> String {
        std::fs::read_to_string(self.fake_log(ns)).unwrap_or_default()
    }

    /// The server's log so far.
    pub fn server_log(&self) -> String {
        self.server
            .as_ref()
            .and_then(|s| s.log.lock().ok().map(|l| l.join("\n")))
            .unwrap_or_default()
    }

    /// Stops the server and drops the test database.
    pub fn finish(mut self) {
        drop(self.server.take());
        if let Some(db) = self.database.take() {
            self.runtime.block_on(db.remove());
        }
    }
}

/// The agent command: the fake agent script, by its absolute path.
pub fn fake_agent() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/drive/fake_agent.sh");
    format!("sh {}", path.display())
}

/// An exit code, stdout and stderr, for assertion messages.
pub fn said(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The git output of `args` in `dir`.
pub fn git_out(dir: &Path, args: &[&str]) -> String {
    git(dir, args)
}

impl World {
    /// A world for the real Claude Code CLI: the fake Messages API started first, the server
    /// posting its webhooks to the fake's recorder (`FakeClaude::webhook`); `None` (after
    /// saying the case did not run) when the CLI is not installed outside CI, or the Postgres
    /// case cannot run here.
    pub fn start_claude(store: Store, case: &str) -> Option<World> {
        World::start_claude_with(store, case, vec![])
    }

    /// The upstream model key the driver holds (never the agent), as the world's CLI's fake
    /// expects it.
    pub fn upstream_key(&self) -> &'static str {
        match self.cli {
            Cli::Claude => "sk-ant-fake-offline-test",
            Cli::Codex => capsid_tests::fake_codex::CODEX_UPSTREAM_KEY,
        }
    }

    /// What one call of the fake costs at the tests' model, in micro-dollars: 100 tokens in and
    /// 20 out, at claude-opus-4-8 ($5 in, $25 out per million) or gpt-5-codex ($1.25, $10).
    pub fn call_micros(&self) -> u64 {
        match self.cli {
            Cli::Claude => 100 * 5 + 20 * 25,
            Cli::Codex => (100 * 125 + 20 * 1000) / 100,
        }
    }

    /// The model the world's CLI runs with, as the ledger names it.
    pub fn model(&self) -> &'static str {
        match self.cli {
            Cli::Claude => "claude-opus-4-8",
            Cli::Codex => capsid_tests::fake_codex::CODEX_MODEL,
        }
    }

    /// The upstream key as a `grep` pattern that does not match its own command line.
    pub fn upstream_key_pattern(&self) -> String {
        let k = self.upstream_key();
        format!("{}[{}]", &k[..k.len() - 1], &k[k.len() - 1..])
    }

    /// A world where the driver can run both real CLIs: Claude Code is its own runtime and
    /// Codex is on the `PATH` with its model key, for jobs that ask for it; one fake plays both
    /// APIs. `None` when either CLI (or the Postgres case) cannot run here.
    pub fn start_both(store: Store, case: &str) -> Option<World> {
        let codex = require_codex(case)?;
        let mut w = World::start_claude(store, case)?;
        let (fake, env) = w.claude.take().expect("a Claude world");
        let extra = codex_env(&fake, &codex, w.dir.path());
        let codex_dir = codex
            .parent()
            .expect("the CLI's folder")
            .display()
            .to_string();
        let mut env: Vec<(String, String)> = env
            .into_iter()
            .map(|(k, v)| match k.as_str() {
                "PATH" => (k, format!("{codex_dir}:{v}")),
                _ => (k, v),
            })
            .collect();
        // Codex's model key and upstream (the door's), never its model flag: the driver's own
        // agent arguments are Claude Code's.
        env.extend(extra.into_iter().filter(|(k, _)| k.starts_with("OPENAI_")));
        w.claude = Some((fake, env));
        Some(w)
    }

    /// [`World::start_agent`] with Codex.
    pub fn start_codex(store: Store, case: &str) -> Option<World> {
        World::start_agent(Cli::Codex, store, case)
    }

    /// A world for the real agent CLI `cli` ([`World::start_claude`] for Claude Code; for
    /// Codex the fake plays the Responses API and every agent drive runs `--runtime codex`).
    pub fn start_agent(cli: Cli, store: Store, case: &str) -> Option<World> {
        match cli {
            Cli::Claude => World::start_claude(store, case),
            Cli::Codex => {
                let bin = require_codex(case)?;
                let fake = FakeClaude::start();
                let hook = vec![("CAPSID_WEBHOOK_URL".to_owned(), fake.webhook_url())];
                let mut w = World::start_with(store, case, hook)?;
                let env = codex_env(&fake, &bin, w.dir.path());
                w.claude = Some((fake, env));
                w.cli = Cli::Codex;
                Some(w)
            }
        }
    }

    /// [`World::start_claude`] with more of the server's environment (a GitHub App, say).
    pub fn start_claude_with(
        store: Store,
        case: &str,
        env: Vec<(String, String)>,
    ) -> Option<World> {
        let bin = require_claude(case)?;
        let fake = FakeClaude::start();
        let mut hook = vec![("CAPSID_WEBHOOK_URL".to_owned(), fake.webhook_url())];
        hook.extend(env);
        let mut w = World::start_with(store, case, hook)?;
        let env = claude_env(&fake, &bin, w.dir.path());
        w.claude = Some((fake, env));
        Some(w)
    }

    /// The fake Messages API.
    pub fn fake(&self) -> &FakeClaude {
        &self.claude.as_ref().expect("a World::start_claude world").0
    }

    /// The `HOME` the real agent CLI runs with (unboxed).
    pub fn claude_home(&self) -> PathBuf {
        self.dir.path().join(match self.cli {
            Cli::Claude => "claude-home",
            Cli::Codex => "codex-home",
        })
    }

    /// `capsid drive --once` with the real Claude Code as the agent (the default agent
    /// command), not yet waited on.
    pub fn drive_claude(&self, ns: &str, key: &str, root: &Path, extra: &[&str]) -> Command {
        self.drive_claude_as("--once", ns, key, root, extra)
    }

    /// [`World::drive_claude`] with `--watch` instead of `--once`: a driver that keeps polling
    /// the queue until it is stopped.
    pub fn drive_claude_watching(
        &self,
        ns: &str,
        key: &str,
        root: &Path,
        extra: &[&str],
    ) -> Command {
        self.drive_claude_as("--watch", ns, key, root, extra)
    }

    fn drive_claude_as(
        &self,
        mode: &str,
        ns: &str,
        key: &str,
        root: &Path,
        extra: &[&str],
    ) -> Command {
        let (_, env) = self.claude.as_ref().expect("a World::start_claude world");
        let mut c = self.command();
        c.args(["drive", mode, "--namespace", ns, "--url", &self.url])
            .arg("--root-dir")
            .arg(root)
            .args([
                "--test-command",
                "sh test.sh",
                "--build-command",
                "sh build.sh",
            ])
            .args(unboxed_unless_asked(extra))
            .args(if self.cli == Cli::Codex {
                &["--runtime", "codex"][..]
            } else {
                &[]
            })
            .args(extra)
            .env_remove("CAPSID_AGENT_COMMAND")
            .env_remove("CAPSID_AGENT_ARGS")
            .env_remove("CAPSID_RUNTIME")
            .env_remove("CAPSID_CREDENTIAL_REF")
            // The driver sets it for the agent when it runs as root; none is inherited.
            .env_remove("IS_SANDBOX")
            .env("CAPSID_KEY", key)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("GIT_AUTHOR_NAME", "Claude Code")
            .env("GIT_AUTHOR_EMAIL", "agent@capsid.invalid")
            .env("GIT_COMMITTER_NAME", "Claude Code")
            .env("GIT_COMMITTER_EMAIL", "agent@capsid.invalid");
        c
    }

    /// Runs [`World::drive_claude`] to its end.
    pub fn drive_claude_once(&self, ns: &str, key: &str, root: &Path, extra: &[&str]) -> Output {
        self.drive_claude(ns, key, root, extra)
            .output()
            .expect("run capsid drive")
    }

    /// The HTTP status `/ops/mcp` answers a `tools/list` with `key`.
    pub fn mcp_status(&self, key: &str) -> u16 {
        let url = format!("{}/ops/mcp", self.url);
        self.runtime.block_on(async {
            reqwest::Client::new()
                .post(&url)
                .bearer_auth(key)
                .header("accept", "application/json, text/event-stream")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                .send()
                .await
                .expect("POST")
                .status()
                .as_u16()
        })
    }

    /// The checkmark log of `agent` in `ns`.
    pub fn log(&self, ns: &str, agent: &str) -> Value {
        self.tool(
            &self.human,
            "checkmarks",
            json!({"action": "log", "namespace": ns, "agent": agent}),
        )
    }

    /// Mints a driver `name` for `ns` (the namespace already registered): its key.
    pub fn mint_driver(&self, name: &str, ns: &str) -> String {
        let minted = self.cli_json(&[
            "agents",
            "mint",
            "--name",
            name,
            "--kind",
            "driver",
            "--namespaces",
            ns,
            "--grants",
            "read,write",
            "--json",
        ]);
        minted["key"].as_str().expect("a key").to_owned()
    }

    /// `capsid <args>` whatever its exit: the output.
    pub fn cli_output(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("run capsid")
    }

    /// `capsid <args>` with `key` as `CAPSID_KEY` (`drive ps`, `drive stop`).
    pub fn cli_with_key(&self, key: &str, args: &[&str]) -> Output {
        self.command()
            .env("CAPSID_KEY", key)
            .args(args)
            .output()
            .expect("run capsid")
    }

    /// `capsid drive --once` with only the URL, the key and the namespace: everything else
    /// comes from the namespace's runner settings.
    pub fn drive_bare(&self, ns: &str, key: &str, cwd: &Path) -> Output {
        self.command()
            .args([
                "drive",
                "--once",
                "--unboxed",
                "--namespace",
                ns,
                "--url",
                &self.url,
            ])
            .current_dir(cwd)
            .env("CAPSID_KEY", key)
            .env_remove("CAPSID_ROOT_DIR")
            .env_remove("CAPSID_AGENT_COMMAND")
            .env_remove("CAPSID_CREDENTIAL_REF")
            .env("FAKE_LOG", self.fake_log(ns))
            .env("GIT_AUTHOR_NAME", "Fake Agent")
            .env("GIT_AUTHOR_EMAIL", "agent@capsid.invalid")
            .env("GIT_COMMITTER_NAME", "Fake Agent")
            .env("GIT_COMMITTER_EMAIL", "agent@capsid.invalid")
            .output()
            .expect("run capsid drive")
    }
}

/// `--unboxed` unless `extra` asks for the box: the cases written for the driver's worktree
/// run say so, as the driver asks of its users (the box is the default).
pub fn unboxed_unless_asked(extra: &[&str]) -> &'static [&'static str] {
    if extra.contains(&"--box") || extra.contains(&"--unboxed") {
        &[]
    } else {
        &["--unboxed"]
    }
}

/// The server's environment for its GitHub App pointed at `gh` (the fake GitHub on loopback).
pub fn github_app_env(gh: &capsid_tests::fake_github::FakeGitHub) -> Vec<(String, String)> {
    use capsid_tests::fake_github::{CLIENT_ID, test_key};
    vec![
        (
            "CAPSID_GITHUB_APP_CLIENT_ID".to_owned(),
            CLIENT_ID.to_owned(),
        ),
        (
            "CAPSID_GITHUB_APP_PRIVATE_KEY".to_owned(),
            test_key().private_pem.clone(),
        ),
        ("CAPSID_GITHUB_API_URL".to_owned(), gh.url.clone()),
    ]
}
