//! Operations, end to end over HTTP: `/metrics` read by a Prometheus text parser, and the
//! faults a server survives (Postgres restarted under load, an exhausted pool, a full SQLite
//! database, corrupt settings) without a 500, answering 503 with `Retry-After` meanwhile.

mod metrics;

use std::collections::HashMap;

use capsid_tests::e2e_cases;

/// A GET with an optional bearer key and `Accept`: (status, lower-cased headers, body).
pub(crate) async fn http_get(
    url: &str,
    key: Option<&str>,
    accept: Option<&str>,
) -> (u16, HashMap<String, String>, String) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let resp = req
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body = resp.text().await.unwrap_or_default();
    (status, headers, body)
}

use metrics::metrics_need_a_read_key_and_serve_every_family;

e2e_cases!(capsid_tests::server::ServerOptions::default(); metrics_need_a_read_key_and_serve_every_family);
