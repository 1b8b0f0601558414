//! Tests of job requirements: input, storage, fail-closed reading and the claim's scope check.

use super::*;
use crate::scope::Axis;
use proptest::prelude::*;
use serde_json::json;

fn req(flags: &[Flag], bar: Option<u64>) -> JobRequirements {
    JobRequirements {
        required_flags: flags.to_vec(),
        min_prs_merged: bar,
        not_by: Vec::new(),
    }
}

#[test]
fn an_excluded_actor_is_stored_read_back_and_refused() {
    let r = JobRequirements::default()
        .not_by("agent:author")
        .not_by("agent:author");
    assert_eq!(r.not_by, ["agent:author"]);
    let stored = r.stored_required_scopes().expect("stored");
    assert_eq!(stored, r#"{"flags":[],"not_by":["agent:author"]}"#);
    let back = JobRequirements::from_stored(Some(&stored), None).unwrap();
    assert_eq!(back, r);
    assert!(
        back.excluded("agent:author")
            .is_some_and(|w| w.contains("another agent"))
    );
    assert_eq!(back.excluded("agent:reviewer"), None);
    for bad in [
        r#"{"flags":[],"not_by":"x"}"#,
        r#"{"flags":[],"not_by":[1]}"#,
    ] {
        assert!(
            JobRequirements::from_stored(Some(bad), None).is_err(),
            "{bad}"
        );
    }
    assert_eq!(JobRequirements::default().stored_required_scopes(), None);
}

#[test]
fn input_is_read_and_canonicalized() {
    let flags = json!(["can_merge", "money_paths", "can_merge"]);
    let got = JobRequirements::from_input(Some(&flags), Some(&json!({"prs_merged": 3}))).unwrap();
    assert_eq!(got, req(&[Flag::CanMerge, Flag::MoneyPaths], Some(3)));
    assert_eq!(
        JobRequirements::from_input(None, None),
        Ok(JobRequirements::default())
    );
    let zero =
        JobRequirements::from_input(Some(&json!([])), Some(&json!({"prs_merged": 0}))).unwrap();
    assert_eq!(zero, JobRequirements::default());
    assert_eq!(
        JobRequirements::from_input(None, Some(&json!({}))),
        Ok(JobRequirements::default())
    );
}

#[test]
fn input_refusals_name_the_problem() {
    let err = JobRequirements::from_input(Some(&json!(["can_merge", "admin"])), None).unwrap_err();
    assert_eq!(
        err,
        RequirementError::UnknownFlag {
            name: "admin".into()
        }
    );
    assert!(
        err.to_string().contains("\"admin\", which is not a flag"),
        "{err}"
    );
    assert!(err.to_string().contains("can_comment_pr"), "{err}");
    assert_eq!(
        JobRequirements::from_input(Some(&json!("can_merge")), None),
        Err(RequirementError::FlagsNotList)
    );
    assert_eq!(
        JobRequirements::from_input(Some(&json!([1])), None),
        Err(RequirementError::FlagsNotList)
    );
    assert_eq!(
        JobRequirements::from_input(None, Some(&json!(3))),
        Err(RequirementError::MinRecordNotObject)
    );
    for bad in [json!(-1), json!(1.5), json!("2"), json!(true)] {
        let got = JobRequirements::from_input(None, Some(&json!({ "prs_merged": bad })));
        assert_eq!(got, Err(RequirementError::PrsMergedInvalid), "{bad}");
    }
}

#[test]
fn storage_texts_are_the_workers() {
    let r = req(&[Flag::CanMerge, Flag::CanWriteWorkflows], Some(2));
    assert_eq!(
        r.stored_required_scopes().as_deref(),
        Some(r#"{"flags":["can_merge","can_write_workflows"]}"#)
    );
    assert_eq!(
        r.stored_min_record().as_deref(),
        Some(r#"{"prs_merged":2}"#)
    );
    assert_eq!(JobRequirements::default().stored_required_scopes(), None);
    assert_eq!(req(&[], Some(0)).stored_min_record(), None);
}

#[test]
fn stored_texts_read_fail_closed() {
    assert_eq!(
        JobRequirements::from_stored(None, None),
        Ok(JobRequirements::default())
    );
    let ok = JobRequirements::from_stored(
        Some(r#"{"flags":["can_dispatch"],"note":1}"#),
        Some(r#"{"prs_merged":4}"#),
    );
    assert_eq!(ok, Ok(req(&[Flag::CanDispatch], Some(4))));
    assert_eq!(
        JobRequirements::from_stored(Some(r#"{"flags":[]}"#), Some(r#"{"prs_merged":0}"#)),
        Ok(JobRequirements::default())
    );

    let scopes_cases: &[(&str, &str)] = &[
        ("", "is not JSON"),
        ("{flags:[]}", "is not JSON"),
        ("[\"can_merge\"]", "is not a JSON object"),
        ("null", "is not a JSON object"),
        ("{}", "has no flags list"),
        (r#"{"flags":"can_merge"}"#, "not an array"),
        (
            r#"{"flags":["can_merge","admin"]}"#,
            "names \"admin\", which is not a flag",
        ),
        (r#"{"flags":[true]}"#, "names true, which is not a flag"),
    ];
    for (text, why) in scopes_cases {
        let err = JobRequirements::from_stored(Some(text), None).unwrap_err();
        assert_eq!(err.which, "required_scopes", "{text}");
        assert!(err.why.contains(why), "{text}: {}", err.why);
    }
    let bar_cases: &[(&str, &str)] = &[
        ("{", "is not JSON"),
        ("5", "is not a JSON object"),
        ("{}", "has no prs_merged"),
        (r#"{"prs_merged":-2}"#, "has prs_merged -2"),
        (r#"{"prs_merged":2.5}"#, "not a whole number"),
        (r#"{"prs_merged":"3"}"#, "not a whole number"),
    ];
    for (text, why) in bar_cases {
        let err = JobRequirements::from_stored(None, Some(text)).unwrap_err();
        assert_eq!(err.which, "min_record", "{text}");
        assert!(err.why.contains(why), "{text}: {}", err.why);
    }
    let err = JobRequirements::from_stored(None, Some("{}")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "this job's min_record has no prs_merged, so nothing can be checked against it"
    );
}

fn driver(flags: &[Flag]) -> Scopes {
    Scopes {
        namespaces: Axis::Only(vec!["capsid".into()]),
        grants: [Grant::Read, Grant::Write].into(),
        flags: flags.iter().copied().collect(),
        ..Scopes::unrestricted()
    }
}

#[test]
fn missing_for_job_asks_grant_namespace_then_flags() {
    let needs_merge = req(&[Flag::CanMerge], None);
    assert_eq!(
        missing_for_job(&driver(&[Flag::CanMerge]), "capsid", &needs_merge),
        Ok(())
    );
    assert_eq!(
        missing_for_job(&driver(&[]), "capsid", &JobRequirements::default()),
        Ok(())
    );
    assert_eq!(
        missing_for_job(&driver(&[]), "capsid", &needs_merge),
        Err(ScopeRefusal::Flag {
            flag: Flag::CanMerge
        })
    );
    assert!(matches!(
        missing_for_job(&driver(&[Flag::CanMerge]), "other", &needs_merge),
        Err(ScopeRefusal::Namespace { .. })
    ));
    let reader = Scopes {
        grants: [Grant::Read].into(),
        ..driver(&[Flag::CanMerge])
    };
    assert!(matches!(
        missing_for_job(&reader, "other", &needs_merge),
        Err(ScopeRefusal::Grant {
            needed: Grant::Write,
            ..
        })
    ));
}

/// A claim or resume is a use of the `jobs` tool: a driver whose tools axis leaves `jobs`
/// out may not take the job, whatever else it holds; `jobs` itself or the wildcard lets it.
#[test]
fn missing_for_job_asks_the_tools_axis_for_jobs() {
    let without_jobs = Scopes {
        tools: Axis::Only(vec!["read".into(), "write".into()]),
        ..driver(&[])
    };
    assert_eq!(
        missing_for_job(&without_jobs, "capsid", &JobRequirements::default()),
        Err(ScopeRefusal::Tool {
            qualified: "jobs".into(),
            held: "read, write".into(),
        })
    );
    let with_jobs = Scopes {
        tools: Axis::Only(vec!["jobs".into()]),
        ..driver(&[])
    };
    assert_eq!(
        missing_for_job(&with_jobs, "capsid", &JobRequirements::default()),
        Ok(())
    );
}

fn any_requirements() -> impl Strategy<Value = JobRequirements> {
    (
        proptest::sample::subsequence(Flag::ALL.to_vec(), 0..=Flag::ALL.len()),
        proptest::option::of(1u64..1_000_000),
        any::<bool>(),
    )
        .prop_map(|(mut flags, bar, reverse)| {
            if reverse {
                flags.reverse();
            }
            JobRequirements {
                required_flags: flags,
                min_prs_merged: bar,
                not_by: Vec::new(),
            }
        })
}

/// `got` asks no less than `want`: every flag of `want` is required and the bar is no lower.
fn at_least_as_strict(got: &JobRequirements, want: &JobRequirements) -> bool {
    want.required_flags
        .iter()
        .all(|f| got.required_flags.contains(f))
        && got.min_prs_merged.unwrap_or(0) >= want.min_prs_merged.unwrap_or(0)
}

/// Edits of a stored text that do not merely rewrite a numeral (a changed digit is a
/// different bar, which no reader can tell from damage).
fn corrupt_text(text: &str, at: usize, byte: u8, kind: u8) -> Option<String> {
    let bytes = text.as_bytes();
    let at = at % bytes.len();
    let numeral = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    let mut out = bytes.to_vec();
    match kind % 3 {
        0 => {
            if numeral(at) || out[at] == byte {
                return None;
            }
            out[at] = byte;
        }
        1 => {
            if numeral(at) {
                return None;
            }
            out.remove(at);
        }
        _ => out.truncate(at),
    }
    String::from_utf8(out).ok()
}

proptest! {
    #[test]
    fn stored_round_trips(r in any_requirements()) {
        let scopes = r.stored_required_scopes();
        let bar = r.stored_min_record();
        prop_assert_eq!(JobRequirements::from_stored(scopes.as_deref(), bar.as_deref()), Ok(r));
    }

    #[test]
    fn input_then_store_round_trips(r in any_requirements()) {
        let names: Vec<&str> = r.required_flags.iter().map(|f| f.name()).collect();
        let input = JobRequirements::from_input(Some(&json!(names)), Some(&json!({"prs_merged": r.min_prs_merged.unwrap_or(0)})));
        prop_assert_eq!(input, Ok(r));
    }

    #[test]
    fn corruption_is_never_read_as_a_weaker_requirement(
        r in any_requirements(),
        at in any::<usize>(),
        byte in 0u8..128,
        kind in any::<u8>(),
        on_scopes in any::<bool>(),
    ) {
        let scopes = r.stored_required_scopes();
        let bar = r.stored_min_record();
        let (target, other) = if on_scopes { (scopes.clone(), bar.clone()) } else { (bar.clone(), scopes.clone()) };
        let Some(text) = target else { return Ok(()) };
        let Some(edited) = corrupt_text(&text, at, byte, kind) else { return Ok(()) };
        let read = if on_scopes {
            JobRequirements::from_stored(Some(&edited), other.as_deref())
        } else {
            JobRequirements::from_stored(other.as_deref(), Some(&edited))
        };
        if let Ok(got) = read {
            prop_assert!(at_least_as_strict(&got, &r), "{:?} read as {:?}, weaker than {:?}", edited, got, r);
        }
    }
}
