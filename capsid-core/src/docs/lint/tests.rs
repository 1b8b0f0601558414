use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn doc(ns: &str, path: &str, doc_type: &str, body_len: usize, created: &str) -> Document {
    Document {
        id: 1,
        namespace: ns.into(),
        path: path.into(),
        title: Some(path.into()),
        doc_type: doc_type.into(),
        status: "published".into(),
        tags: Some("t".into()),
        created_at: Timestamp::parse(created).expect("instant"),
        updated_at: Timestamp::parse(created).expect("instant"),
        body: Some("x".repeat(body_len)),
    }
}

fn stubbed(d: &PacketDoc) -> bool {
    d.body
        .as_deref()
        .is_some_and(|b| b.starts_with("(trimmed for size: read "))
}

#[test]
fn small_packet_is_whole_and_shaped_per_section() {
    let packet = gather_packet(GatherInput {
        namespace: "n".into(),
        core: Some(doc("n", "core.md", "core", 10, "2026-01-01T00:00:00.000Z")),
        wiki: vec![doc(
            "n",
            "concepts/a.md",
            "concept",
            20,
            "2026-01-01T00:00:00.000Z",
        )],
        unconsolidated: vec![doc(
            "n",
            "log/1.md",
            "episodic",
            30,
            "2026-01-01T00:00:00.000Z",
        )],
        rules: vec![doc(
            "capsid",
            "conventions.md",
            "reference",
            40,
            "2026-01-01T00:00:00.000Z",
        )],
        ..GatherInput::default()
    });
    assert_eq!(packet.packet_chars, 100);
    assert!(!packet.truncated);
    let wire = serde_json::to_value(&packet).unwrap();
    assert_eq!(wire["mode"], "gather");
    assert_eq!(wire["budget"], 150_000);
    assert!(wire.get("trimmed").is_none());
    assert_eq!(wire["authoritative_counts"], serde_json::Value::Null);
    let keys = |v: &serde_json::Value| {
        let mut keys = v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        keys.sort();
        keys
    };
    assert_eq!(
        keys(&wire["core"]),
        [
            "body",
            "namespace",
            "path",
            "status",
            "title",
            "type",
            "updated_at"
        ]
    );
    assert_eq!(
        keys(&wire["wiki"][0]),
        [
            "body",
            "namespace",
            "path",
            "status",
            "tags",
            "title",
            "type",
            "updated_at"
        ]
    );
    assert_eq!(
        keys(&wire["unconsolidated"][0]),
        [
            "body",
            "created_at",
            "namespace",
            "path",
            "status",
            "tags",
            "title",
            "type",
            "updated_at"
        ]
    );
    assert_eq!(
        keys(&wire["rules"][0]),
        ["body", "namespace", "path", "title"]
    );
}

#[test]
fn over_budget_stubs_all_wiki_then_keeps_oldest_raw_that_fit() {
    let packet = gather_packet(GatherInput {
        namespace: "n".into(),
        core: Some(doc(
            "n",
            "core.md",
            "core",
            100_000,
            "2026-01-01T00:00:00.000Z",
        )),
        wiki: vec![
            doc(
                "n",
                "concepts/a.md",
                "concept",
                10,
                "2026-01-01T00:00:00.000Z",
            ),
            doc(
                "n",
                "decisions.md",
                "decision",
                10,
                "2026-01-01T00:00:00.000Z",
            ),
        ],
        unconsolidated: vec![
            doc(
                "n",
                "log/3.md",
                "episodic",
                9_000,
                "2026-01-03T00:00:00.000Z",
            ),
            doc(
                "n",
                "log/1.md",
                "episodic",
                30_000,
                "2026-01-01T00:00:00.000Z",
            ),
            doc(
                "n",
                "log/2.md",
                "source",
                30_000,
                "2026-01-02T00:00:00.000Z",
            ),
        ],
        rules: vec![doc(
            "capsid",
            "schema.md",
            "reference",
            10_000,
            "2026-01-01T00:00:00.000Z",
        )],
        ..GatherInput::default()
    });
    assert!(packet.wiki.iter().all(stubbed));
    let order: Vec<(&str, bool)> = packet
        .unconsolidated
        .iter()
        .map(|d| (d.path.as_str(), stubbed(d)))
        .collect();
    // 110,000 fixed + two wiki stubs; log/1 fits, log/2 does not, the smaller log/3 still does.
    assert_eq!(
        order,
        [("log/1.md", false), ("log/2.md", true), ("log/3.md", false)]
    );
    assert!(!stubbed(packet.core.as_ref().unwrap()));
    assert!(packet.truncated);
    let trimmed = packet.trimmed.clone().unwrap();
    assert_eq!(trimmed.len(), 2);
    assert!(trimmed[0].starts_with("2 wiki bodies"), "{}", trimmed[0]);
    assert!(
        trimmed[1].starts_with("1 of 3 unconsolidated bodies"),
        "{}",
        trimmed[1]
    );
    let stub_chars: usize = packet
        .wiki
        .iter()
        .chain(packet.unconsolidated.iter().filter(|d| stubbed(d)))
        .map(|d| d.body.as_ref().unwrap().len())
        .sum();
    assert_eq!(packet.packet_chars, 110_000 + 30_000 + 9_000 + stub_chars);
    assert!(packet.packet_chars <= GATHER_BUDGET);
    assert_eq!(
        packet.wiki[1].body.as_deref(),
        Some("(trimmed for size: read n/decisions.md)")
    );
}

#[test]
fn a_packet_exactly_at_budget_is_whole() {
    let packet = gather_packet(GatherInput {
        namespace: "n".into(),
        core: Some(doc(
            "n",
            "core.md",
            "core",
            100_000,
            "2026-01-01T00:00:00.000Z",
        )),
        unconsolidated: vec![doc(
            "n",
            "log/1.md",
            "episodic",
            50_000,
            "2026-01-01T00:00:00.000Z",
        )],
        ..GatherInput::default()
    });
    assert!(!packet.truncated);
    assert!(!stubbed(&packet.unconsolidated[0]));
    assert_eq!(packet.packet_chars, GATHER_BUDGET);
}

#[test]
fn core_and_rules_alone_over_budget_are_still_whole() {
    let packet = gather_packet(GatherInput {
        namespace: "n".into(),
        core: Some(doc(
            "n",
            "core.md",
            "core",
            GATHER_BUDGET + 1,
            "2026-01-01T00:00:00.000Z",
        )),
        unconsolidated: vec![doc(
            "n",
            "log/1.md",
            "episodic",
            1,
            "2026-01-01T00:00:00.000Z",
        )],
        ..GatherInput::default()
    });
    assert_eq!(
        packet.core.as_ref().unwrap().body.as_ref().unwrap().len(),
        GATHER_BUDGET + 1
    );
    assert!(stubbed(&packet.unconsolidated[0]));
    assert_eq!(
        packet.trimmed.as_ref().unwrap()[0],
        "0 wiki bodies (concept and decision docs; read them individually by path)"
    );
}

fn types(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
        .collect()
}

fn plan(
    consumed: &[&str],
    stored: &BTreeMap<String, String>,
) -> Result<Vec<ArchiveMove>, LintError> {
    let consumed: Vec<String> = consumed.iter().map(|s| (*s).to_owned()).collect();
    finalize_plan("n", &consumed, |p| stored.get(p).cloned())
}

#[test]
fn finalize_plans_moves_under_archive_deduped() {
    let stored = types(&[("log/1.md", "episodic"), ("src/a.md", "source")]);
    let moves = plan(&["log/1.md", "src/a.md", "log/1.md"], &stored).unwrap();
    assert_eq!(
        serde_json::to_value(&moves).unwrap(),
        json!([{"from": "log/1.md", "to": "archive/log/1.md"}, {"from": "src/a.md", "to": "archive/src/a.md"}])
    );
    let outcome = FinalizeOutcome::new("n", moves);
    assert_eq!(
        outcome.audit_params(),
        json!({"consolidated": 2, "consumed": ["log/1.md", "src/a.md"]})
    );
    let wire = serde_json::to_value(&outcome).unwrap();
    assert_eq!(wire["mode"], "finalize");
    assert_eq!(wire["consolidated"], 2);
}

#[test]
fn finalize_refusals() {
    let stored = types(&[
        ("log/1.md", "episodic"),
        ("archive/log/0.md", "episodic"),
        ("concepts/a.md", "concept"),
        ("improve/prompts/run.md", "source"),
    ]);
    assert_eq!(plan(&[], &stored), Err(LintError::NothingConsumed));
    let many: Vec<String> = (0..=LINT_FINALIZE_MAX)
        .map(|i| format!("log/{i}.md"))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(
        plan(&many, &stored),
        Err(LintError::TooManyConsumed { count: 21 })
    );

    let err = plan(
        &[
            "log/1.md",
            "missing.md",
            "archive/log/0.md",
            "concepts/a.md",
        ],
        &stored,
    )
    .unwrap_err();
    let LintError::Aborted(problems) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        problems,
        &[
            "not found: n/missing.md".to_owned(),
            "already archived: n/archive/log/0.md".to_owned(),
            "not consumable: n/concepts/a.md has type 'concept' (only episodic and source docs are archived)"
                .to_owned(),
        ]
    );
    assert!(
        err.to_string()
            .starts_with("finalize aborted, nothing archived:\nnot found: n/missing.md\n")
    );

    let err = plan(&["log/1.md", "../x", "a//b"], &stored)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("consumed[1]") && err.contains("consumed[2]"),
        "{err}"
    );

    // The improve guard runs last and cannot be lifted here.
    let err = plan(&["improve/prompts/run.md"], &stored)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("improve/prompts/run.md") && err.contains("refused"),
        "{err}"
    );
}

#[test]
fn lint_modes() {
    assert_eq!(LintMode::default(), LintMode::Gather);
    assert!(!LintMode::Gather.needs_write());
    assert!(LintMode::Finalize.needs_write() && LintMode::Report.needs_write());
    assert_eq!(
        serde_json::from_str::<LintMode>("\"report\"").unwrap(),
        LintMode::Report
    );
    assert_eq!(LintMode::Finalize.as_str(), "finalize");
}

proptest! {
    #[test]
    fn gather_never_cuts_a_body_and_keeps_oldest_first(
        sizes in proptest::collection::vec(0usize..60_000, 0..8),
        wiki_sizes in proptest::collection::vec(0usize..40_000, 0..4),
        core in 0usize..80_000,
    ) {
        let raw: Vec<Document> = sizes.iter().enumerate()
            .map(|(i, n)| doc("n", &format!("log/{i}.md"), "episodic", *n, &format!("2026-01-01T00:00:{i:02}.000Z")))
            .collect();
        let wiki: Vec<Document> = wiki_sizes.iter().enumerate()
            .map(|(i, n)| doc("n", &format!("c/{i}.md"), "concept", *n, "2026-01-01T00:00:00.000Z"))
            .collect();
        let packet = gather_packet(GatherInput {
            namespace: "n".into(),
            core: Some(doc("n", "core.md", "core", core, "2026-01-01T00:00:00.000Z")),
            wiki,
            unconsolidated: raw.into_iter().rev().collect(),
            ..GatherInput::default()
        });
        for (i, d) in packet.unconsolidated.iter().enumerate() {
            prop_assert_eq!(&d.path, &format!("log/{i}.md"));
            prop_assert!(stubbed(d) || d.body.as_ref().unwrap().len() == sizes[i]);
        }
        for (i, d) in packet.wiki.iter().enumerate() {
            prop_assert!(stubbed(d) || d.body.as_ref().unwrap().len() == wiki_sizes[i]);
        }
        let total: usize = core + sizes.iter().sum::<usize>() + wiki_sizes.iter().sum::<usize>();
        prop_assert_eq!(packet.truncated, total > GATHER_BUDGET);
        if total <= GATHER_BUDGET {
            prop_assert_eq!(packet.packet_chars, total);
        }
    }
}
