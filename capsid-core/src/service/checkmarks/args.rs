//! The arguments of `checkpoint`, `checkmarks` and `shared`, parsed and bounded at the edge
//! (their JSON Schemas are the tools' input schemas).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

use crate::checkmarks::shared::{KEY_MAX, VALUE_MAX, key_problem};
use crate::checkmarks::{
    AGENT_NAME_MAX, ANSWER_MAX, AgentStatus, GateStatus, NEXT_STEP_MAX, NEXT_STEPS_MAX,
    QUESTION_MAX, SESSION_ID_MAX, SUMMARY_MAX, Visibility, WHERE_IT_STOPPED_MAX,
};
use crate::docs::bounds;
use crate::paths::js_len;
use crate::service::args::{Bounded, NamespaceArg, ScopeArgs};

/// An agent's name as minted: trimmed, 1 to 64 printable characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentName(pub String);

impl AgentName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for AgentName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        let name = raw.trim();
        if name.is_empty() {
            return Err(D::Error::custom(
                "is empty; name the agent as it was minted",
            ));
        }
        if js_len(name) > AGENT_NAME_MAX {
            return Err(D::Error::custom(format!(
                "is {} characters long; the limit is {AGENT_NAME_MAX}",
                js_len(name)
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(D::Error::custom("must not contain control characters"));
        }
        Ok(AgentName(name.to_owned()))
    }
}

impl JsonSchema for AgentName {
    fn schema_name() -> Cow<'static, str> {
        "AgentName".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "maxLength": AGENT_NAME_MAX, "description": "An agent's name, as minted." })
    }
}

/// A log entry's id: a whole number, 1 or more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogEntryId(pub i64);

impl<'de> Deserialize<'de> for LogEntryId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let id = i64::deserialize(d)?;
        if id < 1 {
            return Err(D::Error::custom(format!(
                "must be a log entry's id, a whole number from 1; got {id}"
            )));
        }
        Ok(LogEntryId(id))
    }
}

impl JsonSchema for LogEntryId {
    fn schema_name() -> Cow<'static, str> {
        "LogEntryId".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "minimum": 1, "description": "A log entry's id." })
    }
}

/// A shared-context key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedKey(pub String);

impl SharedKey {
    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for SharedKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let key = String::deserialize(d)?;
        match key_problem(&key) {
            // The message already starts with the field's name.
            Some(why) => Err(D::Error::custom(
                why.strip_prefix("key: ").unwrap_or(&why).to_owned(),
            )),
            None => Ok(SharedKey(key)),
        }
    }
}

impl JsonSchema for SharedKey {
    fn schema_name() -> Cow<'static, str> {
        "SharedKey".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string", "maxLength": KEY_MAX, "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]*$",
            "description": "A shared-context key: letters, digits, '.', '_', ':' and '-'."
        })
    }
}

/// The next steps of a checkpoint: a list of strings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct NextSteps(pub Vec<Bounded<NEXT_STEP_MAX>>);

impl JsonSchema for NextSteps {
    fn schema_name() -> Cow<'static, str> {
        "NextSteps".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array", "maxItems": NEXT_STEPS_MAX,
            "items": { "type": "string", "maxLength": NEXT_STEP_MAX },
            "description": "What comes next, one step per string."
        })
    }
}

/// `checkpoint`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckpointArgs {
    /// The namespace (project) the agent works in.
    pub namespace: NamespaceArg,
    /// The agent; defaults to the caller (only the admin may name another agent).
    pub agent: Option<AgentName>,
    /// working, paused_for_input, blocked or done (done needs tests_status pass).
    pub status: AgentStatus,
    /// Where the agent stopped, in a sentence or two.
    pub where_it_stopped: Option<Bounded<WHERE_IT_STOPPED_MAX>>,
    /// What comes next, one step per string.
    #[serde(default)]
    pub next_steps: Option<NextSteps>,
    /// What the agent needs from a human (required for paused_for_input and blocked).
    pub question: Option<Bounded<QUESTION_MAX>>,
    /// The log entry's summary of what happened.
    pub summary: Option<Bounded<SUMMARY_MAX>>,
    /// Decisions taken, for the log.
    pub decisions: Option<Bounded<SUMMARY_MAX>>,
    /// pass, fail, unknown (default) or skipped (a clean tree with nothing pushed).
    pub tests_status: Option<GateStatus>,
    /// pass, fail, unknown (default) or skipped.
    pub build_status: Option<GateStatus>,
    /// Whether the working tree is clean (what tests_status skipped needs).
    pub clean_tree: Option<bool>,
    /// project (default: readers of this namespace) or global (every reader).
    pub visibility: Option<Visibility>,
    /// The commit this checkpoint pushed, if any (its CI verdict starts pending).
    pub push_sha: Option<Bounded<{ bounds::SHA }>>,
    /// The job this work belongs to, if any.
    pub job_id: Option<Bounded<64>>,
    /// The agent session (e.g. Claude Code's session id), for a driver to resume.
    pub session_id: Option<Bounded<SESSION_ID_MAX>>,
    /// What the session cost so far, in US dollars.
    pub cost_usd: Option<f64>,
    /// How many turns the session took so far.
    pub turns: Option<u32>,
}

impl ScopeArgs for CheckpointArgs {
    fn namespace(&self) -> Option<&str> {
        Some(self.namespace.as_str())
    }
}

/// What `checkmarks` can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckmarksAction {
    /// Every agent of a namespace with its checkmark.
    List,
    /// One agent's checkmark.
    Get,
    /// One agent's log, newest first, paged.
    Log,
    /// The global entries of every namespace, newest first, paged.
    Feed,
    /// Answer an agent's open question (with resume: true, also resume it).
    Answer,
    /// Ask for the agent to be resumed with its answer.
    Resume,
    /// Promote a log entry of the namespace to global (needs can_write_shared).
    Promote,
}

impl CheckmarksAction {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            CheckmarksAction::List => "list",
            CheckmarksAction::Get => "get",
            CheckmarksAction::Log => "log",
            CheckmarksAction::Feed => "feed",
            CheckmarksAction::Answer => "answer",
            CheckmarksAction::Resume => "resume",
            CheckmarksAction::Promote => "promote",
        }
    }
}

/// `checkmarks`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckmarksArgs {
    /// list, get, log, feed, answer, resume or promote.
    pub action: CheckmarksAction,
    /// The namespace (every action but feed, where it narrows the feed to one namespace).
    pub namespace: Option<NamespaceArg>,
    /// The agent (get, log, answer, resume).
    pub agent: Option<AgentName>,
    /// log, feed: the next_cursor of the previous page.
    pub cursor: Option<Bounded<256>>,
    /// log, feed: entries per page, 1 to 100 (default 20).
    pub limit: Option<u32>,
    /// answer: the answer to the agent's open question.
    pub answer: Option<Bounded<ANSWER_MAX>>,
    /// answer: also resume the agent with the answer.
    pub resume: Option<bool>,
    /// promote: the log entry's id (its `id` in a log or feed page).
    pub entry_id: Option<LogEntryId>,
}

impl ScopeArgs for CheckmarksArgs {
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_ref().map(|n| n.as_str())
    }
    fn action(&self) -> Option<&str> {
        Some(self.action.name())
    }
    fn reads_only_shared(&self) -> bool {
        self.action == CheckmarksAction::Feed
    }
}

/// What `shared` can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SharedAction {
    /// One key.
    Get,
    /// Every key.
    List,
    /// Set a key (needs can_write_shared).
    Set,
    /// Delete a key (needs can_write_shared).
    Delete,
}

impl SharedAction {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            SharedAction::Get => "get",
            SharedAction::List => "list",
            SharedAction::Set => "set",
            SharedAction::Delete => "delete",
        }
    }
}

/// `shared`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SharedArgs {
    /// get, list, set or delete.
    pub action: SharedAction,
    /// The key (get, set, delete).
    pub key: Option<SharedKey>,
    /// set: the value.
    pub value: Option<Bounded<VALUE_MAX>>,
}

impl ScopeArgs for SharedArgs {
    fn action(&self) -> Option<&str> {
        Some(self.action.name())
    }
}
