//! The input schemas of `jobs`'s free-form arguments (`required_flags`, `min_record`,
//! `evidence`): what [`super::requirements::JobRequirements::from_input`] and
//! [`super::evidence::Evidence::parse`] read, so that clients checking schemas (the MCP
//! Inspector's `--strict`) see real types rather than a schema that accepts anything. The
//! arguments stay raw JSON in the handler, so a wrong value still gets those parsers' own
//! messages.

use schemars::{Schema, SchemaGenerator, json_schema};

use super::EVIDENCE_PRS_MAX;
use crate::scope::Flag;

/// `required_flags`: flag names, each at most once.
pub fn required_flags(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = Flag::ALL.iter().map(|f| f.name()).collect();
    json_schema!({
        "type": "array",
        "items": {"type": "string", "enum": names},
        "uniqueItems": true,
        "maxItems": Flag::ALL.len(),
    })
}

/// `paths`: glob patterns relative to the repository root.
pub fn paths(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {"type": "string", "minLength": 1, "maxLength": crate::jobs::paths::MAX_PATTERN_LEN},
        "minItems": 1,
        "maxItems": crate::jobs::paths::MAX_PATHS,
    })
}

/// `min_record`: `{prs_merged: n}`.
pub fn min_record(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "properties": {
            "prs_merged": {
                "type": "integer",
                "minimum": 0,
                "description": "Verified merged pull requests the claimer's record must show.",
            },
        },
    })
}

/// `evidence`: pull-request URLs and counts (JSON text of the same object is also read, for
/// clients that flatten it).
pub fn evidence(_: &mut SchemaGenerator) -> Schema {
    let count =
        |what: &str| serde_json::json!({"type": "integer", "minimum": 0, "description": what});
    json_schema!({
        "type": "object",
        "properties": {
            "prs": {
                "type": "array",
                "items": {"type": "string", "description": "A pull request's https URL."},
                "maxItems": EVIDENCE_PRS_MAX,
            },
            "commits": count("Commits made."),
            "files_changed": count("Files changed."),
            "tests_added": count("Tests added."),
        },
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::evidence::Evidence;
    use super::super::requirements::JobRequirements;
    use super::*;

    fn schema(f: fn(&mut SchemaGenerator) -> Schema) -> Value {
        f(&mut SchemaGenerator::default()).to_value()
    }

    #[test]
    fn each_schema_has_a_type_and_names_what_the_parsers_read() {
        let flags = schema(required_flags);
        assert_eq!(flags["type"], "array");
        let names = flags["items"]["enum"].as_array().expect("flag names");
        assert_eq!(names.len(), Flag::ALL.len());
        for name in names {
            let name = name.as_str().expect("a name");
            assert!(
                JobRequirements::from_input(Some(&json!([name])), None).is_ok(),
                "{name} is a flag the parser takes"
            );
        }
        let record = schema(min_record);
        assert_eq!(record["type"], "object");
        assert_eq!(record["properties"]["prs_merged"]["type"], "integer");
        let parsed = JobRequirements::from_input(None, Some(&json!({"prs_merged": 2})))
            .expect("the schema's shape parses");
        assert_eq!(parsed.min_prs_merged, Some(2));
        let evidence = schema(evidence);
        assert_eq!(evidence["type"], "object");
        let fields: Vec<&str> = evidence["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fields, ["prs", "commits", "files_changed", "tests_added"]);
        let sample = json!({"prs": ["https://github.com/o/r/pull/1"], "commits": 1, "files_changed": 2, "tests_added": 3});
        let read = Evidence::parse(&sample).expect("parses").expect("some");
        assert_eq!(
            (
                read.prs.len(),
                read.commits,
                read.files_changed,
                read.tests_added
            ),
            (1, Some(1), Some(2), Some(3))
        );
    }

    #[test]
    fn the_jobs_tool_advertises_them_as_optional_typed_arguments() {
        let schema = Value::Object(
            (*crate::service::registry::lookup("jobs")
                .expect("jobs is registered")
                .input_schema())
            .clone(),
        );
        for field in ["required_flags", "min_record", "evidence"] {
            let property = &schema["properties"][field];
            assert!(property["type"].is_string(), "{field}: {property}");
            assert!(
                property["description"].is_string(),
                "{field} keeps its description: {property}"
            );
        }
        assert_eq!(schema["required"], json!(["action"]), "{schema}");
    }
}
