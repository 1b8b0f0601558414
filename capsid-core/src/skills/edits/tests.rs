//! Edit tests: the bound, the refusals in order, application, and strict acceptance.

use super::*;
use proptest::prelude::*;

fn add(line: usize, text: &str) -> EditOp {
    EditOp::Add {
        line,
        text: text.into(),
    }
}

fn replace(line: usize, text: &str) -> EditOp {
    EditOp::Replace {
        line,
        text: text.into(),
    }
}

fn body(lines: usize) -> String {
    (1..=lines)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_bound_is_a_fifth_of_the_lines_floored_and_at_least_one() {
    let table = [
        (1, 1),
        (4, 1),
        (5, 1),
        (9, 1),
        (10, 2),
        (14, 2),
        (15, 3),
        (100, 20),
    ];
    for (lines, allowed) in table {
        assert_eq!(allowed_lines(lines), allowed, "{lines}");
        assert_eq!(
            allowed_lines(lines),
            ((lines as f64 * MAX_EDIT_FRACTION).floor() as usize).max(1)
        );
    }
}

#[test]
fn refusals_in_order() {
    let ten = body(10);
    let table: Vec<(Vec<EditOp>, EditError)> = vec![
        (vec![], EditError::NoOps),
        (
            vec![EditOp::Delete { line: 0 }, add(11, "x"), replace(3, "y")],
            EditError::OutOfRange {
                lines: vec![0, 11],
                line_count: 10,
            },
        ),
        (
            vec![
                EditOp::Delete { line: 1 },
                EditOp::Delete { line: 2 },
                add(3, "z"),
            ],
            EditError::OverBound {
                touched: 3,
                allowed: 2,
                line_count: 10,
            },
        ),
        (
            vec![replace(4, "a\nb")],
            EditError::MultilineText { line: 4 },
        ),
        (
            vec![replace(4, "a"), EditOp::Delete { line: 4 }],
            EditError::ConflictingOps { line: 4 },
        ),
    ];
    for (ops, want) in table {
        assert_eq!(check_edit_bound(&ten, &ops), Err(want.clone()), "{ops:?}");
        assert_eq!(apply_edit(&ten, &ops), Err(want));
    }
    let wording = check_edit_bound(&ten, &[add(12, "x")])
        .unwrap_err()
        .to_string();
    assert!(
        wording.contains("outside the 10-line body: 12"),
        "{wording}"
    );
}

#[test]
fn several_operations_on_one_line_count_once() {
    let ops = [
        replace(2, "two"),
        add(2, "two and a half"),
        add(2, "two and three quarters"),
    ];
    assert_eq!(
        check_edit_bound("a\nb\nc", &ops),
        Ok(EditBound {
            touched: 1,
            allowed: 1
        })
    );
    assert_eq!(
        apply_edit("a\nb\nc", &ops),
        Ok("a\ntwo\ntwo and a half\ntwo and three quarters\nc".into())
    );
}

#[test]
fn application_refers_to_the_original_numbering() {
    let ten = body(10);
    let edited =
        apply_edit(&ten, &[EditOp::Delete { line: 1 }, add(10, "line 11")]).unwrap_or_default();
    assert_eq!(
        edited,
        (2..=11)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(apply_edit("", &[replace(1, "first")]), Ok("first".into()));
    assert_eq!(
        apply_edit("only", &[EditOp::Delete { line: 1 }, add(1, "new")]),
        Ok("new".into())
    );
}

#[test]
fn ops_read_the_wire_shape() {
    let ops: Vec<EditOp> = serde_json::from_str(
        r#"[{"op":"add","line":1,"text":"x"},{"op":"delete","line":2},{"op":"replace","line":3,"text":"y"}]"#,
    )
    .unwrap_or_default();
    assert_eq!(
        ops,
        vec![add(1, "x"), EditOp::Delete { line: 2 }, replace(3, "y")]
    );
}

#[test]
fn acceptance_is_strict() {
    assert!(accept_edit(0.1, 0.2));
    assert!(!accept_edit(0.2, 0.2), "a tie is a rejection");
    assert!(!accept_edit(0.2, 0.1));
    assert!(!accept_edit(0.1, f64::NAN));
}

proptest! {
    #[test]
    fn replacing_within_bound_changes_exactly_those_lines(lines in 1usize..40, picks in prop::collection::btree_set(1usize..40, 1..9)) {
        let original = body(lines);
        let ops: Vec<EditOp> = picks.iter().map(|l| replace(*l, &format!("edited {l}"))).collect();
        match apply_edit(&original, &ops) {
            Ok(edited) => {
                prop_assert!(picks.len() <= allowed_lines(lines) && picks.iter().all(|l| *l <= lines));
                for (i, (before, after)) in original.split('\n').zip(edited.split('\n')).enumerate() {
                    prop_assert_eq!(before != after, picks.contains(&(i + 1)));
                }
                prop_assert_eq!(edited.split('\n').count(), lines);
            }
            Err(EditError::OutOfRange { .. }) => prop_assert!(picks.iter().any(|l| *l > lines)),
            Err(EditError::OverBound { touched, allowed, .. }) => prop_assert!(touched > allowed),
            Err(other) => prop_assert!(false, "unexpected {other}"),
        }
    }
}
