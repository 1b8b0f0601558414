//! The fixture's tools: the table `tools/list` returns, and the bodies of every tool except
//! those that ask the client something (`client_requests.rs`, `input_required.rs`). Names,
//! schemas and outputs are those the conformance scenarios' descriptions prescribe.

use std::time::Duration;

use rmcp::model::{
    AudioContent, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
    ContentBlock, InputRequests, InputRequiredResult, JsonObject, LoggingLevel,
    LoggingMessageNotificationParam, ProgressNotificationParam, ResourceContents, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

use crate::server::Fixture;
use crate::{client_requests, input_required};

/// A 1x1 red PNG.
pub const PNG: &str = concat!(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ",
    "AAAABJRU5ErkJggg=="
);
/// A WAV header with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";

/// `(name, description, input schema)` of every tool but the input-required ones.
fn table() -> Vec<(&'static str, &'static str, Value)> {
    let none = || json!({"type": "object", "properties": {}});
    let string_arg = |name: &str, description: &str| {
        json!({
            "type": "object",
            "properties": {name: {"type": "string", "description": description}},
            "required": [name]
        })
    };
    vec![
        // The tools of the 2025-11-25 scenarios (most also run at 2026-07-28).
        ("test_simple_text", "Returns simple text content", none()),
        ("test_image_content", "Returns image content", none()),
        ("test_audio_content", "Returns audio content", none()),
        (
            "test_embedded_resource",
            "Returns an embedded resource",
            none(),
        ),
        (
            "test_multiple_content_types",
            "Returns text, image and resource content",
            none(),
        ),
        (
            "test_tool_with_logging",
            "Sends three log notifications while it runs",
            none(),
        ),
        ("test_error_handling", "Always returns a tool error", none()),
        (
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100",
            none(),
        ),
        (
            "test_sampling",
            "Asks the client's LLM to answer a prompt",
            string_arg("prompt", "The prompt to send"),
        ),
        (
            "test_elicitation",
            "Asks the user for a username and an email",
            string_arg("message", "The message to show"),
        ),
        (
            "test_elicitation_sep1034_defaults",
            "Elicitation with default values (SEP-1034)",
            none(),
        ),
        (
            "test_elicitation_sep1330_enums",
            "Elicitation with the five enum forms (SEP-1330)",
            none(),
        ),
        (
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json_schema_2020_12(),
        ),
        (
            "test_reconnection",
            "Runs long enough for the server to close and resume its stream",
            none(),
        ),
        // Diagnostics of the 2026-07-28 scenarios server-stateless and
        // http-custom-header-server-validation.
        (
            "test_custom_header",
            "Echoes a parameter mirrored into the Mcp-Param-Value header (SEP-2243)",
            json!({
                "type": "object",
                "properties": {"value": {"type": "string", "x-mcp-header": "Value"}},
                "required": ["value"]
            }),
        ),
        (
            "test_trigger_tool_change",
            "Sends toolsListChanged to open subscriptions",
            none(),
        ),
        (
            "test_trigger_prompt_change",
            "Sends promptsListChanged to open subscriptions",
            none(),
        ),
        (
            "test_missing_capability",
            "Requires the client's sampling capability",
            none(),
        ),
        (
            "test_streaming_elicitation",
            "Returns an input-required result with an elicitation",
            none(),
        ),
        (
            "test_logging_tool",
            "Logs only when the request asks for a log level",
            none(),
        ),
    ]
}

fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "address",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
        "if": {"required": ["address"]},
        "then": {"properties": {"address": {"required": ["street"]}}},
        "else": {"required": ["name"]},
        "additionalProperties": false
    })
}

/// A JSON object literal as an rmcp schema.
fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("a fixture schema must be a JSON object, not {other}"),
    }
}

/// Every tool `tools/list` returns.
pub fn all() -> Vec<Tool> {
    let plain = table()
        .into_iter()
        .map(|(name, description, schema)| (name, description, object(schema)));
    let mrtr = input_required::TOOLS.iter().map(|(name, description)| {
        (
            *name,
            *description,
            object(json!({"type": "object", "properties": {}})),
        )
    });
    plain
        .chain(mrtr)
        .map(|(name, description, schema)| Tool::new(name, description, schema))
        .collect()
}

fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::text(s)
}

fn embedded(uri: &str, mime: &str, body: &str) -> ContentBlock {
    ContentBlock::resource(ResourceContents::TextResourceContents {
        uri: uri.into(),
        mime_type: Some(mime.into()),
        text: body.into(),
        meta: None,
    })
}

/// Runs one tool (other than the input-required ones, which `server.rs` routes itself).
pub async fn call(
    fixture: &Fixture,
    request: CallToolRequestParams,
    cx: RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let args = request.arguments.unwrap_or_default();
    let arg = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_owned);
    let ok = |content: Vec<ContentBlock>| Ok(CallToolResult::success(content).into());
    match request.name.as_ref() {
        "test_simple_text" => ok(vec![text("This is a simple text response for testing.")]),
        "test_image_content" => ok(vec![ContentBlock::image(PNG, "image/png")]),
        "test_audio_content" => ok(vec![ContentBlock::Audio(AudioContent::new(
            WAV,
            "audio/wav",
        ))]),
        "test_embedded_resource" => ok(vec![embedded(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        )]),
        "test_multiple_content_types" => ok(vec![
            text("Multiple content types test:"),
            ContentBlock::image(PNG, "image/png"),
            embedded(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            ),
        ]),
        "test_tool_with_logging" => {
            let steps = [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ];
            for (i, step) in steps.into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                if fixture.logs_at(LoggingLevel::Info) {
                    let message =
                        LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(step))
                            .with_logger("capsid-mcp-fixture");
                    cx.peer
                        .notify_logging_message(message)
                        .await
                        .map_err(internal)?;
                }
            }
            ok(vec![text("Logging test completed")])
        }
        "test_error_handling" => Ok(CallToolResult::error(vec![text(
            "This tool intentionally returns an error for testing",
        )])
        .into()),
        "test_tool_with_progress" => {
            let token = cx.meta.get_progress_token();
            for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                if let Some(token) = &token {
                    let note =
                        ProgressNotificationParam::new(token.clone(), progress).with_total(100.0);
                    cx.peer.notify_progress(note).await.map_err(internal)?;
                }
            }
            ok(vec![text("Progress test completed")])
        }
        "test_sampling"
        | "test_elicitation"
        | "test_elicitation_sep1034_defaults"
        | "test_elicitation_sep1330_enums" => {
            client_requests::call(&request.name, &args, &cx).await
        }
        "json_schema_2020_12_tool" => ok(vec![text(format!(
            "Hello, {}!",
            arg("name").unwrap_or("world".into())
        ))]),
        "test_reconnection" => {
            tokio::time::sleep(Duration::from_millis(100)).await;
            ok(vec![text("Reconnection test completed")])
        }
        "test_custom_header" => match arg("value") {
            Some(value) => ok(vec![text(value)]),
            None => Err(McpError::invalid_params("value must be a string", None)),
        },
        "test_trigger_tool_change" => {
            for sink in fixture.listeners() {
                let _ = sink.notify_tool_list_changed().await;
            }
            ok(vec![text("Tool list change sent")])
        }
        "test_trigger_prompt_change" => {
            for sink in fixture.listeners() {
                let _ = sink.notify_prompt_list_changed().await;
            }
            ok(vec![text("Prompt list change sent")])
        }
        "test_missing_capability" => {
            if cx
                .meta
                .client_capabilities()
                .unwrap_or_default()
                .sampling
                .is_none()
            {
                return Err(McpError::missing_required_client_capability(
                    ClientCapabilities::builder().enable_sampling().build(),
                ));
            }
            ok(vec![text("The client declared sampling")])
        }
        "test_streaming_elicitation" => {
            let mut requests = InputRequests::new();
            requests.insert(
                "streaming_elicitation".into(),
                input_required::elicitation(
                    "Provide a value",
                    json!({"value": {"type": "string"}}),
                    &["value"],
                ),
            );
            Ok(InputRequiredResult::from_input_requests(requests).into())
        }
        "test_logging_tool" => {
            if let Some(level) = cx.meta.log_level() {
                let message =
                    LoggingMessageNotificationParam::new(level, json!("logLevel was requested"))
                        .with_logger("capsid-mcp-fixture");
                cx.peer
                    .notify_logging_message(message)
                    .await
                    .map_err(internal)?;
            }
            ok(vec![text("Logging tool completed")])
        }
        other => Err(McpError::invalid_params(
            format!("unknown tool: {other}"),
            Some(json!({"name": other})),
        )),
    }
}

fn internal(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(format!("could not notify the client: {e}"), None)
}
