//! The top of the console, rendered from the `attention` object of `/console.json`: what waits
//! on the owner. Open questions with Answer and Answer & resume, blocked jobs with the exact
//! command each waits on (Resume, Fail), recently failed jobs with the tail of their failure,
//! and checkmarks whose tests or build fail. Script-free, every value escaped.

use serde_json::Value;

use super::page::{action_form, hidden, text};
use crate::html::esc;

/// The Answer and Answer & resume form of an agent waiting for an answer.
fn answer_form(csrf: &str, namespace: &str, agent: &str) -> String {
    format!(
        "<form method=\"post\" action=\"/console\" class=\"answer\">{}\
         <textarea name=\"answer\" required maxlength=\"{}\" placeholder=\"your answer to {}\"></textarea>\
         <button type=\"submit\" name=\"resume\" value=\"no\">Answer</button> \
         <button type=\"submit\" name=\"resume\" value=\"yes\">Answer &amp; resume</button></form>",
        hidden(
            csrf,
            &[
                ("action", "answer"),
                ("namespace", namespace),
                ("agent", agent)
            ]
        ),
        capsid_core::checkmarks::ANSWER_MAX,
        esc(agent)
    )
}

fn questions(a: &Value, csrf: &str) -> String {
    a["questions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| {
            let ns = q["namespace"].as_str().unwrap_or_default();
            let agent = q["agent"].as_str().unwrap_or_default();
            format!(
                "<li class=\"item\" data-kind=\"question\"><strong>{agent_e}</strong> in {ns_e} asks: <span class=\"q\">{question}</span>\
                 <div class=\"muted\">{stopped}</div>{form}</li>",
                agent_e = esc(agent),
                ns_e = esc(ns),
                question = esc(&text(&q["question"])),
                stopped = esc(&text(&q["where_it_stopped"])),
                form = answer_form(csrf, ns, agent),
            )
        })
        .collect()
}

fn blocked(a: &Value, csrf: &str) -> String {
    a["blocked_jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|j| {
            let id = j["id"].as_str().unwrap_or_default();
            let command = j["waiting_on"].as_str().map_or_else(
                || format!("<span class=\"muted\">{}</span>", esc(&text(&j["reason"]))),
                |c| format!("run <code class=\"cmd\">{}</code>", esc(c)),
            );
            format!(
                "<li class=\"item\" data-kind=\"blocked\"><strong>{title}</strong> <span class=\"badge s-blocked\">blocked</span> \
                 <span class=\"muted\">{ns} · <code>{id_e}</code> · {holder} · blocked {times}×</span><div>{command}</div>\
                 <div class=\"actions\">{resume} {fail} {raise}</div></li>",
                title = esc(&text(&j["title"])),
                ns = esc(&text(&j["namespace"])),
                id_e = esc(id),
                holder = esc(&text(&j["holder"])),
                times = esc(&text(&j["blocked_times"])),
                resume = action_form(
                    csrf,
                    &[("action", "resume_job"), ("id", id)],
                    Some(("reason", "what you approved")),
                    "Resume"
                ),
                fail = action_form(
                    csrf,
                    &[("action", "fail_job"), ("id", id)],
                    Some(("reason", "why fail it")),
                    "Fail"
                ),
                raise = action_form(
                    csrf,
                    &[("action", "raise_cap"), ("id", id)],
                    Some(("usd", "new cap, US dollars")),
                    "Raise cap"
                ),
            )
        })
        .collect()
}

fn failed(a: &Value, view: &Value, csrf: &str) -> String {
    a["failed_jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|j| {
            let id = j["id"].as_str().unwrap_or_default();
            format!(
                "<li class=\"item\" data-kind=\"failed\"><strong>{title}</strong> <span class=\"badge s-failed\">failed</span> \
                 <span class=\"muted\">{ns} · <code>{id_e}</code> · {holder} · {at}</span><pre class=\"tail\">{tail}</pre>\
                 <div class=\"actions\">{dismiss}</div></li>",
                title = esc(&text(&j["title"])),
                ns = esc(&text(&j["namespace"])),
                id_e = esc(id),
                dismiss = action_form(csrf, &[("action", "dismiss_job"), ("id", id)], None, "Dismiss"),
                holder = esc(&text(&j["holder"])),
                at = super::page::when(&j["updated_at"], view),
                tail = esc(j["tail"].as_str().unwrap_or("")),
            )
        })
        .collect()
}

fn failing(a: &Value) -> String {
    a["failing_checks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "<li class=\"item\" data-kind=\"failing\"><strong>{agent}</strong> in {ns}: tests <span class=\"badge g-{t}\">{t}</span> build <span class=\"badge g-{b}\">{b}</span>{job}</li>",
                agent = esc(&text(&c["agent"])),
                ns = esc(&text(&c["namespace"])),
                t = esc(c["tests_status"].as_str().unwrap_or("unknown")),
                b = esc(c["build_status"].as_str().unwrap_or("unknown")),
                job = c["job_id"].as_str().map_or(String::new(), |j| format!(
                    " <span class=\"muted\">job <code>{}</code></span>",
                    esc(j)
                )),
            )
        })
        .collect()
}

fn over_budget(a: &Value) -> String {
    a["over_budget"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            let ns = b["namespace"].as_str().unwrap_or_default();
            format!(
                "<li class=\"item\" data-kind=\"budget\"><strong>{ns_e}</strong> <span class=\"badge s-blocked\">over budget</span> \
                 <span class=\"muted\">${spent:.2} spent of ${budget:.2} in {month} ({source})</span>\
                 <div>It claims and resumes no job until its budget rises: run <code class=\"cmd\">capsid namespaces update {ns_e} --monthly-budget-usd &lt;dollars&gt;</code></div></li>",
                ns_e = esc(ns),
                spent = b["spent_usd"].as_f64().unwrap_or(0.0),
                budget = b["budget_usd"].as_f64().unwrap_or(0.0),
                month = esc(&text(&b["month"])),
                source = match b["source"].as_str() {
                    Some("default") => "the server's default budget",
                    _ => "its own budget",
                },
            )
        })
        .collect()
}

/// The section.
pub(super) fn panel(view: &Value, csrf: &str) -> String {
    let a = &view["attention"];
    let parts = [
        ("Questions", questions(a, csrf)),
        ("Blocked jobs", blocked(a, csrf)),
        ("Failed jobs", failed(a, view, csrf)),
        ("Failing tests or builds", failing(a)),
        ("Over budget", over_budget(a)),
    ];
    let body: String = parts
        .iter()
        .filter(|(_, items)| !items.is_empty())
        .map(|(title, items)| format!("<h3>{title}</h3><ul class=\"items\">{items}</ul>"))
        .collect();
    let body = if body.is_empty() {
        "<p class=\"ok\">Nothing waits on you: no open question, no blocked or failed job, no failing check, no namespace over its budget.</p>".to_owned()
    } else {
        body
    };
    format!(
        "<section id=\"waiting\" class=\"card\"><h2>Waiting on you <span class=\"badge\">{}</span></h2>{body}</section>",
        esc(&text(&a["count"]))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_section_lists_what_waits_escaped_with_its_forms() {
        let view = json!({"attention": {"count": 4,
            "questions": [{"namespace": "alpha", "agent": "d1", "question": "<b>which</b>?", "where_it_stopped": "schema"}],
            "blocked_jobs": [{"id": "job_000000000001", "namespace": "alpha", "title": "Ship", "waiting_on": "git push origin x", "holder": "agent:w", "blocked_times": 1}],
            "failed_jobs": [{"id": "job_000000000002", "namespace": "alpha", "title": "Build", "tail": "error[E0308]: mismatched types\ntest result: FAILED", "holder": "agent:w", "updated_at": "t"}],
            "failing_checks": [{"namespace": "alpha", "agent": "d2", "tests_status": "fail", "build_status": "pass", "job_id": null}],
            "over_budget": [{"namespace": "beta", "month": "2026-12", "spent_usd": 5.25, "budget_usd": 5.0, "source": "namespace"}]}});
        let html = panel(&view, "tok");
        for want in [
            "&lt;b&gt;which&lt;/b&gt;?",
            "git push origin x",
            "value=\"resume_job\"",
            "value=\"fail_job\"",
            "value=\"dismiss_job\"",
            "Answer &amp; resume",
            "test result: FAILED",
            "badge g-fail",
            "name=\"csrf\" value=\"tok\"",
            "<strong>beta</strong> <span class=\"badge s-blocked\">over budget</span>",
            "$5.25 spent of $5.00 in 2026-12 (its own budget)",
            "capsid namespaces update beta --monthly-budget-usd &lt;dollars&gt;",
        ] {
            assert!(html.contains(want), "{want} in {html}");
        }
        assert!(!html.contains("<b>which"));
        let empty = panel(&json!({"attention": {"count": 0}}), "tok");
        assert!(empty.contains("Nothing waits on you"));
    }
}
