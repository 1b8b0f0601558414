//! The 2025-11-25 tools that ask the client something while they run: `test_sampling`
//! (`sampling/createMessage`) and the three elicitations (`elicitation/create`). They work in
//! session mode only: a stateless server cannot route the client's answer back to the tool.

use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, CreateMessageRequestParams,
    ElicitRequestParams, ElicitationAction, ElicitationSchema, JsonObject, SamplingMessage,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::text(s)
}

fn ok(content: ContentBlock) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResult::success(vec![content]).into())
}

/// Runs the tool `name` with `args`.
pub async fn call(
    name: &str,
    args: &JsonObject,
    cx: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, McpError> {
    let arg = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_owned);
    match name {
        "test_sampling" => {
            if cx.client_capabilities().and_then(|c| c.sampling).is_none() {
                return Ok(undeclared("sampling"));
            }
            let prompt = arg("prompt").unwrap_or_else(|| "Hello".to_owned());
            let params =
                CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
            match cx.peer.create_message(params).await {
                Ok(result) => {
                    let answer = result
                        .message
                        .content
                        .first()
                        .and_then(|c| c.as_text())
                        .map(|t| t.text.clone());
                    ok(text(format!(
                        "LLM response: {}",
                        answer.unwrap_or_default()
                    )))
                }
                Err(e) => {
                    Ok(CallToolResult::error(vec![text(format!("sampling failed: {e}"))]).into())
                }
            }
        }
        "test_elicitation" => {
            let message =
                arg("message").unwrap_or_else(|| "Please provide your information".to_owned());
            let schema = json!({
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}
                },
                "required": ["username", "email"]
            });
            elicit(cx, &message, schema, "User response").await
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User's name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User's age", "default": 30},
                    "score": {"type": "number", "description": "User's score", "default": 95.5},
                    "status": {
                        "type": "string",
                        "description": "User's status",
                        "enum": ["active", "inactive", "pending"],
                        "default": "active"
                    },
                    "verified": {
                        "type": "boolean",
                        "description": "Whether the user is verified",
                        "default": true
                    }
                }
            });
            elicit(
                cx,
                "Please review these values (all have defaults)",
                schema,
                "Elicitation completed",
            )
            .await
        }
        "test_elicitation_sep1330_enums" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {
                        "type": "string",
                        "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"}
                        ]
                    },
                    "legacyEnum": {
                        "type": "string",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]
                    },
                    "untitledMulti": {
                        "type": "array",
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
                    },
                    "titledMulti": {
                        "type": "array",
                        "items": {
                            "anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}
                            ]
                        }
                    }
                }
            });
            elicit(
                cx,
                "Pick from each kind of enum",
                schema,
                "Elicitation completed",
            )
            .await
        }
        other => Err(McpError::invalid_params(
            format!("unknown tool: {other}"),
            None,
        )),
    }
}

/// The tool error for a server-to-client request the client did not declare it can answer.
/// A stateless server never knows (it keeps no `initialize`), so it refuses at once rather
/// than send a request whose answer could not reach it.
fn undeclared(capability: &str) -> CallToolResponse {
    let message =
        format!("the client did not declare the {capability} capability on this connection");
    CallToolResult::error(vec![text(message)]).into()
}

/// Sends `elicitation/create` with `schema` and reports the answer as `<label>: action=..,
/// content=..`; a client that cannot answer gets a tool error.
async fn elicit(
    cx: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
    label: &str,
) -> Result<CallToolResponse, McpError> {
    if cx
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_none()
    {
        return Ok(undeclared("elicitation"));
    }
    let schema: ElicitationSchema = serde_json::from_value(schema)
        .map_err(|e| McpError::internal_error(format!("fixture schema rejected: {e}"), None))?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.into(),
        requested_schema: schema,
    };
    match cx.peer.create_elicitation(params).await {
        Ok(answer) => {
            let action = match answer.action {
                ElicitationAction::Accept => "accept",
                ElicitationAction::Decline => "decline",
                ElicitationAction::Cancel => "cancel",
                _ => "unknown",
            };
            let content = answer.content.unwrap_or(Value::Null);
            Ok(CallToolResult::success(vec![text(format!(
                "{label}: action={action}, content={content}"
            ))])
            .into())
        }
        Err(e) => Ok(CallToolResult::error(vec![text(format!("elicitation failed: {e}"))]).into()),
    }
}
