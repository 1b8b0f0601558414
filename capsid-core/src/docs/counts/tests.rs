use super::*;
use crate::time::Timestamp;

const COUNTS: AuthoritativeCounts = AuthoritativeCounts {
    tools: 30,
    live_gates: 11,
    html_enforced_headers: 6,
    html_report_only_headers: 1,
};

fn doc(path: &str, doc_type: &str, body: &str) -> Document {
    Document {
        id: 1,
        namespace: "capsid".into(),
        path: path.into(),
        title: None,
        doc_type: doc_type.into(),
        status: "published".into(),
        tags: None,
        created_at: Timestamp::from_millis(0),
        updated_at: Timestamp::from_millis(0),
        body: Some(body.into()),
    }
}

/// `(noun, states, authoritative)` of one flagged claim.
type Flag = (String, String, String);

fn claims_of(body: &str) -> Vec<Flag> {
    scan_count_claims(&[doc("core.md", "core", body)], Some(&COUNTS))
        .into_iter()
        .map(|c| (c.noun, c.states, c.authoritative))
        .collect()
}

fn claim(noun: &str, states: &str, authoritative: &str) -> Flag {
    (noun.into(), states.into(), authoritative.into())
}

#[test]
fn patterns_compile() {
    assert!(PATTERNS.is_some());
}

#[test]
fn only_the_artifact_namespace_has_authoritative_counts() {
    assert_eq!(authoritative_for("capsid", COUNTS), Some(COUNTS));
    assert_eq!(authoritative_for("recova", COUNTS), None);
    assert!(scan_count_claims(&[doc("core.md", "core", "28 tools")], None).is_empty());
    let wire = serde_json::to_value(COUNTS).unwrap();
    assert_eq!(wire["liveGates"], 11);
    assert_eq!(wire["htmlReportOnlyHeaders"], 1);
}

#[test]
fn tool_counts() {
    let cases: Vec<(&str, Vec<Flag>)> = vec![
        ("The server has 30 tools.", vec![]),
        ("The server has 28 tools.", vec![claim("tools", "28", "30")]),
        ("28 TOOLS in all", vec![claim("tools", "28", "30")]),
        (
            "12 of 28 tools are read-only",
            vec![claim("tools", "28", "30")],
        ),
        ("tools (12/30)", vec![]),
        (
            "31 of 30 tools",
            vec![claim(
                "tools",
                "31 of 30",
                "a subset cannot exceed its total",
            )],
        ),
        (
            "it grew from 24 to 28 tools",
            vec![claim("tools", "28", "30")],
        ),
        ("the tool surface went from 24 to 30 today", vec![]),
        (
            "the tool surface is now 27",
            vec![claim("tools", "27", "30")],
        ),
        ("the other 5 tools are gated", vec![]),
        ("only the 4 tools", vec![]),
        ("in 2024 tools changed", vec![]),
        ("toolset 28 toolsmith", vec![]),
    ];
    for (body, expected) in cases {
        assert_eq!(claims_of(body), expected, "{body:?}");
    }
}

#[test]
fn gate_counts_and_headers() {
    let cases: Vec<(&str, Vec<Flag>)> = vec![
        ("the live gate runs 11 live gates", vec![]),
        ("it runs 9 live gates", vec![claim("live gates", "9", "11")]),
        ("9 gates passed and 2 gates failed", vec![]),
        // The of-form and the plain form both see the total, as in the Worker.
        (
            "3 of 9 gates",
            vec![
                claim("live gates", "9", "11"),
                claim("live gates", "9", "11"),
            ],
        ),
        ("3 of 11 gates", vec![]),
        (
            "all seven security headers are enforced",
            vec![claim(
                "security headers",
                "all seven",
                "6 enforced plus 1 Report-Only",
            )],
        ),
        ("all seven dwarves", vec![]),
    ];
    for (body, expected) in cases {
        assert_eq!(claims_of(body), expected, "{body:?}");
    }
    let of_form = &scan_count_claims(&[doc("core.md", "core", "3 of 9 gates")], Some(&COUNTS))[0];
    assert_eq!(
        of_form.note.as_deref(),
        Some("the total, not the number that passed")
    );
}

#[test]
fn history_is_not_scanned() {
    let docs = [
        doc("log/1.md", "episodic", "28 tools"),
        doc("decisions.md", "decision", "28 tools"),
        doc("archive/core.md", "core", "28 tools"),
        doc("decisions-vol-2.md", "reference", "28 tools"),
        doc("Decisions-Vol-2.md", "reference", "28 tools"),
        doc("spec.md", "spec", "28 tools"),
    ];
    let paths: Vec<String> = scan_count_claims(&docs, Some(&COUNTS))
        .into_iter()
        .map(|c| c.path)
        .collect();
    assert_eq!(paths, ["Decisions-Vol-2.md", "spec.md"]);
}

#[test]
fn quotes_collapse_whitespace_and_mark_cuts() {
    let body = format!(
        "{}\n\nwe ship   28 tools\tnow{}",
        "a".repeat(50),
        "b".repeat(50)
    );
    let c = &scan_count_claims(&[doc("core.md", "core", &body)], Some(&COUNTS))[0];
    assert!(c.quote.starts_with("...aaaa"), "{}", c.quote);
    assert!(c.quote.contains("a we ship 28 tools now"), "{}", c.quote);
    assert!(c.quote.ends_with("b..."), "{}", c.quote);
    // The 40 units before lose three to collapsed whitespace.
    assert_eq!(c.quote.len(), 3 + 40 + "28 tools".len() + 40 + 3 - 3);
    let short = &scan_count_claims(&[doc("core.md", "core", " 28 tools ")], Some(&COUNTS))[0];
    assert_eq!(short.quote, " 28 tools ");
    let wire = serde_json::to_value(short).unwrap();
    assert_eq!(wire["type"], "core");
    assert!(wire.get("note").is_none());
}

#[test]
fn windows_never_split_a_character() {
    let body = format!("{}28 tools{}", "😀".repeat(30), "é".repeat(30));
    let c = &scan_count_claims(&[doc("core.md", "core", &body)], Some(&COUNTS))[0];
    assert!(c.quote.starts_with("...😀"), "{}", c.quote);
    assert_eq!(c.quote.matches('😀').count(), 20);
    assert!(c.quote.ends_with('é'));
}

#[test]
fn bigger_compares_decimal_strings() {
    assert!(bigger("31", "30"));
    assert!(bigger("100", "99"));
    assert!(!bigger("030", "30"));
    assert!(!bigger("5", "12"));
}
