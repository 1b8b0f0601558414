//! A real S3-compatible server for the S3 tests: `moto_server` (PyPI's `moto[server]`) on a
//! free loopback port, started by the test and stopped when dropped. `scripts/test.sh`
//! installs it; when it is missing, the S3 cases fail under `CI=true` and are reported loudly
//! as not run elsewhere, never silently skipped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `moto_server`.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Moto {
    /// Starts one, or `None` (after a loud notice) when `moto_server` is not installed outside
    /// CI. Under `CI=true` a missing server fails the calling test.
    pub async fn start(case: &str) -> Option<Moto> {
        capsid_http::install_tls_provider();
        let port = free_port();
        let spawned = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                panic!("moto_server could not start ({e}) and CI=true: the S3 case {case} must run")
            }
            Err(e) => {
                eprintln!(
                    "\n!!!!! S3 CASE NOT RUN: {case}\n!!!!! moto_server could not start ({e}); \
                     `pip install 'moto[server]'` (scripts/test.sh does). This is NOT a pass.\n"
                );
                return None;
            }
        };
        let moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let http = reqwest::Client::new();
        let began = Instant::now();
        // Readiness is polled (the server is another process); no test asserts on time.
        while began.elapsed() < Duration::from_secs(30) {
            if http.get(&moto.endpoint).send().await.is_ok() {
                return Some(moto);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "moto_server did not answer on {} within 30 s",
            moto.endpoint
        );
    }

    /// Creates `bucket`.
    pub async fn bucket(&self, bucket: &str) {
        let status = reqwest::Client::new()
            .put(format!("{}/{bucket}", self.endpoint))
            .send()
            .await
            .expect("create the bucket")
            .status();
        assert!(status.is_success(), "creating bucket {bucket}: {status}");
    }

    /// The S3 settings that point `object_store` at this server.
    pub fn config(&self) -> Vec<(&'static str, String)> {
        vec![
            ("aws_endpoint", self.endpoint.clone()),
            ("aws_allow_http", "true".to_owned()),
            ("aws_access_key_id", "testing".to_owned()),
            ("aws_secret_access_key", "testing".to_owned()),
            ("aws_region", "us-east-1".to_owned()),
        ]
    }
}
