use proptest::prelude::*;
use serde_json::json;

use super::*;

fn doc(path: &str, doc_type: &str, updated: &str, body: &str) -> Document {
    Document {
        id: 1,
        namespace: "n".into(),
        path: path.into(),
        title: None,
        doc_type: doc_type.into(),
        status: "published".into(),
        tags: None,
        created_at: Timestamp::parse(updated).expect("instant"),
        updated_at: Timestamp::parse(updated).expect("instant"),
        body: Some(body.into()),
    }
}

fn edge(from: &str, to: &str) -> Edge {
    Edge {
        from_ns: "n".into(),
        from_path: from.into(),
        link_type: "references".into(),
        to_ns: "n".into(),
        to_path: to.into(),
    }
}

fn now() -> Timestamp {
    Timestamp::parse("2026-11-30T04:09:01.123Z").unwrap()
}

fn input(docs: Vec<Document>) -> TruthInput {
    TruthInput {
        namespace: "n".into(),
        now: now(),
        docs,
        edges: vec![],
        dangling_edges: vec![],
        count_claims: vec![],
        repo_paths: Some(BTreeSet::new()),
        namespaces: vec!["n".into()],
    }
}

fn check<'a>(report: &'a TruthReport, name: &str) -> &'a TruthCheck {
    report.checks.iter().find(|c| c.check == name).unwrap()
}

#[test]
fn empty_store_has_no_integrity() {
    let report = build_truth_report(&input(vec![]));
    assert_eq!(report.integrity, None);
    assert_eq!(report.checks.len(), 6);
    assert_eq!(
        serde_json::to_value(&report).unwrap()["integrity"],
        serde_json::Value::Null
    );
    let body = render_truth_report(&report);
    assert!(body.contains("integrity: n/a"), "{body}");
    assert_eq!(integrity_of(Some(&body)), None);
    assert!(body.contains("## Findings\n\nNone.\n"), "{body}");
}

#[test]
fn checks_count_subjects_and_good_standing() {
    let mut superseded = doc(
        "decisions/old-superseded.md",
        "decision",
        "2020-01-01 00:00:00",
        "",
    );
    superseded.status = "superseded".into();
    let docs = vec![
        doc(
            "core.md",
            "core",
            "2026-11-01T00:00:00.000Z",
            "see src/server.ts and capsid/conventions.md and n/x.md",
        ),
        doc(
            "decisions/new.md",
            "decision",
            "2026-11-01T00:00:00.000Z",
            "",
        ),
        doc(
            "decisions/old.md",
            "decision",
            "2026-01-01 00:00:00",
            "uses lib/gone.rs",
        ),
        superseded,
        doc("specs/bound.md", "spec", "2026-11-01T00:00:00.000Z", ""),
        doc("specs/free.md", "protocol", "2026-11-01T00:00:00.000Z", ""),
        doc(
            "log/1.md",
            "episodic",
            "2026-11-01T00:00:00.000Z",
            "mentions lib/gone.rs",
        ),
        doc(
            "archive/log/0.md",
            "episodic",
            "2020-01-01T00:00:00.000Z",
            "src/archived.ts",
        ),
    ];
    let mut given = input(docs);
    given.edges = vec![
        edge("core.md", "specs/bound.md"),
        edge("core.md", "missing.md"),
    ];
    given.dangling_edges = vec![DanglingEdge {
        edge: edge("core.md", "missing.md"),
        source_missing: false,
        target_missing: true,
    }];
    given.repo_paths = Some(["src/server.ts".to_owned()].into_iter().collect());
    given.count_claims = vec![CountClaim {
        path: "core.md".into(),
        doc_type: "core".into(),
        noun: "tools".into(),
        quote: "28 tools".into(),
        states: "28".into(),
        authoritative: "30".into(),
        note: None,
    }];
    let report = build_truth_report(&given);

    let contradictions = check(&report, "contradictions");
    assert_eq!((contradictions.subjects, contradictions.ok), (7, 6));
    assert_eq!(
        contradictions.findings[0].detail,
        "states 28 tools; the artifact says 30. In: 28 tools"
    );
    let stale = check(&report, "stale_decisions");
    assert_eq!((stale.subjects, stale.ok), (2, 1));
    assert_eq!(stale.findings[0].subject, "n/decisions/old.md");
    let specs = check(&report, "unbound_specs");
    assert_eq!((specs.subjects, specs.ok), (2, 1));
    assert_eq!(specs.findings[0].subject, "n/specs/free.md");
    let links = check(&report, "broken_links");
    assert_eq!((links.subjects, links.ok), (2, 1));
    assert_eq!(
        links.findings[0].subject,
        "n/core.md -[references]-> n/missing.md"
    );
    assert_eq!(
        links.findings[0].detail,
        "the target document no longer exists"
    );
    let drift = check(&report, "doc_vs_code_drift");
    assert_eq!((drift.subjects, drift.ok), (2, 1));
    assert_eq!(drift.findings[0].subject, "lib/gone.rs");
    assert_eq!(
        drift.findings[0].detail,
        "named in decisions/old.md, log/1.md and absent from the repo"
    );
    let raw = check(&report, "unconsolidated");
    assert_eq!((raw.subjects, raw.ok, raw.findings.len()), (7, 6, 0));

    // (6 + 1 + 1 + 1 + 1 + 6) / (7 + 2 + 2 + 2 + 2 + 7) = 16 / 22 = 72.7%
    assert_eq!(report.integrity, Some(72.7));
    assert_eq!(report.findings.len(), 5);
    assert_eq!(report.documents.total, 8);
    assert_eq!(report.documents.archived, 1);
    assert_eq!(report.documents.unconsolidated, 1);
    let wire = serde_json::to_value(&report).unwrap();
    assert_eq!(
        wire["documents"]["by_type"],
        json!({"core": 1, "decision": 3, "spec": 1, "protocol": 1, "episodic": 2})
    );
    assert_eq!(wire["generated"], "2026-11-30T04:09:01.123Z");
    assert_eq!(
        report.audit_params(),
        json!({"integrity": 72.7, "findings": 5})
    );

    let body = render_truth_report(&report);
    assert!(
        body.starts_with("# Truth report - n - 2026-11-30\n\nintegrity: 72.7%\n"),
        "{body}"
    );
    assert!(
        body.contains("- type decision: 3\n- type episodic: 2\n"),
        "{body}"
    );
    assert!(body.contains("| broken_links | 2 | 1 | 1 |"), "{body}");
    assert!(
        body.contains("### doc_vs_code_drift\n\n- **lib/gone.rs**: named in"),
        "{body}"
    );
    assert_eq!(integrity_of(Some(&body)), Some(72.7));
}

#[test]
fn unreadable_repo_leaves_drift_unrun_and_out_of_integrity() {
    let mut given = input(vec![doc(
        "core.md",
        "core",
        "2026-11-01T00:00:00.000Z",
        "src/gone.ts",
    )]);
    given.repo_paths = None;
    let report = build_truth_report(&given);
    let drift = check(&report, "doc_vs_code_drift");
    assert_eq!((drift.subjects, drift.ok), (0, 0));
    assert!(
        drift.findings[0].detail.contains("not checked"),
        "{}",
        drift.findings[0].detail
    );
    // Only contradictions (1/1) and unconsolidated (1/1) judged anything.
    assert_eq!(report.integrity, Some(100.0));
    assert_eq!(
        serde_json::to_value(&report).unwrap()["integrity"],
        json!(100)
    );
    let body = render_truth_report(&report);
    assert!(body.contains("integrity: 100%\n"), "{body}");
    assert!(body.contains("NOT RUN, not checked"), "{body}");
}

#[test]
fn backlog_over_the_cadence_is_a_finding() {
    let docs = (0..6)
        .map(|i| {
            doc(
                &format!("log/{i}.md"),
                "source",
                "2026-11-01T00:00:00.000Z",
                "",
            )
        })
        .collect();
    let report = build_truth_report(&input(docs));
    let raw = check(&report, "unconsolidated");
    assert_eq!(raw.findings.len(), 1);
    assert!(
        raw.findings[0]
            .detail
            .starts_with("6 unconsolidated documents")
    );
}

#[test]
fn stored_report_naming() {
    assert_eq!(report_path(now()), "reports/lint-2026-11-30.md");
    assert_eq!(
        report_title("recova", now()),
        "Truth report - recova - 2026-11-30"
    );
    assert_eq!(REPORT_TYPE.as_str(), "reference");
    assert_eq!(REPORT_STATUS.as_str(), "published");
    let report = build_truth_report(&input(vec![]));
    let wire =
        serde_json::to_value(ReportOutcome::new(report.clone(), &report_path(now()))).unwrap();
    assert_eq!(wire["mode"], "report");
    assert_eq!(wire["stored"], "n/reports/lint-2026-11-30.md");
    assert_eq!(wire["namespace"], "n");
}

#[test]
fn integrity_line_is_read_back_exactly() {
    assert_eq!(integrity_of(Some("# t\n\nintegrity: 87.5%\n")), Some(87.5));
    assert_eq!(integrity_of(Some("integrity: 100%")), Some(100.0));
    assert_eq!(integrity_of(Some("the integrity: 50%")), None);
    assert_eq!(integrity_of(Some("integrity: high")), None);
    assert_eq!(integrity_of(None), None);
}

proptest! {
    #[test]
    fn integrity_is_a_percentage_with_one_decimal(
        kinds in proptest::collection::vec(0usize..5, 1..30),
        edges in 0usize..5, broken in 0usize..5,
    ) {
        let types = ["core", "decision", "spec", "episodic", "note"];
        let docs: Vec<Document> = kinds.iter().enumerate()
            .map(|(i, k)| doc(&format!("d/{i}.md"), types[*k], "2026-11-01T00:00:00.000Z", ""))
            .collect();
        let mut given = input(docs);
        given.edges = (0..edges).map(|i| edge("d/0.md", &format!("t/{i}.md"))).collect();
        given.dangling_edges = given.edges.iter().take(broken).map(|e| DanglingEdge {
            edge: e.clone(), source_missing: false, target_missing: true,
        }).collect();
        let report = build_truth_report(&given);
        let value = report.integrity.unwrap();
        prop_assert!((0.0..=100.0).contains(&value));
        prop_assert!(((value * 10.0).round() - value * 10.0).abs() < 1e-9);
        let body = render_truth_report(&report);
        prop_assert_eq!(integrity_of(Some(&body)), Some(value));
    }
}
