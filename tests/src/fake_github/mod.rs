//! A fake GitHub for the real `capsid-github` adapter: a small axum app on a loopback port
//! that verifies every App JWT's RS256 signature and claims against the App's public key and
//! a clock the test drives, hands out repository-scoped installation tokens with expiries,
//! serves the REST endpoints the adapter calls with GitHub's JSON shapes over little git
//! histories, and records every call so tests can count them. Nothing reaches the internet.

mod actions;
mod auth;
mod cases;
mod keys;
mod model;
mod routes;
mod setup;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use capsid_core::time::{HOUR_MS, ManualClock, Timestamp};
use capsid_github::{GitHubApp, GitHubConfig, RetryPolicy};
use tokio::sync::oneshot;

pub use cases::run;
pub use keys::{TestKey, other_test_key, test_key};
pub use model::{Call, Job, Step};
pub use setup::{job, step};

/// The App's client id the fake expects as the JWT issuer.
pub const CLIENT_ID: &str = "Iv1.capsidtestapp";

pub(crate) struct Shared {
    pub state: Mutex<model::State>,
    /// Holds blob reads while a test says so ([`FakeGitHub::hold_blobs_after`]).
    pub blob_gate: BlobGate,
    pub clock: Arc<ManualClock>,
    pub key: &'static TestKey,
    pub url: String,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, model::State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running fake GitHub.
pub struct FakeGitHub {
    /// `http://127.0.0.1:<port>`, passed as the adapter's base URL.
    pub url: String,
    /// The clock the fake checks JWTs and token expiries against, shared with the adapter.
    pub clock: Arc<ManualClock>,
    pub(crate) shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
}

impl FakeGitHub {
    /// Starts the fake on a free loopback port; its clock starts at the real now.
    pub async fn start() -> FakeGitHub {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(
            i64::try_from(now).unwrap_or(0),
        )));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake GitHub");
        let url = format!(
            "http://127.0.0.1:{}",
            listener.local_addr().expect("address").port()
        );
        let state = model::State {
            token_ttl_ms: HOUR_MS,
            ..model::State::default()
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            blob_gate: BlobGate::default(),
            clock: clock.clone(),
            key: test_key(),
            url: url.clone(),
        });
        let app = axum::Router::new()
            .fallback(auth::handle)
            .with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        FakeGitHub {
            url,
            clock,
            shared,
            stop: Some(stop),
        }
    }

    /// The adapter's configuration for this fake, signed with `key`, with zero backoffs and
    /// poll pauses so no test waits for real time (the waits themselves are unit-tested in
    /// `capsid-github`'s `retry_wait`).
    pub fn config_with(&self, key: &TestKey) -> GitHubConfig {
        let mut config = GitHubConfig::new(CLIENT_ID, &key.private_pem, Some(&self.url));
        config.retry = RetryPolicy {
            secondary_retries: 3,
            backoff: Duration::ZERO,
            max_wait: Duration::ZERO,
        };
        config.dispatch_poll_interval = Duration::ZERO;
        config
    }

    /// The real adapter pointed at this fake, with the App's key and the fake's clock.
    pub fn adapter(&self) -> Arc<GitHubApp> {
        Arc::new(
            GitHubApp::new(self.config_with(test_key()), self.clock.clone())
                .expect("the adapter accepts the test key"),
        )
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.lock().calls.clone()
    }

    /// Calls whose method is `method` and whose path contains `part`.
    pub fn count(&self, method: &str, part: &str) -> usize {
        self.shared
            .lock()
            .calls
            .iter()
            .filter(|c| c.method == method && c.path.contains(part))
            .count()
    }

    /// Installation tokens handed out so far.
    pub fn token_requests(&self) -> usize {
        self.count("POST", "/access_tokens")
    }

    /// Why credentials were refused so far.
    pub fn refusals(&self) -> Vec<String> {
        self.shared.lock().refusals.clone()
    }

    /// Stops the fake.
    pub fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Lets `git/blobs` reads through, or holds each one past a number the test set until the
/// test opens the gate: a call that reads many files can then be caught mid-way, without
/// timing.
#[derive(Default)]
pub(crate) struct BlobGate {
    permits: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
    waiting: std::sync::atomic::AtomicUsize,
    arrived: tokio::sync::Notify,
}

impl BlobGate {
    /// Waits while the gate holds this read.
    pub async fn pass(&self) {
        use std::sync::atomic::Ordering;
        let permits = self
            .permits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(permits) = permits else {
            return;
        };
        if let Ok(permit) = permits.try_acquire() {
            permit.forget();
            return;
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        self.arrived.notify_one();
        if let Ok(permit) = permits.acquire().await {
            permit.forget();
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl FakeGitHub {
    /// From now on, lets `n` more blob reads through and holds every later one until
    /// [`FakeGitHub::open_blobs`].
    pub fn hold_blobs_after(&self, n: usize) {
        *self
            .shared
            .blob_gate
            .permits
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(tokio::sync::Semaphore::new(n)));
    }

    /// Waits until a blob read is held at the gate.
    pub async fn blob_held(&self) {
        use std::sync::atomic::Ordering;
        let gate = &self.shared.blob_gate;
        while gate.waiting.load(Ordering::SeqCst) == 0 {
            gate.arrived.notified().await;
        }
    }

    /// Lets every held and later blob read through.
    pub fn open_blobs(&self) {
        let permits = self
            .shared
            .blob_gate
            .permits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(permits) = permits {
            permits.add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
        }
    }
}
