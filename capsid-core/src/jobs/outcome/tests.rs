//! Tests of outcome verification: NULL versus 0, partial verification, CI's three states,
//! result kinds and durations.

use super::*;
use crate::jobs::model::tests::sample_job;
use proptest::prelude::*;

const PR1: &str = "https://github.com/acme/api/pull/1";
const PR2: &str = "https://github.com/acme/web/pull/2";

fn mapped() -> Vec<String> {
    vec!["acme/api".into(), "acme/web".into()]
}

fn evidence(
    prs: &[&str],
    commits: Option<u64>,
    files: Option<u64>,
    tests: Option<u64>,
) -> Evidence {
    Evidence {
        prs: prs.iter().map(|p| (*p).to_owned()).collect(),
        commits,
        files_changed: files,
        tests_added: tests,
        ..Evidence::default()
    }
}

fn fact(merged: bool, commits: u64, files: u64, sha: &str) -> Result<PrFacts, String> {
    Ok(PrFacts {
        merged,
        commits,
        changed_files: files,
        head_sha: sha.into(),
    })
}

fn run(status: &str, conclusion: Option<&str>) -> WorkflowRun {
    WorkflowRun {
        status: status.into(),
        conclusion: conclusion.map(str::to_owned),
    }
}

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// What the service read of CI, if anything.
type CiReads = Option<Result<Vec<WorkflowRun>, String>>;

fn verify(e: &Evidence, facts: &[Result<PrFacts, String>], runs: CiReads) -> EvidenceVerdict {
    let plan = prs_to_verify(Some(e), "capsid", &mapped());
    verify_evidence(Some(e), &plan, facts, runs.as_ref())
}

#[test]
fn without_prs_the_drivers_counts_stand_unverified() {
    let e = evidence(&[], Some(3), None, Some(0));
    let v = verify(&e, &[], None);
    assert_eq!(
        (
            v.prs_opened,
            v.prs_merged,
            v.commits,
            v.files_changed,
            v.tests_added
        ),
        (None, None, Some(3), None, Some(0))
    );
    assert_eq!(
        (v.ci_green, v.verified, v.notes.len()),
        (None, VerifiedFields::default(), 0)
    );
    assert_eq!(
        verify_evidence(None, &Ok(vec![]), &[], None),
        EvidenceVerdict::default()
    );
}

#[test]
fn urls_resolve_only_through_the_mapping() {
    let e = evidence(&[PR1, PR2], None, None, None);
    let refs = prs_to_verify(Some(&e), "capsid", &mapped()).unwrap();
    assert_eq!(
        refs.iter()
            .map(|r| (r.owner.as_str(), r.repo.as_str(), r.number))
            .collect::<Vec<_>>(),
        [("acme", "api", 1), ("acme", "web", 2)]
    );
    assert_eq!(refs[1].url, PR2);

    let bad = evidence(
        &[PR1, "https://github.com/evil/repo/pull/9", "not a url"],
        Some(4),
        Some(2),
        None,
    );
    let err = prs_to_verify(Some(&bad), "capsid", &mapped()).unwrap_err();
    assert_eq!((err.named, err.resolved), (3, 1));
    assert!(
        err.notes[0].contains("repo 'evil/repo' is not mapped to namespace capsid"),
        "{:?}",
        err.notes
    );
    assert!(
        err.notes[1].starts_with("not a url is not a GitHub pull request URL"),
        "{:?}",
        err.notes
    );
    // Mapping matches the exact spelling, as the Worker's lookup does.
    assert!(
        prs_to_verify(
            Some(&evidence(
                &["https://github.com/ACME/api/pull/1"],
                None,
                None,
                None
            )),
            "capsid",
            &mapped()
        )
        .is_err()
    );
}

#[test]
fn an_unresolvable_url_leaves_everything_unverified() {
    let e = evidence(
        &[PR1, "https://github.com/evil/repo/pull/9"],
        Some(4),
        Some(2),
        Some(1),
    );
    let v = verify(&e, &[], None);
    assert_eq!(
        (
            v.prs_opened,
            v.prs_merged,
            v.commits,
            v.files_changed,
            v.tests_added
        ),
        (Some(2), None, Some(4), Some(2), Some(1))
    );
    assert_eq!(v.verified, VerifiedFields::default());
    assert!(
        v.notes
            .last()
            .unwrap()
            .starts_with("1 of 2 named pull requests could be resolved"),
        "{:?}",
        v.notes
    );
}

#[test]
fn partial_reads_are_no_verification() {
    let e = evidence(&[PR1, PR2], Some(9), None, None);
    let v = verify(
        &e,
        &[fact(true, 3, 4, SHA), Err("GitHub answered 404".into())],
        None,
    );
    assert_eq!(
        (v.prs_opened, v.prs_merged, v.commits, v.ci_green),
        (Some(2), None, Some(9), None)
    );
    assert_eq!(v.verified, VerifiedFields::default());
    assert_eq!(v.notes[0], format!("{PR2}: GitHub answered 404"));
    assert!(
        v.notes[1].starts_with("1 of 2 named pull requests could be read"),
        "{:?}",
        v.notes
    );
    // Fewer reads than resolved PRs counts as unread too.
    let v = verify(&e, &[fact(true, 3, 4, SHA)], None);
    assert_eq!(v.verified, VerifiedFields::default());
    assert!(v.notes.iter().any(|n| n.ends_with("it was not read")));
}

#[test]
fn all_read_counts_come_from_github() {
    let e = evidence(&[PR1, PR2], Some(99), Some(99), Some(5));
    let facts = [fact(true, 3, 4, "aaaa"), fact(false, 2, 1, SHA)];
    assert_eq!(ci_head_to_check(&facts), Some(SHA));
    let runs = Ok(vec![
        run("completed", Some("success")),
        run("completed", Some("skipped")),
        run("completed", Some("neutral")),
    ]);
    let v = verify(&e, &facts, Some(runs));
    assert_eq!(
        (
            v.prs_opened,
            v.prs_merged,
            v.commits,
            v.files_changed,
            v.tests_added
        ),
        (Some(2), Some(1), Some(5), Some(5), Some(5))
    );
    assert_eq!(v.ci_green, Some(1));
    let all = VerifiedFields {
        prs_opened: true,
        prs_merged: true,
        commits: true,
        files_changed: true,
        ci_green: true,
    };
    assert_eq!(v.verified, all);
    assert!(v.notes.is_empty(), "{:?}", v.notes);
}

#[test]
fn ci_has_three_answers() {
    let e = evidence(&[PR1], None, None, None);
    let facts = [fact(true, 1, 1, SHA)];
    let cases: Vec<(CiReads, Option<i64>, &str)> = vec![
        (
            Some(Ok(vec![
                run("completed", Some("success")),
                run("completed", Some("failure")),
            ])),
            Some(0),
            "",
        ),
        (Some(Ok(vec![run("completed", None)])), Some(0), ""),
        (
            Some(Ok(vec![run("completed", Some("cancelled"))])),
            Some(0),
            "",
        ),
        (
            Some(Ok(vec![
                run("completed", Some("success")),
                run("in_progress", None),
            ])),
            None,
            "CI for 0123456 has not finished",
        ),
        (Some(Ok(vec![])), None, "no workflow runs for 0123456"),
        (
            Some(Err("503".into())),
            None,
            "CI could not be read for 0123456: 503",
        ),
        (None, None, "CI was not read for 0123456"),
    ];
    for (runs, want, note) in cases {
        let v = verify(&e, &facts, runs.clone());
        assert_eq!(v.ci_green, want, "{runs:?}");
        assert_eq!(v.verified.ci_green, want.is_some(), "{runs:?}");
        assert!(v.verified.prs_merged);
        if note.is_empty() {
            assert!(v.notes.is_empty(), "{:?}", v.notes);
        } else {
            assert!(
                v.notes.iter().any(|n| n.starts_with(note)),
                "{runs:?}: {:?}",
                v.notes
            );
        }
    }
    let no_sha = verify(
        &e,
        &[fact(true, 1, 1, "")],
        Some(Ok(vec![run("completed", Some("success"))])),
    );
    assert_eq!((no_sha.ci_green, no_sha.verified.ci_green), (None, false));
    assert!(no_sha.notes[0].contains("no head sha"));
    assert_eq!(ci_head_to_check(&[fact(true, 1, 1, "")]), None);
    assert_eq!(
        ci_head_to_check(&[Err("x".into()), fact(true, 1, 1, SHA)]),
        None
    );
    assert_eq!(ci_head_to_check(&[]), None);
}

#[test]
fn result_kinds() {
    let cases: &[(Option<&str>, ResultKind)] = &[
        (None, ResultKind::None),
        (Some(""), ResultKind::None),
        (Some("https://github.com/acme/api/pull/1"), ResultKind::Pr),
        (Some("HTTPS://example.com"), ResultKind::Pr),
        (Some("https:/x"), ResultKind::Doc),
        (Some("reports/result.md"), ResultKind::Doc),
    ];
    for (reference, want) in cases {
        assert_eq!(result_kind(*reference), *want, "{reference:?}");
    }
    assert_eq!(serde_json::to_value(ResultKind::Pr).unwrap(), "pr");
}

#[test]
fn durations_round_half_up_and_refuse_nonsense() {
    let now = Timestamp::parse("2026-09-12T01:00:00Z").unwrap();
    let cases: &[(Option<&str>, Option<i64>)] = &[
        (Some("2026-09-12T00:00:00.000Z"), Some(60)),
        (Some("2026-09-12 00:59:30"), Some(1)),
        (Some("2026-09-12T00:59:30.001Z"), Some(0)),
        (Some("2026-09-12T00:58:31Z"), Some(1)),
        (Some("2026-09-12T00:58:30Z"), Some(2)),
        (Some("2026-09-12T01:00:00Z"), Some(0)),
        (Some("2026-09-12T01:00:01Z"), None),
        (None, None),
    ];
    for (claimed_at, want) in cases {
        let claimed = claimed_at.map(|t| Timestamp::parse(t).expect("instant"));
        assert_eq!(duration_minutes(claimed, now), *want, "{claimed_at:?}");
    }
}

#[test]
fn the_row_copies_the_job_and_the_verdict() {
    let now = Timestamp::parse("2026-09-12T00:30:00Z").unwrap();
    let mut job = sample_job();
    job.blocked_count = 2;
    job.resumed_count = 1;
    job.result_ref = Some(PR1.into());
    let verdict = EvidenceVerdict {
        commits: Some(3),
        notes: vec!["n".into()],
        ..EvidenceVerdict::default()
    };
    let outcome = build_outcome(&job, verdict, now);
    let row = &outcome.row;
    assert_eq!(
        (
            row.job_id.as_str(),
            row.agent.as_str(),
            row.namespace.as_str()
        ),
        ("job_0123456789ab", "agent:capsid-driver", "capsid")
    );
    assert_eq!(
        (row.blocked_count, row.resumed_count, row.duration_minutes),
        (2, 1, Some(30))
    );
    assert_eq!(
        (row.result_kind, row.commits, row.prs_opened),
        (ResultKind::Pr, Some(3), None)
    );
    assert_eq!(row.verified, VerifiedFields::default().to_json());
    assert_eq!(row.recorded_at.to_string(), "2026-09-12T00:30:00.000Z");
    assert_eq!(outcome.notes, ["n"]);
    job.claimed_by = None;
    assert_eq!(
        build_outcome(&job, EvidenceVerdict::default(), now)
            .row
            .agent,
        "unattributed"
    );
    let json = serde_json::to_value(&outcome).unwrap();
    assert_eq!(json["row"]["prs_opened"], serde_json::Value::Null);
    assert_eq!(json["row"]["result_kind"], "pr");
}

fn any_fact() -> impl Strategy<Value = Result<PrFacts, String>> {
    prop_oneof![
        4 => (any::<bool>(), 0u64..100, 0u64..100, "[0-9a-f]{0,40}")
            .prop_map(|(merged, commits, changed_files, head_sha)| Ok(PrFacts { merged, commits, changed_files, head_sha })),
        1 => Just(Err("unreadable".to_owned())),
    ]
}

proptest! {
    #[test]
    fn verified_exactly_when_every_pr_was_read(facts in proptest::collection::vec(any_fact(), 1..=10), commits in any::<Option<u32>>()) {
        let urls: Vec<String> = (0..facts.len()).map(|i| format!("https://github.com/acme/api/pull/{i}")).collect();
        let e = Evidence { prs: urls, commits: commits.map(u64::from), ..Evidence::default() };
        let plan = prs_to_verify(Some(&e), "capsid", &mapped());
        prop_assert!(plan.is_ok());
        let runs = Ok(vec![run("completed", Some("success"))]);
        let v = verify_evidence(Some(&e), &plan, &facts, Some(&runs));
        let all_read = facts.iter().all(Result::is_ok);
        prop_assert_eq!(v.verified.prs_opened, all_read);
        prop_assert_eq!(v.verified.commits, all_read);
        prop_assert_eq!(v.prs_opened, Some(facts.len() as i64));
        if all_read {
            let merged = facts.iter().filter(|f| f.as_ref().is_ok_and(|f| f.merged)).count() as i64;
            prop_assert_eq!(v.prs_merged, Some(merged));
            prop_assert_eq!(v.verified.ci_green, ci_head_to_check(&facts).is_some());
        } else {
            prop_assert_eq!(v.prs_merged, None);
            prop_assert_eq!(v.commits, commits.map(i64::from));
            prop_assert!(!v.verified.ci_green);
            prop_assert!(!v.notes.is_empty());
        }
    }
}
