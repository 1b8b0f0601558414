//! The console's doors panel, rendered from the `doors` list of `/console.json`: the newest
//! records of what boxed jobs' doors saw (issue 48), every host an egress door refused or
//! reached and each connection through the model, git and MCP doors, with its bytes and
//! times. Script-free, every value escaped.

use serde_json::Value;

use super::page::cell;
use crate::html::esc;

/// `host:port`, or the host alone for a service in the driver's process (port 0).
fn target(d: &Value) -> String {
    let host = d["host"].as_str().unwrap_or_default();
    match d["port"].as_u64() {
        Some(0) | None => host.to_owned(),
        Some(port) => format!("{host}:{port}"),
    }
}

/// The panel.
pub(super) fn panel(view: &Value) -> String {
    let mut rows = String::new();
    for d in view["doors"].as_array().into_iter().flatten() {
        let decision = d["decision"].as_str().unwrap_or("unknown");
        rows.push_str(&format!(
            "<tr><td><code>{}</code></td>{}<td>{}</td><td><span class=\"badge door-{}\">{}</span></td><td>{} / {}</td>{}{}{}</tr>",
            esc(d["job_id"].as_str().unwrap_or_default()),
            cell(&d["door"]),
            esc(&target(d)),
            esc(decision),
            esc(decision),
            d["bytes_up"].as_u64().unwrap_or(0),
            d["bytes_down"].as_u64().unwrap_or(0),
            super::page::when_cell(&d["started_at"], view),
            super::page::when_cell(&d["ended_at"], view),
            cell(&d["detail"]),
        ));
    }
    if rows.is_empty() {
        rows.push_str(
            "<tr><td colspan=\"8\" class=\"muted\">No boxed job has used a door yet.</td></tr>",
        );
    }
    format!(
        "<h2 id=\"doors\">Through the doors</h2><p class=\"muted\">What boxed jobs reached and were refused, newest first.</p><table><tr><th>job</th><th>door</th><th>host</th><th>decision</th><th>bytes up / down</th><th>started</th><th>ended</th><th>detail</th></tr>{rows}</table>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_record_shows_its_job_door_host_and_decision_escaped() {
        let view = json!({"doors": [
            {"job_id": "job_000000000001", "door": "egress", "host": "example.com", "port": 443,
             "decision": "refused", "bytes_up": 0, "bytes_down": 0, "started_at": "t1",
             "ended_at": "t2", "detail": "<not allowed>"},
            {"job_id": "job_000000000001", "door": "model", "host": "capsid", "port": 0,
             "decision": "reached", "bytes_up": 12, "bytes_down": 3400, "started_at": "t3",
             "ended_at": "t4", "detail": null},
        ]});
        let html = panel(&view);
        assert!(
            html.contains(
                "<td>example.com:443</td><td><span class=\"badge door-refused\">refused</span></td>"
            ),
            "{html}"
        );
        assert!(html.contains("&lt;not allowed&gt;"), "{html}");
        assert!(!html.contains("<not allowed>"), "{html}");
        assert!(html.contains("<td>capsid</td>"), "{html}");
        assert!(html.contains("<td>12 / 3400</td>"), "{html}");
        assert!(panel(&json!({"doors": []})).contains("No boxed job has used a door yet."));
        assert!(panel(&json!({})).contains("colspan=\"8\""));
    }
}
