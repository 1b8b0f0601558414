//! End-to-end scenarios against the real adapter and the fake GitHub: [`github_cases!`]
//! expands each `case(&TestServer, &FakeGitHub)` once per store, each with its own fake and a
//! server whose repo host is the real `capsid-github` adapter pointed at it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::FakeGitHub;
use crate::harness::Backend;
use crate::server::{ServerOptions, TestServer};

/// Expands `sqlite::<case>` and `postgres::<case>` for each scenario in the calling file;
/// `github_cases!(sessions: a, b)` serves MCP in session mode (SSE answers, so progress
/// notifications reach the client).
#[macro_export]
macro_rules! github_cases {
    (@with $sessions:expr; $($case:ident),*) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    $crate::fake_github::run::<capsid_store_sqlite::SqliteStore, _>(stringify!($case), $sessions, |s, g| Box::pin(super::$case(s, g))).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    $crate::fake_github::run::<capsid_store_postgres::PgStore, _>(stringify!($case), $sessions, |s, g| Box::pin(super::$case(s, g))).await;
                }
            )*
        }
    };
    (sessions: $($case:ident),* $(,)?) => {
        $crate::github_cases!(@with true; $($case),*);
    };
    ($($case:ident),* $(,)?) => {
        $crate::github_cases!(@with false; $($case),*);
    };
}

/// Starts a fake GitHub and a server over a fresh `S` whose repo host is the real adapter
/// pointed at it, runs `case`, and tears everything down.
pub async fn run<S, F>(name: &str, sessions: bool, case: F)
where
    S: Backend,
    F: for<'a> FnOnce(
            &'a TestServer,
            &'a FakeGitHub,
        ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>
        + Send
        + 'static,
{
    capsid_http::install_tls_provider();
    let github = Arc::new(FakeGitHub::start().await);
    let options = ServerOptions {
        repo_host: Some(github.adapter()),
        sessions,
        ..ServerOptions::default()
    };
    crate::e2e::run::<S, _>(name, options, move |s| {
        Box::pin(async move { case(s, &github).await })
    })
    .await;
}
