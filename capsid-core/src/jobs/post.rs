//! Input rules of the `jobs` tool's text fields (reference 6.4): title and body at post,
//! required texts per action, and the swallowed-parameter-tag check.
//!
//! A caller that closes a parameter tag inside a value sends the later arguments as
//! literal text in that value. They cannot be recovered from the text, so the call is
//! refused before anything is written. Only the exact `</name>` spelling matches, so a
//! body that merely discusses the rule is not refused.

/// The `jobs` tool's parameter names whose closing tag betrays a swallowed argument
/// (the reference's list plus the successor's `replaced_by`).
pub const JOB_PARAM_NAMES: [&str; 11] = [
    "action",
    "namespace",
    "title",
    "body",
    "id",
    "result_summary",
    "result_ref",
    "reason",
    "replaced_by",
    "command",
    "evidence",
];

/// Why a job's text input was refused. Each names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JobInputError {
    /// The title is missing or blank after trimming.
    #[error(
        "title: a job needs a title (non-blank after trimming); it is how the queue refuses a duplicate while one is open"
    )]
    TitleRequired,
    /// The body is blank.
    #[error("body: a job needs a non-blank body; the body is the prompt the driver executes")]
    BodyRequired,
    /// A required text is missing or blank.
    #[error("{field}: {action} needs a non-blank {field}")]
    Required {
        /// The action called.
        action: &'static str,
        /// The missing field.
        field: &'static str,
    },
    /// A value holds the closing tag of a parameter.
    #[error(
        "{field} contains the literal text '</{tag}>'{own}. A parameter tag was closed inside a value, so '{tag}' and everything after it were swallowed into {field} rather than arriving as their own arguments. Nothing was written; re-send the call with each parameter as a separate argument.",
        own = if field == tag { " (its own closing tag)" } else { "" }
    )]
    SwallowedTag {
        /// The field holding the text.
        field: &'static str,
        /// The first parameter name whose closing tag appears.
        tag: &'static str,
    },
}

/// The parameter whose exact closing tag appears first in `value`, if any.
pub fn swallowed_param_tag(value: &str) -> Option<&'static str> {
    value.match_indices("</").find_map(|(at, _)| {
        let rest = &value[at + 2..];
        JOB_PARAM_NAMES.into_iter().find(|name| {
            rest.strip_prefix(name)
                .is_some_and(|after| after.starts_with('>'))
        })
    })
}

/// Refuses `value` when it holds a swallowed parameter tag; `field` names it in the refusal.
pub fn refuse_swallowed_tag(field: &'static str, value: &str) -> Result<(), JobInputError> {
    match swallowed_param_tag(value) {
        Some(tag) => Err(JobInputError::SwallowedTag { field, tag }),
        None => Ok(()),
    }
}

/// The checks `post` runs on its text, in the Worker's order (title, blank body, swallowed
/// tag in the body). Returns the trimmed title, which is what the job stores.
pub fn check_post_text<'a>(title: &'a str, body: &str) -> Result<&'a str, JobInputError> {
    let title = title.trim();
    if title.is_empty() {
        return Err(JobInputError::TitleRequired);
    }
    if body.trim().is_empty() {
        return Err(JobInputError::BodyRequired);
    }
    refuse_swallowed_tag("body", body)?;
    Ok(title)
}

/// A text an action requires (`complete`'s `result_summary`, `fail`/`block`/`resume`'s
/// `reason`): present and non-blank. Returns it as given.
pub fn require_text<'a>(
    action: &'static str,
    field: &'static str,
    value: Option<&'a str>,
) -> Result<&'a str, JobInputError> {
    value
        .filter(|v| !v.trim().is_empty())
        .ok_or(JobInputError::Required { action, field })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn exact_closing_tags_are_found() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "done</result_summary>\n<result_ref>https://x",
                Some("result_summary"),
            ),
            ("a</body> then </title>", Some("body")),
            ("x </evidence>", Some("evidence")),
            ("x </replaced_by>", Some("replaced_by")),
            ("</id>", Some("id")),
            ("</ body>", None),
            ("</BODY>", None),
            ("</body >", None),
            ("</bodies>", None),
            ("</result>", None),
            ("<body>", None),
            ("</", None),
            (
                "explain the rule: a closing tag like < /body> is refused",
                None,
            ),
            ("<</body>>", Some("body")),
            ("</x></reason>", Some("reason")),
        ];
        for (value, want) in cases {
            assert_eq!(swallowed_param_tag(value), *want, "{value:?}");
        }
    }

    #[test]
    fn refusal_names_field_and_tag() {
        let err = refuse_swallowed_tag("result_summary", "ok</result_summary>").unwrap_err();
        assert_eq!(
            err,
            JobInputError::SwallowedTag {
                field: "result_summary",
                tag: "result_summary"
            }
        );
        let text = err.to_string();
        assert!(text.starts_with("result_summary contains the literal text '</result_summary>' (its own closing tag)."), "{text}");
        let other = refuse_swallowed_tag("reason", "x</command>")
            .unwrap_err()
            .to_string();
        assert!(
            other.contains("'command' and everything after it were swallowed into reason"),
            "{other}"
        );
        assert!(!other.contains("its own closing tag"));
    }

    #[test]
    fn post_text_checks_in_order() {
        assert_eq!(check_post_text("  Fix CI  ", "do it"), Ok("Fix CI"));
        assert_eq!(
            check_post_text("   ", "</body>"),
            Err(JobInputError::TitleRequired)
        );
        assert_eq!(
            check_post_text("t", " \n\t"),
            Err(JobInputError::BodyRequired)
        );
        assert_eq!(
            check_post_text("t", "prompt</body><priority>3"),
            Err(JobInputError::SwallowedTag {
                field: "body",
                tag: "body"
            })
        );
    }

    #[test]
    fn required_texts() {
        assert_eq!(
            require_text("fail", "reason", Some(" flaky ")),
            Ok(" flaky ")
        );
        let err = require_text("complete", "result_summary", Some("  ")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "result_summary: complete needs a non-blank result_summary"
        );
        assert!(require_text("block", "reason", None).is_err());
    }

    proptest! {
        #[test]
        fn a_value_with_an_exact_closing_tag_is_refused(
            before in any::<String>(),
            after in any::<String>(),
            name in proptest::sample::select(JOB_PARAM_NAMES.to_vec()),
        ) {
            let value = format!("{before}</{name}>{after}");
            prop_assert!(refuse_swallowed_tag("body", &value).is_err());
        }

        #[test]
        fn a_value_without_an_opening_slash_is_never_refused(value in any::<String>()) {
            prop_assume!(!value.contains("</"));
            prop_assert_eq!(refuse_swallowed_tag("body", &value), Ok(()));
        }
    }
}
