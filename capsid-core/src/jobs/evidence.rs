//! What a driver says a job produced (reference 2.4, 6.7): pull-request URLs and counts.
//!
//! Evidence arrives as an object or as a JSON string holding one (clients with a stale
//! tool schema flatten it). A string that is not JSON is refused rather than ignored, since
//! silently discarding evidence is how an outcome ends up saying nothing happened. A count
//! that is not a non-negative integer is dropped, never zeroed: 0 means "counted, none".

use serde_json::{Map, Value};

use super::EVIDENCE_PRS_MAX;

/// The driver's report on a finished job. Every field is optional; absent stays NULL.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    /// Pull-request URLs the job produced, in the order given (at most ten).
    pub prs: Vec<String>,
    /// Commits, as the driver counted them.
    pub commits: Option<u64>,
    /// Files changed, as the driver counted them.
    pub files_changed: Option<u64>,
    /// Tests added, as the driver counted them (never verified).
    pub tests_added: Option<u64>,
    /// What the agent's session cost in US dollars, as the driver measured it (Claude Code's
    /// `total_cost_usd`); the namespace's month spend is the sum of these.
    pub cost_usd: Option<f64>,
    /// The session's turns.
    pub turns: Option<u64>,
    /// The session's wall time in milliseconds.
    pub duration_ms: Option<u64>,
}

/// A cost in US dollars: absent or null is `None`; anything but a finite number of zero or
/// more is refused, since a budget sums these (a negative cost would buy a namespace room).
fn dollars(value: Option<&Value>) -> Result<Option<f64>, EvidenceError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64().filter(|x| x.is_finite() && *x >= 0.0) {
            Some(x) => Ok(Some(x)),
            None => Err(EvidenceError::BadCost {
                found: v.to_string().chars().take(40).collect(),
            }),
        },
    }
}

/// Why `evidence` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// A string that does not parse as JSON.
    #[error("evidence was sent as a string that is not JSON: {preview}")]
    NotJson {
        /// The first 120 characters of the string.
        preview: String,
    },
    /// A JSON string whose value is not an object.
    #[error("evidence parsed to something that is not an object, so there are no fields to read")]
    NotObject,
    /// Neither an object nor a string.
    #[error("evidence must be an object or a JSON string holding one, not {found}")]
    WrongType {
        /// The JSON type received.
        found: &'static str,
    },
    /// A `cost_usd` that is not a number of zero or more.
    #[error("evidence.cost_usd must be a number of US dollars, zero or more, not {found}")]
    BadCost {
        /// What was sent.
        found: String,
    },
    /// More pull requests than one job may name.
    #[error("evidence.prs names {count} pull requests; at most {EVIDENCE_PRS_MAX} per job")]
    TooManyPrs {
        /// How many were named.
        count: usize,
    },
}

/// A whole count of zero or more from JSON, or `None`. Integral floats (`5.0`) count, as
/// JavaScript's `Number.isInteger` accepts them; values beyond `i64::MAX` are dropped
/// because no INTEGER column can hold them.
pub(crate) fn whole_count(value: &Value) -> Option<u64> {
    const LIMIT: u64 = i64::MAX as u64;
    if let Some(n) = value.as_u64() {
        return (n <= LIMIT).then_some(n);
    }
    let f = value.as_f64()?;
    // 2^63 is the first float past i64::MAX; within range the cast is exact.
    let in_range = f.is_finite() && f.fract() == 0.0 && (0.0..2f64.powi(63)).contains(&f);
    in_range.then_some(f as u64)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Evidence {
    /// Reads the `evidence` argument. `null`, absent and a blank string mean no evidence.
    pub fn parse(input: &Value) -> Result<Option<Evidence>, EvidenceError> {
        match input {
            Value::Null => Ok(None),
            Value::Object(fields) => Evidence::from_fields(fields).map(Some),
            Value::String(text) => {
                let text = text.trim();
                if text.is_empty() {
                    return Ok(None);
                }
                let parsed: Value =
                    serde_json::from_str(text).map_err(|_| EvidenceError::NotJson {
                        preview: text.chars().take(120).collect(),
                    })?;
                match parsed {
                    Value::Object(fields) => Evidence::from_fields(&fields).map(Some),
                    _ => Err(EvidenceError::NotObject),
                }
            }
            other => Err(EvidenceError::WrongType {
                found: type_name(other),
            }),
        }
    }

    fn from_fields(fields: &Map<String, Value>) -> Result<Evidence, EvidenceError> {
        // As the Worker reads a string: non-string entries of `prs` are not URLs and are left out.
        let prs: Vec<String> = match fields.get("prs") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|p| p.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        if prs.len() > EVIDENCE_PRS_MAX {
            return Err(EvidenceError::TooManyPrs { count: prs.len() });
        }
        let count = |key: &str| fields.get(key).and_then(whole_count);
        Ok(Evidence {
            prs,
            commits: count("commits"),
            files_changed: count("files_changed"),
            tests_added: count("tests_added"),
            cost_usd: dollars(fields.get("cost_usd"))?,
            turns: count("turns"),
            duration_ms: count("duration_ms"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const PR: &str = "https://github.com/acme/api/pull/1";

    #[test]
    fn objects_and_json_strings_read_the_same() {
        let object = json!({"prs": [PR], "commits": 3, "files_changed": 0, "tests_added": 2});
        let want = Evidence {
            prs: vec![PR.into()],
            commits: Some(3),
            files_changed: Some(0),
            tests_added: Some(2),
            ..Evidence::default()
        };
        assert_eq!(Evidence::parse(&object), Ok(Some(want.clone())));
        assert_eq!(
            Evidence::parse(&Value::String(object.to_string())),
            Ok(Some(want))
        );
    }

    #[test]
    fn a_cost_is_dollars_of_zero_or_more_or_refused() {
        let input = json!({"cost_usd": 1.5, "turns": 7, "duration_ms": 64000});
        let got = Evidence::parse(&input).unwrap().unwrap();
        assert_eq!(
            (got.cost_usd, got.turns, got.duration_ms),
            (Some(1.5), Some(7), Some(64000))
        );
        let none = Evidence::parse(&json!({"cost_usd": null}))
            .unwrap()
            .unwrap();
        assert_eq!(none.cost_usd, None);
        for bad in [json!(-0.01), json!("1.5"), json!(true), json!([1])] {
            let err = Evidence::parse(&json!({ "cost_usd": bad })).unwrap_err();
            assert!(matches!(err, EvidenceError::BadCost { .. }), "{bad}: {err}");
            assert!(err.to_string().contains("cost_usd"), "{err}");
        }
    }

    #[test]
    fn nothing_given_is_no_evidence() {
        assert_eq!(Evidence::parse(&Value::Null), Ok(None));
        assert_eq!(Evidence::parse(&json!("  ")), Ok(None));
        assert_eq!(Evidence::parse(&json!({})), Ok(Some(Evidence::default())));
    }

    #[test]
    fn bad_counts_are_dropped_not_zeroed() {
        let input = json!({"commits": -1, "files_changed": 2.5, "tests_added": "4", "prs": "x"});
        assert_eq!(Evidence::parse(&input), Ok(Some(Evidence::default())));
        let input = json!({"commits": 7.0, "files_changed": true, "tests_added": null});
        let got = Evidence::parse(&input).unwrap().unwrap();
        assert_eq!(
            (got.commits, got.files_changed, got.tests_added),
            (Some(7), None, None)
        );
        let huge = json!({"commits": u64::MAX, "files_changed": 1e300});
        let got = Evidence::parse(&huge).unwrap().unwrap();
        assert_eq!((got.commits, got.files_changed), (None, None));
    }

    #[test]
    fn refusals() {
        let err = Evidence::parse(&json!("commits: 3")).unwrap_err();
        assert_eq!(
            err,
            EvidenceError::NotJson {
                preview: "commits: 3".into()
            }
        );
        assert!(err.to_string().contains("not JSON: commits: 3"));
        assert_eq!(
            Evidence::parse(&json!("[1,2]")),
            Err(EvidenceError::NotObject)
        );
        assert_eq!(
            Evidence::parse(&json!("null")),
            Err(EvidenceError::NotObject)
        );
        assert_eq!(
            Evidence::parse(&json!(3)),
            Err(EvidenceError::WrongType { found: "a number" })
        );
        assert_eq!(
            Evidence::parse(&json!([PR])),
            Err(EvidenceError::WrongType { found: "an array" })
        );
        let eleven: Vec<String> = (0..11)
            .map(|i| format!("https://github.com/a/b/pull/{i}"))
            .collect();
        let err = Evidence::parse(&json!({"prs": eleven})).unwrap_err();
        assert_eq!(err, EvidenceError::TooManyPrs { count: 11 });
        assert!(err.to_string().contains("at most 10"));
        let ten: Vec<String> = eleven[..10].to_vec();
        assert_eq!(
            Evidence::parse(&json!({"prs": ten}))
                .unwrap()
                .unwrap()
                .prs
                .len(),
            10
        );
    }

    #[test]
    fn long_garbage_is_previewed() {
        let text = "x".repeat(500);
        let Err(EvidenceError::NotJson { preview }) = Evidence::parse(&Value::String(text)) else {
            panic!()
        };
        assert_eq!(preview.len(), 120);
    }

    proptest! {
        #[test]
        fn counts_are_kept_exactly_when_whole_and_non_negative(n in any::<i64>(), f in any::<f64>()) {
            let got = Evidence::parse(&json!({"commits": n, "files_changed": f})).unwrap().unwrap();
            prop_assert_eq!(got.commits, u64::try_from(n).ok());
            let whole = f.is_finite() && f.fract() == 0.0 && (0.0..2f64.powi(63)).contains(&f);
            prop_assert_eq!(got.files_changed.is_some(), whole);
        }

        #[test]
        fn string_form_equals_object_form(prs in proptest::collection::vec("[a-z:/.0-9]{0,30}", 0..=10), c in any::<Option<u32>>()) {
            let object = json!({"prs": prs, "commits": c});
            prop_assert_eq!(Evidence::parse(&Value::String(object.to_string())), Evidence::parse(&object));
        }
    }
}
