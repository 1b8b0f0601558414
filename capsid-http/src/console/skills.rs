//! The console's skills panel (reference 9), rendered from the same view `/console.json`
//! answers: per namespace the skills by status, the newest evaluation and the offered-to-used
//! rate; then the open merge proposals, which a human settles with `improve_run`
//! `accept_merge` or `reject_merge` (the console itself merges nothing).

use serde_json::Value;

use super::page::{cell, text};
use crate::html::esc;

/// `used/offered (rate%)`, or `nothing offered yet`.
fn rate(r: &Value) -> String {
    match r["rate"].as_f64() {
        Some(rate) => {
            let jobs = r["outcomes"].as_u64().unwrap_or(0);
            format!(
                "{}/{} used ({:.0}%) over {jobs} job{}",
                text(&r["used"]),
                text(&r["offered"]),
                rate * 100.0,
                if jobs == 1 { "" } else { "s" },
            )
        }
        None => "nothing offered yet".into(),
    }
}

/// The newest evaluation as a line.
fn evaluation(e: &Value) -> String {
    if e.is_null() {
        return "none yet".into();
    }
    format!(
        "{} v{}: {} (delta {}, {} runs) at {}",
        text(&e["skill"]),
        text(&e["version"]),
        text(&e["verdict"]),
        text(&e["delta"]),
        text(&e["runs"]),
        text(&e["evaluated_at"]),
    )
}

/// The panel.
pub(super) fn panel(view: &Value) -> String {
    let mut rows = String::new();
    for ns in view["improve"]["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let s = &ns["skills"];
        if s.is_null() {
            continue;
        }
        let c = &s["counts"];
        rows.push_str(&format!(
            "<tr data-namespace=\"{}\"><td><strong>{}</strong></td>{}{}{}<td>{}</td><td>{}</td></tr>",
            esc(&text(&ns["namespace"])),
            esc(&text(&ns["namespace"])),
            cell(&c["candidate"]),
            cell(&c["live"]),
            cell(&c["retired"]),
            esc(&evaluation(&s["last_evaluation"])),
            esc(&rate(&s["offered_to_used"])),
        ));
    }
    if rows.is_empty() {
        rows.push_str(
            "<tr><td colspan=\"6\" class=\"muted\">No namespaces registered yet.</td></tr>",
        );
    }
    let mut merges = String::new();
    for p in view["improve"]["skill_merge_proposals"]
        .as_array()
        .into_iter()
        .flatten()
    {
        merges.push_str(&format!(
            "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{:.0}%</td><td><code>improve_run accept_merge skill={} other={}</code> or <code>reject_merge</code></td></tr>",
            esc(&text(&p["a"])),
            esc(&text(&p["b"])),
            p["difference"].as_f64().unwrap_or(0.0) * 100.0,
            esc(&text(&p["a"])),
            esc(&text(&p["b"])),
        ));
    }
    if merges.is_empty() {
        merges.push_str(
            "<tr><td colspan=\"4\" class=\"muted\">No two live skills are near-duplicates.</td></tr>",
        );
    }
    format!(
        "<h2 id=\"skills\">Skills</h2><table class=\"skills\"><tr><th>namespace</th><th>candidate</th><th>live</th><th>retired</th><th>last evaluation</th><th>offered → used</th></tr>{rows}</table>\
         <h3>Merge proposals</h3><table class=\"merges\"><tr><th>skill</th><th>near-duplicate</th><th>bodies differ</th><th>settle with</th></tr>{merges}</table>"
    )
}
