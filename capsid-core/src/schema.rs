//! JSON Schemas of the values the Worker's wire spells its own way, for answer types whose
//! serialization is custom (`serialize_with`), so their output schema says what is sent.

/// A flag sent as the Worker's SQL integer: `0` or `1`.
pub(crate) fn zero_or_one(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "integer", "enum": [0, 1] })
}

/// Counts by name, sent as an object (`{"core": 1, "episodic": 2}`) in the order first seen.
pub(crate) fn counts_by_name(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": { "type": "integer", "minimum": 0 },
    })
}

/// An agent's kind, sent as its wire name (`AgentKind`'s `Serialize` is hand-written).
pub(crate) fn agent_kind(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = crate::caller::AgentKind::ALL
        .into_iter()
        .map(crate::caller::AgentKind::name)
        .collect();
    schemars::json_schema!({ "type": "string", "enum": names })
}
