//! Tests of the review gate: the envelope, the newest-wins rule and the outcome mapping.

use super::*;
use proptest::prelude::*;

fn comment(login: &str, body: &str, created_at: &str) -> ReviewComment {
    ReviewComment {
        login: login.into(),
        body: body.into(),
        created_at: created_at.into(),
    }
}

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
fn the_newest_review_wins() {
    let comments = [
        comment("a", "REVIEW: no. CHANGES", "2026-09-12T10:00:00Z"),
        comment("b", "REVIEW: fixed. APPROVE", "2026-09-12T11:00:00Z"),
        comment("c", "just a comment", "2026-09-12T12:00:00Z"),
        comment("d", "REVIEW: old. BLOCK", "2026-09-12T09:00:00Z"),
    ];
    let review = latest_review(&comments).unwrap();
    assert_eq!(
        (review.by.as_str(), review.verdict),
        ("b", Verdict::Approve)
    );
    assert_eq!(review.at, "2026-09-12T11:00:00Z");
}

#[test]
fn unparseable_timestamps_rank_lowest_and_ties_go_later() {
    let comments = [
        comment("bad", "REVIEW: BLOCK", "yesterday"),
        comment("good", "REVIEW: APPROVE", "2026-09-12T11:00:00Z"),
        comment("bad2", "REVIEW: CHANGES", ""),
    ];
    assert_eq!(latest_review(&comments).unwrap().by, "good");
    let only_bad = [
        comment("x", "REVIEW: BLOCK", "?"),
        comment("y", "REVIEW: CHANGES", "??"),
    ];
    assert_eq!(latest_review(&only_bad).unwrap().by, "y");
    let tie = [
        comment("first", "REVIEW: BLOCK", "2026-09-12T11:00:00Z"),
        comment("second", "REVIEW: APPROVE", "2026-09-12T11:00:00.000Z"),
    ];
    assert_eq!(latest_review(&tie).unwrap().by, "second");
    assert_eq!(latest_review(&[]), None);
}

#[test]
fn the_gate_applies_only_to_a_required_review_of_a_pr() {
    let url = Some("https://github.com/acme/api/pull/7");
    assert_eq!(review_target(true, url), Some(pr()));
    assert_eq!(review_target(false, url), None);
    assert_eq!(review_target(true, Some("docs/result.md")), None);
    assert_eq!(review_target(true, None), None);
}

#[test]
fn outcome_mapping() {
    let waiting = review_gate(
        &pr(),
        Ok(&[comment("a", "nice work", "2026-09-12T10:00:00Z")]),
    );
    let ReviewGate::Waiting { reason } = waiting else {
        panic!("{waiting:?}")
    };
    assert!(reason.starts_with("no review yet."), "{reason}");
    assert!(
        reason.contains("'REVIEW:'") && reason.contains("APPROVE, CHANGES, BLOCK"),
        "{reason}"
    );

    let approved = review_gate(
        &pr(),
        Ok(&[comment("rev", "REVIEW: ok APPROVE", "2026-09-12T10:00:00Z")]),
    );
    assert!(
        matches!(approved, ReviewGate::Approved(ref r) if r.by == "rev"),
        "{approved:?}"
    );

    let changes = review_gate(
        &pr(),
        Ok(&[comment(
            "rev",
            "REVIEW: add a test. CHANGES",
            "2026-09-12T10:00:00Z",
        )]),
    );
    let ReviewGate::Changes { summary, .. } = changes else {
        panic!("{changes:?}")
    };
    assert_eq!(summary, "review by rev: CHANGES. add a test.");

    let block = review_gate(
        &pr(),
        Ok(&[comment(
            "rev",
            "REVIEW: touches billing BLOCK",
            "2026-09-12T10:00:00Z",
        )]),
    );
    let ReviewGate::Block { reason, .. } = block else {
        panic!("{block:?}")
    };
    assert_eq!(reason, "review by rev: BLOCK. touches billing");

    let bare = review_gate(
        &pr(),
        Ok(&[comment("rev", "REVIEW: BLOCK", "2026-09-12T10:00:00Z")]),
    );
    assert!(
        matches!(bare, ReviewGate::Block { ref reason, .. } if reason == "review by rev: BLOCK."),
        "{bare:?}"
    );

    let unreadable = review_gate(&pr(), Err("GitHub answered 502"));
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

fn model_latest(comments: &[ReviewComment]) -> Option<(usize, Verdict)> {
    let reviews: Vec<(usize, Verdict, i64)> = comments
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let (v, _) = verdict_of(&c.body)?;
            let rank = Timestamp::parse(&c.created_at).map_or(i64::MIN, |t| t.as_millis());
            Some((i, v, rank))
        })
        .collect();
    let best_rank = reviews.iter().map(|r| r.2).max()?;
    reviews
        .iter()
        .rev()
        .find(|r| r.2 == best_rank)
        .map(|r| (r.0, r.1))
}

fn any_comment() -> impl Strategy<Value = ReviewComment> {
    let body = prop_oneof![
        Just("REVIEW: APPROVE".to_owned()),
        Just("review: fix it. CHANGES".to_owned()),
        Just("REVIEW: **BLOCK**".to_owned()),
        Just("thanks!".to_owned()),
        any::<String>(),
    ];
    let at = prop_oneof![
        (0i64..5).prop_map(|h| format!("2026-09-12T1{h}:00:00Z")),
        Just("not a time".to_owned()),
        Just(String::new()),
    ];
    (0u8..4, body, at).prop_map(|(who, body, at)| ReviewComment {
        login: format!("u{who}"),
        body,
        created_at: at,
    })
}

proptest! {
    #[test]
    fn latest_review_matches_the_model(comments in proptest::collection::vec(any_comment(), 0..12)) {
        let got = latest_review(&comments);
        let want = model_latest(&comments);
        prop_assert_eq!(got.as_ref().map(|r| r.verdict), want.map(|w| w.1));
        if let (Some(review), Some((index, _))) = (got, want) {
            prop_assert_eq!(&review.by, &comments[index].login);
            prop_assert_eq!(&review.at, &comments[index].created_at);
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
