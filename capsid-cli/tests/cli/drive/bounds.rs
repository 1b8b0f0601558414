//! The namespace's runner settings as `capsid drive` reads them, and the bounds of
//! agent-initiated dispatch, through the real server.

use serde_json::json;

use super::support::{World, fake_agent, said};

/// Runner settings set with `capsid namespaces update` drive a run with no flags; a secret
/// in place of a reference is refused; no test command anywhere refuses before any claim.
pub fn runner_settings_come_from_the_namespace(w: &World) {
    let key = w.namespace_with_driver("demo");
    let root = w.project("demo");
    let refused = w.cli_output(&[
        "namespaces",
        "update",
        "demo",
        "--credential-ref",
        "ghp_0123456789abcdef",
    ]);
    assert!(!refused.status.success(), "{}", said(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("credential_ref: is not a reference"),
        "{}",
        said(&refused)
    );

    let id = w.post("demo", "Widgets in two sizes", "Make widgets. MODE=pass");
    let elsewhere = w.dir.path();
    let out = w.drive_bare("demo", &key, elsewhere);
    assert_eq!(
        out.status.code(),
        Some(2),
        "not a git repository, no settings: {}",
        said(&out)
    );
    // The refusal names the path and where it came from.
    let expected = format!(
        "the project root {} is not a git repository (it came from the current folder (no --root-dir given))",
        elsewhere.display()
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&expected),
        "{}",
        said(&out)
    );
    assert_eq!(w.job("demo", &id)["status"], json!("queued"));
    let plain = w.dir.path().join("plain-folder");
    std::fs::create_dir_all(&plain).expect("a folder");
    w.cli(&[
        "namespaces",
        "update",
        "demo",
        "--root-dir",
        &plain.display().to_string(),
    ]);
    let out = w.drive_bare("demo", &key, elsewhere);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let expected = format!(
        "the project root {} is not a git repository (it came from the namespace's runner setting root_dir",
        plain.display()
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&expected),
        "{}",
        said(&out)
    );
    assert_eq!(w.job("demo", &id)["status"], json!("queued"));

    let root_text = root.display().to_string();
    let agent = fake_agent();
    w.cli(&[
        "namespaces",
        "update",
        "demo",
        "--root-dir",
        &root_text,
        "--agent-command",
        &agent,
        "--credential-ref",
        "env:HOME",
    ]);
    let out = w.drive_bare("demo", &key, elsewhere);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no test command"),
        "{}",
        said(&out)
    );
    assert_eq!(
        w.job("demo", &id)["status"],
        json!("queued"),
        "refused before any claim"
    );

    w.cli(&[
        "namespaces",
        "update",
        "demo",
        "--test-command",
        "sh test.sh",
        "--build-command",
        "sh build.sh",
    ]);
    let listed = w.tool(&w.human, "namespaces", json!({}));
    let runner: serde_json::Value =
        serde_json::from_str(listed[0]["runner"].as_str().expect("stored runner")).expect("JSON");
    assert_eq!(
        runner,
        json!({"root_dir": root_text, "test_command": "sh test.sh", "build_command": "sh build.sh",
               "agent_command": agent, "credential_ref": "env:HOME"})
    );
    let out = w.drive_bare("demo", &key, elsewhere);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let job = w.job("demo", &id);
    assert_eq!(job["status"], json!("done"), "{job}");
    assert!(
        job["result_summary"]
            .as_str()
            .unwrap_or("")
            .contains("`sh build.sh` passed"),
        "{job}"
    );

    // A narrowed agent may not change what agent hosts run.
    let changed = w.tool_error(
        &key,
        "update_namespace",
        json!({"namespace": "demo", "agent_command": "rm -rf /"}),
    );
    assert!(
        changed.contains("update_namespace is admin only"),
        "{changed}"
    );
}

fn post_child(w: &World, key: &str, parent: &str, title: &str) -> serde_json::Value {
    w.tool(
        key,
        "jobs",
        json!({"action": "post", "namespace": "demo", "title": title, "body": "A follow-up.", "parent": parent}),
    )
}

fn claim(w: &World, key: &str, id: &str) {
    let c = w.tool(
        key,
        "jobs",
        json!({"action": "claim", "namespace": "demo", "id": id}),
    );
    assert_eq!(c["ok"], json!(true), "{c}");
}

/// The holder dispatches in its parent's namespace; depth 3 is accepted and depth 4 refused;
/// the sixth child of one job is refused.
pub fn dispatch_is_bounded_in_depth_and_breadth(w: &World) {
    let keys: Vec<String> = std::iter::once(w.namespace_with_driver("demo"))
        .chain((1..=4).map(|i| w.mint_driver(&format!("d{i}"), "demo")))
        .collect();
    let root = w.post("demo", "The root job", "Start here.");
    claim(w, &keys[0], &root);

    let stranger = post_child(w, &keys[1], &root, "Not mine");
    assert_eq!(stranger["ok"], json!(false), "{stranger}");
    assert!(
        stranger["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("only the holder"),
        "{stranger}"
    );

    // A chain: each child claimed by the next driver, who dispatches the next.
    let mut parent = root.clone();
    for depth in 1..=4 {
        let posted = post_child(w, &keys[depth - 1], &parent, &format!("Depth {depth}"));
        if depth == 4 {
            assert_eq!(posted["ok"], json!(false), "depth 4: {posted}");
            assert!(
                posted["refusal"]
                    .as_str()
                    .unwrap_or("")
                    .contains("3 dispatches deep"),
                "{posted}"
            );
            break;
        }
        assert_eq!(posted["ok"], json!(true), "depth {depth}: {posted}");
        assert_eq!(posted["job"]["depth"], json!(depth));
        assert_eq!(posted["job"]["parent_id"], json!(parent));
        assert_eq!(
            posted["job"]["requested_by"],
            json!(format!(
                "agent:{}",
                if depth == 1 {
                    "demo-driver".to_owned()
                } else {
                    format!("d{}", depth - 1)
                }
            ))
        );
        let child = posted["job"]["id"].as_str().expect("id").to_owned();
        claim(w, &keys[depth], &child);
        parent = child;
    }

    // Breadth: the root already has one child; four more are accepted, the sixth refused.
    for n in 2..=5 {
        let posted = post_child(w, &keys[0], &root, &format!("Sibling {n}"));
        assert_eq!(posted["ok"], json!(true), "child {n}: {posted}");
    }
    let sixth = post_child(w, &keys[0], &root, "Sibling 6");
    assert_eq!(sixth["ok"], json!(false), "{sixth}");
    assert!(
        sixth["refusal"]
            .as_str()
            .unwrap_or("")
            .contains("already dispatched 5 jobs"),
        "{sixth}"
    );
    let children = w.tool(
        &w.human,
        "jobs",
        json!({"action": "list", "namespace": "demo"}),
    )["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .filter(|j| j["parent_id"] == json!(root))
        .count();
    assert_eq!(children, 5, "counted from the rows");
}
