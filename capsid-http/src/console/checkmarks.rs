//! The console's checkmarks panel, rendered from the `checkmarks` object of `/console.json`:
//! per namespace every agent with a status badge, where it stopped, next steps, the open
//! question (and its answer), tests and build badges and age (an agent waiting for an answer
//! points to its Answer form under "Waiting on you", `attention.rs`); the selected agent's log
//! in pages, each entry still `project` with a "Make global" form (`checkmarks promote`); the
//! global feed; the shared context. Script-free, every value escaped.

use serde_json::Value;

use super::page::{action_form, cell, text};
use crate::html::esc;

fn badge(kind: &str, value: &Value) -> String {
    let v = value.as_str().unwrap_or("unknown");
    format!("<span class=\"badge {kind}-{}\">{}</span>", esc(v), esc(v))
}

/// Query-escapes `text` for a link.
fn q(text: &str) -> String {
    serde_urlencoded::to_string([("", text)])
        .map(|s| s.trim_start_matches('=').to_owned())
        .unwrap_or_default()
}

fn log_link(namespace: &str, agent: &str, cursor: Option<&str>, label: &str) -> String {
    let cursor = cursor.map_or(String::new(), |c| format!("&log_cursor={}", q(c)));
    format!(
        "<a href=\"/console?log_namespace={}&amp;log_agent={}{}#checkmarks\">{}</a>",
        esc(&q(namespace)),
        esc(&q(agent)),
        esc(&cursor),
        esc(label)
    )
}

fn question(c: &Value) -> String {
    let asked = text(&c["open_question"]);
    match c["answer"].as_str() {
        Some(a) => format!(
            "{}<br><span class=\"ok\">answered by {}: {}</span>",
            esc(&asked),
            esc(&text(&c["answered_by"])),
            esc(a)
        ),
        None => esc(&asked),
    }
}

fn agents_table(ns: &Value) -> String {
    let name = ns["namespace"].as_str().unwrap_or_default();
    let mut rows = String::new();
    for c in ns["agents"].as_array().into_iter().flatten() {
        let agent = c["agent"].as_str().unwrap_or_default();
        let waiting = capsid_core::owner::waits_for_answer(c);
        let age = c["age_minutes"]
            .as_i64()
            .map_or("—".to_owned(), |m| format!("{m} min"));
        let mut resume = if c["resume"].is_null() {
            String::new()
        } else {
            " <span class=\"muted\">(resume requested)</span>".to_owned()
        };
        if let Some(said) = c["checkmark_status"].as_str() {
            resume.push_str(&format!(
                " <span class=\"muted\">(its job is {}; the agent last said {})</span>",
                esc(&text(&c["job_status"])),
                esc(said)
            ));
        }
        rows.push_str(&format!(
            "<tr><td><strong>{}</strong></td><td>{}{resume}</td>{}{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(agent),
            badge("s", &c["status"]),
            cell(&c["where_it_stopped"]),
            cell(&c["next_steps"]),
            question(c),
            badge("g", &c["tests_status"]),
            badge("g", &c["build_status"]),
            esc(&age),
            log_link(name, agent, None, "log"),
        ));
        if waiting {
            rows.push_str(
                "<tr><td></td><td colspan=\"8\"><a href=\"#waiting\">Answer it under Waiting on you</a></td></tr>",
            );
        }
    }
    if rows.is_empty() {
        rows.push_str(
            "<tr><td colspan=\"9\" class=\"muted\">No agent has checkpointed here yet.</td></tr>",
        );
    }
    format!(
        "<h3>{}</h3><table><tr><th>agent</th><th>status</th><th>where it stopped</th><th>next steps</th><th>open question</th><th>tests</th><th>build</th><th>age</th><th></th></tr>{rows}</table>",
        esc(name)
    )
}

/// What the session behind an entry cost, when the driver recorded it: `$0.0123 · 4 turns`.
fn cost(e: &Value) -> String {
    let Some(usd) = e["cost_usd"].as_f64() else {
        return "—".to_owned();
    };
    match e["turns"].as_u64() {
        Some(1) => format!("${usd:.4} · 1 turn"),
        Some(t) => format!("${usd:.4} · {t} turns"),
        None => format!("${usd:.4}"),
    }
}

/// A table of log entries; `promote` (the namespace and the CSRF token) adds a "Make global"
/// form beside each entry that is still `project`.
fn entries_table(entries: &Value, with_agent: bool, promote: Option<(&str, &str)>) -> String {
    let mut rows = String::new();
    for e in entries.as_array().into_iter().flatten() {
        let visibility = match (promote, e["visibility"].as_str(), e["id"].as_i64()) {
            (Some((ns, csrf)), Some("project"), Some(id)) => format!(
                "<td>project {}</td>",
                action_form(
                    csrf,
                    &[
                        ("action", "promote"),
                        ("namespace", ns),
                        ("entry_id", &id.to_string())
                    ],
                    None,
                    "Make global"
                )
            ),
            _ => cell(&e["visibility"]),
        };
        let who = if with_agent {
            format!(
                "<td>{} / {}</td>",
                esc(&text(&e["namespace"])),
                esc(&text(&e["agent"]))
            )
        } else {
            String::new()
        };
        rows.push_str(&format!(
            "<tr>{}{who}<td>{}</td>{}{}{}{}<td><code>{}</code> {}</td><td>{}</td></tr>",
            cell(&e["created_at"]),
            badge("s", &e["status"]),
            cell(&e["summary"]),
            cell(&e["question"]),
            cell(&e["answer"]),
            visibility,
            esc(&text(&e["push_sha"])),
            esc(&text(&e["ci_status"])),
            esc(&cost(e)),
        ));
    }
    let span = if with_agent { 9 } else { 8 };
    if rows.is_empty() {
        rows.push_str(&format!(
            "<tr><td colspan=\"{span}\" class=\"muted\">No entries.</td></tr>"
        ));
    }
    let agent_head = if with_agent { "<th>agent</th>" } else { "" };
    format!(
        "<table><tr><th>at</th>{agent_head}<th>status</th><th>summary</th><th>question</th><th>answer</th><th>visibility</th><th>push · CI</th><th>cost</th></tr>{rows}</table>"
    )
}

fn selected_log(log: &Value, csrf: &str) -> String {
    if log.is_null() {
        return "<p class=\"muted\">Choose an agent's <em>log</em> link to read its log here.</p>"
            .to_owned();
    }
    let ns = log["namespace"].as_str().unwrap_or_default();
    let agent = log["agent"].as_str().unwrap_or_default();
    if let Some(e) = log["error"].as_str() {
        return format!(
            "<h3>Log of {} in {}</h3><p class=\"warn\">{}</p>",
            esc(agent),
            esc(ns),
            esc(e)
        );
    }
    let older = log["next_cursor"].as_str().map_or(String::new(), |c| {
        format!(" · {}", log_link(ns, agent, Some(c), "older entries"))
    });
    format!(
        "<h3>Log of {} in {}</h3>{}<p>{}{older}</p>",
        esc(agent),
        esc(ns),
        entries_table(&log["entries"], false, Some((ns, csrf))),
        log_link(ns, agent, None, "newest entries"),
    )
}

fn shared_table(shared: &Value) -> String {
    let mut rows = String::new();
    for s in shared["entries"].as_array().into_iter().flatten() {
        rows.push_str(&format!(
            "<tr><td><code>{}</code></td>{}{}{}</tr>",
            esc(&text(&s["key"])),
            cell(&s["value"]),
            cell(&s["set_by"]),
            cell(&s["updated_at"]),
        ));
    }
    if rows.is_empty() {
        rows.push_str("<tr><td colspan=\"4\" class=\"muted\">Nothing shared yet.</td></tr>");
    }
    format!(
        "<table><tr><th>key</th><th>value</th><th>set by</th><th>updated</th></tr>{rows}</table>"
    )
}

/// The whole panel, from the view's `checkmarks` object (`csrf` for its forms).
pub(super) fn panel(view: &Value, csrf: &str) -> String {
    let c = &view["checkmarks"];
    let namespaces: String = c["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
        .map(agents_table)
        .collect();
    let namespaces = if namespaces.is_empty() {
        "<p class=\"muted\">No namespaces registered yet.</p>".to_owned()
    } else {
        namespaces
    };
    format!(
        "<h2 id=\"checkmarks\">Checkmarks</h2>{namespaces}{}\
         <h2>Global feed</h2>{}<h2>Shared context</h2>{}",
        selected_log(&c["log"], csrf),
        entries_table(&c["feed"]["entries"], true, None),
        shared_table(&c["shared"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn view() -> Value {
        json!({"checkmarks": {
            "namespaces": [{"namespace": "alpha", "agents": [
                {"agent": "d1", "status": "paused_for_input", "where_it_stopped": "<b>schema</b>",
                 "next_steps": ["pick a db", "migrate"], "open_question": "Postgres or SQLite?",
                 "answer": null, "tests_status": "pass", "build_status": "unknown", "age_minutes": 7, "resume": null},
                {"agent": "d2", "status": "working", "open_question": null, "answer": null,
                 "tests_status": "unknown", "build_status": "unknown", "age_minutes": 1, "resume": null}
            ]}],
            "log": {"namespace": "alpha", "agent": "d1", "next_cursor": "eyJiIjo0fQ", "entries": [
                {"id": 5, "created_at": "t", "status": "paused_for_input", "summary": "s", "question": "q", "answer": null, "visibility": "project"},
                {"id": 4, "created_at": "t", "status": "working", "summary": "w", "question": null, "answer": null, "visibility": "global"}
            ]},
            "feed": {"entries": [{"namespace": "beta", "agent": "b1", "status": "done", "visibility": "global", "summary": "shipped", "cost_usd": 0.01234, "turns": 4}]},
            "shared": {"entries": [{"key": "staging-url", "value": "https://staging", "set_by": "agent:b1", "updated_at": "t"}]}
        }})
    }

    #[test]
    fn the_panel_shows_checkmarks_forms_log_feed_and_shared_context_escaped() {
        let html = panel(&view(), "tok");
        assert!(html.contains("badge s-paused_for_input"));
        assert!(html.contains("&lt;b&gt;schema&lt;/b&gt;") && !html.contains("<b>schema</b>"));
        assert!(html.contains("pick a db, migrate"));
        assert!(html.contains("Postgres or SQLite?"));
        assert_eq!(
            html.matches("Answer it under Waiting on you").count(),
            1,
            "only the paused agent points to its form"
        );
        assert!(html.contains("log_cursor=eyJiIjo0fQ"), "the next page link");
        assert!(html.contains("shipped") && html.contains("beta / b1"));
        assert!(html.contains("staging-url") && html.contains("https://staging"));
        assert!(!html.contains("<script"));
    }

    #[test]
    fn a_project_entry_of_the_selected_log_has_a_make_global_form_and_a_global_one_none() {
        let html = panel(&view(), "tok");
        assert_eq!(html.matches("value=\"promote\"").count(), 1, "{html}");
        assert!(html.contains("name=\"entry_id\" value=\"5\""), "{html}");
        assert!(!html.contains("name=\"entry_id\" value=\"4\""), "{html}");
        assert!(html.contains("name=\"csrf\" value=\"tok\""), "{html}");
        assert!(html.contains(">Make global</button>"), "{html}");
    }

    #[test]
    fn a_log_entry_shows_what_its_session_cost() {
        let html = panel(&view(), "tok");
        assert_eq!(html.matches("<th>cost</th>").count(), 2, "log and feed");
        assert!(html.contains("<td>$0.0123 · 4 turns</td>"), "{html}");
        // An entry no session closed has no cost.
        assert!(html.contains("<td>—</td></tr>"), "{html}");
    }

    #[test]
    fn an_answered_question_shows_its_answer_and_no_form() {
        let mut v = view();
        v["checkmarks"]["namespaces"][0]["agents"][0]["answer"] = json!("Postgres");
        v["checkmarks"]["namespaces"][0]["agents"][0]["answered_by"] = json!("github:octo");
        let html = panel(&v, "tok");
        assert!(html.contains("answered by github:octo: Postgres"));
        assert!(!html.contains("Answer it under"));
    }
}
