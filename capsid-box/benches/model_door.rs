//! What the metered model door adds to a streamed call: time to first byte and total time of
//! the same Messages call sent straight to a fake upstream on loopback and through the door, in
//! one run, alternating, with p50 and p99 of each and the difference.
//!
//! `cargo bench -p capsid-box --bench model_door [-- --calls N --events N --gap-us N]`: each
//! answer is `--events` content events (default 40) sent `--gap-us` apart (default 200 µs, a
//! model streaming), after a `message_start` that is sent at once.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::response::Response;
use axum::routing::post;
use capsid_box::model_proxy::{ModelProxy, ProxyConfig, UpstreamAuth};
use capsid_core::drive::ledger::{PriceTable, Usd};
use serde_json::json;

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

fn upstream(events: u64, gap: Duration) -> Router {
    Router::new().route(
        "/v1/messages",
        post(move |_body: Bytes| async move {
            let start = format!(
                "event: message_start\ndata: {}\n\n",
                json!({"type": "message_start", "message": {"model": "claude-sonnet-4-5", "usage": {"input_tokens": 1000, "output_tokens": 1}}})
            );
            let stream = futures::stream::unfold(0u64, move |i| {
                let start = start.clone();
                async move {
                    let chunk = match i {
                        0 => start,
                        n if n <= events => {
                            tokio::time::sleep(gap).await;
                            format!(
                                "event: content_block_delta\ndata: {}\n\n",
                                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "word "}})
                            )
                        }
                        n if n == events + 1 => format!(
                            "event: message_delta\ndata: {}\n\nevent: message_stop\ndata: {}\n\n",
                            json!({"type": "message_delta", "usage": {"output_tokens": 200}}),
                            json!({"type": "message_stop"})
                        ),
                        _ => return None,
                    };
                    Some((Ok::<_, std::io::Error>(Bytes::from(chunk)), i + 1))
                }
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .expect("a response")
        }),
    )
}

async fn one(http: &reqwest::Client, url: &str, key: &str, body: &str) -> (Duration, Duration) {
    let t = Instant::now();
    let mut r = http
        .post(format!("{url}/v1/messages"))
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("a call");
    let mut first = None;
    while let Some(c) = r.chunk().await.expect("a chunk") {
        if first.is_none() && !c.is_empty() {
            first = Some(t.elapsed());
        }
    }
    (first.unwrap_or_else(|| t.elapsed()), t.elapsed())
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

fn main() {
    // `cargo bench` passes `--bench`; a plain `cargo test --benches` run passes nothing and
    // wants no work.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let calls = arg("--calls", 1000);
    let events = arg("--events", 40);
    let gap = Duration::from_micros(arg("--gap-us", 200));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let up = serve(upstream(events, gap)).await;
        let proxy = ModelProxy::new(
            ProxyConfig {
                spent_before: Default::default(),
                upstream: up.clone(),
                auth: UpstreamAuth::ApiKey("sk-upstream".into()),
                token: "job-token".into(),
                prices: PriceTable::default(),
                cap: Some(Usd::from_dollars(1_000_000.0).expect("a cap")),
            },
            None,
        )
        .expect("a proxy");
        let door = serve(proxy.router()).await;
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 4096, "stream": true,
            "messages": [{"role": "user", "content": "x".repeat(20_000)}]})
        .to_string();
        let http = reqwest::Client::new();
        // Warm both paths (connections, allocator).
        for _ in 0..20 {
            one(&http, &up, "sk-upstream", &body).await;
            one(&http, &door, "job-token", &body).await;
        }
        let (mut d_first, mut d_total, mut p_first, mut p_total) = (vec![], vec![], vec![], vec![]);
        for i in 0..calls {
            // Alternate which goes first, so drift hits both alike.
            let order = if i % 2 == 0 { [false, true] } else { [true, false] };
            for through in order {
                if through {
                    let (f, t) = one(&http, &door, "job-token", &body).await;
                    p_first.push(f);
                    p_total.push(t);
                } else {
                    let (f, t) = one(&http, &up, "sk-upstream", &body).await;
                    d_first.push(f);
                    d_total.push(t);
                }
            }
        }
        assert_eq!(proxy.calls().len() as u64, calls + 20, "every call was metered");
        println!(
            "model door: {calls} streamed calls each way, {events} events {gap:?} apart, 20 KB prompt"
        );
        println!("measure            direct p50  door p50  added p50  direct p99  door p99  added p99 (ms)");
        for (name, d, p) in [
            ("time to first byte", &mut d_first, &mut p_first),
            ("total time", &mut d_total, &mut p_total),
        ] {
            let (d50, p50) = (pct(d, 0.5), pct(p, 0.5));
            let (d99, p99) = (pct(d, 0.99), pct(p, 0.99));
            println!(
                "{name:<18} {:>10} {:>9} {:>10} {:>11} {:>9} {:>10}",
                ms(d50),
                ms(p50),
                ms(p50.saturating_sub(d50)),
                ms(d99),
                ms(p99),
                ms(p99.saturating_sub(d99))
            );
        }
        println!("metered: {} over {} calls", proxy.spent(), proxy.calls().len());
    });
}
