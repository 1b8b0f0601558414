//! The judge's rules as examples, and the properties a verdict rests on: a protected head is
//! forgiven only at exactly an approved sha, a deletion never, and a held update always
//! becomes the question.

use super::*;
use proptest::prelude::*;

const A: &str = "1111111111111111111111111111111111111111";
const B: &str = "2222222222222222222222222222222222222222";
const C: &str = "3333333333333333333333333333333333333333";

fn head(name: &str, sha: &str) -> Head {
    (name.to_owned(), sha.to_owned())
}

#[test]
fn a_protected_head_that_moved_appeared_or_went_is_named() {
    let before = [
        head("refs/heads/main", A),
        head("origin refs/heads/main", A),
    ];
    assert_eq!(unapproved_moves(&before, &before, &[]), None);
    let moved = [
        head("refs/heads/main", A),
        head("origin refs/heads/main", B),
    ];
    assert_eq!(
        unapproved_moves(&before, &moved, &[]).as_deref(),
        Some("origin refs/heads/main is now 222222222222")
    );
    let gone = [head("refs/heads/main", A)];
    assert_eq!(
        unapproved_moves(&before, &gone, &[]).as_deref(),
        Some("origin refs/heads/main was deleted")
    );
    let appeared = [
        head("refs/heads/main", A),
        head("origin refs/heads/main", A),
        head("origin refs/heads/master", C),
    ];
    assert_eq!(
        unapproved_moves(&before, &appeared, &[]).as_deref(),
        Some("origin refs/heads/master is now 333333333333")
    );
    let both = [head("refs/heads/main", B)];
    assert_eq!(
        unapproved_moves(&before, &both, &[]).as_deref(),
        Some("refs/heads/main is now 222222222222, origin refs/heads/main was deleted")
    );
}

#[test]
fn an_approval_forgives_exactly_its_branch_at_exactly_its_sha_and_never_a_deletion() {
    let before = [
        head("origin refs/heads/main", A),
        head("origin refs/heads/master", A),
    ];
    let after = [
        head("origin refs/heads/main", B),
        head("origin refs/heads/master", A),
    ];
    let main_b = ("refs/heads/main".to_owned(), B.to_owned());
    assert_eq!(
        unapproved_moves(&before, &after, std::slice::from_ref(&main_b)),
        None
    );
    // Another sha, or another branch, is not forgiven.
    let main_c = ("refs/heads/main".to_owned(), C.to_owned());
    let master_b = ("refs/heads/master".to_owned(), B.to_owned());
    assert!(unapproved_moves(&before, &after, &[main_c]).is_some());
    assert!(unapproved_moves(&before, &after, &[master_b]).is_some());
    // An approved move beside a deletion: the deletion is still named.
    let deleted = [head("origin refs/heads/main", B)];
    assert_eq!(
        unapproved_moves(&before, &deleted, &[main_b]).as_deref(),
        Some("origin refs/heads/master was deleted")
    );
}

#[test]
fn approval_lines_are_read_strictly() {
    let text = format!(
        "hooks ran\napproved refs/heads/main {A}\napproved refs/heads/main\napproved refs/heads/x {B} extra\n  approved   refs/heads/trunk   {C}  \n"
    );
    assert_eq!(
        approved_lines(&text),
        vec![
            ("refs/heads/main".to_owned(), A.to_owned()),
            ("refs/heads/trunk".to_owned(), C.to_owned()),
        ]
    );
    assert!(approved_lines("").is_empty());
}

#[test]
fn the_gates_cannot_vouch_when_rewired_moved_around_or_silent() {
    assert_eq!(gates_tampered(None, None, true), None);
    assert_eq!(
        gates_tampered(Some("core.hooksPath was changed"), Some("x"), false).as_deref(),
        Some("core.hooksPath was changed")
    );
    let moved = gates_tampered(None, Some("origin refs/heads/main is now 2222"), true).unwrap();
    assert!(
        moved.contains("a protected branch moved during the run outside the gates")
            && moved.contains("origin refs/heads/main is now 2222"),
        "{moved}"
    );
    let silent = gates_tampered(None, None, false).unwrap();
    assert!(
        silent.contains("none of Capsid's hooks reported"),
        "{silent}"
    );
}

#[test]
fn a_held_update_or_a_human_gate_is_the_question_over_what_the_hooks_recorded() {
    let recorded = HookState {
        status: AgentStatus::PausedForInput,
        question: Some("Which store?".into()),
        from_gate: false,
    };
    assert_eq!(
        hook_state(Some(recorded.clone()), None, &[]),
        Some(recorded.clone())
    );
    assert_eq!(hook_state(None, None, &[]), None);
    let gate = hook_state(
        Some(recorded.clone()),
        Some("git push origin main".into()),
        &[],
    );
    assert_eq!(
        gate,
        Some(HookState {
            status: AgentStatus::Blocked,
            question: Some("git push origin main".into()),
            from_gate: true,
        })
    );
    let held = RefUpdate::parse(A, B, "refs/heads/main").unwrap();
    let out = hook_state(
        Some(recorded),
        Some("git push origin main".into()),
        std::slice::from_ref(&held),
    )
    .unwrap();
    assert_eq!(out.status, AgentStatus::Blocked);
    assert_eq!(out.question, Some(held_push_command([&held])));
}

fn sha() -> impl Strategy<Value = String> {
    prop_oneof![Just(A.to_owned()), Just(B.to_owned()), Just(C.to_owned())]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("refs/heads/main".to_owned()),
        Just("origin refs/heads/main".to_owned()),
        Just("origin refs/heads/master".to_owned()),
    ]
}

/// Heads with distinct names, as the driver reads them.
fn heads() -> impl Strategy<Value = Vec<Head>> {
    proptest::collection::btree_map(name(), sha(), 0..3).prop_map(|m| m.into_iter().collect())
}

proptest! {
    #[test]
    fn nothing_moved_is_never_named(before in heads(), approved in proptest::collection::vec((name(), sha()), 0..3)) {
        prop_assert_eq!(unapproved_moves(&before, &before, &approved), None);
    }

    #[test]
    fn a_move_is_forgiven_only_at_an_approved_sha_and_a_deletion_never(
        before in heads(),
        after in heads(),
        approved in proptest::collection::vec(
            (prop_oneof![Just("refs/heads/main".to_owned()), Just("refs/heads/master".to_owned())], sha()),
            0..3,
        ),
    ) {
        let text = unapproved_moves(&before, &after, &approved).unwrap_or_default();
        let named: Vec<&str> = text.split(", ").collect();
        for (n, s) in &after {
            let old = before.iter().find(|(b, _)| b == n).map(|(_, s)| s);
            let moved = old != Some(s);
            let covered = approved.iter().any(|(r, a)| r == branch_of(n) && a == s);
            let says = named.contains(&format!("{n} is now {}", &s[..12]).as_str());
            prop_assert_eq!(says, moved && !covered, "{} in {:?}", n, named);
        }
        for (n, _) in &before {
            let gone = !after.iter().any(|(a, _)| a == n);
            prop_assert_eq!(named.contains(&format!("{n} was deleted").as_str()), gone);
        }
    }

    #[test]
    fn held_updates_always_become_the_question(
        recorded_question in proptest::option::of("[a-z ]{1,20}"),
        gate in proptest::option::of("[a-z ]{1,20}"),
        held_shas in proptest::collection::vec(sha(), 0..3),
    ) {
        let held: Vec<RefUpdate> = held_shas
            .iter()
            .map(|s| RefUpdate::parse(A, s, "refs/heads/main").unwrap())
            .collect();
        let recorded = recorded_question.clone().map(|q| HookState {
            status: AgentStatus::PausedForInput,
            question: Some(q),
            from_gate: false,
        });
        let out = hook_state(recorded.clone(), gate.clone(), &held);
        if held.is_empty() {
            match gate {
                Some(g) => prop_assert_eq!(out, Some(HookState { status: AgentStatus::Blocked, question: Some(g), from_gate: true })),
                None => prop_assert_eq!(out, recorded),
            }
        } else {
            let out = out.unwrap();
            prop_assert!(out.from_gate);
            prop_assert_eq!(out.status, AgentStatus::Blocked);
            prop_assert_eq!(out.question, Some(held_push_command(&held)));
        }
    }
}

#[test]
fn denied_commands_round_trip_through_their_lines_and_nothing_else_reads_as_one() {
    let cmd = "git push origin HEAD:main\necho 'two' \"lines\"";
    let text = format!(
        "session-start s1\n{}\napproved refs/heads/main abc\ndenied not-json\ndenied\n{}\n",
        denied_line(cmd),
        denied_line("gh pr merge 7")
    );
    assert_eq!(
        denied_lines(&text),
        vec![cmd.to_owned(), "gh pr merge 7".to_owned()]
    );
    assert!(denied_lines("session-start s1\n").is_empty());
}

#[test]
fn only_the_agent_clis_own_hooks_say_they_ran() {
    for line in [
        "session-start s1",
        "pre-tool-use s1",
        "stop s1",
        "session-end -",
    ] {
        assert!(
            agent_hooks_reported(&format!("pre-push -\n{line}\n")),
            "{line}"
        );
    }
    assert!(!agent_hooks_reported(""));
    assert!(!agent_hooks_reported(
        "pre-push -\napproved refs/heads/main abc\ndenied \"git push\"\nstopped s\n"
    ));
}
