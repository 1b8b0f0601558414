use serde_json::{Value, json};

use super::*;

fn doc(ns: &str, path: &str, doc_type: &str, body_len: usize, updated: &str) -> BriefSource {
    BriefSource {
        document: Document {
            id: 1,
            namespace: ns.into(),
            path: path.into(),
            title: Some(format!("T {path}")),
            doc_type: doc_type.into(),
            status: "published".into(),
            tags: None,
            created_at: Timestamp::parse(updated).expect("instant"),
            updated_at: Timestamp::parse(updated).expect("instant"),
            body: Some("x".repeat(body_len)),
        },
        last_actor: Some("agent:a".into()),
    }
}

fn base() -> BriefInput {
    BriefInput {
        namespace: "n".into(),
        conventions: Some(doc(
            "capsid",
            CONVENTIONS_PATH,
            "reference",
            100,
            "2026-01-01T00:00:00.000Z",
        )),
        repo_structure: None,
        core: Some(doc("n", CORE_PATH, "core", 200, "2026-01-01T00:00:00.000Z")),
        ..BriefInput::default()
    }
}

#[test]
fn small_brief_carries_everything_and_counts_bodies() {
    let mut input = base();
    input.tasks = vec![doc(
        "n",
        "tasks/a.md",
        "task",
        10,
        "2026-01-01T00:00:00.000Z",
    )];
    input.episodics = vec![doc(
        "n",
        "log/1.md",
        "episodic",
        20,
        "2026-01-02T00:00:00.000Z",
    )];
    let brief = assemble_brief(input);
    assert_eq!(brief.approx_chars, 100 + 200 + 10 + 20);
    assert_eq!(brief.trimmed, None);
    assert_eq!(brief.warning, None);
    let wire = serde_json::to_value(&brief).unwrap();
    assert!(wire.get("trimmed").is_none());
    assert!(wire.get("warning").is_none());
    assert_eq!(wire["repo_structure"], Value::Null);
    assert_eq!(wire["core"]["type"], "core");
    assert_eq!(wire["core"]["last_actor"], "agent:a");
    assert_eq!(wire["open_tasks"][0]["type"], "task");
    let keys: Vec<&str> = wire
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.len(), 8, "{keys:?}");
}

#[test]
fn missing_core_warns() {
    let mut input = base();
    input.core = None;
    let brief = assemble_brief(input);
    assert_eq!(brief.warning.as_deref(), Some("no core.md for namespace n"));
    assert_eq!(serde_json::to_value(&brief).unwrap()["core"], Value::Null);
}

#[test]
fn over_budget_stubs_episodics_first() {
    let mut input = base();
    input.tasks = vec![doc(
        "n",
        "tasks/a.md",
        "task",
        1_000,
        "2026-01-01T00:00:00.000Z",
    )];
    input.episodics = vec![doc(
        "n",
        "log/1.md",
        "episodic",
        BRIEF_BUDGET,
        "2026-01-02T00:00:00.000Z",
    )];
    let brief = assemble_brief(input);
    assert_eq!(brief.trimmed, Some(vec!["1 episodic bodies".to_owned()]));
    assert_eq!(brief.approx_chars, 100 + 200 + 1_000);
    assert!(matches!(brief.open_tasks[0], BriefEntry::Full(_)));
    let wire = serde_json::to_value(&brief.recent_episodics[0]).unwrap();
    assert_eq!(
        wire,
        json!({
            "namespace": "n", "path": "log/1.md", "title": "T log/1.md",
            "updated_at": "2026-01-02T00:00:00.000Z", "last_actor": "agent:a",
            "body": "(trimmed for size: read n/log/1.md)"
        })
    );
}

#[test]
fn still_over_budget_stubs_task_bodies_too() {
    let mut input = base();
    input.tasks = vec![
        doc(
            "n",
            "tasks/a.md",
            "task",
            BRIEF_BUDGET,
            "2026-01-01T00:00:00.000Z",
        ),
        doc("n", "tasks/b.md", "task", 5, "2026-01-03T00:00:00.000Z"),
    ];
    input.episodics = vec![doc(
        "n",
        "log/1.md",
        "episodic",
        50,
        "2026-01-02T00:00:00.000Z",
    )];
    let brief = assemble_brief(input);
    assert_eq!(
        brief.trimmed,
        Some(vec![
            "1 episodic bodies".to_owned(),
            "2 task bodies".to_owned()
        ])
    );
    assert_eq!(brief.approx_chars, 300);
    assert!(
        brief
            .open_tasks
            .iter()
            .all(|t| matches!(t, BriefEntry::Stub(_)))
    );
    // Core and the shared documents are never trimmed, even when they alone are over.
    let mut input = base();
    input.core = Some(doc(
        "n",
        CORE_PATH,
        "core",
        BRIEF_BUDGET * 2,
        "2026-01-01T00:00:00.000Z",
    ));
    let brief = assemble_brief(input);
    assert_eq!(brief.approx_chars, 100 + BRIEF_BUDGET * 2);
    assert_eq!(
        brief.trimmed,
        Some(vec![
            "0 episodic bodies".to_owned(),
            "0 task bodies".to_owned()
        ])
    );
}

#[test]
fn exactly_at_budget_is_not_trimmed() {
    let mut input = base();
    input.episodics = vec![doc(
        "n",
        "log/1.md",
        "episodic",
        BRIEF_BUDGET - 300,
        "2026-01-02T00:00:00.000Z",
    )];
    let brief = assemble_brief(input);
    assert_eq!(brief.approx_chars, BRIEF_BUDGET);
    assert_eq!(brief.trimmed, None);
}

#[test]
fn selection_and_order_of_tasks_and_episodics() {
    let mut closed = doc(
        "n",
        "tasks/closed.md",
        "task",
        1,
        "2026-03-01T00:00:00.000Z",
    );
    closed.document.status = "closed".into();
    let mut drafted = doc("n", "tasks/draft.md", "task", 1, "2026-01-05 00:00:00");
    drafted.document.status = "draft".into();
    let mut input = base();
    input.tasks = vec![
        doc("n", "tasks/old.md", "task", 1, "2026-01-01T00:00:00.000Z"),
        closed,
        doc(
            "n",
            "archive/tasks/x.md",
            "task",
            1,
            "2026-04-01T00:00:00.000Z",
        ),
        doc("n", "tasks/new.md", "task", 1, "2026-02-01T00:00:00.000Z"),
        drafted,
    ];
    input.episodics = (1..=5)
        .map(|day| {
            doc(
                "n",
                &format!("log/{day}.md"),
                "episodic",
                1,
                &format!("2026-01-0{day}T00:00:00.000Z"),
            )
        })
        .chain([doc(
            "n",
            "archive/log/9.md",
            "episodic",
            1,
            "2026-02-01T00:00:00.000Z",
        )])
        .collect();
    let brief = assemble_brief(input);
    let paths = |entries: &[BriefEntry]| -> Vec<String> {
        entries
            .iter()
            .map(|e| match e {
                BriefEntry::Full(d) => d.path.clone(),
                BriefEntry::Stub(s) => s.path.clone(),
            })
            .collect()
    };
    assert_eq!(
        paths(&brief.open_tasks),
        ["tasks/new.md", "tasks/draft.md", "tasks/old.md"]
    );
    assert_eq!(
        paths(&brief.recent_episodics),
        ["log/5.md", "log/4.md", "log/3.md"]
    );
}

#[test]
fn core_links_are_sorted() {
    let mut input = base();
    input.core_outgoing = vec![
        OutgoingLink {
            link_type: "references".into(),
            to_ns: "n".into(),
            to_path: "a.md".into(),
        },
        OutgoingLink {
            link_type: "governs".into(),
            to_ns: "n".into(),
            to_path: "z.md".into(),
        },
    ];
    let brief = assemble_brief(input);
    assert_eq!(brief.core_links.outgoing[0].link_type, "governs");
    let wire = serde_json::to_value(&brief).unwrap();
    assert_eq!(wire["core_links"]["incoming"], json!([]));
    assert_eq!(
        wire["core_links"]["outgoing"][1],
        json!({"type": "references", "to_ns": "n", "to_path": "a.md"})
    );
}

#[test]
fn body_length_counts_utf16_units() {
    let mut input = base();
    input.conventions = None;
    let mut core = doc("n", CORE_PATH, "core", 0, "2026-01-01T00:00:00.000Z");
    core.document.body = Some("😀é".into());
    input.core = Some(core);
    assert_eq!(assemble_brief(input).approx_chars, 3);
}
