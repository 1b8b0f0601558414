//! The fixture's resources, resource template, prompts and completions, with the exact
//! contents the conformance scenarios' descriptions prescribe.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock, GetPromptResult,
    ImageContent, JsonObject, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Reference,
    Resource, ResourceContents, ResourceTemplate, Role,
};
use serde_json::{Value, json};

use crate::input_required;
use crate::tools::PNG;

/// The direct resources.
pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new("test://static-text", "Static Text Resource")
            .with_description("A static text resource for testing")
            .with_mime_type("text/plain"),
        Resource::new("test://static-binary", "Static Binary Resource")
            .with_description("A static binary (PNG) resource for testing")
            .with_mime_type("image/png"),
        Resource::new("test://watched-resource", "Watched Resource")
            .with_description("A resource clients may subscribe to")
            .with_mime_type("text/plain"),
    ]
}

/// The resource templates.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("test://template/{id}/data", "Template Resource")
            .with_description("A resource whose {id} is substituted into its data")
            .with_mime_type("application/json"),
    ]
}

fn text_contents(uri: &str, mime: &str, text: impl Into<String>) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: uri.into(),
        mime_type: Some(mime.into()),
        text: text.into(),
        meta: None,
    }
}

/// `resources/read`: an unknown URI is `-32602` with the URI in `data` (SEP-2164).
pub fn read(uri: &str) -> Result<ReadResourceResult, McpError> {
    let contents = match uri {
        "test://static-text" => text_contents(
            uri,
            "text/plain",
            "This is the content of the static text resource.",
        ),
        "test://static-binary" => ResourceContents::BlobResourceContents {
            uri: uri.into(),
            mime_type: Some("image/png".into()),
            blob: PNG.into(),
            meta: None,
        },
        "test://watched-resource" => text_contents(uri, "text/plain", "Watched resource content."),
        _ => match uri
            .strip_prefix("test://template/")
            .and_then(|rest| rest.strip_suffix("/data"))
        {
            Some(id) if !id.is_empty() && !id.contains('/') => {
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                text_contents(uri, "application/json", data.to_string())
            }
            _ => {
                return Err(McpError::invalid_params(
                    format!("Resource not found: {uri}"),
                    Some(json!({"uri": uri})),
                ));
            }
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The prompts, including the input-required one.
pub fn prompts() -> Vec<Prompt> {
    let argument = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    vec![
        Prompt::new(
            "test_simple_prompt",
            Some("A simple prompt without arguments"),
            None,
        ),
        Prompt::new(
            "test_prompt_with_arguments",
            Some("A prompt with two arguments"),
            Some(vec![
                argument("arg1", "First test argument"),
                argument("arg2", "Second test argument"),
            ]),
        ),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            Some("A prompt that embeds a resource"),
            Some(vec![argument(
                "resourceUri",
                "URI of the resource to embed",
            )]),
        ),
        Prompt::new(
            "test_prompt_with_image",
            Some("A prompt with an image"),
            None,
        ),
        Prompt::new(
            input_required::PROMPT,
            Some("A prompt that asks for context first (SEP-2322)"),
            None,
        ),
    ]
}

/// `prompts/get` of every prompt but the input-required one.
pub fn prompt(name: &str, arguments: Option<&JsonObject>) -> Result<GetPromptResult, McpError> {
    let arg = |key: &str| {
        arguments
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let user = |content: ContentBlock| PromptMessage::new(Role::User, content);
    let messages = match name {
        "test_simple_prompt" => {
            vec![PromptMessage::new_text(
                Role::User,
                "This is a simple prompt for testing.",
            )]
        }
        "test_prompt_with_arguments" => vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            ),
        )],
        "test_prompt_with_embedded_resource" => {
            let uri = match arg("resourceUri") {
                "" => "test://example-resource",
                uri => uri,
            };
            vec![
                user(ContentBlock::resource(text_contents(
                    uri,
                    "text/plain",
                    "Embedded resource content for testing.",
                ))),
                PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
            ]
        }
        "test_prompt_with_image" => vec![
            user(ContentBlock::Image(ImageContent::new(PNG, "image/png"))),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ],
        other => {
            return Err(McpError::invalid_params(
                format!("unknown prompt: {other}"),
                Some(json!({"name": other})),
            ));
        }
    };
    Ok(GetPromptResult::new(messages))
}

/// `completion/complete`: candidates for the prompt arguments and the template's `{id}`,
/// filtered by the typed prefix.
pub fn complete(request: &CompleteRequestParams) -> Result<CompleteResult, McpError> {
    let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
        (Reference::Prompt(_), "arg1" | "arg2") => &["hello", "help", "test", "testing", "world"],
        (Reference::Prompt(_), "resourceUri") => &["test://static-text", "test://static-binary"],
        (Reference::Resource(_), "id") => &["1", "2", "3", "123"],
        _ => &[],
    };
    let prefix = request.argument.value.as_str();
    let values = candidates
        .iter()
        .filter(|c| c.starts_with(prefix))
        .map(|c| (*c).to_owned())
        .collect();
    let info = CompletionInfo::new(values).map_err(|e| McpError::internal_error(e, None))?;
    Ok(CompleteResult::new(info))
}
