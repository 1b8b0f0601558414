//! Push policy tests: each rule and its reason as a table, the parsers' edges, and the
//! properties the gateway relies on (nothing protected without an approval for that ref and
//! sha, nothing once the run closed, never a tag or a deletion, always the job's own branch).

use super::*;
use proptest::prelude::*;

const A: &str = "1111111111111111111111111111111111111111";
const B: &str = "2222222222222222222222222222222222222222";
const ZERO: &str = "0000000000000000000000000000000000000000";

fn terms() -> PushTerms {
    PushTerms::new("j42", &["feature-x"], &["main", "master", "trunk"]).unwrap()
}

fn upd(old: &str, new: &str, refname: &str) -> RefUpdate {
    RefUpdate::parse(old, new, refname).unwrap()
}

fn refused(d: Decision) -> Refusal {
    match d {
        Decision::Refuse(r) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn object_ids_are_forty_or_sixty_four_lowercase_hex_digits() {
    for good in [
        A,
        ZERO,
        &"a".repeat(40),
        &"f".repeat(40),
        &"0123456789abcdef".repeat(4),
    ] {
        assert_eq!(ObjectId::parse("old", good).unwrap().as_str(), good);
    }
    for bad in [
        "".to_owned(),
        "1".repeat(39),
        "1".repeat(41),
        "1".repeat(63),
        "1".repeat(65),
        "A".repeat(40),
        "g".repeat(40),
        format!("{}/", "1".repeat(39)),
        format!("{}`", "1".repeat(39)),
    ] {
        assert_eq!(
            ObjectId::parse("new", &bad),
            Err(PushPolicyError::ObjectId {
                field: "new".to_owned(),
                text: bad.clone()
            }),
            "{bad:?}"
        );
    }
    let long = "x".repeat(200);
    let err = ObjectId::parse("sha", &long).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "`sha` must be a git object id (40 or 64 lowercase hex digits), not {:?}",
            "x".repeat(80)
        )
    );
}

#[test]
fn object_id_zero_display_and_update_kinds() {
    let zero = ObjectId::parse("old", ZERO).unwrap();
    let a = ObjectId::parse("old", A).unwrap();
    assert!(zero.is_zero());
    assert!(!a.is_zero());
    assert!(
        !ObjectId::parse("old", &format!("{}1", "0".repeat(39)))
            .unwrap()
            .is_zero()
    );
    assert_eq!(a.to_string(), A);
    let create = upd(ZERO, A, "refs/heads/x");
    assert!(create.is_create() && !create.is_delete());
    let delete = upd(A, ZERO, "refs/heads/x");
    assert!(delete.is_delete() && !delete.is_create());
    let update = upd(A, B, "refs/heads/x");
    assert!(!update.is_create() && !update.is_delete());
    assert_eq!(update.to_string(), format!("{A} {B} refs/heads/x"));
    assert_eq!(
        RefUpdate::parse("nope", A, "refs/heads/x"),
        Err(PushPolicyError::ObjectId {
            field: "old".to_owned(),
            text: "nope".to_owned()
        })
    );
    assert_eq!(
        RefUpdate::parse(A, "nope", "refs/heads/x"),
        Err(PushPolicyError::ObjectId {
            field: "new".to_owned(),
            text: "nope".to_owned()
        })
    );
}

#[test]
fn ref_names_follow_git_check_ref_format() {
    for good in [
        "main",
        "capsid/j42",
        "a.b/c-d_e",
        "refs/heads/x@y",
        "été",
        "@x",
    ] {
        assert_eq!(ref_format_error(good), None, "{good:?}");
    }
    let table: &[(&str, &str)] = &[
        ("", "is empty"),
        ("@", "is `@`"),
        ("a\u{1f}b", "contains a control character"),
        ("a\u{7f}b", "contains a control character"),
        ("a\nb", "contains a control character"),
        ("a b", "contains a space or one of ~ ^ : ? * [ \\"),
        ("a~b", "contains a space or one of ~ ^ : ? * [ \\"),
        ("a^b", "contains a space or one of ~ ^ : ? * [ \\"),
        ("a:b", "contains a space or one of ~ ^ : ? * [ \\"),
        ("a?b", "contains a space or one of ~ ^ : ? * [ \\"),
        ("a*b", "contains a space or one of ~ ^ : ? * [ \\"),
        ("a[b", "contains a space or one of ~ ^ : ? * [ \\"),
        ("a\\b", "contains a space or one of ~ ^ : ? * [ \\"),
        ("a..b", "contains `..`"),
        ("a@{b", "contains `@{`"),
        ("/a", "has an empty path component"),
        ("a/", "has an empty path component"),
        ("a//b", "has an empty path component"),
        ("a.", "ends with `.`"),
        (".a", "has a path component starting with `.`"),
        ("a/.b", "has a path component starting with `.`"),
        ("a.lock", "has a path component ending with `.lock`"),
        ("a.lock/b", "has a path component ending with `.lock`"),
    ];
    for (name, why) in table {
        assert_eq!(ref_format_error(name), Some(*why), "{name:?}");
    }
}

#[test]
fn terms_name_the_job_branch_and_take_short_or_full_names() {
    let t = PushTerms::new(" j42 ", &["refs/heads/feature-x", " y "], &["main"]).unwrap();
    assert_eq!(t.job_branch(), "capsid/j42");
    assert_eq!(t.extra_branches(), ["feature-x".to_owned(), "y".to_owned()]);
    assert_eq!(t.protected_branches(), ["main".to_owned()]);
    assert!(t.is_own("capsid/j42"));
    assert!(t.is_own("feature-x"));
    assert!(t.is_own("y"));
    assert!(!t.is_own("capsid/j4"));
    assert!(!t.is_own("main"));
    assert!(t.is_protected("main"));
    assert!(t.is_protected("MAIN"));
    assert!(t.is_protected("Main"));
    assert!(!t.is_protected("mainline"));
    assert!(!t.is_protected("capsid/j42"));
}

#[test]
fn terms_refuse_bad_names_naming_the_field() {
    let none: &[&str] = &[];
    assert_eq!(
        PushTerms::new("  ", none, none),
        Err(PushPolicyError::BranchName {
            field: "job".to_owned(),
            name: "  ".to_owned(),
            why: "is empty"
        })
    );
    assert_eq!(
        PushTerms::new("a b", none, none),
        Err(PushPolicyError::BranchName {
            field: "job".to_owned(),
            name: "capsid/a b".to_owned(),
            why: "contains a space or one of ~ ^ : ? * [ \\"
        })
    );
    assert_eq!(
        PushTerms::new("j", &["x..y"], none),
        Err(PushPolicyError::BranchName {
            field: "branches".to_owned(),
            name: "x..y".to_owned(),
            why: "contains `..`"
        })
    );
    let err = PushTerms::new("j", none, &["refs/heads/"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`protected` must be a branch name git accepts: \"refs/heads/\" is empty"
    );
}

#[test]
fn approvals_bind_exactly_one_ref_and_one_sha() {
    let a = Approval::for_branch("main", B).unwrap();
    assert_eq!(a, Approval::for_branch("refs/heads/main", B).unwrap());
    assert_eq!(a.refname, "refs/heads/main");
    assert!(a.allows(&upd(A, B, "refs/heads/main")));
    assert!(a.allows(&upd(ZERO, B, "refs/heads/main")));
    assert!(!a.allows(&upd(A, A, "refs/heads/main")));
    assert!(!a.allows(&upd(A, B, "refs/heads/master")));
    assert!(!a.allows(&upd(A, B, "refs/heads/MAIN")));
    assert_eq!(
        Approval::for_branch("main", "x"),
        Err(PushPolicyError::ObjectId {
            field: "sha".to_owned(),
            text: "x".to_owned()
        })
    );
    assert!(matches!(
        Approval::for_branch("ma in", B),
        Err(PushPolicyError::BranchName { field, .. }) if field == "refname"
    ));
}

#[test]
fn each_rule_refuses_with_its_reason() {
    let t = terms();
    let table: Vec<(RefUpdate, Refusal, &str)> = vec![
        (
            upd(ZERO, A, "refs/tags/v1"),
            Refusal::Tag {
                refname: "refs/tags/v1".to_owned(),
                job_branch: "capsid/j42".to_owned(),
            },
            "refs/tags/v1: refused, a job may not push tags; push your commits to \
             refs/heads/capsid/j42 instead.",
        ),
        (
            upd(ZERO, A, "refs/notes/commits"),
            Refusal::NotABranch {
                refname: "refs/notes/commits".to_owned(),
                job_branch: "capsid/j42".to_owned(),
            },
            "refs/notes/commits: refused, a job may push only branches (refs/heads/...); push \
             to refs/heads/capsid/j42 instead.",
        ),
        (
            upd(ZERO, A, "HEAD"),
            Refusal::NotABranch {
                refname: "HEAD".to_owned(),
                job_branch: "capsid/j42".to_owned(),
            },
            "HEAD: refused, a job may push only branches (refs/heads/...); push to \
             refs/heads/capsid/j42 instead.",
        ),
        (
            upd(A, ZERO, "refs/heads/capsid/j42"),
            Refusal::Deletion {
                refname: "refs/heads/capsid/j42".to_owned(),
            },
            "refs/heads/capsid/j42: refused, a job may not delete a ref; leave it, a person \
             deletes branches.",
        ),
        (
            upd(A, ZERO, "refs/heads/main"),
            Refusal::Deletion {
                refname: "refs/heads/main".to_owned(),
            },
            "refs/heads/main: refused, a job may not delete a ref; leave it, a person deletes \
             branches.",
        ),
        (
            upd(A, B, "refs/heads/other"),
            Refusal::OtherBranch {
                refname: "refs/heads/other".to_owned(),
                job_branch: "capsid/j42".to_owned(),
            },
            "refs/heads/other: refused, this branch is not the job's; push to \
             refs/heads/capsid/j42 instead.",
        ),
        (
            upd(A, B, "refs/heads/capsid/j43"),
            Refusal::OtherBranch {
                refname: "refs/heads/capsid/j43".to_owned(),
                job_branch: "capsid/j42".to_owned(),
            },
            "refs/heads/capsid/j43: refused, this branch is not the job's; push to \
             refs/heads/capsid/j42 instead.",
        ),
        (
            upd(A, B, "refs/heads/a..b"),
            Refusal::BadRefName {
                refname: "refs/heads/a..b".to_owned(),
                why: "contains `..`",
            },
            "\"refs/heads/a..b\": refused, the ref name contains `..`, which git does not allow.",
        ),
        (
            upd(A, B, "refs/heads/"),
            Refusal::BadRefName {
                refname: "refs/heads/".to_owned(),
                why: "has an empty path component",
            },
            "\"refs/heads/\": refused, the ref name has an empty path component, which git does \
             not allow.",
        ),
    ];
    for (u, want, text) in table {
        let got = refused(decide(&t, &u, &[], true));
        assert_eq!(got, want, "{u}");
        assert_eq!(got.to_string(), text);
        assert_eq!(got.refname(), u.refname);
        let d = decide(&t, &u, &[], true);
        assert_eq!(d.explain(&u), text);
        assert!(!d.is_accept());
        assert_eq!(d.forward_refspec(&u), None);
    }
}

#[test]
fn a_role_that_ships_no_code_pushes_nothing_even_approved() {
    let t = terms().shipping_nothing("scout");
    let approvals = [Approval::for_branch("main", B).unwrap()];
    for u in [
        upd(A, B, "refs/heads/capsid/j42"),
        upd(ZERO, B, "refs/heads/feature-x"),
        upd(A, B, "refs/heads/main"),
        upd(A, B, "refs/tags/v1"),
    ] {
        let got = refused(decide(&t, &u, &approvals, true));
        assert_eq!(
            got,
            Refusal::ShipsNothing {
                refname: u.refname.clone(),
                role: "scout".into()
            }
        );
        assert!(
            got.to_string()
                .contains("role is scout, which ships no code"),
            "{got}"
        );
    }
    // The same push by the same job without the role goes through.
    assert!(decide(&terms(), &upd(A, B, "refs/heads/capsid/j42"), &[], true).is_accept());
}

#[test]
fn a_closed_run_refuses_everything_first() {
    let t = terms();
    let approvals = [Approval::for_branch("main", B).unwrap()];
    for u in [
        upd(A, B, "refs/heads/capsid/j42"),
        upd(A, B, "refs/heads/main"),
        upd(A, ZERO, "refs/heads/capsid/j42"),
        upd(A, B, "refs/tags/v1"),
        upd(A, B, "bad name"),
    ] {
        let got = refused(decide(&t, &u, &approvals, false));
        assert_eq!(
            got,
            Refusal::RunClosed {
                refname: u.refname.clone()
            }
        );
        assert_eq!(got.refname(), u.refname);
        assert_eq!(
            got.to_string(),
            format!(
                "{}: refused, the job's run has ended and the gateway takes no more pushes for it.",
                u.refname
            )
        );
    }
}

#[test]
fn own_branches_are_accepted_and_forwarded_with_force() {
    let t = terms();
    for u in [
        upd(ZERO, A, "refs/heads/capsid/j42"),
        upd(A, B, "refs/heads/capsid/j42"),
        upd(B, A, "refs/heads/feature-x"),
    ] {
        let d = decide(&t, &u, &[], true);
        assert_eq!(d, Decision::Accept(Accepted::OwnBranch));
        assert!(d.is_accept());
        assert_eq!(
            d.forward_refspec(&u),
            Some(format!("+{}:{}", u.new, u.refname))
        );
        assert_eq!(
            d.explain(&u),
            format!("{}: accepted, the job's own branch.", u.refname)
        );
    }
}

#[test]
fn protected_branches_hold_until_an_approval_of_that_ref_and_sha() {
    let t = terms();
    let u = upd(A, B, "refs/heads/main");
    assert_eq!(decide(&t, &u, &[], true), Decision::Hold(u.clone()));
    let wrong_sha = [Approval::for_branch("main", A).unwrap()];
    assert_eq!(decide(&t, &u, &wrong_sha, true), Decision::Hold(u.clone()));
    let wrong_ref = [Approval::for_branch("master", B).unwrap()];
    assert_eq!(decide(&t, &u, &wrong_ref, true), Decision::Hold(u.clone()));
    let right = [
        Approval::for_branch("master", B).unwrap(),
        Approval::for_branch("main", B).unwrap(),
    ];
    let d = decide(&t, &u, &right, true);
    assert_eq!(d, Decision::Accept(Accepted::Approved));
    assert!(d.is_accept());
    assert_eq!(d.forward_refspec(&u), Some(format!("{B}:refs/heads/main")));
    assert_eq!(
        d.explain(&u),
        format!("refs/heads/main: accepted, a person approved moving it to {B}.")
    );
    let hold = decide(&t, &u, &[], true);
    assert!(!hold.is_accept());
    assert_eq!(hold.forward_refspec(&u), None);
    assert_eq!(
        hold.explain(&u),
        format!(
            "refs/heads/main: held, a protected branch moves only with a person's approval of \
             this exact update ({A} -> {B}); the job blocks with it as its question, and the \
             same push goes through once it is approved."
        )
    );
    // A case variant of a protected branch is protected too, and a job that names a protected
    // branch as its own does not free it.
    let t2 = PushTerms::new("j42", &["main", "Trunk"], &["main", "trunk"]).unwrap();
    let upper = upd(A, B, "refs/heads/Trunk");
    assert_eq!(
        decide(&t2, &upper, &[], true),
        Decision::Hold(upper.clone())
    );
    let main = upd(A, B, "refs/heads/main");
    assert_eq!(decide(&t2, &main, &[], true), Decision::Hold(main.clone()));
}

#[test]
fn a_push_goes_through_only_when_every_update_is_accepted() {
    let t = terms();
    let own = upd(A, B, "refs/heads/capsid/j42");
    let extra = upd(ZERO, B, "refs/heads/feature-x");
    let main = upd(A, B, "refs/heads/main");

    let ok = decide_push(&t, &[own.clone(), extra.clone()], &[], true);
    assert!(ok.accepted());
    assert!(ok.held().is_empty());
    assert_eq!(
        ok.forward_refspecs(),
        vec![
            format!("+{B}:refs/heads/capsid/j42"),
            format!("+{B}:refs/heads/feature-x")
        ]
    );
    assert_eq!(
        ok.report(),
        "capsid gateway: push accepted.\n\
         capsid gateway: refs/heads/capsid/j42: accepted, the job's own branch.\n\
         capsid gateway: refs/heads/feature-x: accepted, the job's own branch."
    );

    let mixed = decide_push(&t, &[own.clone(), main.clone()], &[], true);
    assert!(!mixed.accepted());
    assert_eq!(mixed.held(), vec![&main]);
    assert!(mixed.forward_refspecs().is_empty());
    let report = mixed.report();
    assert!(report.starts_with(
        "capsid gateway: push refused, nothing was updated (a push goes through only when \
         every ref in it is allowed).\n"
    ));
    assert!(report.contains("capsid gateway: refs/heads/capsid/j42: accepted"));
    assert!(report.contains("capsid gateway: refs/heads/main: held"));
    assert_eq!(
        mixed.updates[0],
        (own.clone(), Decision::Accept(Accepted::OwnBranch))
    );
    assert_eq!(
        mixed.updates[1],
        (main.clone(), Decision::Hold(main.clone()))
    );

    let approved = decide_push(
        &t,
        &[own.clone(), main.clone()],
        &[Approval::for_branch("main", B).unwrap()],
        true,
    );
    assert!(approved.accepted());
    assert_eq!(
        approved.forward_refspecs(),
        vec![
            format!("+{B}:refs/heads/capsid/j42"),
            format!("{B}:refs/heads/main")
        ]
    );

    let closed = decide_push(&t, std::slice::from_ref(&own), &[], false);
    assert!(!closed.accepted());
    assert!(closed.held().is_empty());

    let empty = decide_push(&t, &[], &[], true);
    assert!(!empty.accepted());
    assert!(empty.forward_refspecs().is_empty());
    assert_eq!(
        empty.report(),
        "capsid gateway: push refused, it names no ref to update."
    );
}

fn arb_oid() -> impl Strategy<Value = ObjectId> {
    prop_oneof![
        Just(ObjectId(ZERO.to_owned())),
        "[0-9a-f]{40}".prop_map(ObjectId),
        "[0-9a-f]{64}".prop_map(ObjectId),
    ]
}

fn arb_refname() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("refs/heads/capsid/j42".to_owned()),
        Just("refs/heads/feature-x".to_owned()),
        Just("refs/heads/main".to_owned()),
        Just("refs/heads/MASTER".to_owned()),
        Just("refs/heads/trunk".to_owned()),
        Just("refs/tags/v1".to_owned()),
        Just("HEAD".to_owned()),
        "refs/(heads|tags|notes|remotes|pull)/[a-zA-Z0-9._/@{}~ -]{0,16}",
        "[ -~]{0,24}",
    ]
}

fn arb_update() -> impl Strategy<Value = RefUpdate> {
    (arb_refname(), arb_oid(), arb_oid()).prop_map(|(refname, old, new)| RefUpdate {
        refname,
        old,
        new,
    })
}

fn arb_approvals(u: RefUpdate) -> impl Strategy<Value = Vec<Approval>> {
    let exact = Approval {
        refname: u.refname.clone(),
        sha: u.new.clone(),
    };
    proptest::collection::vec(
        prop_oneof![
            Just(exact),
            (arb_refname(), arb_oid()).prop_map(|(refname, sha)| Approval { refname, sha }),
        ],
        0..4,
    )
}

fn branch_of(u: &RefUpdate) -> Option<&str> {
    u.refname.strip_prefix(BRANCH_PREFIX)
}

#[test]
fn a_held_push_command_approves_exactly_its_updates_and_nothing_else() {
    let main = upd(A, B, "refs/heads/main");
    let trunk = upd(ZERO, A, "refs/heads/trunk");
    let command = held_push_command([&main, &trunk]);
    assert_eq!(
        command,
        format!("{HELD_PUSH_COMMAND} {A} {B} refs/heads/main; {ZERO} {A} refs/heads/trunk")
    );
    let approvals = approvals_in_command(&command);
    assert_eq!(
        approvals,
        vec![
            Approval::for_branch("main", B).unwrap(),
            Approval::for_branch("trunk", A).unwrap()
        ]
    );
    // Resuming the job lets exactly that push through, and no other sha or ref.
    let t = terms();
    assert_eq!(
        decide(&t, &main, &approvals, true),
        Decision::Accept(Accepted::Approved)
    );
    assert!(matches!(
        decide(&t, &upd(A, A, "refs/heads/main"), &approvals, true),
        Decision::Hold(_)
    ));
    assert!(matches!(
        decide(&t, &upd(A, B, "refs/heads/master"), &approvals, true),
        Decision::Hold(_)
    ));
    // Surrounding blanks are read as the block summary keeps them.
    assert_eq!(approvals_in_command(&format!("  {command}\n")), approvals);
    // Anything else approves nothing at all.
    for other in [
        String::new(),
        "git push origin HEAD:main".to_owned(),
        format!("{A} {B} refs/heads/main"),
        HELD_PUSH_COMMAND.to_owned(),
        format!("{HELD_PUSH_COMMAND} {A} {B}"),
        format!("{HELD_PUSH_COMMAND} {A} {B} refs/heads/main extra"),
        format!("{HELD_PUSH_COMMAND} {A} {B} refs/heads/main; {A} {ZERO} refs/heads/trunk"),
        format!("{HELD_PUSH_COMMAND} {A} {B} refs/tags/v1"),
        format!("{HELD_PUSH_COMMAND} {A} {B} refs/heads/ma..in"),
        format!("{HELD_PUSH_COMMAND} {A} {} refs/heads/main", &B[..39]),
        format!("{HELD_PUSH_COMMAND} {A} {B} refs/heads/main;"),
        format!("the agent says {HELD_PUSH_COMMAND} {A} {B} refs/heads/main"),
    ] {
        assert_eq!(approvals_in_command(&other), Vec::new(), "{other}");
    }
}

proptest! {
    #[test]
    fn never_accepts_a_protected_branch_without_an_approval_of_that_ref_and_sha(
        (u, approvals) in arb_update().prop_flat_map(|u| (Just(u.clone()), arb_approvals(u))),
        open in any::<bool>(),
    ) {
        let t = terms();
        let d = decide(&t, &u, &approvals, open);
        if let Some(b) = branch_of(&u) && t.is_protected(b) && d.is_accept() {
            prop_assert!(approvals.iter().any(|a| a.refname == u.refname && a.sha == u.new));
            prop_assert_eq!(d, Decision::Accept(Accepted::Approved));
        }
    }

    // Held updates always carry names git takes (a bad name is refused before anything is
    // held), so the command is generated from such names, branches or not.
    #[test]
    fn a_held_push_command_reads_back_as_approvals_of_exactly_its_branch_updates(
        updates in proptest::collection::vec(
            (
                prop_oneof![
                    Just("refs/heads/main".to_owned()),
                    Just("refs/heads/capsid/j42".to_owned()),
                    Just("refs/heads/a;b".to_owned()),
                    Just("refs/tags/v1".to_owned()),
                    Just("refs/notes/commits".to_owned()),
                    "refs/heads/[a-z][a-z0-9/-]{0,12}[a-z0-9]",
                ],
                arb_oid(),
                arb_oid(),
            )
                .prop_filter("a name git takes", |(r, _, _)| ref_format_error(r).is_none())
                .prop_map(|(refname, old, new)| RefUpdate { refname, old, new }),
            1..4,
        ),
    ) {
        let command = held_push_command(&updates);
        let approvals = approvals_in_command(&command);
        let all_branches = updates.iter().all(|u| {
            !u.is_delete() && branch_of(u).is_some() && !u.refname.contains(';')
        });
        if all_branches {
            prop_assert_eq!(approvals.len(), updates.len());
            for (a, u) in approvals.iter().zip(&updates) {
                prop_assert!(a.allows(u));
            }
        } else {
            prop_assert!(approvals.is_empty());
        }
    }

    #[test]
    fn a_protected_update_is_held_or_approved_or_refused_never_forced(
        u in arb_update(),
        approvals in proptest::collection::vec(
            (arb_refname(), arb_oid()).prop_map(|(refname, sha)| Approval { refname, sha }), 0..4),
    ) {
        let t = terms();
        let d = decide(&t, &u, &approvals, true);
        if branch_of(&u).is_some_and(|b| t.is_protected(b)) {
            prop_assert!(d != Decision::Accept(Accepted::OwnBranch));
            if let Decision::Hold(held) = &d {
                prop_assert_eq!(held, &u);
            }
            if let Some(spec) = d.forward_refspec(&u) {
                prop_assert!(!spec.starts_with('+'));
            }
        }
    }

    #[test]
    fn nothing_is_accepted_or_held_once_the_run_closed(
        u in arb_update(),
        approvals in proptest::collection::vec(
            (arb_refname(), arb_oid()).prop_map(|(refname, sha)| Approval { refname, sha }), 0..4),
    ) {
        let d = decide(&terms(), &u, &approvals, false);
        prop_assert_eq!(d, Decision::Refuse(Refusal::RunClosed { refname: u.refname.clone() }));
    }

    #[test]
    fn never_accepts_a_tag_a_deletion_or_a_non_branch(
        (u, approvals) in arb_update().prop_flat_map(|u| (Just(u.clone()), arb_approvals(u))),
        open in any::<bool>(),
    ) {
        let d = decide(&terms(), &u, &approvals, open);
        if u.refname.starts_with(TAG_PREFIX) || u.is_delete() || branch_of(&u).is_none() {
            prop_assert!(!d.is_accept(), "{:?} -> {:?}", u, d);
            prop_assert!(!matches!(d, Decision::Hold(_)));
        }
    }

    #[test]
    fn always_accepts_a_create_or_update_of_the_jobs_own_branch_while_open(
        old in arb_oid(),
        new in arb_oid().prop_filter("not a deletion", |o| !o.is_zero()),
        which in prop_oneof![Just("capsid/j42"), Just("feature-x")],
        approvals in proptest::collection::vec(
            (arb_refname(), arb_oid()).prop_map(|(refname, sha)| Approval { refname, sha }), 0..4),
    ) {
        let u = RefUpdate { refname: format!("{BRANCH_PREFIX}{which}"), old, new };
        let d = decide(&terms(), &u, &approvals, true);
        prop_assert_eq!(&d, &Decision::Accept(Accepted::OwnBranch));
        prop_assert_eq!(d.forward_refspec(&u), Some(format!("+{}:{}", u.new, u.refname)));
    }

    #[test]
    fn a_push_is_accepted_exactly_when_every_update_is(
        updates in proptest::collection::vec(arb_update(), 0..5),
        open in any::<bool>(),
    ) {
        let t = terms();
        let p = decide_push(&t, &updates, &[], open);
        let each: Vec<Decision> = updates.iter().map(|u| decide(&t, u, &[], open)).collect();
        prop_assert_eq!(p.updates.iter().map(|(_, d)| d.clone()).collect::<Vec<_>>(), each.clone());
        let all = !updates.is_empty() && each.iter().all(Decision::is_accept);
        prop_assert_eq!(p.accepted(), all);
        prop_assert_eq!(p.forward_refspecs().is_empty(), !all);
        prop_assert_eq!(p.held().len(), each.iter().filter(|d| matches!(d, Decision::Hold(_))).count());
        prop_assert_eq!(p.report().lines().count(), updates.len() + 1);
    }

    #[test]
    fn object_id_parse_agrees_with_a_model(text in "[0-9a-fA-Fg]{0,66}") {
        let model = (text.len() == 40 || text.len() == 64)
            && text.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase());
        prop_assert_eq!(ObjectId::parse("sha", &text).is_ok(), model);
    }
}
