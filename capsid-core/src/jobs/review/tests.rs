//! Tests of the review gate: the envelope, the newest-wins rule and the outcome mapping.

use super::*;
use proptest::prelude::*;

fn verdict(reviewer: &str, word: Verdict, said: &str, head: &str) -> RecordedVerdict {
    RecordedVerdict {
        reviewer: reviewer.into(),
        verdict: word,
        said: said.into(),
        head_sha: head.into(),
        at: Timestamp::parse("2026-09-12T10:00:00.000Z").expect("instant"),
    }
}

const HOLDER: &str = "agent:driver";
const HEAD: &str = "headsha000001";

fn pr() -> PrUrl {
    review_pr("https://github.com/acme/api/pull/7").unwrap()
}

#[test]
fn the_envelope_is_strict() {
    let cases: &[(&str, Option<(Verdict, &str)>)] = &[
        (
            "REVIEW: looks right. APPROVE",
            Some((Verdict::Approve, "looks right.")),
        ),
        (
            "review: tests missing, CHANGES.",
            Some((Verdict::Changes, "tests missing")),
        ),
        (
            "  Review:   deploys prod: **BLOCK**  ",
            Some((Verdict::Block, "deploys prod")),
        ),
        ("REVIEW: APPROVE", Some((Verdict::Approve, ""))),
        ("REVIEW:approve!", Some((Verdict::Approve, ""))),
        ("REVIEW: fine `Changes`_", Some((Verdict::Changes, "fine"))),
        ("REVIEW: fine - APPROVE", Some((Verdict::Approve, "fine"))),
        ("REVIEW: I APPROVE of nothing", None),
        ("REVIEW: looks good", None),
        ("REVIEW: xAPPROVE", None),
        ("REVIEW: APPROVE?", None),
        ("REVIEW:", None),
        ("LGTM. APPROVE", None),
        ("> REVIEW: APPROVE", None),
        ("REVIEW APPROVE", None),
        ("", None),
    ];
    for (body, want) in cases {
        let got = verdict_of(body);
        let want = want.map(|(v, s)| (v, s.to_owned()));
        assert_eq!(got, want, "{body:?}");
    }
}

#[test]
fn the_newest_verdict_of_another_agent_on_the_current_head_wins() {
    use Verdict::{Approve, Block, Changes};
    // Newest first, as the store answers.
    let recorded = [
        verdict(HOLDER, Approve, "", HEAD),
        verdict("agent:b", Approve, "fixed", HEAD),
        verdict("agent:a", Changes, "no", HEAD),
        verdict("agent:c", Block, "old", "older"),
    ];
    let gate = review_gate(&pr(), HOLDER, Ok(HEAD), &recorded);
    assert!(
        matches!(&gate, ReviewGate::Approved(r) if r.by == "agent:b" && r.head_sha == HEAD),
        "the holder's own verdict never counts: {gate:?}"
    );
    let only_holder = [verdict(HOLDER, Approve, "", HEAD)];
    let gate = review_gate(&pr(), HOLDER, Ok(HEAD), &only_holder);
    assert!(
        matches!(&gate, ReviewGate::Waiting { reason } if reason.starts_with("no review yet.")),
        "{gate:?}"
    );
}

#[test]
fn a_newer_commit_invalidates_a_verdict() {
    let recorded = [verdict(
        "agent:rev",
        Verdict::Approve,
        "ok",
        "oldhead00000001",
    )];
    let gate = review_gate(&pr(), HOLDER, Ok("newhead00000002"), &recorded);
    let ReviewGate::Waiting { reason } = gate else {
        panic!("{gate:?}")
    };
    assert!(
        reason.contains("oldhead00000")
            && reason.contains("newhead00000")
            && reason.contains("new review"),
        "{reason}"
    );
    // A newer verdict on the new head decides again, even after a stale one.
    let recorded = [
        verdict("agent:rev", Verdict::Changes, "one more", "newhead00000002"),
        verdict("agent:rev", Verdict::Approve, "ok", "oldhead00000001"),
    ];
    assert!(matches!(
        review_gate(&pr(), HOLDER, Ok("newhead00000002"), &recorded),
        ReviewGate::Changes { .. }
    ));
}

#[test]
fn the_gate_applies_only_to_a_pull_request_of_a_mapped_repository() {
    let mapped = vec!["Acme/API".to_owned(), "acme/web".to_owned()];
    let url = Some("https://github.com/acme/api/pull/7");
    assert_eq!(
        review_target(true, url, "ns", &mapped),
        ReviewTarget::Gated(PrUrl {
            owner: "Acme".into(),
            repo: "API".into(),
            number: 7
        }),
        "matched case-insensitively, spelled as mapped"
    );
    assert_eq!(
        review_target(false, Some("docs/result.md"), "ns", &mapped),
        ReviewTarget::Ungated
    );
    assert_eq!(
        review_target(false, None, "ns", &mapped),
        ReviewTarget::Ungated
    );
    for (reference, wanted) in [
        (None, "completes only with result_ref"),
        (Some("docs/result.md"), "not a pull request URL"),
        (Some("   "), "completes only with result_ref"),
        (
            Some("https://github.com/evil/repo/pull/1"),
            "evil/repo, which is not mapped to namespace ns",
        ),
    ] {
        let target = review_target(true, reference, "ns", &mapped);
        assert!(
            matches!(&target, ReviewTarget::Refused(why) if why.contains(wanted)),
            "{reference:?}: {target:?}"
        );
    }
}

#[test]
fn outcome_mapping() {
    let waiting = review_gate(&pr(), HOLDER, Ok(HEAD), &[]);
    let ReviewGate::Waiting { reason } = waiting else {
        panic!("{waiting:?}")
    };
    assert!(reason.starts_with("no review yet."), "{reason}");
    assert!(
        reason.contains("'REVIEW:")
            && reason.contains("APPROVE, CHANGES, BLOCK")
            && reason.contains("manage_pr action comment")
            && reason.contains("acme/api#7"),
        "{reason}"
    );

    let changes = review_gate(
        &pr(),
        HOLDER,
        Ok(HEAD),
        &[verdict("agent:rev", Verdict::Changes, "add a test.", HEAD)],
    );
    let ReviewGate::Changes { summary, .. } = changes else {
        panic!("{changes:?}")
    };
    assert_eq!(summary, "review by agent:rev: CHANGES. add a test.");

    let block = review_gate(
        &pr(),
        HOLDER,
        Ok(HEAD),
        &[verdict(
            "agent:rev",
            Verdict::Block,
            "touches billing",
            HEAD,
        )],
    );
    let ReviewGate::Block { reason, .. } = block else {
        panic!("{block:?}")
    };
    assert_eq!(reason, "review by agent:rev: BLOCK. touches billing");

    let bare = review_gate(
        &pr(),
        HOLDER,
        Ok(HEAD),
        &[verdict("agent:rev", Verdict::Block, "", HEAD)],
    );
    assert!(
        matches!(bare, ReviewGate::Block { ref reason, .. } if reason == "review by agent:rev: BLOCK."),
        "{bare:?}"
    );

    let unreadable = review_gate(
        &pr(),
        HOLDER,
        Err("GitHub answered 502"),
        &[verdict("agent:rev", Verdict::Approve, "", HEAD)],
    );
    let ReviewGate::Unreadable { reason } = unreadable else {
        panic!("{unreadable:?}")
    };
    assert!(
        reason.contains("acme/api#7")
            && reason.contains("502")
            && reason.contains("never an approval"),
        "{reason}"
    );
}

#[test]
fn changes_note_counts_against_the_cap() {
    assert!(changes_note(1).ends_with("spent a correction (1 of 2)"));
}

/// The model: among verdicts (newest first), the first by a non-holder whose head is
/// current.
fn model_deciding(holder: &str, head: &str, recorded: &[RecordedVerdict]) -> Option<usize> {
    recorded
        .iter()
        .position(|r| r.reviewer != holder && r.head_sha == head)
}

fn any_verdict() -> impl Strategy<Value = RecordedVerdict> {
    (
        0u8..3,
        proptest::sample::select(Verdict::ALL.to_vec()),
        0u8..3,
    )
        .prop_map(|(who, v, head)| RecordedVerdict {
            reviewer: if who == 0 {
                HOLDER.to_owned()
            } else {
                format!("agent:r{who}")
            },
            verdict: v,
            said: String::new(),
            head_sha: format!("head{head}"),
            at: Timestamp::from_millis(0),
        })
}

proptest! {
    #[test]
    fn the_deciding_verdict_matches_the_model(recorded in proptest::collection::vec(any_verdict(), 0..10), head in 0u8..3) {
        let head = format!("head{head}");
        let gate = review_gate(&pr(), HOLDER, Ok(&head), &recorded);
        match model_deciding(HOLDER, &head, &recorded) {
            Some(i) => {
                let r = &recorded[i];
                let by = match &gate {
                    ReviewGate::Approved(review) => Some((review.verdict, review.by.clone())),
                    ReviewGate::Changes { review, .. } | ReviewGate::Block { review, .. } => {
                        Some((review.verdict, review.by.clone()))
                    }
                    _ => None,
                };
                prop_assert_eq!(by, Some((r.verdict, r.reviewer.clone())));
            }
            None => prop_assert!(matches!(gate, ReviewGate::Waiting { .. }), "{:?}", gate),
        }
    }

    #[test]
    fn verdict_needs_the_prefix(body in any::<String>()) {
        let trimmed = body.trim();
        let prefixed = trimmed.get(..7).is_some_and(|p| p.eq_ignore_ascii_case("REVIEW:"));
        if !prefixed {
            prop_assert_eq!(verdict_of(&body), None);
        }
    }
}
