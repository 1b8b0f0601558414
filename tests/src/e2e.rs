//! Runs an end-to-end scenario against a real server over each backend: the macro
//! [`e2e_cases!`](crate::e2e_cases) expands every scenario once per store, each on a fresh store.

/// Expands `sqlite::<case>` and `postgres::<case>` tests for each scenario `case(&TestServer)`
/// in the calling file, with the given server options.
#[macro_export]
macro_rules! e2e_cases {
    ($options:expr; $($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    $crate::e2e::run::<capsid_store_sqlite::SqliteStore, _>(stringify!($case), $options, |s| Box::pin(super::$case(s))).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    $crate::e2e::run::<capsid_store_postgres::PgStore, _>(stringify!($case), $options, |s| Box::pin(super::$case(s))).await;
                }
            )*
        }
    };
}

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use capsid_core::ports::Store;

use crate::harness::Backend;
use crate::server::{ServerOptions, TestServer};

/// Starts a server over a fresh `S`, runs `case`, and tears both down. A backend that is not
/// available here is reported by the harness (and fails under `CI=true`).
pub async fn run<S, F>(name: &str, options: ServerOptions, case: F)
where
    S: Backend,
    F: for<'a> FnOnce(&'a TestServer) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>,
{
    let Some(fresh) = S::fresh(name).await else {
        return;
    };
    let store: Arc<dyn Store> = fresh.store.clone();
    let mut server = TestServer::start(store, options).await;
    server.probe = Some(fresh.probe.clone());
    case(&server).await;
    server.stop().await;
    fresh.finish().await;
}
