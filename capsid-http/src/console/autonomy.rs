//! The console's autonomy panel, rendered from `improve.autonomy` of the same view
//! `/console.json` answers (so the page and the JSON cannot disagree): the roster, the
//! auto-merge policy's state and note, the last tick's time and counts, the pull requests
//! awaiting the seat, the watcher's last findings, and each periodic task's cadence and last
//! run.

use serde_json::Value;

use super::page::{cell, text};
use crate::html::esc;

/// The panel.
pub(super) fn panel(view: &Value) -> String {
    let a = &view["improve"]["autonomy"];
    if a.is_null() {
        return String::new();
    }
    let policy = &a["auto_merge"]["policy"];
    let tick = &a["auto_merge"]["last_tick"];
    let tick_line = if tick.is_null() {
        "no auto-merge tick has run yet".to_owned()
    } else {
        format!(
            "last tick {} · evaluated {} · merged {} · declined {} · unchanged {}",
            esc(&text(&tick["at"])),
            esc(&text(&tick["evaluated"])),
            esc(&text(&tick["merged"])),
            esc(&text(&tick["declined"])),
            esc(&text(&tick["unchanged"])),
        )
    };
    let note_of = |p: &Value| {
        p["note"].as_str().map_or(String::new(), |n| {
            format!("<br><span class=\"warn\">{}</span>", esc(n))
        })
    };
    let note = note_of(policy);
    let gates = &a["gates"]["policy"];
    let gates_line = format!(
        "Gate policy: present {} · signed {} · enabled {} · version {}{}",
        esc(&text(&gates["present"])),
        esc(&text(&gates["signed"])),
        esc(&text(&gates["enabled"])),
        esc(&text(&gates["version"])),
        note_of(gates),
    );
    let mut seat = String::new();
    for pr in a["awaiting_seat"].as_array().into_iter().flatten() {
        seat.push_str(&format!(
            "<tr>{}<td>{}#{}</td>{}{}{}</tr>",
            cell(&pr["namespace"]),
            esc(&text(&pr["repo"])),
            esc(&text(&pr["number"])),
            cell(&pr["failed"]),
            cell(&pr["why"]),
            cell(&pr["at"]),
        ));
    }
    let seat = if seat.is_empty() {
        "<p class=\"muted\">Nothing awaits the seat.</p>".to_owned()
    } else {
        format!(
            "<table><tr><th>namespace</th><th>pull request</th><th>declined at</th><th>why</th><th>at</th></tr>{seat}</table>"
        )
    };
    let watcher = &a["watcher"];
    let mut findings = String::new();
    for f in watcher["findings"].as_array().into_iter().flatten() {
        findings.push_str(&format!(
            "<li><code>{}</code> {}</li>",
            esc(&text(&f["fingerprint"])),
            esc(&text(&f["summary"]))
        ));
    }
    let watcher_line = if watcher.is_null() {
        "<p class=\"muted\">The watcher has not run yet.</p>".to_owned()
    } else if findings.is_empty() {
        format!(
            "<p>Watcher at {}: no findings.</p>",
            esc(&text(&watcher["at"]))
        )
    } else {
        format!(
            "<p>Watcher at {}:</p><ul>{findings}</ul>",
            esc(&text(&watcher["at"]))
        )
    };
    let mut tasks = String::new();
    for t in a["tasks"].as_array().into_iter().flatten() {
        tasks.push_str(&format!(
            "<tr>{}{}{}</tr>",
            cell(&t["task"]),
            cell(&t["cadence_minutes"]),
            cell(&t["last_run"])
        ));
    }
    format!(
        "<h2>Autonomy</h2><div class=\"card\">Roster {roster}<br>\
         Auto-merge policy: present {present} · signed {signed} · enabled {enabled} · version {version}{note}<br>{tick_line}<br>{gates_line}</div>\
         <h3>Awaiting the seat</h3>{seat}<h3>Watcher</h3>{watcher_line}\
         <h3>Periodic tasks</h3><table><tr><th>task</th><th>every (min)</th><th>last run</th></tr>{tasks}</table>",
        roster = esc(&text(&a["roster"])),
        present = esc(&text(&policy["present"])),
        signed = esc(&text(&policy["signed"])),
        enabled = esc(&text(&policy["enabled"])),
        version = esc(&text(&policy["version"])),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_panel_shows_what_the_view_holds_escaped() {
        let view = json!({"improve": {"autonomy": {
            "roster": ["capsid", "alpha"],
            "auto_merge": {
                "policy": {"present": true, "signed": false, "enabled": false, "version": null,
                           "namespaces": [], "note": "the merge policy is <not> validly signed"},
                "last_tick": {"at": "2026-12-01T10:00:00.000Z", "evaluated": 3, "merged": 1, "declined": 2, "unchanged": 0}},
            "awaiting_seat": [{"namespace": "alpha", "repo": "octo/alpha", "number": 7, "failed": "ci_green",
                               "why": "CI on abc is pending", "at": "t", "head_sha": "abc"}],
            "watcher": {"at": "w", "findings": [{"fingerprint": "backup-stale", "summary": "no successful backup is recorded"}]},
            "tasks": [{"task": "watcher", "cadence_minutes": 30, "last_run": null}],
            "gates": {"policy": {"present": true, "signed": true, "enabled": false, "version": "g2", "note": "disabled"}},
        }}});
        let html = panel(&view);
        for want in [
            "capsid, alpha",
            "&lt;not&gt;",
            "evaluated 3 · merged 1 · declined 2",
            "octo/alpha#7",
            "ci_green",
            "CI on abc is pending",
            "<code>backup-stale</code>",
            "<td>watcher</td><td>30</td>",
            "Gate policy: present true · signed true · enabled false · version g2",
        ] {
            assert!(html.contains(want), "{want} in {html}");
        }
        assert!(!html.contains("<not>"));
        assert_eq!(panel(&json!({"improve": {}})), "");
    }
}
