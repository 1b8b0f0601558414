use proptest::prelude::*;

use super::*;

fn input<'a>() -> WriteInput<'a> {
    WriteInput::default()
}

#[test]
fn replace_needs_title_and_body_even_when_updating() {
    let both = WriteInput {
        title: Some("T"),
        body: Some("new"),
        ..input()
    };
    assert_eq!(
        assemble_body(WriteMode::Replace, None, &both),
        Ok("new".into())
    );
    assert_eq!(
        assemble_body(WriteMode::Replace, Some("old"), &both),
        Ok("new".into())
    );
    for partial in [
        WriteInput {
            body: Some("b"),
            ..input()
        },
        WriteInput {
            title: Some("t"),
            ..input()
        },
    ] {
        for prior in [None, Some("old")] {
            let err = assemble_body(WriteMode::Replace, prior, &partial).unwrap_err();
            assert_eq!(err, WriteModeError::ReplaceNeedsTitleAndBody);
            assert!(err.to_string().contains("needs both title and body"));
        }
    }
}

#[test]
fn other_modes_refuse_a_missing_document() {
    let any = WriteInput {
        body: Some("x"),
        title: Some("t"),
        find: Some("a"),
        replace_with: Some("b"),
        ..input()
    };
    for mode in [WriteMode::Append, WriteMode::Patch, WriteMode::Meta] {
        let err = assemble_body(mode, None, &any).unwrap_err();
        assert_eq!(err, WriteModeError::MissingDocument(mode));
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "cannot {} a document that does not exist",
                mode.as_str()
            )),
            "{text}"
        );
        assert!(text.contains("with mode 'replace' first"), "{text}");
    }
}

#[test]
fn refusals_in_the_worker_order() {
    let prior = Some("stored body");
    let cases: Vec<(WriteMode, WriteInput<'_>, WriteModeError)> = vec![
        (
            WriteMode::Meta,
            WriteInput {
                body: Some("x"),
                find: Some("a"),
                ..input()
            },
            WriteModeError::MetaTakesNoBody,
        ),
        (
            WriteMode::Meta,
            WriteInput {
                replace_with: Some("x"),
                title: Some("t"),
                ..input()
            },
            WriteModeError::FindOutsidePatch(WriteMode::Meta),
        ),
        (WriteMode::Meta, input(), WriteModeError::MetaNeedsAChange),
        (
            WriteMode::Append,
            WriteInput {
                find: Some("a"),
                ..input()
            },
            WriteModeError::AppendNeedsBody,
        ),
        (
            WriteMode::Append,
            WriteInput {
                body: Some("x"),
                replace_with: Some("a"),
                ..input()
            },
            WriteModeError::FindOutsidePatch(WriteMode::Append),
        ),
        (
            WriteMode::Patch,
            WriteInput {
                find: Some("stored"),
                body: Some("x"),
                ..input()
            },
            WriteModeError::PatchNeedsFindAndReplaceWith,
        ),
        (
            WriteMode::Patch,
            WriteInput {
                find: Some("stored"),
                replace_with: Some("x"),
                body: Some("b"),
                ..input()
            },
            WriteModeError::PatchTakesNoBody,
        ),
        (
            WriteMode::Patch,
            WriteInput {
                find: Some(""),
                replace_with: Some("x"),
                ..input()
            },
            WriteModeError::EmptyAnchor,
        ),
        (
            WriteMode::Patch,
            WriteInput {
                find: Some("absent"),
                replace_with: Some("x"),
                ..input()
            },
            WriteModeError::AnchorNotFound,
        ),
        (
            WriteMode::Patch,
            WriteInput {
                find: Some("o"),
                replace_with: Some("x"),
                ..input()
            },
            WriteModeError::AmbiguousAnchor(2),
        ),
    ];
    for (mode, given, expected) in cases {
        assert_eq!(
            assemble_body(mode, prior, &given),
            Err(expected.clone()),
            "{mode:?}"
        );
    }
}

#[test]
fn refusal_wording_cues() {
    assert!(
        WriteModeError::AnchorNotFound
            .to_string()
            .contains("anchor not found")
    );
    assert!(
        WriteModeError::AmbiguousAnchor(3)
            .to_string()
            .contains("ambiguous: it occurs 3 times")
    );
    assert!(
        WriteModeError::FindOutsidePatch(WriteMode::Append)
            .to_string()
            .contains("not 'append'")
    );
    assert!(
        WriteModeError::MetaNeedsAChange
            .to_string()
            .contains("title, type, tags or status")
    );
}

#[test]
fn meta_accepts_any_single_change() {
    for given in [
        WriteInput {
            title: Some("t"),
            ..input()
        },
        WriteInput {
            doc_type: Some("task"),
            ..input()
        },
        WriteInput {
            tags: Some(""),
            ..input()
        },
        WriteInput {
            status: Some("closed"),
            ..input()
        },
    ] {
        assert_eq!(
            assemble_body(WriteMode::Meta, Some("body —\n"), &given),
            Ok("body —\n".into())
        );
    }
}

#[test]
fn append_joins_with_exactly_one_blank_line() {
    let cases = [
        ("a", "b", "a\n\nb"),
        ("a\n\n\n  ", "\n\nb", "a\n\nb"),
        ("a\n", "  indented", "a\n\n  indented"),
        ("a", " \n \n  indented\n", "a\n\n  indented\n"),
        ("", "b", "\n\nb"),
        ("a\u{FEFF}", "b", "a\n\nb"),
        ("a\u{85}", "b", "a\u{85}\n\nb"),
        ("a", "\n", "a\n\n"),
    ];
    for (prior, addition, expected) in cases {
        let got = assemble_body(
            WriteMode::Append,
            Some(prior),
            &WriteInput {
                body: Some(addition),
                ..input()
            },
        );
        assert_eq!(got.as_deref(), Ok(expected), "{prior:?} + {addition:?}");
    }
}

#[test]
fn patch_splices_literally() {
    let given = WriteInput {
        find: Some("two"),
        replace_with: Some("$& 2"),
        ..input()
    };
    assert_eq!(
        assemble_body(WriteMode::Patch, Some("one two three"), &given),
        Ok("one $& 2 three".into())
    );
    let delete = WriteInput {
        find: Some(" two"),
        replace_with: Some(""),
        ..input()
    };
    assert_eq!(
        assemble_body(WriteMode::Patch, Some("one two three"), &delete),
        Ok("one three".into())
    );
    // Occurrences are counted without overlap, as `split` counts them.
    let given = WriteInput {
        find: Some("aa"),
        replace_with: Some("b"),
        ..input()
    };
    assert_eq!(
        assemble_body(WriteMode::Patch, Some("aaa"), &given),
        Ok("ba".into())
    );
}

#[test]
fn confirmation_only_for_overwrites() {
    assert!(needs_confirmation(WriteMode::Replace, true));
    assert!(needs_confirmation(WriteMode::Patch, true));
    assert!(!needs_confirmation(WriteMode::Append, true));
    assert!(!needs_confirmation(WriteMode::Meta, true));
    for mode in [
        WriteMode::Replace,
        WriteMode::Append,
        WriteMode::Patch,
        WriteMode::Meta,
    ] {
        assert!(!needs_confirmation(mode, false));
    }
}

#[test]
fn mode_wire_names() {
    assert_eq!(serde_json::to_value(WriteMode::Append).unwrap(), "append");
    assert_eq!(
        serde_json::from_str::<WriteMode>("\"meta\"").unwrap(),
        WriteMode::Meta
    );
    assert_eq!(WriteMode::default(), WriteMode::Replace);
}

proptest! {
    #[test]
    fn meta_never_changes_the_body(prior in ".*", title in proptest::option::of(".*"), status in proptest::option::of("[a-z]+")) {
        prop_assume!(title.is_some() || status.is_some());
        let given = WriteInput { title: title.as_deref(), status: status.as_deref(), ..input() };
        prop_assert_eq!(assemble_body(WriteMode::Meta, Some(&prior), &given), Ok(prior.clone()));
    }

    #[test]
    fn append_starts_with_the_trimmed_prior(prior in "(.|\n|\r| )*", addition in "(.|\n| )*") {
        let got = assemble_body(WriteMode::Append, Some(&prior), &WriteInput { body: Some(&addition), ..input() }).unwrap();
        let kept = prior.trim_end_matches(is_js_space);
        prop_assert!(got.starts_with(kept));
        prop_assert!(got[kept.len()..].starts_with("\n\n"));
        prop_assert!(addition.ends_with(&got[kept.len() + 2..]));
    }

    #[test]
    fn patch_with_a_unique_anchor_changes_exactly_that_span(
        before in "[a-z ]{0,20}", after in "[a-z ]{0,20}", replacement in ".{0,20}"
    ) {
        let anchor = "<<ANCHOR>>";
        let prior = format!("{before}{anchor}{after}");
        let given = WriteInput { find: Some(anchor), replace_with: Some(&replacement), ..input() };
        let got = assemble_body(WriteMode::Patch, Some(&prior), &given).unwrap();
        prop_assert_eq!(got, format!("{before}{replacement}{after}"));
    }
}
