//! The `ModelClient` port: one completion from a language model (the loop's `api` mode,
//! reference 8.1). The core decides the model per stage, the prompt and what the answer
//! means; the adapter (`capsid-model`, the Anthropic Messages API) carries the request and
//! reports the tokens used, which the core turns into an estimated cost.

use async_trait::async_trait;

/// Who said a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelRole {
    /// The caller.
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ModelMessage {
    /// Who said it.
    pub role: ModelRole,
    /// What was said (text only).
    pub content: String,
}

/// One completion to ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRequest {
    /// The model id (`claude-sonnet-5`, ...).
    pub model: String,
    /// The system prompt, if any.
    pub system: Option<String>,
    /// The conversation, oldest first; the last is the user's.
    pub messages: Vec<ModelMessage>,
    /// The most output tokens the answer may use.
    pub max_tokens: u32,
}

/// Tokens a completion used, as the API reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ModelUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
}

/// A completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelReply {
    /// The model that answered (as the API names it).
    pub model: String,
    /// The answer's text blocks, joined.
    pub text: String,
    /// Why it stopped (`end_turn`, `max_tokens`, ...).
    pub stop_reason: Option<String>,
    /// Tokens used.
    pub usage: ModelUsage,
}

/// Why a completion did not arrive. Nothing the loop recorded depends on it: the step that
/// asked is retried on the next tick or concluded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The API refused the credential (401/403).
    #[error("the model API refused the credential: {0}")]
    Unauthorized(String),
    /// Rate limited or overloaded (429/529); try again later.
    #[error("the model API is busy: {0}")]
    Busy(String),
    /// The request was refused as malformed (400/404/413).
    #[error("the model API refused the request: {0}")]
    Refused(String),
    /// Unreachable, timed out, a 5xx, or an answer that does not parse.
    #[error("the model API failed: {0}")]
    Failed(String),
}

/// Asks a model for one completion.
#[async_trait]
pub trait ModelClient: Send + Sync {
    /// One completion of `request`.
    async fn complete(&self, request: ModelRequest) -> Result<ModelReply, ModelError>;
}
