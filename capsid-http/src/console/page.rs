//! The console's HTML, rendered from exactly the object `/console.json` answers, the owner's
//! work first: a header, what waits on the owner (`attention.rs`: questions, blocked jobs
//! with their commands, failed jobs with their tails, failing checks), then namespaces with
//! their queues and documents, agents with their records, the checkmarks panel
//! (`checkmarks.rs`), open jobs, and then the rest: the skills panel (`skills.rs`), the
//! autonomy panel (`autonomy.rs`), the improve loop, the latest activity and the server's
//! status (build, schema, backup, improve mode and spend). Every action is a small
//! CSRF-carrying form. And the confirmation page, and the signed-out page of a server without
//! GitHub sign-in.

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use capsid_core::owner::ConsoleAction;
use serde_json::Value;

use crate::html::{esc, page, scripted_page};

/// A JSON value as display text (`—` for null).
pub(super) fn text(v: &Value) -> String {
    match v {
        Value::Null => "—".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "—".into(),
        Value::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// How long before (or after) `now` the instant `at` is, in words: `just now`, `5 min ago`,
/// `3 h ago`, `2 days ago`, `in 10 min`.
pub(super) fn relative(ms: i64) -> String {
    let (future, ms) = (ms < 0, ms.unsigned_abs());
    let (secs, mins, hours, days) = (ms / 1000, ms / 60_000, ms / 3_600_000, ms / 86_400_000);
    let span = match () {
        _ if secs < 60 => return "just now".to_owned(),
        _ if mins < 60 => format!("{mins} min"),
        _ if hours < 48 => format!("{hours} h"),
        _ => format!("{days} days"),
    };
    if future {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

/// A time of the view as a `<time>`: how long ago (or how soon) it is from when the view was
/// made, the exact instant on hover; `—` for none, the text as it is when it is not a time.
pub(super) fn when(v: &Value, view: &Value) -> String {
    use capsid_core::time::Timestamp;
    let Some(at) = v.as_str() else {
        return esc(&text(v));
    };
    let now = view["generated"].as_str().and_then(Timestamp::parse);
    match (Timestamp::parse(at), now) {
        (Some(t), Some(now)) => format!(
            "<time datetime=\"{a}\" title=\"{a}\">{}</time>",
            esc(&relative(now.millis_since(t))),
            a = esc(at)
        ),
        _ => esc(at),
    }
}

/// [`when`] in a cell.
pub(super) fn when_cell(v: &Value, view: &Value) -> String {
    format!("<td>{}</td>", when(v, view))
}

pub(super) fn cell(v: &Value) -> String {
    format!("<td>{}</td>", esc(&text(v)))
}

pub(super) fn hidden(csrf: &str, fields: &[(&str, &str)]) -> String {
    let mut out = format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(csrf)
    );
    for (k, v) in fields {
        out.push_str(&format!(
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            esc(k),
            esc(v)
        ));
    }
    out
}

/// A one-button action form, with an optional free-text field.
pub(super) fn action_form(
    csrf: &str,
    fields: &[(&str, &str)],
    input: Option<(&str, &str)>,
    label: &str,
) -> String {
    let input = input.map_or(String::new(), |(name, placeholder)| {
        format!(
            "<input type=\"text\" name=\"{name}\" placeholder=\"{}\" required maxlength=\"1024\">",
            esc(placeholder)
        )
    });
    format!(
        "<form method=\"post\" action=\"/console\" class=\"inline\">{}{input}<button type=\"submit\">{}</button></form>",
        hidden(csrf, fields),
        esc(label)
    )
}

/// A number as the page shows it (`-0.0`, which sums of nothing can be, reads as `0`).
fn amount(v: &Value) -> String {
    v.as_f64()
        .map_or_else(|| text(v), |f| format!("{}", f + 0.0))
}

fn header(view: &Value, csrf: &str) -> String {
    format!(
        "<header><h1>Capsid console</h1><span class=\"muted\">signed in as <strong>{viewer}</strong> · generated {generated}</span>\
         <nav class=\"session\"><form method=\"post\" action=\"/console/logout\" class=\"inline\">{hidden}<button type=\"submit\" class=\"quiet\">Sign out</button></form>\
         <form method=\"post\" action=\"/console/logout\" class=\"inline\">{hidden_all}<button type=\"submit\" class=\"quiet\">End every session</button></form>\
         <form method=\"post\" action=\"/console/revoke-grants\" class=\"inline\">{hidden}<button type=\"submit\" class=\"quiet\">Revoke every MCP client</button></form></nav></header>",
        viewer = esc(&text(&view["viewer"])),
        generated = esc(&text(&view["generated"])),
        hidden = hidden(csrf, &[]),
        hidden_all = hidden(csrf, &[("all", "yes")]),
    )
}

/// The server's status: build, schema, store, backup, improve mode and this month's spend.
fn status_card(view: &Value) -> String {
    let h = &view["health"];
    let imp = &view["improve"];
    let backup = &h["backup"];
    let warning = backup["warning"].as_str().map_or(String::new(), |w| {
        format!(" <span class=\"warn\">({})</span>", esc(w))
    });
    let budget = &imp["budget"];
    let rehearsal = rehearsal_line(&view["rehearsal"]);
    format!(
        "<h2>Server</h2><div class=\"card\">Build <code>{sha}</code>{dirty} · schema <code>{schema}</code> · store {status} · backup {age}{warning} · {rehearsal}<br>\
         Improve mode <strong>{mode}</strong> ({loop_line}) · this month CI minutes {ci} of {ci_cap}, model spend ${usd} of ${usd_cap}</div>",
        sha = esc(&text(&h["sha"])),
        dirty = if h["dirty"] == true { " (dirty)" } else { "" },
        schema = esc(&text(&h["schema_version"])),
        status = esc(&text(&h["status"])),
        age = esc(&backup["age_hours"]
            .as_f64()
            .map_or("never".into(), |a| format!("{a} h ago"))),
        mode = esc(&text(&imp["mode"])),
        loop_line = esc(&text(&imp["loop"])),
        ci = esc(&amount(&budget["month_to_date"]["ci_minutes"])),
        ci_cap = esc(&amount(&budget["caps"]["actions_minutes_month"])),
        usd = esc(&amount(&budget["month_to_date"]["cost_usd"])),
        usd_cap = esc(&amount(&budget["caps"]["model_usd_month"])),
    )
}

/// The last restore rehearsal: when, which dump, ok or why not (escaped here).
fn rehearsal_line(r: &Value) -> String {
    if r.is_null() {
        return "restore rehearsal: none yet".to_owned();
    }
    let at = esc(&text(&r["at"]));
    let run = esc(&text(&r["run"]));
    if r["ok"] == true {
        let rows: u64 = r["tables"]
            .as_array()
            .map_or(0, |t| t.iter().filter_map(|t| t["restored"].as_u64()).sum());
        format!("restore rehearsal ok at {at} (dump <code>{run}</code>, {rows} rows verified)")
    } else {
        format!(
            "<span class=\"warn\">restore rehearsal FAILED at {at} (dump <code>{run}</code>): {}</span>",
            esc(&text(&r["reason"]))
        )
    }
}

/// A namespace's month of job spend against its budget: "$1.50 of $1.00 (spent)".
fn spend(b: &Value) -> String {
    let spent = b["spent_usd"].as_f64().unwrap_or(0.0);
    match b["budget_usd"].as_f64() {
        Some(budget) => format!(
            "${spent:.2} of ${budget:.2}{}",
            if spent >= budget {
                " (spent: claims stop)"
            } else {
                ""
            }
        ),
        None => format!("${spent:.2} (no budget)"),
    }
}

/// A namespace's live run in a few words ("idle" when none).
fn tonight(l: &Value) -> String {
    match l.as_str() {
        Some(s) => s.to_owned(),
        None => format!(
            "{} {} ({} attempts)",
            text(&l["run"]),
            text(&l["status"]),
            amount(&l["attempts"])
        ),
    }
}

/// The last run's counts, or a dash.
fn last_run(r: &Value) -> String {
    if r.is_null() {
        return "none".into();
    }
    format!(
        "{}/{}/{} ({})",
        amount(&r["attempts"]),
        amount(&r["kept"]),
        amount(&r["reverted"]),
        text(&r["status"])
    )
}

/// Whether the improve loop has anything to show: it is on, or some namespace has a run or
/// a best commit. On day one it has not, and its columns stay out of the way.
fn loop_has_data(view: &Value) -> bool {
    view["improve"]["mode"].as_str().is_some_and(|m| m != "off")
        || view["improve"]["namespaces"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|ns| {
                ns["best"]["sha"].is_string()
                    || !ns["last_run"].is_null()
                    || ns["anchor_pinned"] == Value::Bool(true)
            })
}

fn namespaces(view: &Value, csrf: &str) -> String {
    let mut rows = String::new();
    let loop_cols = loop_has_data(view);
    for ns in view["improve"]["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = ns["namespace"].as_str().unwrap_or_default();
        let jobs = &ns["jobs"];
        let control = if ns["paused"].is_null() {
            action_form(
                csrf,
                &[("action", "pause"), ("namespace", name)],
                Some(("reason", "why pause")),
                "Pause",
            )
        } else {
            action_form(
                csrf,
                &[("action", "unpause"), ("namespace", name)],
                None,
                "Unpause",
            )
        };
        let improve = if loop_cols {
            format!(
                "{}<td>{}</td><td>{}</td><td>{}</td>",
                cell(&ns["anchor_pinned"]),
                esc(&tonight(&ns["loop"])),
                esc(&last_run(&ns["last_run"])),
                esc(&ns["best"]["sha"].as_str().map_or("none".into(), |sha| {
                    format!(
                        "{} ({})",
                        sha.get(..7).unwrap_or(sha),
                        amount(&ns["best"]["score"])
                    )
                })),
            )
        } else {
            String::new()
        };
        let contact = if ns["driver_last_contact"].is_string() {
            when(&ns["driver_last_contact"], view)
        } else {
            "never".to_owned()
        };
        rows.push_str(&format!(
            "<tr><td><strong>{}</strong><br><a href=\"{}\">documents</a></td>{}{improve}{}{}{}{}{}<td>{}</td><td class=\"driver-contact\">{contact}</td><td class=\"runner\">{}</td><td>{control}</td></tr>",
            esc(name),
            super::documents::link(name, None),
            cell(&ns["paused"]),
            cell(&jobs["queued"]),
            cell(&jobs["claimed"]),
            cell(&jobs["blocked"]),
            cell(&jobs["done_today"]),
            cell(&ns["integrity"]),
            esc(&spend(&ns["jobs_budget"])),
            runner(&ns["runner"]),
        ));
    }
    let (improve_heads, columns) = if loop_cols {
        (
            "<th>anchor pinned</th><th>tonight</th><th>last run (attempts/kept/reverted)</th><th>best</th>",
            15,
        )
    } else {
        ("", 11)
    };
    if rows.is_empty() {
        rows.push_str(&format!(
            "<tr><td colspan=\"{columns}\" class=\"muted\">No namespaces registered yet.</td></tr>"
        ));
    }
    format!(
        "<h2>Namespaces</h2><table><tr><th>namespace</th><th>paused</th>{improve_heads}<th>queued</th><th>claimed</th><th>blocked</th><th>done today</th><th>integrity</th><th>jobs' spend this month</th><th>driver's last contact</th><th>runner settings</th><th></th></tr>{rows}</table>"
    )
}

/// A namespace's runner settings as `name = value` lines (escaped here), or a dash.
fn runner(r: &Value) -> String {
    let lines: Vec<String> = r
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            v.as_str()
                .map(|v| format!("{}: <code>{}</code>", esc(k), esc(v)))
        })
        .collect();
    if lines.is_empty() {
        "—".to_owned()
    } else {
        lines.join("<br>")
    }
}

/// The forms that start work: post a job to a registered namespace, and register a
/// namespace with its repository and runner settings (only the filled ones are sent). Each
/// goes through the confirmation page like every action.
fn start_work(view: &Value, csrf: &str) -> String {
    let names: Vec<&str> = view["improve"]["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|ns| ns["namespace"].as_str())
        .collect();
    let post = if names.is_empty() {
        "<p class=\"muted\">Register a namespace first: a job is posted to one.</p>".to_owned()
    } else {
        let options: String = names
            .iter()
            .map(|n| format!("<option value=\"{0}\">{0}</option>", esc(n)))
            .collect();
        format!(
            "<form method=\"post\" action=\"/console\" class=\"post-job\">{}\
             <p><label>namespace <select name=\"namespace\" required>{options}</select></label> \
             <label>priority <input type=\"number\" name=\"priority\" step=\"1\" placeholder=\"0\"></label> \
             <label>role <input type=\"text\" name=\"role\" maxlength=\"32\" placeholder=\"optional: scout, planner, junior, senior, deploy or your own\"></label></p>\
             <p><label>title <input type=\"text\" name=\"title\" required maxlength=\"1024\" placeholder=\"what the job is\"></label></p>\
             <p><label>paths <input type=\"text\" name=\"paths\" maxlength=\"4096\" placeholder=\"optional: where it works, e.g. src/api/**, docs/api.md (none: the whole repository)\"></label></p>\
             <p><label>prompt<br><textarea name=\"body\" required rows=\"4\" cols=\"60\" placeholder=\"what the driver's agent is to do\"></textarea></label></p>\
             <button type=\"submit\">Post job</button></form>",
            hidden(csrf, &[("action", "post_job")]),
        )
    };
    let runner_inputs: String = capsid_core::owner::CONSOLE_RUNNER_FIELDS
        .iter()
        .map(|f| {
            let hint = match *f {
                "root_dir" => "absolute path on agent hosts",
                "test_command" => "e.g. cargo test",
                "agent_command" => "the agent CLI command",
                "runtime" => "claude-code or codex",
                "protected_branches" => "comma separated",
                "dispatch_limits" => "depth=N,children=N,<role>=N",
                _ => "run after a merge through the gate",
            };
            format!(
                "<label>{f} <input type=\"text\" name=\"{f}\" maxlength=\"2048\" placeholder=\"{}\"></label> ",
                esc(hint)
            )
        })
        .collect();
    format!(
        "<h2>Start work</h2><div class=\"card\"><h3>Post a job</h3>{post}\
         <h3>Register a namespace</h3><form method=\"post\" action=\"/console\" class=\"register-namespace\">{}\
         <p><label>namespace <input type=\"text\" name=\"namespace\" required maxlength=\"64\"></label> \
         <label>repository <input type=\"text\" name=\"repo\" required maxlength=\"140\" placeholder=\"owner/name\"></label></p>\
         <p class=\"muted\">Runner settings (optional; only the filled ones are set):</p><p>{runner_inputs}</p>\
         <button type=\"submit\">Register namespace</button></form></div>",
        hidden(csrf, &[("action", "register_namespace")]),
    )
}

/// A job's paths as its row shows them (issue 51): what its claim holds, or where it will
/// work, and what it waits on.
fn job_paths(j: &Value) -> String {
    let list = |v: &Value| -> Option<String> {
        let items: Vec<String> = v
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(|p| {
                if p == "**" {
                    "the whole repository".to_owned()
                } else {
                    p.to_owned()
                }
            })
            .collect();
        (!items.is_empty()).then(|| items.join(", "))
    };
    let mut text = match (list(&j["leased"]), list(&j["paths"])) {
        (Some(held), _) => format!("holds {held}"),
        (None, Some(paths)) if j["status"] == "queued" => paths,
        (None, None) if j["status"] == "queued" => "the whole repository".to_owned(),
        (None, _) => "none leased".to_owned(),
    };
    if let Some(wait) = j["lease_wait"].as_str() {
        text.push_str(&format!(" ({wait})"));
    }
    text
}

fn jobs(view: &Value, csrf: &str) -> String {
    let mut rows = String::new();
    for j in view["jobs"].as_array().into_iter().flatten() {
        let id = j["id"].as_str().unwrap_or_default();
        rows.push_str(&format!(
            "<tr><td><code>{}</code></td>{}{}{}{}<td>{}</td>{}<td>{}</td><td>{} {}</td></tr>",
            esc(id),
            cell(&j["namespace"]),
            cell(&j["title"]),
            cell(&j["status"]),
            cell(&j["claimed_by"]),
            esc(&job_paths(j)),
            when_cell(&j["lease_expires"], view),
            esc(&job_spend(j)),
            action_form(
                csrf,
                &[("action", "fail_job"), ("id", id)],
                Some(("reason", "why fail it")),
                "Fail"
            ),
            action_form(
                csrf,
                &[("action", "raise_cap"), ("id", id)],
                Some(("usd", "new cap, US dollars")),
                "Raise cap"
            ),
        ));
    }
    if rows.is_empty() {
        rows.push_str("<tr><td colspan=\"9\" class=\"muted\">No open jobs.</td></tr>");
    }
    format!(
        "<h2>Open jobs</h2><table><tr><th>job</th><th>namespace</th><th>title</th><th>status</th><th>holder</th><th>paths</th><th>lease until</th><th>spent (ledger) of cap</th><th></th></tr>{rows}</table>"
    )
}

/// What an open job's ledger holds against its cap: "$0.0312 of $0.0500".
fn job_spend(j: &Value) -> String {
    let spent = j["spent_usd"].as_f64().unwrap_or(0.0);
    match j["max_cost_usd"].as_f64() {
        Some(cap) => format!("${spent:.4} of ${cap:.4}"),
        None => format!("${spent:.4} (no cap)"),
    }
}

fn agents(view: &Value, csrf: &str) -> String {
    let mut rows = String::new();
    for a in view["agents"].as_array().into_iter().flatten() {
        let name = a["name"].as_str().unwrap_or_default();
        let r = &a["record"];
        let revoke = if a["revoked_at"].is_null() {
            action_form(
                csrf,
                &[("action", "revoke_agent"), ("name", name)],
                None,
                "Revoke",
            )
        } else {
            "<span class=\"muted\">revoked</span>".into()
        };
        rows.push_str(&format!(
            "<tr><td><strong>{}</strong></td>{}{}{}{}{}{}<td>{} / {} / {}</td><td>{} / {}</td><td>{} / {}</td><td>{} · {} · {}</td><td>{revoke}</td></tr>",
            esc(name),
            cell(&a["kind"]),
            cell(&a["namespaces"]),
            cell(&a["grants"]),
            cell(&a["flags"]),
            cell(&a["last_seen"]),
            cell(&a["revoked_at"]),
            esc(&text(&a["jobs_completed"])),
            esc(&text(&a["jobs_failed"])),
            esc(&text(&a["jobs_blocked"])),
            esc(&text(&a["prs_opened"])),
            esc(&text(&a["prs_merged"])),
            esc(&text(&a["attempts_kept"])),
            esc(&text(&a["attempts_reverted"])),
            esc(&text(&r["pr_merge_rate"])),
            esc(&text(&r["ci_green_rate"])),
            esc(&text(&r["median_duration_minutes"])),
        ));
    }
    if rows.is_empty() {
        rows.push_str("<tr><td colspan=\"12\" class=\"muted\">No agents minted yet.</td></tr>");
    }
    format!(
        "<h2>Agents</h2><table><tr><th>agent</th><th>kind</th><th>namespaces</th><th>grants</th><th>flags held</th><th>last seen</th><th>revoked</th><th>jobs done / failed / blocked</th><th>PRs opened / merged</th><th>attempts kept / reverted</th><th>verified: merge rate · CI green · median min</th><th></th></tr>{rows}</table>"
    )
}

fn activity(view: &Value, csrf: &str) -> String {
    let f = &view["activity_filter"];
    let mut rows = String::new();
    for a in view["activity"].as_array().into_iter().flatten() {
        rows.push_str(&format!(
            "<tr>{}{}{}{}{}</tr>",
            when_cell(&a["at"], view),
            cell(&a["actor"]),
            cell(&a["action"]),
            cell(&a["namespace"]),
            cell(&a["path"]),
        ));
    }
    if rows.is_empty() {
        rows.push_str("<tr><td colspan=\"5\" class=\"muted\">No activity recorded.</td></tr>");
    }
    // One button per mode the loop is not in (reference 4.6: off, subscription, api).
    let current = view["improve"]["mode"].as_str().unwrap_or("off");
    let mode: String = ["off", "subscription", "api"]
        .into_iter()
        .filter(|m| *m != current)
        .map(|m| {
            action_form(
                csrf,
                &[("action", "mode"), ("value", m)],
                None,
                &format!("Set improve mode {m}"),
            )
        })
        .collect();
    format!(
        "<h2>Improve loop</h2><div class=\"card\">{mode}</div>\
         <h2>Recent activity</h2><form method=\"get\" action=\"/console\" class=\"inline\">\
         <input type=\"text\" name=\"namespace\" placeholder=\"namespace\" value=\"{}\">\
         <input type=\"text\" name=\"actor\" placeholder=\"actor\" value=\"{}\"><button type=\"submit\" class=\"quiet\">Filter</button></form>\
         <table><tr><th>at</th><th>actor</th><th>action</th><th>namespace</th><th>path</th></tr>{rows}</table>",
        esc(f["namespace"].as_str().unwrap_or("")),
        esc(f["actor"].as_str().unwrap_or("")),
    )
}

/// The console page for `view` (the `/console.json` object), its forms carrying `csrf`. Its
/// content is one `<main>` carrying the view's `digest`, which `/console/live.js` replaces
/// when `/console/events` says the digest changed; without the script the page is the same.
pub fn console_page(view: &Value, csrf: &str, done: Option<&str>, digest: &str) -> Response {
    let body = [
        header(view, csrf),
        done.and_then(done_notice).map_or_else(String::new, |n| {
            format!("<p class=\"notice\" role=\"status\">{}</p>", esc(n))
        }),
        super::attention::panel(view, csrf),
        namespaces(view, csrf),
        start_work(view, csrf),
        agents(view, csrf),
        super::checkmarks::panel(view, csrf),
        jobs(view, csrf),
        super::doors::panel(view),
        super::skills::panel(view),
        super::autonomy::panel(view),
        activity(view, csrf),
        status_card(view),
    ]
    .concat();
    let body = format!(
        "<main id=\"console\" data-digest=\"{}\">{body}</main><script src=\"/console/live.js\" defer></script>",
        esc(digest)
    );
    scripted_page(StatusCode::OK, "Capsid console", &body, &[])
}

/// What the console says after one of its actions went through (`/console?done=<action>`,
/// where the action sends the browser); nothing for any other word.
fn done_notice(action: &str) -> Option<&'static str> {
    Some(match action {
        "pause" => "Done: the namespace is paused.",
        "unpause" => "Done: the namespace is no longer paused.",
        "mode" => "Done: the improve loop's mode is set.",
        "resume_job" => "Done: the job is resumed; its driver goes on with it on its next run.",
        "fail_job" => "Done: the job is failed; a driver still running it stops within seconds.",
        "revoke_agent" => "Done: the agent is revoked; its key no longer works.",
        "answer" => "Done: your answer is recorded for the agent.",
        "raise_cap" => "Done: the job's cap is raised.",
        "dismiss_job" => "Done: the failed job is off your list; its record stays.",
        "promote" => "Done: the log entry is global; every namespace's feed shows it.",
        "post_job" => "Done: the job is posted; the namespace's driver claims it on its next run.",
        "register_namespace" => {
            "Done: the namespace is registered; mint its driver to start work there."
        }
        _ => return None,
    })
}

/// What a browser without a console session sees when GitHub sign-in is not configured: the
/// command that prints a one-time sign-in link.
pub fn signed_out_page() -> Response {
    let body = "<h1>Capsid console</h1><div class=\"card\"><p>You are not signed in. On the machine that holds Capsid's data folder, run</p>\
        <pre class=\"cmd\">capsid console login</pre>\
        <p>and open the link it prints: it signs this browser in, once, within five minutes.</p>\
        <p class=\"muted\">GitHub sign-in (for an owner elsewhere) is not configured on this server: set CAPSID_GITHUB_CLIENT_ID, CAPSID_GITHUB_CLIENT_SECRET, CAPSID_ADMIN_GITHUB_LOGIN and CAPSID_COOKIE_KEY to turn it on.</p></div>";
    page(
        StatusCode::UNAUTHORIZED,
        "Sign in to the Capsid console",
        body,
        &[],
    )
}

/// The second step of every action: what it will do, and a form that re-posts it with
/// `confirm=yes`.
pub fn confirm_page(action: &ConsoleAction, csrf: &str) -> Response {
    let fields = action.fields();
    let mut pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    pairs.push(("confirm", "yes"));
    let body = format!(
        "<h1>Confirm: {}</h1><div class=\"card\"><p>{}</p>\
         <form method=\"post\" action=\"/console\" class=\"inline\">{}<button type=\"submit\">Yes, do it</button></form> \
         <a href=\"/console\">Cancel</a></div>",
        esc(action.name()),
        esc(&action.effect()),
        hidden(csrf, &pairs)
    );
    let mut resp = page(StatusCode::OK, "Confirm a console action", &body, &[]);
    resp.headers_mut()
        .insert("x-frame-options", HeaderValue::from_static("DENY"));
    resp
}

/// The confirmation of revoking every MCP client's access.
pub fn confirm_revoke_page(csrf: &str) -> Response {
    let body = format!(
        "<h1>Confirm: revoke every MCP client</h1><div class=\"card\"><p>Every access and refresh token issued to MCP clients stops working now, and every client must ask for your consent again.</p>\
         <form method=\"post\" action=\"/console/revoke-grants\" class=\"inline\">{}<button type=\"submit\">Yes, revoke them</button></form> \
         <a href=\"/console\">Cancel</a></div>",
        hidden(csrf, &[("confirm", "yes")])
    );
    let mut resp = page(StatusCode::OK, "Confirm a console action", &body, &[]);
    resp.headers_mut()
        .insert("x-frame-options", HeaderValue::from_static("DENY"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_read_relative_to_the_view_with_the_instant_on_hover() {
        assert_eq!(relative(0), "just now");
        assert_eq!(relative(59_999), "just now");
        assert_eq!(relative(60_000), "1 min ago");
        assert_eq!(relative(59 * 60_000), "59 min ago");
        assert_eq!(relative(3_600_000), "1 h ago");
        assert_eq!(relative(47 * 3_600_000), "47 h ago");
        assert_eq!(relative(48 * 3_600_000), "2 days ago");
        assert_eq!(relative(-10 * 60_000), "in 10 min");
        let view = json!({"generated": "2026-12-07T10:00:00.000Z"});
        assert_eq!(
            when(&json!("2026-12-07T09:55:00.000Z"), &view),
            "<time datetime=\"2026-12-07T09:55:00.000Z\" title=\"2026-12-07T09:55:00.000Z\">5 min ago</time>"
        );
        assert_eq!(when(&json!(null), &view), "—");
        assert_eq!(when(&json!("<soon>"), &view), "&lt;soon&gt;");
        assert_eq!(
            when(&json!("2026-12-07T09:55:00Z"), &json!({})),
            "2026-12-07T09:55:00Z"
        );
    }

    #[test]
    fn an_action_that_went_through_is_said_and_nothing_else_is() {
        for action in capsid_core::owner::CONSOLE_ACTIONS {
            assert!(
                done_notice(action).is_some_and(|n| n.starts_with("Done: ")),
                "{action}"
            );
        }
        assert_eq!(done_notice("<script>"), None);
        assert_eq!(done_notice(""), None);
    }

    #[test]
    fn the_loops_columns_show_once_it_has_something_to_show() {
        let off = json!({"improve": {"mode": "off", "namespaces": [
            {"namespace": "alpha", "paused": null, "anchor_pinned": false, "last_run": null, "best": {"sha": null}, "jobs": {}, "jobs_budget": {}}]}});
        assert!(!loop_has_data(&off));
        let html = namespaces(&off, "tok");
        assert!(
            !html.contains("anchor pinned") && !html.contains("tonight"),
            "{html}"
        );
        assert!(html.contains("<th>queued</th>"), "{html}");
        let mut ran = off.clone();
        ran["improve"]["namespaces"][0]["best"]["sha"] = json!("abcdef0123456");
        assert!(loop_has_data(&ran));
        assert!(namespaces(&ran, "tok").contains("<th>anchor pinned</th>"));
        let mut on = off.clone();
        on["improve"]["mode"] = json!("subscription");
        assert!(loop_has_data(&on));
        let none = json!({"improve": {"mode": "off", "namespaces": []}});
        assert!(namespaces(&none, "tok").contains("colspan=\"11\""));
    }

    #[test]
    fn the_start_work_forms_and_a_namespaces_runner_and_driver_contact() {
        let none = json!({"improve": {"namespaces": []}});
        let html = start_work(&none, "tok");
        assert!(html.contains("Register a namespace first"), "{html}");
        assert!(html.contains("class=\"register-namespace\""), "{html}");
        for f in capsid_core::owner::CONSOLE_RUNNER_FIELDS {
            assert!(html.contains(&format!("name=\"{f}\"")), "{f}");
        }
        let view = json!({"generated": "2026-12-07T10:00:00.000Z", "improve": {"mode": "off", "namespaces": [
            {"namespace": "a<b", "paused": null, "jobs": {}, "jobs_budget": {},
             "runner": {"test_command": "cargo <test>"}, "driver_last_contact": "2026-12-07T09:50:00.000Z"},
            {"namespace": "c", "paused": null, "jobs": {}, "jobs_budget": {}, "runner": {}, "driver_last_contact": null}]}});
        let html = start_work(&view, "tok");
        assert!(
            html.contains("<option value=\"a&lt;b\">a&lt;b</option>"),
            "{html}"
        );
        assert!(
            html.contains("name=\"action\" value=\"post_job\""),
            "{html}"
        );
        let rows = namespaces(&view, "tok");
        assert!(
            rows.contains("test_command: <code>cargo &lt;test&gt;</code>"),
            "{rows}"
        );
        assert!(rows.contains(">10 min ago</time>"), "{rows}");
        assert!(
            rows.contains("<td class=\"driver-contact\">never</td>"),
            "{rows}"
        );
    }

    #[test]
    fn an_open_job_shows_its_ledger_against_its_cap() {
        let view = json!({"jobs": [
            {"id": "job_000000000001", "namespace": "alpha", "title": "Ship", "status": "claimed",
             "claimed_by": "agent:d1", "lease_expires": "t", "spent_usd": 0.0312, "max_cost_usd": 0.05},
            {"id": "job_000000000002", "namespace": "alpha", "title": "Next", "status": "queued",
             "claimed_by": null, "lease_expires": null, "spent_usd": 0.0, "max_cost_usd": null},
        ]});
        let html = jobs(&view, "tok");
        assert!(html.contains("<th>spent (ledger) of cap</th>"), "{html}");
        assert!(html.contains("$0.0312 of $0.0500"), "{html}");
        assert!(html.contains("$0.0000 (no cap)"), "{html}");
        assert!(jobs(&json!({"jobs": []}), "tok").contains("colspan=\"9\""));
    }

    #[test]
    fn a_jobs_row_says_which_paths_it_holds_and_what_it_waits_on() {
        let view = json!({"jobs": [
            {"id": "job_000000000001", "namespace": "alpha", "title": "Api", "status": "claimed",
             "paths": ["src/api/**"], "leased": ["src/api/**"]},
            {"id": "job_000000000002", "namespace": "alpha", "title": "Anything", "status": "claimed",
             "leased": ["**"]},
            {"id": "job_000000000003", "namespace": "alpha", "title": "Api v1", "status": "queued",
             "paths": ["src/api/v1/**"],
             "lease_wait": "waiting on job job_000000000001 ('Api') for `src/api/**`"},
            {"id": "job_000000000004", "namespace": "alpha", "title": "Plain", "status": "claimed"},
        ]});
        let html = jobs(&view, "tok");
        assert!(html.contains("<th>paths</th>"), "{html}");
        assert!(html.contains("<td>holds src/api/**</td>"), "{html}");
        assert!(
            html.contains("<td>holds the whole repository</td>"),
            "{html}"
        );
        assert!(
            html.contains("<td>src/api/v1/** (waiting on job job_000000000001 (&#39;Api&#39;) for `src/api/**`)</td>"),
            "{html}"
        );
        assert!(html.contains("<td>none leased</td>"), "{html}");
    }

    #[test]
    fn the_page_shows_what_the_view_holds_escaped() {
        let view = json!({
            "generated": "2026-11-30T10:00:00.000Z", "viewer": "github:octo",
            "health": {"sha": "abc", "dirty": false, "schema_version": "0002_oauth", "status": "ok", "backup": {"age_hours": null, "warning": "no successful backup recorded"}},
            "improve": {"mode": "off", "budget": {"caps": {}, "month_to_date": {}}, "namespaces": [
                {"namespace": "alpha", "paused": null, "anchor_pinned": false, "integrity": null,
                 "jobs_budget": {"spent_usd": 1.5, "budget_usd": 1.0},
                 "jobs": {"queued": 1, "claimed": 0, "blocked": 1, "done_today": 0,
                          "blocked_jobs": [{"id": "job_000000000001", "title": "<b>gate</b>", "waiting_on": "git push origin x", "blocked_times": 1}]}}]},
            "agents": [{"name": "d1", "kind": "driver", "namespaces": ["alpha"], "grants": ["read"], "flags": [], "revoked_at": null, "record": {}}],
            "jobs": [], "activity": [{"at": "t", "actor": "agent:d1", "action": "job-block", "namespace": "alpha", "path": "jobs/x.md"}],
            "activity_filter": {"namespace": null, "actor": null}
        });
        let resp = console_page(&view, "tok", None, "d1g35t");
        let csp = resp.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(csp.starts_with("default-src 'none'"));
        assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"));
        let body = [
            header(&view, "tok"),
            namespaces(&view, "tok"),
            agents(&view, "tok"),
            activity(&view, "tok"),
            status_card(&view),
        ]
        .concat();
        assert!(body.contains("/console/documents?namespace=alpha"));
        assert!(body.contains("no successful backup recorded"));
        assert!(body.contains("$1.50 of $1.00 (spent: claims stop)"));
        assert!(body.contains("job-block") && body.contains("d1") && body.contains("alpha"));
        assert!(!body.contains("<script"));
        assert!(
            body.contains("Set improve mode subscription")
                && body.contains("Set improve mode api")
                && !body.contains("Set improve mode off"),
            "the mode buttons offer the modes the loop is not in"
        );
        for absent in ["merge", "mint"] {
            assert!(
                !body.contains(&format!("value=\"{absent}")),
                "no {absent} action"
            );
        }
    }

    #[test]
    fn the_status_card_shows_the_last_rehearsal_and_why_it_failed() {
        let mut view = json!({
            "health": {"sha": "abc", "dirty": false, "schema_version": "0002_oauth", "status": "ok", "backup": {"age_hours": 1.0}},
            "improve": {"mode": "off", "budget": {"caps": {}, "month_to_date": {}}},
            "rehearsal": null
        });
        assert!(status_card(&view).contains("restore rehearsal: none yet"));
        view["rehearsal"] = json!({"at": "2026-03-02T10:00:00.000Z", "run": "r1", "ok": true,
            "tables": [{"table": "documents", "expected": 2, "restored": 2}, {"table": "agents", "expected": 1, "restored": 1}]});
        let card = status_card(&view);
        assert!(card.contains("restore rehearsal ok at 2026-03-02T10:00:00.000Z (dump <code>r1</code>, 3 rows verified)"), "{card}");
        view["rehearsal"] = json!({"at": "2026-03-09T10:00:00.000Z", "run": "r2", "ok": false,
            "tables": [], "reason": "backups/json/r2/documents.json: <digest> differs"});
        let card = status_card(&view);
        assert!(
            card.contains("restore rehearsal FAILED at 2026-03-09T10:00:00.000Z"),
            "{card}"
        );
        assert!(card.contains("&lt;digest&gt; differs"), "{card}");
    }
}
