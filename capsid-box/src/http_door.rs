//! A door that lets through HTTP requests for a few paths of one server and nothing else:
//! Capsid's MCP endpoint for the agent's own tools and hooks. Each request is sent again to
//! the server under the server's own authority (so its `Host` is one the server allows),
//! both bodies streamed (MCP answers may be server-sent events), and every other path, or
//! another method, is answered here without reaching the server: the box gets the endpoint,
//! not the host's server with its every route.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, StatusCode};

/// How long the server may take to start answering.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The headers never passed through (hop-by-hop, and what the client sets itself).
const DROPPED: [&str; 8] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "content-length",
];

struct Forward {
    http: reqwest::Client,
    base: String,
    paths: Vec<String>,
}

/// Why a door could not be built.
#[derive(Debug, thiserror::Error)]
pub enum HttpDoorError {
    /// The server's base URL is not `http://host[:port]`.
    #[error("the server's URL must be http://host[:port] with no path, got {0:?}")]
    BadBase(String),
    /// The HTTP client did not build.
    #[error("building the door's HTTP client: {0}")]
    Client(String),
}

/// The door's router: `paths` (exact request paths, such as `/ops/mcp`) of the server at
/// `base` (`http://127.0.0.1:8787`), with the methods MCP's Streamable HTTP uses (`POST`,
/// `GET`, `DELETE`).
pub fn router(base: &str, paths: &[&str]) -> Result<Router, HttpDoorError> {
    let base = base.trim_end_matches('/');
    if !base
        .strip_prefix("http://")
        .is_some_and(|a| !a.is_empty() && !a.contains('/'))
    {
        return Err(HttpDoorError::BadBase(base.to_owned()));
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| HttpDoorError::Client(e.to_string()))?;
    let forward = Arc::new(Forward {
        http,
        base: base.to_owned(),
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
    });
    Ok(Router::new().fallback(forward_one).with_state(forward))
}

fn plain(status: StatusCode, text: String) -> Response {
    (status, [(http::header::CONTENT_TYPE, "text/plain")], text).into_response()
}

fn passed(headers: &HeaderMap) -> reqwest::header::HeaderMap {
    let mut out = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        if !DROPPED.contains(&name.as_str()) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

async fn forward_one(State(f): State<Arc<Forward>>, req: Request) -> Response {
    let path = req.uri().path().to_owned();
    if !f.paths.contains(&path) {
        return plain(
            StatusCode::NOT_FOUND,
            format!(
                "capsid: this door serves only Capsid's MCP endpoint ({}), not {path}\n",
                f.paths.join(", ")
            ),
        );
    }
    let method = req.method().clone();
    if !matches!(method, Method::POST | Method::GET | Method::DELETE) {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("capsid: this door takes POST, GET and DELETE, not {method}\n"),
        );
    }
    let url = match req.uri().query() {
        Some(q) => format!("{}{path}?{q}", f.base),
        None => format!("{}{path}", f.base),
    };
    let headers = passed(req.headers());
    let body = reqwest::Body::wrap_stream(req.into_body().into_data_stream());
    let sent = f
        .http
        .request(method, url)
        .headers(headers)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(resp) => {
            let status =
                StatusCode::from_u16(resp.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
            let mut headers = HeaderMap::new();
            for (name, value) in resp.headers() {
                if !DROPPED.contains(&name.as_str()) {
                    headers.append(name.clone(), value.clone());
                }
            }
            let mut out = Response::new(Body::from_stream(resp.bytes_stream()));
            *out.status_mut() = status;
            *out.headers_mut() = headers;
            out
        }
        Err(e) => plain(
            StatusCode::BAD_GATEWAY,
            format!("capsid: Capsid's server could not be reached through the door: {e}\n"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::any;

    async fn serve(router: Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn only_the_named_paths_reach_the_server_under_its_own_host() {
        let server = serve(Router::new().route(
            "/{*rest}",
            any(|req: Request| async move {
                let host = req
                    .headers()
                    .get("host")
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                let auth = req
                    .headers()
                    .get("authorization")
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                format!("{} {} host={host} auth={auth}", req.method(), req.uri())
            }),
        ))
        .await;
        let door = serve(router(&server, &["/ops/mcp"]).unwrap()).await;
        let http = reqwest::Client::new();
        let ok = http
            .post(format!("{door}/ops/mcp?x=1"))
            .header("authorization", "Bearer run")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), 200);
        let text = ok.text().await.unwrap();
        let authority = server.trim_start_matches("http://");
        assert_eq!(
            text,
            format!("POST /ops/mcp?x=1 host={authority} auth=Bearer run")
        );
        for path in ["/health", "/api/projects", "/ops/mcp/", "/console"] {
            let r = http.get(format!("{door}{path}")).send().await.unwrap();
            assert_eq!(r.status(), 404, "{path}");
            assert!(
                r.text()
                    .await
                    .unwrap()
                    .contains("only Capsid's MCP endpoint")
            );
        }
        let put = http.put(format!("{door}/ops/mcp")).send().await.unwrap();
        assert_eq!(put.status(), 405);
        assert!(router("https://x", &["/ops/mcp"]).is_err());
        assert!(router("http://x/ops", &["/ops/mcp"]).is_err());
    }
}
