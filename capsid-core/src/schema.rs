//! JSON Schemas of the values the Worker's wire spells its own way, for answer types whose
//! serialization is custom (`serialize_with`), so their output schema says what is sent.

/// A flag sent as the Worker's SQL integer: `0` or `1`.
pub(crate) fn zero_or_one(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "integer", "enum": [0, 1] })
}
