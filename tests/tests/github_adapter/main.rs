//! The real `capsid-github` adapter against the fake GitHub: the App JWT is verified (RS256
//! signature, issuer, lifetime), installation tokens are cached until expiry approaches and
//! installations for a day (proven by call counts), a 401 forces exactly one refresh,
//! secondary rate limits are retried within a bound, GitHub's statuses become clear errors,
//! `capsid doctor`'s diagnosis, and no token ever reaches the logs.
//!
//! The thirteen repo tools end to end: a real MCP client, the one enforcement point, the real
//! adapter and the fake GitHub (each scenario once per store).
//!
//! One test binary, split by responsibility:
//! - `adapter`: the App JWT, the token and installation caches, the 401 refresh, the retry
//!   bound, GitHub's statuses as errors, `capsid doctor`, and the logs.
//! - `read_tools`: the read tools (tree, files, refs, history, code search) and their budgets.
//! - `write_tools`: file writes, branches and pull requests, bad input, the audit failure.
//! - `boundaries`: pr mode never reaches the default branch, landed mutations are audited, the
//!   namespace mapping is admin-only to change, the repos axis holds for the resolved repo.
//! - `ci`: CI status and dispatch.
//! - `outcomes`: the facts other features read and outcome verification.
//! - `review_gate`: verdicts through Capsid by another agent, pinned to the head they reviewed.
//! - `typed_answers`: each of the thirteen called once, its typed answer checked.

use capsid_core::ports::RepoRef;
use capsid_tests::fake_github::FakeGitHub;
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

mod adapter;
mod boundaries;
mod ci;
mod ci_poller;
mod outcomes;
mod progress;
mod read_tools;
mod review_gate;
mod roles;
mod typed_answers;
mod write_tools;

const REPO: &str = "octo/alpha";

fn repo() -> RepoRef {
    RepoRef::parse(REPO).expect("repo")
}

async fn fake() -> FakeGitHub {
    capsid_http::install_tls_provider();
    let gh = FakeGitHub::start().await;
    gh.add_repo(
        REPO,
        &[("README.md", "hello\n"), ("src/lib.rs", "pub fn x() {}\n")],
    );
    gh
}

const ALPHA: &str = "octo/alpha";

fn alpha_files() -> Vec<(&'static str, &'static str)> {
    vec![
        ("README.md", "# Alpha\nHello world\n"),
        (
            "src/lib.rs",
            "pub fn hello() -> &'static str {\n    \"Hello\"\n}\n",
        ),
        ("src/deep/mod.rs", "// hello from deep\n"),
        ("docs/guide.md", "Nothing to see.\n"),
    ]
}

async fn agent(s: &TestServer, name: &str, grants: &[&str], flags: Value) -> Client {
    let key = s
        .mint(
            name,
            "driver",
            json!({"namespaces": ["alpha"], "grants": grants, "flags": flags}),
        )
        .await;
    s.client(&key).await
}

async fn setup_alpha(s: &TestServer, g: &FakeGitHub) {
    g.add_repo(ALPHA, &alpha_files());
    s.namespace("alpha").await;
}
