//! Tool arguments, parsed at the edge: bounded strings, validated paths and namespaces, and
//! the JSON Schema each tool advertises. A value of these types has passed the reference's
//! bounds (section 2.0), so handlers never re-check them.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::Error;
use crate::paths::{DocPath, Namespace, js_len};

/// A string of at most `N` UTF-16 code units (the Worker's `bounded(n)`).
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Bounded<const N: usize>(pub String);

impl<const N: usize> Bounded<N> {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<const N: usize> fmt::Debug for Bounded<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl<'de, const N: usize> Deserialize<'de> for Bounded<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let len = js_len(&s);
        if len > N {
            return Err(D::Error::custom(format!(
                "is {len} characters long; the limit is {N}"
            )));
        }
        // No store keeps U+0000 the same way (Postgres text cannot hold it), so no input may.
        if s.contains('\0') {
            return Err(D::Error::custom(
                "must not contain the NUL character (U+0000)",
            ));
        }
        Ok(Bounded(s))
    }
}

impl<const N: usize> JsonSchema for Bounded<N> {
    fn schema_name() -> Cow<'static, str> {
        format!("String{N}").into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "maxLength": N })
    }
}

macro_rules! validated_arg {
    ($(#[$doc:meta])* $name:ident, $inner:ty, $max:expr, $desc:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                <$inner>::parse(s).map($name).map_err(D::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "type": "string", "maxLength": $max, "description": $desc })
            }
        }

        impl $name {
            /// The validated text.
            pub fn as_str(&self) -> &str {
                self.0.as_str()
            }
        }
    };
}

validated_arg!(
    /// A namespace argument.
    NamespaceArg, Namespace, 64, "Namespace (project) name."
);
validated_arg!(
    /// A document path argument.
    DocPathArg, DocPath, 512,
    "Document path inside the namespace, e.g. core.md or notes/2026-11-30.md (no leading or trailing '/', no '..' or '//')."
);

/// Parses a tool's arguments into `T`, naming the offending field on failure. Missing
/// arguments (`null`) are an empty object, as MCP clients may omit them.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, Error> {
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args
    };
    if !args.is_object() {
        return Err(Error::Invalid(format!(
            "{tool}: arguments must be a JSON object"
        )));
    }
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." || path.is_empty() {
            Error::Invalid(format!("{tool}: {inner}"))
        } else {
            Error::Invalid(format!("{tool}: {path} {inner}"))
        }
    })
}

/// The JSON Schema of `T` as an MCP input schema: an object schema with optional fields
/// shown by absence from `required`, never as a `null` alternative (which several clients
/// reject), and no `$schema`/`title` noise.
pub fn input_schema<T: JsonSchema>() -> serde_json::Map<String, Value> {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    strip_nulls(&mut value);
    standard_formats(&mut value);
    if let Value::Object(map) = &mut value {
        map.remove("title");
        map.entry("type")
            .or_insert_with(|| Value::String("object".into()));
        map.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
        return map.clone();
    }
    serde_json::Map::new()
}

/// The `format` values JSON Schema (draft 2020-12) defines; a validator warns on any other
/// (`unknown format "uint" ignored in schema`, as the MCP Inspector printed on every call).
pub(crate) const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Drops every `format` keyword JSON Schema does not define (schemars' `uint`, `uint64`,
/// `int64`, `double`...: the integer bounds stay as `minimum`/`maximum`). A property that
/// happens to be named `format` is a schema (an object), never a keyword's text, and stays.
pub(crate) fn standard_formats(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
            {
                map.remove("format");
            }
            map.values_mut().for_each(standard_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(standard_formats),
        _ => {}
    }
}

fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(alts)) = map.get_mut(key) {
                    alts.retain(|a| a.get("type").and_then(Value::as_str) != Some("null"));
                    if alts.len() == 1 {
                        let only = alts.remove(0);
                        map.remove(key);
                        if let Value::Object(inner) = only {
                            for (k, val) in inner {
                                map.entry(k).or_insert(val);
                            }
                        }
                    }
                }
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            for child in map.values_mut() {
                strip_nulls(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// What the registrar check reads from a tool's parsed arguments.
pub trait ScopeArgs {
    /// The namespace the call names, if the tool takes one.
    fn namespace(&self) -> Option<&str> {
        None
    }
    /// The repo selector the call names, if any.
    fn repo(&self) -> Option<&str> {
        None
    }
    /// The action an action tool's call performs (`None`: its default action).
    fn action(&self) -> Option<&str> {
        None
    }
    /// The flags the call's arguments need (a repo file change's `repo_write_flags`, the
    /// improve-path opt-in), asked by the one check with everything else.
    fn flags(&self) -> Vec<crate::scope::Flag> {
        Vec::new()
    }
    /// Whether the call reads only what is shared with every namespace by design (the log's
    /// `global` feed), so omitting the namespace does not widen a narrowed caller.
    fn reads_only_shared(&self) -> bool {
        false
    }
    /// The repositories (`owner/name`) the call maps to a namespace (`register_namespace`),
    /// each asked of the repos axis by the one check as a selector is.
    fn new_mapping(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Implements [`ScopeArgs`] for argument structs with a `namespace` field (and optionally a
/// `repo` field).
#[macro_export]
macro_rules! scope_args {
    ($ty:ty) => {
        impl $crate::service::args::ScopeArgs for $ty {}
    };
    ($ty:ty, namespace) => {
        impl $crate::service::args::ScopeArgs for $ty {
            fn namespace(&self) -> Option<&str> {
                Some(self.namespace.as_str())
            }
        }
    };
    ($ty:ty, optional namespace) => {
        impl $crate::service::args::ScopeArgs for $ty {
            fn namespace(&self) -> Option<&str> {
                self.namespace.as_ref().map(|n| n.as_str())
            }
        }
    };
    ($ty:ty, namespace, improve_override) => {
        impl $crate::service::args::ScopeArgs for $ty {
            fn namespace(&self) -> Option<&str> {
                Some(self.namespace.as_str())
            }
            fn flags(&self) -> Vec<$crate::scope::Flag> {
                $crate::service::args::improve_override_flags(self.allow_improve_paths)
            }
        }
    };
    ($ty:ty, namespace, repo) => {
        impl $crate::service::args::ScopeArgs for $ty {
            fn namespace(&self) -> Option<&str> {
                Some(self.namespace.as_str())
            }
            fn repo(&self) -> Option<&str> {
                self.repo.as_ref().map(|r| r.as_str())
            }
        }
    };
}

/// `allow_improve_paths: true` on a document write additionally needs `can_touch_protected`.
pub fn improve_override_flags(allow_improve_paths: Option<bool>) -> Vec<crate::scope::Flag> {
    if allow_improve_paths == Some(true) {
        vec![crate::scope::Flag::CanTouchProtected]
    } else {
        Vec::new()
    }
}

/// A flat view of the arguments the registrar check reads: `namespace` and `repo` when they
/// are strings.
pub fn string_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)] // fields exist to be parsed and described, not read
    struct Sample {
        namespace: NamespaceArg,
        path: DocPathArg,
        title: Option<Bounded<8>>,
        #[serde(default)]
        confirm: Option<bool>,
    }

    #[test]
    fn parse_names_the_field_and_rule() {
        let ok: Sample = parse_args(
            "t",
            json!({"namespace": "a", "path": "x.md", "title": "short"}),
        )
        .unwrap();
        assert_eq!(ok.path.as_str(), "x.md");
        let err = parse_args::<Sample>(
            "t",
            json!({"namespace": "a", "path": "x.md", "title": "far too long"}),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "t: title is 12 characters long; the limit is 8"
        );
        let err = parse_args::<Sample>("t", json!({"namespace": "a", "path": "../x"})).unwrap_err();
        assert!(
            err.to_string().contains("path") && err.to_string().contains(".."),
            "{err}"
        );
        let err = parse_args::<Sample>("t", json!({"path": "x"})).unwrap_err();
        assert!(err.to_string().contains("namespace"), "{err}");
        let err = parse_args::<Sample>("t", json!({"namespace": 5, "path": "x"})).unwrap_err();
        assert!(
            err.to_string().starts_with("t: namespace invalid type"),
            "{err}"
        );
        assert!(parse_args::<Sample>("t", json!([1])).is_err());
        let err = parse_args::<Sample>(
            "t",
            json!({"namespace": "a", "path": "x.md", "title": "a\u{0}b"}),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("title must not contain the NUL"),
            "{err}"
        );
        assert!(
            parse_args::<Sample>("t", json!({"namespace": "a", "path": "x", "extra": 1})).is_ok(),
            "unknown keys are ignored"
        );
    }

    #[test]
    fn schema_has_bounds_and_no_null_alternatives() {
        let schema = Value::Object(input_schema::<Sample>());
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["title"]["maxLength"], 8);
        assert_eq!(schema["properties"]["title"]["type"], "string");
        assert_eq!(schema["properties"]["path"]["maxLength"], 512);
        assert_eq!(schema["properties"]["confirm"]["type"], "boolean");
        let required: Vec<_> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(required, vec!["namespace", "path"]);
        assert!(!schema.to_string().contains("null"), "{schema}");
    }
}
