//! The Handler API's routes, each the tool call it stands for: path segments and query
//! parameters become the tool's arguments (which it bounds and checks), a JSON body's known
//! fields too.

use std::collections::BTreeMap;

use axum::Extension;
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use capsid_core::caller::Caller;
use serde_json::{Map, Value, json};

use super::{BODY_LIMIT, call, call_value, error};
use crate::AppState;

/// Every route.
pub(super) fn table() -> Router<AppState> {
    Router::new()
        .route("/projects", get(projects).post(register_project))
        .route("/projects/{ns}/agents", get(agents).post(spawn_agent))
        .route("/projects/{ns}/agents/{name}/checkmark", get(checkmark))
        .route("/projects/{ns}/agents/{name}/log", get(log))
        .route("/projects/{ns}/agents/{name}/answer", post(answer))
        .route("/projects/{ns}/agents/{name}/resume", post(resume))
        .route("/projects/{ns}/log/{id}/promote", post(promote))
        .route("/projects/{ns}/jobs/{id}/raise", post(raise))
        .route("/shared/log", get(shared_log))
        .route("/shared/context", get(shared_list))
        .route(
            "/shared/context/{key}",
            get(shared_get).put(shared_put).delete(shared_delete),
        )
}

type Segments<T> = Result<Path<T>, PathRejection>;

fn segments<T>(path: Segments<T>) -> Result<T, Response> {
    path.map(|Path(p)| p).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            &format!("the path could not be read: {e}"),
        )
    })
}

/// The query string's parameters; each appears at most once.
fn query(raw: Option<String>) -> Result<BTreeMap<String, String>, Response> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.as_deref().unwrap_or(""))
        .map_err(|e| {
            error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!("the query string could not be read: {e}"),
            )
        })?;
    let mut out = BTreeMap::new();
    for (k, v) in pairs {
        if out.insert(k.clone(), v).is_some() {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!("query parameter {k} is given twice"),
            ));
        }
    }
    Ok(out)
}

/// Copies the paging parameters (`cursor`, `limit`, and for the feed `namespace`) into `args`.
fn paging(
    params: &BTreeMap<String, String>,
    args: &mut Value,
    allowed: &[&str],
) -> Result<(), Response> {
    for key in params.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!(
                    "unknown query parameter {key}; this route takes {}",
                    allowed.join(", ")
                ),
            ));
        }
    }
    if let Some(c) = params.get("cursor") {
        args["cursor"] = json!(c);
    }
    if let Some(ns) = params.get("namespace") {
        args["namespace"] = json!(ns);
    }
    if let Some(l) = params.get("limit") {
        let n: u32 = l.parse().map_err(|_| {
            error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!("limit must be a whole number from 1 to 100, got {l:?}"),
            )
        })?;
        args["limit"] = json!(n);
    }
    Ok(())
}

/// The request body as a JSON object (an empty body is an empty object).
async fn body_object(body: Body) -> Result<Map<String, Value>, Response> {
    let bytes = to_bytes(body, BODY_LIMIT).await.map_err(|_| {
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            &format!("the body is larger than {BODY_LIMIT} bytes"),
        )
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "the body must be a JSON object",
        )),
        Err(e) => Err(error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            &format!("the body is not JSON: {e}"),
        )),
    }
}

/// Copies the body's `fields` into `args`, refusing any other field by name.
fn fields(body: Map<String, Value>, args: &mut Value, allowed: &[&str]) -> Result<(), Response> {
    for (k, v) in body {
        if !allowed.contains(&k.as_str()) {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!("unknown field {k}; this route takes {}", allowed.join(", ")),
            ));
        }
        args[k] = v;
    }
    Ok(())
}

/// `GET /api/projects`: the namespaces the caller may read (the `namespaces` tool).
async fn projects(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Response {
    match call_value(&state, &caller, "namespaces", json!({})).await {
        Ok(mut list) => {
            unnest_repos(&mut list);
            for project in list.as_array_mut().into_iter().flatten() {
                project_row(project);
            }
            axum::Json(json!({ "projects": list })).into_response()
        }
        Err(r) => r,
    }
}

/// What the sister design's project rows hold, beside the namespace's own fields: the root
/// folder its driver works in, its remote (the primary repository it maps) and where its
/// credential is (a reference, never the secret), each `null` when not set.
fn project_row(project: &mut Value) {
    let runner = project.get("runner").cloned().unwrap_or(Value::Null);
    let remote = project["repos"].as_array().and_then(|repos| {
        repos
            .iter()
            .find(|r| r["label"] == "primary")
            .or_else(|| repos.first())
            .and_then(|r| r["repo"].as_str())
            .map(str::to_owned)
    });
    if let Value::Object(map) = project {
        map.insert("root_dir".into(), runner["root_dir"].clone());
        map.insert("remote".into(), json!(remote));
        map.insert("credential_ref".into(), runner["credential_ref"].clone());
    }
}

/// The `namespaces` tool keeps the reference's wire shape, where `repos` (and `runner`) are
/// JSON text inside the JSON; `/api` is this server's own, so they are arrays and objects
/// there. A value that does not parse is left as it is.
fn unnest_repos(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(unnest_repos),
        Value::Object(map) => {
            for key in ["repos", "runner"] {
                if let Some(Value::String(text)) = map.get(key)
                    && let Ok(parsed @ (Value::Array(_) | Value::Object(_))) =
                        serde_json::from_str::<Value>(text)
                {
                    map.insert(key.to_owned(), parsed);
                }
            }
            for (_, inner) in map.iter_mut() {
                if inner.is_array() {
                    unnest_repos(inner);
                }
            }
        }
        _ => {}
    }
}

/// The runner settings `POST /api/projects` takes beside the namespace and its repositories
/// (`update_namespace`'s), and the monthly budget.
const PROJECT_SETTINGS: [&str; 12] = [
    "root_dir",
    "test_command",
    "build_command",
    "agent_command",
    "credential_ref",
    "job_max_cost_usd",
    "runtime",
    "migration_tools",
    "protected_branches",
    "dispatch_limits",
    "deploy_command",
    "monthly_budget_usd",
];

/// `POST /api/projects` `{"namespace": "demo", "repo": "owner/name", "test_command": "...",
/// ...}`: `register_namespace` with its repositories (`repo` and `label`, or `repos` as an
/// array), then `update_namespace` with the runner settings given (an admin's key, as both
/// tools are). The settings are checked before anything is registered, so a bad one
/// registers nothing. Answers 201 with the project as `GET /api/projects` shows it.
async fn register_project(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    body: Body,
) -> Response {
    let body = match body_object(body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let mut register = json!({});
    let mut settings = json!({});
    let mut allowed = vec!["namespace", "repo", "label", "repos"];
    allowed.extend(PROJECT_SETTINGS);
    for (k, v) in body {
        if !allowed.contains(&k.as_str()) {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                &format!("unknown field {k}; this route takes {}", allowed.join(", ")),
            );
        }
        match k.as_str() {
            // The tool takes the list as JSON text; the API takes it as JSON.
            "repos" if v.is_array() => register[k] = json!(v.to_string()),
            "namespace" | "repo" | "label" | "repos" => register[k] = v,
            _ => settings[k] = v,
        }
    }
    let Some(ns) = register["namespace"].as_str().map(str::to_owned) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "namespace is required: the project's name (a namespace)",
        );
    };
    if let Err(why) = runner_patch(&settings).and_then(|patch| {
        capsid_core::drive::runner::RunnerSettings::default()
            .apply(&patch)
            .map(drop)
    }) {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            &format!("{why}; nothing was registered"),
        );
    }
    if let Err(r) = call_value(&state, &caller, "register_namespace", register).await {
        return r;
    }
    if settings.as_object().is_some_and(|m| !m.is_empty()) {
        settings["namespace"] = json!(ns);
        if let Err(r) = call_value(&state, &caller, "update_namespace", settings).await {
            return r;
        }
    }
    match call_value(&state, &caller, "namespaces", json!({})).await {
        Ok(mut list) => {
            unnest_repos(&mut list);
            let mut project = list
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["namespace"] == ns.as_str()))
                .cloned()
                .unwrap_or_else(|| json!({"namespace": ns}));
            project_row(&mut project);
            (
                StatusCode::CREATED,
                axum::Json(json!({"ok": true, "project": project})),
            )
                .into_response()
        }
        Err(r) => r,
    }
}

/// The runner fields of a `POST /api/projects` body as the settings' patch (text fields; a
/// number for `job_max_cost_usd` is taken as its decimal text), or why one is not text.
fn runner_patch(settings: &Value) -> Result<capsid_core::drive::runner::RunnerPatch, String> {
    let text = |k: &str| -> Result<Option<String>, String> {
        match &settings[k] {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            Value::Number(n) if k == "job_max_cost_usd" => Ok(Some(n.to_string())),
            other => Err(format!("{k}: must be text, not {other}")),
        }
    };
    Ok(capsid_core::drive::runner::RunnerPatch {
        root_dir: text("root_dir")?,
        test_command: text("test_command")?,
        build_command: text("build_command")?,
        agent_command: text("agent_command")?,
        credential_ref: text("credential_ref")?,
        job_max_cost_usd: text("job_max_cost_usd")?,
        runtime: text("runtime")?,
        migration_tools: text("migration_tools")?,
        protected_branches: text("protected_branches")?,
        dispatch_limits: text("dispatch_limits")?,
        deploy_command: text("deploy_command")?,
    })
}

/// `POST /api/projects/{ns}/agents` `{"role": "scout", "brief": "..."}`: posts a job for that
/// role (`jobs post`, signed with its role; `title`, `runtime`, `max_cost_usd` and `priority`
/// optional): a running driver of the namespace picks it up. Answers 201 with the job.
async fn spawn_agent(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<String>,
    body: Body,
) -> Response {
    let ns = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut args = json!({"action": "post", "namespace": ns});
    match body_object(body).await {
        Ok(b) => {
            if let Err(r) = fields(
                b,
                &mut args,
                &[
                    "role",
                    "brief",
                    "title",
                    "runtime",
                    "max_cost_usd",
                    "priority",
                ],
            ) {
                return r;
            }
        }
        Err(r) => return r,
    }
    let (Some(role), Some(brief)) = (
        args["role"].as_str().map(str::to_owned),
        args.get("brief").and_then(Value::as_str).map(str::to_owned),
    ) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "role and brief are required: the role to run (scout, planner, junior, senior, deploy, or one the namespace's signed role documents define) and what it is asked to do",
        );
    };
    if let Value::Object(map) = &mut args {
        map.remove("brief");
        map.insert("body".into(), json!(brief));
        if !map.contains_key("title") {
            let first = brief.lines().next().unwrap_or("").trim();
            let title: String = format!("{role}: {first}").chars().take(120).collect();
            map.insert("title".into(), json!(title));
        }
    }
    match call_value(&state, &caller, "jobs", args).await {
        Ok(v) if v["ok"] == json!(true) => (StatusCode::CREATED, axum::Json(v)).into_response(),
        Ok(v) => (StatusCode::CONFLICT, axum::Json(v)).into_response(),
        Err(r) => r,
    }
}

/// `GET /api/projects/{ns}/agents`: `checkmarks list`.
async fn agents(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<String>,
) -> Response {
    let ns = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    call(
        &state,
        &caller,
        "checkmarks",
        json!({"action": "list", "namespace": ns}),
    )
    .await
}

/// `POST /api/projects/{ns}/log/{id}/promote`: `checkmarks promote` (the tool reads and
/// refuses an id that is not a whole number, naming `entry_id`).
async fn promote(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<(String, String)>,
) -> Response {
    let (ns, id) = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let entry_id = id.parse::<i64>().map_or_else(|_| json!(id), |n| json!(n));
    let args = json!({"action": "promote", "namespace": ns, "entry_id": entry_id});
    call(&state, &caller, "checkmarks", args).await
}

/// `GET /api/projects/{ns}/agents/{name}/checkmark`: `checkmarks get`.
async fn checkmark(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<(String, String)>,
) -> Response {
    let (ns, name) = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let args = json!({"action": "get", "namespace": ns, "agent": name});
    call(&state, &caller, "checkmarks", args).await
}

/// `GET /api/projects/{ns}/agents/{name}/log?cursor=&limit=`: `checkmarks log`.
async fn log(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Response {
    let (ns, name) = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut args = json!({"action": "log", "namespace": ns, "agent": name});
    if let Err(r) = query(raw).and_then(|q| paging(&q, &mut args, &["cursor", "limit"])) {
        return r;
    }
    call(&state, &caller, "checkmarks", args).await
}

/// `POST /api/projects/{ns}/agents/{name}/answer` `{"answer": "...", "resume": false}`:
/// `checkmarks answer`.
async fn answer(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<(String, String)>,
    body: Body,
) -> Response {
    let (ns, name) = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut args = json!({"action": "answer", "namespace": ns, "agent": name});
    match body_object(body).await {
        Ok(b) => {
            if let Err(r) = fields(b, &mut args, &["answer", "resume"]) {
                return r;
            }
        }
        Err(r) => return r,
    }
    call(&state, &caller, "checkmarks", args).await
}

/// `POST /api/projects/{ns}/agents/{name}/resume`: `checkmarks resume`.
async fn resume(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<(String, String)>,
    body: Body,
) -> Response {
    let (ns, name) = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut args = json!({"action": "resume", "namespace": ns, "agent": name});
    match body_object(body).await {
        Ok(b) => {
            if let Err(r) = fields(b, &mut args, &[]) {
                return r;
            }
        }
        Err(r) => return r,
    }
    call(&state, &caller, "checkmarks", args).await
}

/// `POST /api/projects/{ns}/jobs/{id}/raise` `{"max_cost_usd": 2.5}`: `jobs raise` (a key
/// with `can_raise_budget`); a job blocked at its budget gate is resumed by it.
async fn raise(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<(String, String)>,
    body: Body,
) -> Response {
    let (ns, id) = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut args = json!({"action": "raise", "namespace": ns, "id": id});
    match body_object(body).await {
        Ok(b) => {
            if let Err(r) = fields(b, &mut args, &["max_cost_usd"]) {
                return r;
            }
        }
        Err(r) => return r,
    }
    call(&state, &caller, "jobs", args).await
}

/// `GET /api/shared/log?cursor=&limit=&namespace=`: `checkmarks feed`.
async fn shared_log(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    RawQuery(raw): RawQuery,
) -> Response {
    let mut args = json!({"action": "feed"});
    if let Err(r) =
        query(raw).and_then(|q| paging(&q, &mut args, &["cursor", "limit", "namespace"]))
    {
        return r;
    }
    call(&state, &caller, "checkmarks", args).await
}

/// `GET /api/shared/context`: `shared list`.
async fn shared_list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Response {
    call(&state, &caller, "shared", json!({"action": "list"})).await
}

/// `GET /api/shared/context/{key}`: `shared get`.
async fn shared_get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<String>,
) -> Response {
    let key = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    call(
        &state,
        &caller,
        "shared",
        json!({"action": "get", "key": key}),
    )
    .await
}

/// `PUT /api/shared/context/{key}` `{"value": "..."}`: `shared set` (needs can_write_shared).
async fn shared_put(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<String>,
    body: Body,
) -> Response {
    let key = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut args = json!({"action": "set", "key": key});
    match body_object(body).await {
        Ok(b) => {
            if let Err(r) = fields(b, &mut args, &["value"]) {
                return r;
            }
        }
        Err(r) => return r,
    }
    call(&state, &caller, "shared", args).await
}

/// `DELETE /api/shared/context/{key}`: `shared delete` (needs can_write_shared).
async fn shared_delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    path: Segments<String>,
) -> Response {
    let key = match segments(path) {
        Ok(p) => p,
        Err(r) => return r,
    };
    call(
        &state,
        &caller,
        "shared",
        json!({"action": "delete", "key": key}),
    )
    .await
}
