//! `GET /console/documents?namespace=<ns>[&path=<path>]`: a namespace's documents listed, and
//! one document shown, read-only. The core answers through the `list` and `read` tools (the
//! one scope check); this module renders, escaping every value. Bad input is a 400 page, a
//! namespace or document that does not exist a 404 page.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use capsid_core::error::Error;
use serde_json::Value;

use super::page::text;
use super::{Site, bearer_refusal, query_of, session};
use crate::AppState;
use crate::html::{esc, message, page};

/// Query-escapes `text` for a link.
fn q(text: &str) -> String {
    serde_urlencoded::to_string([("", text)])
        .map(|s| s.trim_start_matches('=').to_owned())
        .unwrap_or_default()
}

/// The link to `namespace`'s documents (or one of them).
pub(super) fn link(namespace: &str, path: Option<&str>) -> String {
    let path = path.map_or(String::new(), |p| format!("&path={}", q(p)));
    esc(&format!(
        "/console/documents?namespace={}{path}",
        q(namespace)
    ))
}

/// A core refusal as a page: bad input 400, missing 404, refused 403, a failure 503.
fn refusal_page(e: &Error) -> Response {
    let (status, title) = match e {
        Error::NotFound(_) => (StatusCode::NOT_FOUND, "Not found"),
        Error::Forbidden(_) | Error::Denied(_) => (StatusCode::FORBIDDEN, "Not allowed"),
        Error::Internal(_) | Error::Unavailable(_) | Error::StoreUnavailable(_) => {
            return super::core_error(e);
        }
        _ => (StatusCode::BAD_REQUEST, "Bad request"),
    };
    message(status, title, &e.to_string())
}

fn listing(namespace: &str, out: &Value) -> String {
    let mut rows = String::new();
    for d in out["documents"].as_array().into_iter().flatten() {
        let path = d["path"].as_str().unwrap_or_default();
        rows.push_str(&format!(
            "<tr><td><a href=\"{}\"><code>{}</code></a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            link(namespace, Some(path)),
            esc(path),
            esc(&text(&d["title"])),
            esc(&text(&d["type"])),
            esc(&text(&d["status"])),
            esc(&text(&d["updated_at"])),
        ));
    }
    if rows.is_empty() {
        rows.push_str("<tr><td colspan=\"5\" class=\"muted\">No documents yet.</td></tr>");
    }
    let note = out["note"].as_str().map_or(String::new(), |n| {
        format!("<p class=\"warn\">{}</p>", esc(n))
    });
    format!(
        "<p><a href=\"/console\">← Console</a></p><h1>Documents of {ns}</h1>{note}\
         <table><tr><th>path</th><th>title</th><th>type</th><th>status</th><th>updated</th></tr>{rows}</table>",
        ns = esc(namespace),
    )
}

fn document(namespace: &str, d: &Value) -> String {
    format!(
        "<p><a href=\"/console\">← Console</a> · <a href=\"{back}\">Documents of {ns}</a></p>\
         <h1>{title}</h1><p class=\"muted\"><code>{ns}/{path}</code> · {kind} · {status} · updated {updated} by {actor}</p>\
         <pre class=\"doc\">{body}</pre>",
        back = link(namespace, None),
        ns = esc(namespace),
        title = esc(d["title"]
            .as_str()
            .unwrap_or(d["path"].as_str().unwrap_or(""))),
        path = esc(&text(&d["path"])),
        kind = esc(&text(&d["type"])),
        status = esc(&text(&d["status"])),
        updated = esc(&text(&d["updated_at"])),
        actor = esc(&text(&d["last_actor"])),
        body = esc(d["body"].as_str().unwrap_or("")),
    )
}

/// The route.
pub async fn console_documents(State(state): State<AppState>, req: Request) -> Response {
    if let Some(r) = bearer_refusal(req.headers()) {
        return r;
    }
    let site = Site::of(&state);
    let Some((caller, _)) = (match session(&state, &site, req.headers()).await {
        Ok(s) => s,
        Err(r) => return r,
    }) else {
        return message(
            StatusCode::UNAUTHORIZED,
            "Signed out",
            "Sign in at /console first (with GitHub, or with a link of `capsid console login`).",
        );
    };
    let query = query_of(&req);
    let Some(namespace) = query.get("namespace").filter(|n| !n.is_empty()) else {
        return message(
            StatusCode::BAD_REQUEST,
            "Bad request",
            "console documents: namespace is required",
        );
    };
    let service = &state.owner_service;
    match query.get("path") {
        None => match service.console_documents(&caller, namespace).await {
            Ok(out) => page(
                StatusCode::OK,
                &format!("Documents of {namespace}"),
                &listing(namespace, &out),
                &[],
            ),
            Err(e) => refusal_page(&e),
        },
        Some(path) => match service.console_document(&caller, namespace, path).await {
            Ok(d) => page(
                StatusCode::OK,
                &format!("{namespace}/{path}"),
                &document(namespace, &d),
                &[],
            ),
            Err(e) => refusal_page(&e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn listing_and_document_are_escaped_and_linked() {
        let out = json!({"documents": [{"path": "notes/<x>.md", "title": "T&", "type": "note", "status": "active", "updated_at": "t"}]});
        let html = listing("alpha", &out);
        assert!(html.contains("/console/documents?namespace=alpha&amp;path=notes%2F%3Cx%3E.md"));
        assert!(html.contains("notes/&lt;x&gt;.md") && html.contains("T&amp;"));
        let d = json!({"path": "a.md", "title": null, "type": "note", "status": "active", "body": "<script>x</script>", "last_actor": "cli:me"});
        let html = document("alpha", &d);
        assert!(html.contains("&lt;script&gt;x&lt;/script&gt;") && !html.contains("<script>"));
        assert!(html.contains("<h1>a.md</h1>"));
    }
}
