//! Auto-merge tests: each of the seven checks refusing alone, the CI verdict table, and the
//! order of evaluation.

use super::*;

fn run(name: &str, status: &str, conclusion: Option<&str>) -> CheckRun {
    CheckRun {
        name: name.into(),
        status: status.into(),
        conclusion: conclusion.map(Into::into),
    }
}

fn green() -> PrFacts {
    PrFacts {
        body: "Closes job_0123456789ab.\n\nDriver notes.".into(),
        base_ref: "master".into(),
        default_branch: "master".into(),
        head_sha: "abcdef0123456789".into(),
        job_claimed_by: Some("agent:orchard-driver".into()),
        driver_agent: Some(DriverAgent {
            name: "orchard-driver".into(),
            kind: AgentKind::Driver,
            revoked: false,
        }),
        check_runs: Some(vec![
            run("build", "completed", Some("success")),
            run("lint", "completed", Some("skipped")),
        ]),
        changed_paths: Some(vec!["src/app.ts".into(), "README.md".into()]),
    }
}

#[test]
fn all_satisfied_merges_with_every_check_passed_in_order() {
    assert_eq!(
        evaluate_pr(&green()),
        MergeVerdict::Merge {
            passed: CheckId::ALL.to_vec()
        }
    );
}

type Spoil = fn(&mut PrFacts);

#[test]
fn each_check_refuses_alone() {
    let table: [(CheckId, Spoil, &str); 17] = [
        (
            CheckId::BodyNamesJob,
            |f| f.body = "no job here, job_0123 is short".into(),
            "names no job id",
        ),
        (
            CheckId::BodyNamesJob,
            |f| f.body = "job_0123456789AB upper-case hex".into(),
            "names no job id",
        ),
        (
            CheckId::BodyNamesJob,
            |f| f.body = "xjob_0123456789ab".into(),
            "names no job id",
        ),
        (
            CheckId::AuthorIsDriver,
            |f| f.job_claimed_by = None,
            "job_0123456789ab",
        ),
        (
            CheckId::AuthorIsDriver,
            |f| f.job_claimed_by = Some("opkey:0123456789ab".into()),
            "not a minted agent",
        ),
        (
            CheckId::AuthorIsDriver,
            |f| f.driver_agent = None,
            "not a minted agent",
        ),
        (
            CheckId::AuthorIsDriver,
            |f| {
                f.driver_agent = Some(DriverAgent {
                    name: "orchard-driver".into(),
                    kind: AgentKind::Cron,
                    revoked: false,
                })
            },
            "kind 'cron', not a driver",
        ),
        (
            CheckId::AuthorIsDriver,
            |f| {
                f.driver_agent = Some(DriverAgent {
                    name: "orchard-driver".into(),
                    kind: AgentKind::Driver,
                    revoked: true,
                })
            },
            "revoked",
        ),
        (
            CheckId::BaseIsDefaultBranch,
            |f| f.base_ref = "develop".into(),
            "'develop', not the default branch 'master'",
        ),
        (
            CheckId::CiGreen,
            |f| f.check_runs = Some(vec![]),
            "no check run has reported",
        ),
        (
            CheckId::CiGreen,
            |f| f.check_runs = None,
            "could not be read",
        ),
        (
            CheckId::CiGreen,
            |f| f.changed_paths = None,
            "not evaluated",
        ),
        (
            CheckId::CiGreen,
            |f| f.check_runs = Some(vec![run("build", "in_progress", None)]),
            "pending: 1 check(s) still running: build",
        ),
        (
            CheckId::CiGreen,
            |f| {
                f.check_runs = Some(vec![
                    run("build", "completed", Some("success")),
                    run("e2e", "completed", Some("failure")),
                ])
            },
            "e2e=failure",
        ),
        (
            CheckId::PathsUnprotected,
            |f| f.changed_paths = Some(vec!["src/a.ts".into(), "test/a.test.ts".into()]),
            "test/a.test.ts",
        ),
        (
            CheckId::PathsNotMoney,
            |f| f.changed_paths = Some(vec!["src/billing/invoice.ts".into()]),
            "src/billing/invoice.ts",
        ),
        (
            CheckId::NoMigrationWorkflowLockfile,
            |f| f.changed_paths = Some(vec!["web/yarn.lock".into()]),
            "web/yarn.lock",
        ),
    ];
    // Every path the seventh check names is also protected (the list is stated twice on
    // purpose), so the seventh check is shown refusing alone with the protected list emptied.
    let without_protected = PathRules {
        protected: |_| None,
        ..PathRules::STANDARD
    };
    for (check, spoil, cue) in table {
        let mut facts = green();
        spoil(&mut facts);
        let rules = if check == CheckId::NoMigrationWorkflowLockfile {
            without_protected
        } else {
            PathRules::STANDARD
        };
        let verdict = evaluate_pr_with(&facts, &rules);
        let MergeVerdict::Declined {
            failed,
            why,
            passed,
        } = verdict
        else {
            panic!("{check} should refuse: {verdict:?}");
        };
        assert_eq!(failed, check, "{why}");
        assert!(why.contains(cue), "{check}: {why:?} lacks {cue:?}");
        let before: Vec<CheckId> = CheckId::ALL
            .iter()
            .copied()
            .take_while(|c| *c != check)
            .collect();
        assert_eq!(passed, before, "{check}");
    }
}

#[test]
fn the_seventh_check_holds_when_the_protected_list_is_narrowed() {
    let without_protected = PathRules {
        protected: |_| None,
        ..PathRules::STANDARD
    };
    for path in [
        "migrations/0018_x.sql",
        ".github/workflows/ci.yml",
        "package-lock.json",
        "app/bun.lockb",
    ] {
        let mut facts = green();
        facts.changed_paths = Some(vec![path.into()]);
        let standard = evaluate_pr(&facts);
        assert!(
            matches!(
                standard,
                MergeVerdict::Declined {
                    failed: CheckId::PathsUnprotected,
                    ..
                }
            ),
            "{path}"
        );
        let narrowed = evaluate_pr_with(&facts, &without_protected);
        assert!(
            matches!(
                narrowed,
                MergeVerdict::Declined {
                    failed: CheckId::NoMigrationWorkflowLockfile,
                    ..
                }
            ),
            "{path}: {narrowed:?}"
        );
    }
}

#[test]
fn the_first_failure_in_order_is_reported() {
    let mut facts = green();
    facts.base_ref = "develop".into();
    facts.changed_paths = Some(vec!["migrations/0001.sql".into()]);
    facts.driver_agent = None;
    let MergeVerdict::Declined { failed, .. } = evaluate_pr(&facts) else {
        panic!("refuses")
    };
    assert_eq!(failed, CheckId::AuthorIsDriver);
}

#[test]
fn ci_verdict_table() {
    let table = [
        (Some(vec![]), true, CiVerdict::NotReported),
        (None, true, CiVerdict::ChecksUnreadable),
        (
            Some(vec![run("a", "completed", Some("success"))]),
            false,
            CiVerdict::FilesUnreadable,
        ),
        (
            Some(vec![run("a", "completed", Some("neutral"))]),
            true,
            CiVerdict::Green { runs: 1 },
        ),
        (
            Some(vec![
                run("a", "queued", None),
                run("b", "completed", Some("failure")),
            ]),
            true,
            CiVerdict::Pending {
                running: vec!["a".into()],
            },
        ),
        (
            Some(vec![
                run("a", "completed", None),
                run("b", "completed", Some("cancelled")),
            ]),
            true,
            CiVerdict::Failed {
                bad: vec!["a=null".into(), "b=cancelled".into()],
            },
        ),
        (
            Some(vec![run("a", "completed", Some("SUCCESS"))]),
            true,
            CiVerdict::Failed {
                bad: vec!["a=SUCCESS".into()],
            },
        ),
    ];
    for (runs, readable, want) in table {
        assert_eq!(ci_verdict(runs.as_deref(), readable), want, "{runs:?}");
    }
}

#[test]
fn check_ids_round_trip_their_wire_names() {
    for check in CheckId::ALL {
        assert_eq!(CheckId::parse(check.name()), Some(check));
        assert_eq!(
            serde_json::to_value(check).ok(),
            Some(serde_json::Value::from(check.name()))
        );
    }
    assert_eq!(CheckId::parse("CI_GREEN"), None);
}

#[test]
fn helpers_extract_the_job_and_the_agent() {
    assert_eq!(
        job_id_from_body("see (job_00000000000f), thanks"),
        Some("job_00000000000f")
    );
    assert_eq!(
        job_id_from_body("job_00000000000fa"),
        None,
        "13 hex is not a job id"
    );
    assert_eq!(
        agent_name_of("agent:orchard-driver"),
        Some("orchard-driver")
    );
    assert_eq!(agent_name_of("github:someone"), None);
}
