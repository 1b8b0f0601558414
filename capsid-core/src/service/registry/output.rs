//! Output schemas: the MCP `outputSchema` of each typed tool, built once from its
//! [`Tool::Answer`](super::Tool::Answer) type with schemars and rewritten into the portable
//! spelling strict clients ask for, and the `structuredContent` an answer is sent as.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use super::REGISTRY;
use crate::tools::RefusalShape;

/// The JSON Schema of answer type `T` as it serializes: draft 2020-12 like the input schemas,
/// but with its nulls kept (an answer's absent value is `null` on the wire).
pub(super) fn output_schema_of<T: schemars::JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|s| {
            s.meta_schema = None;
        });
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(map) = &mut value {
        map.remove("title");
    }
    portable(&mut value);
    crate::service::args::standard_formats(&mut value);
    value
}

/// The keywords that describe a value without constraining it: they stay beside the `anyOf`
/// that [`portable`] makes of a `type` list, where every other keyword goes into each branch.
const ANNOTATIONS: [&str; 8] = [
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// Rewrites `schema` into the spelling strict clients ask for (the Inspector's `--strict`,
/// providers that map schemas onto a one-type dialect): a `type` list such as schemars'
/// `["string", "null"]` becomes `anyOf` branches of one type each. Keywords that constrain
/// a value go into each branch but the `null` one (JSON Schema applies a keyword only to
/// the types it is about, so the rewrite admits exactly the same values).
fn portable(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.values_mut().for_each(portable);
            if !map.get("type").is_some_and(Value::is_array) {
                return;
            }
            let Some(Value::Array(types)) = map.remove("type") else {
                return;
            };
            let (annotations, constraints): (Map<String, Value>, Map<String, Value>) =
                std::mem::take(map)
                    .into_iter()
                    .partition(|(k, _)| ANNOTATIONS.contains(&k.as_str()));
            let branches = types
                .into_iter()
                .map(|t| {
                    let mut branch = Map::new();
                    if t != "null" {
                        branch.extend(constraints.clone());
                    }
                    branch.insert("type".into(), t);
                    Value::Object(branch)
                })
                .collect();
            *map = annotations;
            map.insert("anyOf".into(), Value::Array(branches));
        }
        Value::Array(items) => items.iter_mut().for_each(portable),
        _ => {}
    }
}

/// A refusal answered as a result (`RefusalShape::OkFalse`): `{ok:false, action, refusal}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct RefusedAnswer {
    /// Always false.
    pub ok: bool,
    /// The action refused.
    pub action: String,
    /// Why.
    pub refusal: String,
}

/// A tool's output schema as MCP lists it, which must be an object schema (before protocol
/// 2026-07-28, and rmcp drops any other for such peers): an answer that is not always a JSON
/// object is sent as `{"result": answer}` in `structuredContent` (the text item stays the
/// bare answer).
#[derive(Clone, Debug)]
pub struct OutputSchema {
    /// The schema `structuredContent` validates against.
    pub schema: Arc<Map<String, Value>>,
    /// Whether the answer is wrapped as `{"result": answer}`.
    pub wrapped: bool,
}

impl OutputSchema {
    /// The `structuredContent` of `answer`.
    pub fn structured(&self, answer: &Value) -> Value {
        self.into_structured(answer.clone())
    }

    /// The `structuredContent` of `answer`, taking it (no copy of a large answer when the
    /// text item was already written from it).
    pub fn into_structured(&self, answer: Value) -> Value {
        if self.wrapped {
            serde_json::json!({ "result": answer })
        } else {
            answer
        }
    }

    /// The output schema of a tool answering `answer` (its JSON Schema), which also answers
    /// refusals as [`RefusedAnswer`] when `refusals` says so.
    fn build(answer: Value, refusals: RefusalShape) -> OutputSchema {
        let Value::Object(mut answer) = answer else {
            return OutputSchema::wrap(Map::new(), Map::new());
        };
        let mut defs = match answer.remove("$defs") {
            Some(Value::Object(defs)) => defs,
            _ => Map::new(),
        };
        if refusals == RefusalShape::OkFalse
            && let Value::Object(mut refused) = output_schema_of::<RefusedAnswer>()
        {
            if let Some(Value::Object(more)) = refused.remove("$defs") {
                defs.extend(more);
            }
            let mut either = Map::new();
            either.insert(
                "anyOf".into(),
                Value::Array(vec![Value::Object(answer), Value::Object(refused)]),
            );
            answer = either;
        }
        if is_object_schema(&answer, &defs) {
            answer.insert("type".into(), Value::String("object".into()));
            if !defs.is_empty() {
                answer.insert("$defs".into(), Value::Object(defs));
            }
            return OutputSchema {
                schema: Arc::new(answer),
                wrapped: false,
            };
        }
        OutputSchema::wrap(answer, defs)
    }

    fn wrap(answer: Map<String, Value>, defs: Map<String, Value>) -> OutputSchema {
        let mut schema = Map::new();
        schema.insert("type".into(), Value::String("object".into()));
        schema.insert(
            "properties".into(),
            serde_json::json!({ "result": Value::Object(answer) }),
        );
        schema.insert("required".into(), serde_json::json!(["result"]));
        if !defs.is_empty() {
            schema.insert("$defs".into(), Value::Object(defs));
        }
        OutputSchema {
            schema: Arc::new(schema),
            wrapped: true,
        }
    }
}

/// Whether every value `schema` admits is a JSON object (through `$ref`s into `defs` and
/// every branch of an `anyOf` or `oneOf`).
fn is_object_schema(schema: &Map<String, Value>, defs: &Map<String, Value>) -> bool {
    if schema.get("type").and_then(Value::as_str) == Some("object") {
        return true;
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        return defs
            .get(target)
            .and_then(Value::as_object)
            .is_some_and(|t| is_object_schema(t, defs));
    }
    ["anyOf", "oneOf"].iter().any(|key| {
        schema
            .get(*key)
            .and_then(Value::as_array)
            .is_some_and(|alts| {
                !alts.is_empty()
                    && alts
                        .iter()
                        .all(|a| a.as_object().is_some_and(|a| is_object_schema(a, defs)))
            })
    })
}

/// Every output schema, built once, in registry order.
pub(super) fn output_schemas() -> &'static [OutputSchema] {
    static OUTPUTS: OnceLock<Vec<OutputSchema>> = OnceLock::new();
    OUTPUTS.get_or_init(|| {
        REGISTRY
            .iter()
            .map(|e| OutputSchema::build((e.answer_schema)(), e.spec.refusals))
            .collect()
    })
}

/// The output schema of the tool named `name` (`None`: no such tool).
pub fn output_schema(name: &str) -> Option<&'static OutputSchema> {
    REGISTRY
        .iter()
        .position(|e| e.spec.name == name)
        .map(|i| &output_schemas()[i])
}

#[cfg(test)]
mod tests {
    use super::super::schemas;
    use super::*;

    #[test]
    fn every_tool_lists_an_object_schema() {
        assert_eq!(output_schemas().len(), REGISTRY.len());
        for (entry, output) in REGISTRY.iter().zip(output_schemas()) {
            let name = entry.spec.name;
            assert_eq!(
                output.schema.get("type"),
                Some(&Value::String("object".into())),
                "{name}: MCP asks an object schema"
            );
            assert!(!output.schema.contains_key("title"), "{name}");
        }
    }

    #[test]
    fn only_an_answer_that_is_not_always_an_object_is_wrapped() {
        let wrapped: Vec<&str> = REGISTRY
            .iter()
            .filter(|e| output_schema(e.spec.name).is_some_and(|o| o.wrapped))
            .map(|e| e.spec.name)
            .collect();
        assert_eq!(wrapped, ["namespaces"]);
        let output = output_schema("namespaces").expect("typed");
        let answer = serde_json::json!([{ "namespace": "alpha" }]);
        assert_eq!(
            output.structured(&answer),
            serde_json::json!({ "result": answer })
        );
        let read = output_schema("read").expect("typed");
        let answer = serde_json::json!({ "id": 1 });
        assert_eq!(read.structured(&answer), answer);
    }

    #[test]
    fn an_ok_false_tool_s_schema_admits_its_refusal() {
        for entry in REGISTRY
            .iter()
            .filter(|e| e.spec.refusals == RefusalShape::OkFalse)
        {
            let Some(output) = output_schema(entry.spec.name) else {
                continue;
            };
            let branches = output.schema["anyOf"].as_array().expect("anyOf");
            assert!(
                branches
                    .iter()
                    .any(|b| b["properties"]["refusal"].is_object()),
                "{}: {:?}",
                entry.spec.name,
                output.schema
            );
        }
    }

    /// The findings of the MCP Inspector's `--strict` schema check (its `schemaLint`): a
    /// `type` list, a bare boolean where a schema object is expected, a schema that
    /// constrains nothing.
    fn strict_findings(node: &Value, path: &str, keyword: Option<&str>, out: &mut Vec<String>) {
        const BOOLEAN_VALUED: [&str; 4] = [
            "additionalProperties",
            "unevaluatedProperties",
            "additionalItems",
            "unevaluatedItems",
        ];
        const CONSTRAINING: [&str; 42] = [
            "type",
            "enum",
            "const",
            "multipleOf",
            "maximum",
            "exclusiveMaximum",
            "minimum",
            "exclusiveMinimum",
            "maxLength",
            "minLength",
            "pattern",
            "format",
            "contentMediaType",
            "contentEncoding",
            "contentSchema",
            "maxItems",
            "minItems",
            "uniqueItems",
            "maxContains",
            "minContains",
            "maxProperties",
            "minProperties",
            "required",
            "dependentRequired",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "items",
            "prefixItems",
            "contains",
            "additionalItems",
            "unevaluatedItems",
            "properties",
            "patternProperties",
            "additionalProperties",
            "unevaluatedProperties",
            "propertyNames",
            "dependentSchemas",
            "dependencies",
            "$ref",
            "$dynamicRef",
        ];
        let map = match node {
            Value::Bool(_) if keyword.is_some_and(|k| BOOLEAN_VALUED.contains(&k)) => return,
            Value::Bool(b) => return out.push(format!("{path}: bare {b}")),
            Value::Object(map) => map,
            _ => return,
        };
        if map.get("type").is_some_and(Value::is_array) {
            out.push(format!("{path}: type list {}", map["type"]));
        }
        if keyword != Some("not") && !map.keys().any(|k| CONSTRAINING.contains(&k.as_str())) {
            out.push(format!("{path}: constrains nothing"));
        }
        for key in [
            "properties",
            "patternProperties",
            "dependentSchemas",
            "$defs",
        ] {
            for (name, sub) in map
                .get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                strict_findings(sub, &format!("{path}.{key}.{name}"), Some(key), out);
            }
        }
        for key in ["allOf", "anyOf", "oneOf", "prefixItems"] {
            for (i, sub) in map
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                strict_findings(sub, &format!("{path}.{key}[{i}]"), Some(key), out);
            }
        }
        for key in [
            "items",
            "contains",
            "not",
            "propertyNames",
            "if",
            "then",
            "else",
            "additionalProperties",
            "unevaluatedProperties",
            "additionalItems",
            "unevaluatedItems",
            "contentSchema",
        ] {
            if let Some(sub) = map.get(key) {
                strict_findings(sub, &format!("{path}.{key}"), Some(key), out);
            }
        }
    }

    #[test]
    fn every_schema_passes_the_inspector_s_strict_check() {
        let mut findings = Vec::new();
        for (entry, input) in REGISTRY.iter().zip(schemas()) {
            let name = entry.spec.name;
            let input = Value::Object((**input).clone());
            strict_findings(&input, &format!("{name}.inputSchema"), None, &mut findings);
            if let Some(output) = output_schema(name) {
                let output = Value::Object((*output.schema).clone());
                strict_findings(
                    &output,
                    &format!("{name}.outputSchema"),
                    None,
                    &mut findings,
                );
            }
        }
        assert!(findings.is_empty(), "{}", findings.join("\n"));
    }

    #[test]
    fn a_type_list_becomes_one_branch_per_type_with_its_constraints() {
        let mut schema = serde_json::json!({
            "description": "when", "type": ["string", "null"], "format": "date-time",
            "properties": { "type": { "type": ["integer", "null"], "minimum": 0 } },
        });
        let mut before = Vec::new();
        strict_findings(&schema, "$", None, &mut before);
        assert_eq!(before.len(), 2, "two type lists: {before:?}");
        strict_findings(
            &serde_json::json!({ "properties": { "x": {} } }),
            "$",
            None,
            &mut before,
        );
        assert_eq!(
            before.last().map(String::as_str),
            Some("$.properties.x: constrains nothing")
        );
        portable(&mut schema);
        assert_eq!(
            schema,
            serde_json::json!({
                "description": "when",
                "anyOf": [
                    { "type": "string", "format": "date-time", "properties": {
                        "type": { "anyOf": [{ "type": "integer", "minimum": 0 }, { "type": "null" }] },
                    } },
                    { "type": "null" },
                ],
            })
        );
        let mut strict = Vec::new();
        strict_findings(&schema, "$", None, &mut strict);
        assert!(strict.is_empty(), "{strict:?}");
    }

    #[test]
    fn a_refusal_answers_ok_action_refusal_in_that_order() {
        let refused = RefusedAnswer {
            ok: false,
            action: "mint".into(),
            refusal: "no".into(),
        };
        assert_eq!(
            serde_json::to_string(&refused).expect("renders"),
            r#"{"ok":false,"action":"mint","refusal":"no"}"#
        );
    }

    #[test]
    fn an_answer_of_objects_only_through_refs_is_not_wrapped() {
        let schema = serde_json::json!({
            "anyOf": [{ "$ref": "#/$defs/A" }, { "type": "object" }],
            "$defs": { "A": { "type": "object", "properties": {} } },
        });
        let built = OutputSchema::build(schema, RefusalShape::ToolError);
        assert!(!built.wrapped);
        assert_eq!(built.schema["type"], "object");
        assert!(built.schema["$defs"]["A"].is_object());
        let list = serde_json::json!({ "type": "array", "items": { "$ref": "#/$defs/A" },
                                       "$defs": { "A": { "type": "object" } } });
        let built = OutputSchema::build(list, RefusalShape::ToolError);
        assert!(built.wrapped);
        assert_eq!(built.schema["required"], serde_json::json!(["result"]));
        assert!(
            built.schema["$defs"]["A"].is_object(),
            "defs stay at the root"
        );
    }
}
