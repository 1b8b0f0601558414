//! `capsid drive --rehearse` (issue 53, item 19): the whole loop on the user's own repository
//! without a model account. The driver posts a rehearsal job in the namespace, claims it, and
//! runs the real agent CLI exactly as for any job (the box, the doors, the hooks, the driver's
//! own tests, the verdict), except that the metered model door forwards to a scripted model in
//! the driver's own process instead of a paid API. The scripted model writes one file, runs the
//! project's test command, commits and pushes the job's branch `capsid/<job>`, and says it is
//! done; nothing but that throwaway branch is touched (no pull request is opened), and the
//! door counts no token, so the job costs nothing.

use std::net::SocketAddr;

use anyhow::{Context, Result};
use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::mcp::Answer;
use super::{Claimed, Ready};

/// The file the scripted model writes in the job's clone.
pub(crate) const REHEARSAL_FILE: &str = "CAPSID-REHEARSAL.md";
/// The word in the job's body that the scripted model answers to (any other request, such as
/// an agent CLI's side calls, gets a plain one-line answer).
const MARKER: &str = "CAPSID-REHEARSAL";

/// The rehearsal job's body: what the agent is told (the scripted model does the rest).
fn job_body() -> String {
    format!(
        "{MARKER}: a rehearsal of `capsid drive`. A scripted model stands in for a paid one: it writes {REHEARSAL_FILE}, runs the project's test command, commits, and pushes this job's branch. Nothing else of the repository is touched."
    )
}

/// The shell command the model's `n`-th turn runs, or `None` when it is done.
fn turn_command(n: usize, test_command: &str) -> Option<String> {
    match n {
        0 => Some(format!(
            "printf '# Capsid rehearsal\\n\\nWritten by capsid drive --rehearse: the whole loop, no model account.\\n' > {REHEARSAL_FILE} && echo wrote {REHEARSAL_FILE}"
        )),
        1 => Some(test_command.to_owned()),
        2 => Some(format!(
            "git add {REHEARSAL_FILE} && git commit -qm 'Capsid rehearsal' && git push -q origin HEAD && echo pushed"
        )),
        _ => None,
    }
}

/// The number of assistant turns a Messages API request already holds.
fn turns_so_far(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|x| x["role"] == "assistant").count())
}

/// Whether the request is the rehearsal's conversation (its job body is in a user message).
fn is_rehearsal(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .any(|m| m["content"].to_string().contains(MARKER))
}

/// One streamed Messages API answer: a `Bash` tool call running `command`, or `text`. Usage
/// is zero: the rehearsal costs nothing at the door.
fn stream(body: &Value, command: Option<&str>, text: &str) -> String {
    let model = body["model"].as_str().unwrap_or("capsid-rehearsal");
    let turn = turns_so_far(body);
    let mut out = String::new();
    let mut event = |kind: &str, data: Value| {
        out.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_rehearsal_{turn}"), "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 0, "output_tokens": 0}}}),
    );
    let stop = match command {
        Some(c) => {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": format!("toolu_rehearsal_{turn}"), "name": "Bash", "input": {}}}),
            );
            let input = json!({"command": c, "description": "Capsid rehearsal step"});
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
            );
            "tool_use"
        }
        None => {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            );
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            );
            "end_turn"
        }
    };
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 0}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

/// The scripted model's answer to one request.
fn answer(test_command: &str, bytes: &Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(bytes) else {
        return (StatusCode::BAD_REQUEST, "the rehearsal model reads JSON").into_response();
    };
    let (command, text) = if is_rehearsal(&body) {
        (
            turn_command(turns_so_far(&body), test_command),
            "Rehearsal done: wrote the file, ran the tests, committed and pushed the job's branch.",
        )
    } else {
        (None, "Capsid rehearsal.")
    };
    (
        StatusCode::OK,
        [("content-type", "text/event-stream")],
        stream(&body, command.as_deref(), text),
    )
        .into_response()
}

/// Starts the scripted model on a loopback port of its own: its base URL.
async fn start_model(test_command: String) -> Result<(String, tokio::task::JoinHandle<()>)> {
    let app = Router::new().route(
        "/v1/messages",
        post(move |bytes: Bytes| {
            let test_command = test_command.clone();
            async move { answer(&test_command, &bytes) }
        }),
    );
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .context("opening the rehearsal model's port")?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("http://{addr}"), task))
}

/// Runs the rehearsal with `ready` (prepared as for any run): posts the job, claims it, runs
/// it against the scripted model. The exit code is the run's.
pub(crate) async fn run(mut ready: Ready) -> Result<u8> {
    let (url, model) = start_model(ready.tests.command.clone()).await?;
    ready.model.upstream = url;
    ready.model.auth = capsid_box::model_proxy::UpstreamAuth::ApiKey("capsid-rehearsal".into());
    ready.model.auth_from =
        "the rehearsal's scripted model in the driver (no model account, no cost)".into();
    ready.rehearsal = true;
    eprintln!(
        "capsid drive: the agent's model calls go through Capsid's metered door to {}",
        ready.model.auth_from
    );
    let ns = ready.namespace.clone();
    let title = format!(
        "Capsid rehearsal {}",
        capsid_core::time::Timestamp::from_millis(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        )
    );
    let posted = ready
        .mcp
        .ok(
            "jobs",
            json!({"action": "post", "namespace": ns, "title": title, "body": job_body()}),
        )
        .await
        .context("posting the rehearsal job (the driver's key needs write in the namespace)")?;
    let id = posted["job"]["id"]
        .as_str()
        .context("the server answered the rehearsal's post without a job id")?
        .to_owned();
    eprintln!("capsid drive: rehearsal job {id} posted in {ns}; claiming it");
    let claimed = match ready
        .mcp
        .call(
            "jobs",
            json!({"action": "claim", "id": id, "namespace": ns}),
        )
        .await?
    {
        Answer::Ok(v) => Claimed::from_answer(&v, None)?,
        Answer::Refused(why) => {
            model.abort();
            anyhow::bail!("the rehearsal job {id} could not be claimed: {why}");
        }
    };
    let code = super::run_claimed(&ready, claimed).await;
    model.abort();
    eprintln!(
        "capsid drive: rehearsal {id} ended (exit {code}). Its branch capsid/{id} holds {REHEARSAL_FILE}; remove it with `git push origin --delete capsid/{id}` when you have looked."
    );
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(turns: usize, marker: bool) -> Value {
        let mut messages = vec![
            json!({"role": "user", "content": if marker { job_body() } else { "hello".into() }}),
        ];
        for _ in 0..turns {
            messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": "x"}]}));
            messages.push(
                json!({"role": "user", "content": [{"type": "tool_result", "content": "ok"}]}),
            );
        }
        json!({"model": "claude-x", "messages": messages})
    }

    #[test]
    fn the_script_writes_tests_commits_then_says_done() {
        assert!(turn_command(0, "sh test.sh").is_some_and(|c| c.contains(REHEARSAL_FILE)));
        assert_eq!(turn_command(1, "sh test.sh").as_deref(), Some("sh test.sh"));
        assert!(turn_command(2, "t").is_some_and(|c| c.contains("git push -q origin HEAD")));
        assert_eq!(turn_command(3, "t"), None);
        assert!(is_rehearsal(&request(0, true)));
        assert!(!is_rehearsal(&request(0, false)));
        assert_eq!(turns_so_far(&request(2, true)), 2);
    }

    #[test]
    fn each_answer_streams_one_block_at_no_cost() {
        let tool = stream(&request(1, true), Some("sh test.sh"), "x");
        assert!(tool.contains("\"name\":\"Bash\""), "{tool}");
        assert!(tool.contains("\"stop_reason\":\"tool_use\""), "{tool}");
        assert!(
            tool.contains("\\\"command\\\":\\\"sh test.sh\\\""),
            "{tool}"
        );
        assert!(tool.contains("\"input_tokens\":0"), "{tool}");
        let done = stream(&request(3, true), None, "Rehearsal done");
        assert!(done.contains("\"stop_reason\":\"end_turn\""), "{done}");
        assert!(done.contains("Rehearsal done"), "{done}");
        assert!(done.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    }
}
