//! Scores document tests: parsing, problems naming their line, and the anchor pin.

use super::*;

const GOOD: &str = "# Scores\r\n\r\n## Anchors\r\n- build: required\r\n- holdout_pass_rate: min 0.95\r\n\
    - bundle_kb: max 512\r\n\r\n## Secondary\r\n- lint_errors: minimize weight 2\r\n\
    - coverage: maximize weight 1.5\r\n- dispute_win_rate: maximize weight 3 stub\r\n";

#[test]
fn a_good_document_parses_with_crlf() {
    let doc = parse_scores(GOOD);
    assert_eq!(doc.problems, vec![]);
    assert_eq!(
        doc.anchors,
        vec![
            AnchorSpec {
                metric: "build".into(),
                rule: AnchorRule::Required
            },
            AnchorSpec {
                metric: "holdout_pass_rate".into(),
                rule: AnchorRule::Min(0.95)
            },
            AnchorSpec {
                metric: "bundle_kb".into(),
                rule: AnchorRule::Max(512.0)
            },
        ]
    );
    assert_eq!(doc.secondary.len(), 3);
    assert_eq!(doc.secondary[0].direction, Direction::Minimize);
    assert_eq!(doc.secondary[1].weight, 1.5);
    assert!(doc.secondary[2].stub && !doc.secondary[1].stub);
    assert_eq!(doc, parse_scores(&GOOD.replace("\r\n", "\n")));
}

#[test]
fn problems_name_the_line() {
    let table: [(&str, ScoresProblem); 6] = [
        (
            "## Secondary\n- a: maximize weight 1\n",
            ScoresProblem::NoAnchorsSection,
        ),
        (
            "## Anchors\n- a: required\n",
            ScoresProblem::NoSecondarySection,
        ),
        (
            "## Anchors\n- a: required\n- b: atleast 3\n## Secondary\n",
            ScoresProblem::AnchorLine {
                line: "- b: atleast 3".into(),
            },
        ),
        (
            "## Anchors\n- a: required\n- b: min\n## Secondary\n",
            ScoresProblem::BoundMissing {
                metric: "b".into(),
                kind: "min".into(),
                line: "- b: min".into(),
            },
        ),
        (
            "## Anchors\n- a: required\n## Secondary\n- c: maximise weight 1\n",
            ScoresProblem::SecondaryLine {
                line: "- c: maximise weight 1".into(),
            },
        ),
        (
            "## Anchors\nprose only\n## Secondary\n- c: maximize weight 1\n",
            ScoresProblem::NoAnchors,
        ),
    ];
    for (text, want) in table {
        let doc = parse_scores(text);
        assert!(doc.problems.contains(&want), "{text:?}: {:?}", doc.problems);
    }
    let line = ScoresProblem::AnchorLine {
        line: "- b: atleast 3".into(),
    }
    .to_string();
    assert!(line.contains("- b: atleast 3"), "{line}");
}

#[test]
fn overflowing_numbers_are_not_numbers() {
    let huge = "9".repeat(400);
    let doc = parse_scores(&format!(
        "## Anchors\n- a: min {huge}\n## Secondary\n- b: maximize weight {huge}\n"
    ));
    assert_eq!(doc.problems.len(), 3, "{:?}", doc.problems);
    assert!(doc.anchors.is_empty() && doc.secondary.is_empty());
}

#[test]
fn only_list_lines_are_read_and_sections_end_at_the_next_heading() {
    let doc = parse_scores(
        "## Anchors\nThe floor.\n- a: required\n## Notes\n- not: a metric line\n## Secondary\n- b: maximize weight 1\n",
    );
    assert_eq!(doc.problems, vec![]);
    assert_eq!(doc.anchors.len(), 1);
    assert_eq!(doc.secondary.len(), 1);
}

#[test]
fn the_pin_is_never_implied_and_must_match() {
    let current = anchors_checksum(GOOD);
    for missing in [None, Some(""), Some("  ")] {
        let err = verify_anchor_pin("orchard", GOOD, missing).unwrap_err();
        assert_eq!(
            err,
            ScoresRefusal::PinMissing {
                namespace: "orchard".into(),
                current: current.clone()
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("improve:anchor:orchard") && text.contains(&current),
            "{text}"
        );
    }
    assert!(
        verify_anchor_pin(
            "orchard",
            GOOD,
            Some(&format!(" {} \n", current.to_uppercase()))
        )
        .is_ok()
    );

    let edited = GOOD.replace("min 0.95", "min 0.5");
    let err = verify_anchor_pin("orchard", &edited, Some(&current)).unwrap_err();
    assert!(
        matches!(err, ScoresRefusal::PinMismatch { ref pinned, .. } if *pinned == current),
        "{err}"
    );

    let reweighted = GOOD.replace("weight 2", "weight 7");
    assert!(
        verify_anchor_pin("orchard", &reweighted, Some(&current)).is_ok(),
        "Secondary edits keep the pin"
    );
}

#[test]
fn problems_refuse_before_the_pin_is_consulted() {
    let broken = "## Anchors\n- a: min\n## Secondary\n";
    let err = verify_anchor_pin("capsid", broken, None).unwrap_err();
    assert!(matches!(err, ScoresRefusal::Unparseable { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("capsid/improve/scores.md does not parse"),
        "{err}"
    );
}
