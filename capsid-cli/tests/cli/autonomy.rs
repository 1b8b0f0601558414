//! The real binary: `capsid improve roster add|remove|list` edits the roster through
//! `improve_run` (audited, exit 2 on a refusal), and `capsid tick [--task ...] [--json]` runs
//! the due periodic tasks now (or one by name, due or not) and prints the tick report;
//! nothing is due right after, and an unknown task is refused naming the field.

use std::path::Path;
use std::process::{Command, Output};

fn capsid(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capsid"))
        .args(args)
        .env("CAPSID_DATA_DIR", data)
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .env_remove("CAPSID_MEDIA_URL")
        .env_remove("CAPSID_HOLDOUT_URL")
        .env_remove("CAPSID_GITHUB_APP_CLIENT_ID")
        .env_remove("CAPSID_GITHUB_APP_PRIVATE_KEY")
        .env("CAPSID_LOG", "warn")
        .output()
        .expect("run capsid")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_roster_and_a_tick_on_demand_through_the_binary() {
    let dir = tempfile::tempdir().expect("a folder");
    let data = dir.path().join("data");
    // The admin commands open a store; they never create one (`migrate` does).
    let migrated = capsid(&data, &["migrate"]);
    assert!(migrated.status.success(), "{}", text(&migrated));
    for ns in ["alpha", "beta"] {
        let registered = capsid(
            &data,
            &[
                "namespaces",
                "register",
                ns,
                "--repo",
                &format!("octo/{ns}"),
            ],
        );
        assert!(registered.status.success(), "{}", text(&registered));
    }

    // A fresh install's roster is empty: it names no one's projects.
    let listed = capsid(&data, &["improve", "roster", "list", "--json"]);
    assert!(listed.status.success(), "{}", text(&listed));
    assert_eq!(json(&listed)["roster"], serde_json::json!([]));
    let listed = capsid(&data, &["improve", "roster", "list"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout).trim(),
        "the roster is empty"
    );
    for ns in ["alpha", "beta"] {
        let added = capsid(&data, &["improve", "roster", "add", ns]);
        assert!(added.status.success(), "{}", text(&added));
        assert!(text(&added).lines().any(|l| l == ns), "{}", text(&added));
    }
    let removed = capsid(&data, &["improve", "roster", "remove", "alpha", "--json"]);
    assert!(removed.status.success(), "{}", text(&removed));
    assert_eq!(json(&removed)["roster"], serde_json::json!(["beta"]));
    let unknown = capsid(&data, &["improve", "roster", "add", "nosuch"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(text(&unknown).contains("nosuch"), "{}", text(&unknown));
    let listed = capsid(&data, &["improve", "roster", "list"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout)
            .lines()
            .collect::<Vec<_>>(),
        ["beta"]
    );

    let cadence = capsid(&data, &["improve", "cadence", "watcher", "45"]);
    assert!(cadence.status.success(), "{}", text(&cadence));
    assert_eq!(
        String::from_utf8_lossy(&cadence.stdout).trim(),
        "watcher: every 45 minutes (default 30, at least 5)"
    );
    let too_often = capsid(&data, &["improve", "cadence", "watcher", "1"]);
    assert_eq!(too_often.status.code(), Some(2), "{}", text(&too_often));

    // Every task is due on a fresh store; each takes its turn and reports.
    let tick = capsid(&data, &["tick", "--json"]);
    assert!(tick.status.success(), "{}", text(&tick));
    let answer = json(&tick);
    let ran: Vec<(String, String)> = answer["report"]["ran"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap_or_default().to_owned(),
                r["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let names: Vec<&str> = ran.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        names,
        [
            "sweep",
            "ci-poll",
            "backup",
            "rehearsal",
            "auto-merge",
            "watcher",
            "improve",
            "intake",
            "scouts"
        ],
        "{answer}"
    );
    assert!(ran.iter().all(|(_, o)| o == "ran"), "{answer}");
    let auto_merge = &answer["report"]["ran"][4]["report"];
    assert!(
        auto_merge["notes"][0]
            .as_str()
            .unwrap_or_default()
            .contains("there is no capsid/policy/auto-merge.md"),
        "{auto_merge}"
    );
    // Nothing is due a moment later; a named task runs anyway.
    let idle = capsid(&data, &["tick"]);
    assert!(idle.status.success(), "{}", text(&idle));
    assert_eq!(
        String::from_utf8_lossy(&idle.stdout).trim(),
        "nothing was due"
    );
    let sweep = capsid(&data, &["tick", "--task", "sweep", "--json"]);
    assert!(sweep.status.success(), "{}", text(&sweep));
    let report = &json(&sweep)["report"];
    assert_eq!(report["ran"].as_array().map(Vec::len), Some(1), "{report}");
    assert_eq!(report["ran"][0]["task"], "sweep");
    let bad = capsid(&data, &["tick", "--task", "sweeps"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(
        text(&bad).contains("task: 'sweeps' is not a periodic task"),
        "{}",
        text(&bad)
    );
}
