//! The 2026-07-28 input-required fixtures (SEP-2322, "MRTR"): tools and one prompt that
//! answer with an `InputRequiredResult` until the client retries with the `inputResponses`
//! they asked for, and that seal their progress in an integrity-protected `requestState`.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateMessageRequest,
    CreateMessageRequestParams, ElicitRequest, ElicitRequestParams, GetPromptResponse,
    GetPromptResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ListRootsRequest, PromptMessage, RequestMetaObject, Role, SamplingMessage,
};
use serde_json::{Map, Value, json};

use crate::server::Fixture;

/// Every input-required tool's name starts with this.
pub const TOOL_PREFIX: &str = "test_input_required_result_";

/// The input-required prompt.
pub const PROMPT: &str = "test_input_required_result_prompt";

/// `(name, description)` of the input-required tools; none takes arguments.
pub const TOOLS: &[(&str, &str)] = &[
    (
        "test_input_required_result_elicitation",
        "Asks for a name through elicitation",
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's LLM a question",
    ),
    (
        "test_input_required_result_list_roots",
        "Asks for the client's roots",
    ),
    (
        "test_input_required_result_request_state",
        "Round-trips a sealed requestState",
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks for three inputs in one round",
    ),
    (
        "test_input_required_result_multi_round",
        "Asks for input over two rounds",
    ),
    (
        "test_input_required_result_tampered_state",
        "Rejects a requestState it did not seal",
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only for what the client declared",
    ),
];

/// A form elicitation asking for the string `properties`, all of `required`.
pub fn elicitation(message: &str, properties: Value, required: &[&str]) -> InputRequest {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.into(),
            requested_schema: serde_json::from_value(schema)
                .expect("fixture elicitation schemas are valid"),
        },
    ))
}

fn sampling(prompt: &str) -> InputRequest {
    let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
    InputRequest::CreateMessage(CreateMessageRequest::new(params))
}

fn roots() -> InputRequest {
    InputRequest::ListRoots(ListRootsRequest::default())
}

/// The response under `key`, when it is a result object; anything else counts as missing, so
/// the request is asked again.
fn response<'a>(
    responses: Option<&'a InputResponses>,
    key: &str,
) -> Option<&'a Map<String, Value>> {
    responses?.get(key)?.as_object()
}

/// `response.content.<field>` as a string.
fn field<'a>(response: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    response.get("content")?.get(field)?.as_str()
}

fn done(text: impl Into<String>) -> Result<CallToolResponse, McpError> {
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

fn ask(
    requests: Vec<(&str, InputRequest)>,
    state: Option<String>,
) -> Result<CallToolResponse, McpError> {
    let requests: InputRequests = requests
        .into_iter()
        .map(|(k, r)| (k.to_owned(), r))
        .collect();
    Ok(InputRequiredResult::new(Some(requests), state).into())
}

fn tampered() -> McpError {
    McpError::invalid_params("requestState failed integrity verification", None)
}

/// Runs one input-required tool; `meta` is the request's `_meta` (client capabilities).
pub fn call(
    fixture: &Fixture,
    request: CallToolRequestParams,
    meta: &RequestMetaObject,
) -> Result<CallToolResponse, McpError> {
    let codec = fixture.codec();
    let seal = |state: Value| {
        codec
            .seal_json(&state)
            .map_err(|e| McpError::internal_error(format!("cannot seal requestState: {e}"), None))
    };
    let open = |sealed: &str| codec.open_json::<Value>(sealed).map_err(|_| tampered());
    let responses = request.input_responses.as_ref();
    let name_form = || {
        elicitation(
            "What is your name?",
            json!({"name": {"type": "string"}}),
            &["name"],
        )
    };
    match request.name.as_ref() {
        "test_input_required_result_elicitation" => match response(responses, "user_name") {
            Some(r) => done(format!("Hello, {}!", field(r, "name").unwrap_or("friend"))),
            None => ask(vec![("user_name", name_form())], None),
        },
        "test_input_required_result_sampling" => match response(responses, "capital_question") {
            Some(r) => done(format!(
                "Sampling response: {}",
                field(r, "text").unwrap_or("(no text)")
            )),
            None => ask(
                vec![(
                    "capital_question",
                    sampling("What is the capital of France?"),
                )],
                None,
            ),
        },
        "test_input_required_result_list_roots" => match response(responses, "client_roots") {
            Some(r) => {
                let uris: Vec<&str> = r
                    .get("roots")
                    .and_then(Value::as_array)
                    .map(|roots| {
                        roots
                            .iter()
                            .filter_map(|root| root.get("uri")?.as_str())
                            .collect()
                    })
                    .unwrap_or_default();
                done(format!("Client roots: [{}]", uris.join(", ")))
            }
            None => ask(vec![("client_roots", roots())], None),
        },
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => match request.request_state.as_deref() {
            None => {
                let confirm = elicitation(
                    "Please confirm",
                    json!({"ok": {"type": "boolean"}}),
                    &["ok"],
                );
                ask(
                    vec![("confirm", confirm)],
                    Some(seal(json!({"stage": "confirm"}))?),
                )
            }
            Some(sealed) => {
                open(sealed)?;
                done("Confirmed: state-ok")
            }
        },
        "test_input_required_result_multiple_inputs" => {
            if let Some(sealed) = request.request_state.as_deref() {
                open(sealed)?;
            }
            let keys = ["user_name", "greeting", "client_roots"];
            if request.request_state.is_some()
                && keys.iter().all(|k| response(responses, k).is_some())
            {
                return done("All inputs received");
            }
            let requests = vec![
                ("user_name", name_form()),
                ("greeting", sampling("Generate a greeting")),
                ("client_roots", roots()),
            ];
            ask(requests, Some(seal(json!({"stage": "gather"}))?))
        }
        "test_input_required_result_multi_round" => {
            let round = match request.request_state.as_deref() {
                None => 0,
                Some(sealed) => open(sealed)?
                    .get("round")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
            };
            match round {
                0 => ask(
                    vec![(
                        "step1",
                        elicitation(
                            "Step 1: What is your name?",
                            json!({"name": {"type": "string"}}),
                            &["name"],
                        ),
                    )],
                    Some(seal(json!({"round": 1}))?),
                ),
                1 => {
                    let color = json!({"color": {"type": "string"}});
                    ask(
                        vec![(
                            "step2",
                            elicitation("Step 2: What is your favorite color?", color, &["color"]),
                        )],
                        Some(seal(json!({"round": 2}))?),
                    )
                }
                _ => done("Multi-round flow complete"),
            }
        }
        "test_input_required_result_capabilities" => {
            if responses.is_some() {
                return done("Capability-aware flow complete");
            }
            let declared = meta.client_capabilities().unwrap_or_default();
            let mut requests = Vec::new();
            if declared.elicitation.is_some() {
                requests.push(("user_name", name_form()));
            }
            if declared.sampling.is_some() {
                requests.push(("greeting", sampling("Generate a greeting")));
            }
            if declared.roots.is_some() {
                requests.push(("client_roots", roots()));
            }
            if requests.is_empty() {
                return done("The client declared no capability to ask through");
            }
            ask(requests, None)
        }
        other => Err(McpError::invalid_params(
            format!("unknown tool: {other}"),
            Some(json!({"name": other})),
        )),
    }
}

/// `prompts/get` of [`PROMPT`]: asks for a context, then builds the prompt from it.
pub fn prompt(responses: Option<&InputResponses>) -> GetPromptResponse {
    match response(responses, "user_context") {
        Some(r) => {
            let context = field(r, "context").unwrap_or("(no context)");
            let message = PromptMessage::new_text(
                Role::User,
                format!("Prompt with elicited context: {context}"),
            );
            GetPromptResult::new(vec![message])
                .with_description("A prompt built from elicited context")
                .into()
        }
        None => {
            let form = elicitation(
                "What context should the prompt use?",
                json!({"context": {"type": "string"}}),
                &["context"],
            );
            InputRequiredResult::from_input_requests(InputRequests::from([(
                "user_context".to_owned(),
                form,
            )]))
            .into()
        }
    }
}
