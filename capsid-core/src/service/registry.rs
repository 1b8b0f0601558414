//! The tool registry: every served tool is one entry here, pairing its [`ToolSpec`] (name,
//! group, description, requirement per action, confirmation, annotations) with its argument
//! type (whose JSON Schema is the MCP input schema, so a tool without one does not compile)
//! and its handler. The registry is the dispatch table, the source of `tools/list` and the
//! requirement the one check asks: [`Service::call_tool`] parses the arguments, runs
//! [`gate_call`] and only then enters the handler. Nothing else dispatches a tool.
//!
//! Adding a tool: write its arguments and handler in its area's folder, implement [`Tool`]
//! for a unit struct there, and add one `entry::<Area::YourTool>()` line to [`REGISTRY`].
//!
//! A handler answers a typed value ([`Tool::Answer`]): the registry serializes it once (the
//! wire text comes from that JSON) and builds the tool's MCP output schema from the same type
//! ([`output_schema`]), so the schema cannot drift from the answer. Every tool is typed: an
//! answer type without a JSON Schema does not compile as a tool's answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::args::{ScopeArgs, input_schema, parse_args};
use super::{Confirmer, Service};
use crate::caller::Caller;
use crate::error::{Error, Result};
use crate::tools::{Annotations, Call, GateRefusal, RefusalShape, ToolSpec, gate_call, visible_to};

mod output;
pub use output::{OutputSchema, RefusedAnswer, output_schema};
use output::{output_schema_of, output_schemas};

/// A boxed handler future answering `A`.
pub type ToolFuture<'a, A = Value> = Pin<Box<dyn Future<Output = Result<A>> + Send + 'a>>;

/// What a tool's handler answers: serialized once into the wire JSON, and described by the
/// tool's output schema.
pub trait Answer: serde::Serialize + Send + 'static {
    /// The JSON Schema of the answer.
    fn answer_schema() -> Value;
}

/// Every answer: its schema is its type's.
impl<T: serde::Serialize + schemars::JsonSchema + Send + 'static> Answer for T {
    fn answer_schema() -> Value {
        output_schema_of::<T>()
    }
}

/// One tool: its spec, its arguments and its handler.
pub trait Tool: 'static {
    /// The parsed, bounded arguments; their schema is the tool's MCP input schema.
    type Args: DeserializeOwned + schemars::JsonSchema + ScopeArgs + Send + 'static;
    /// What a call answers; its schema is the tool's MCP output schema.
    type Answer: Answer;
    /// Everything about the tool but its handler.
    const SPEC: ToolSpec;
    /// The handler. It runs only after the one check allowed the call.
    fn run<'a>(
        areas: super::Areas<'a>,
        caller: &'a Caller,
        args: Self::Args,
        confirmer: &'a dyn Confirmer,
    ) -> ToolFuture<'a, Self::Answer>;
}

type Invoke = for<'a> fn(&'a Service, &'a Caller, Value, &'a dyn Confirmer) -> ToolFuture<'a>;

/// A registered tool.
pub struct ToolEntry {
    /// Its spec.
    pub spec: ToolSpec,
    schema: fn() -> Map<String, Value>,
    answer_schema: fn() -> Value,
    invoke: Invoke,
    parse: fn(Value) -> Result<ParsedCall>,
}

/// What the one check is asked about a call whose arguments parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedCall {
    /// The action (action tools).
    pub action: Option<String>,
    /// The namespace the call names.
    pub namespace: Option<String>,
    /// The repo selector it names.
    pub repo: Option<String>,
    /// The flags its arguments need.
    pub flags: Vec<crate::scope::Flag>,
}

/// Parses `args` for `tool` exactly as [`Service::call_tool`] does before its check (the same
/// function), without a caller or a store: what the fuzz target of tool arguments drives.
pub fn parse_tool_args(tool: &str, args: Value) -> Result<ParsedCall> {
    match lookup(tool) {
        Some(entry) => (entry.parse)(args),
        None => Err(Error::Invalid(format!("unknown tool: {tool}"))),
    }
}

/// The arguments of tool `T`, parsed and bounded.
fn parse_args_of<T: Tool>(args: Value) -> Result<T::Args> {
    parse_args(T::SPEC.name, args)
}

/// The argument names `tool`'s input schema does not name. A call carrying them still runs,
/// as the reference's (zod) schemas drop unknown keys and clients written against it send
/// some (`confirm` where none is asked); the adapters log them, so a misspelt filter is
/// seen in the server log rather than lost.
pub fn unknown_arguments(tool: &str, args: &Value) -> Vec<String> {
    let (Some(given), Some(entry)) = (args.as_object(), lookup(tool)) else {
        return Vec::new();
    };
    let schema = entry.input_schema();
    let known = schema.get("properties").and_then(Value::as_object);
    given
        .keys()
        .filter(|k| !known.is_some_and(|p| p.contains_key(k.as_str())))
        .cloned()
        .collect()
}

fn parse_only<T: Tool>(args: Value) -> Result<ParsedCall> {
    let parsed = parse_args_of::<T>(args)?;
    Ok(ParsedCall {
        action: parsed.action().map(str::to_owned),
        namespace: parsed.namespace().map(str::to_owned),
        repo: parsed.repo().map(str::to_owned),
        flags: parsed.flags(),
    })
}

impl std::fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

/// The entry of tool `T`.
pub const fn entry<T: Tool>() -> ToolEntry {
    ToolEntry {
        spec: T::SPEC,
        schema: input_schema::<T::Args>,
        answer_schema: <T::Answer as Answer>::answer_schema,
        invoke: invoke::<T>,
        parse: parse_only::<T>,
    }
}

/// Parse, check, then the handler: the only way into a tool.
fn invoke<'a, T: Tool>(
    service: &'a Service,
    caller: &'a Caller,
    args: Value,
    confirmer: &'a dyn Confirmer,
) -> ToolFuture<'a> {
    Box::pin(async move {
        let spec = &T::SPEC;
        let parsed = parse_args_of::<T>(args)?;
        let call = Call {
            action: parsed.action(),
            namespace: parsed.namespace(),
            repo: parsed.repo(),
            takes_namespace: takes_namespace(spec.name) && !parsed.reads_only_shared(),
            flags: parsed.flags(),
            new_mapping: parsed.new_mapping(),
        };
        match gate_call(caller, spec, &call) {
            Ok(()) => {}
            Err(GateRefusal::Scope(refusal)) => return Err(Error::Denied(refusal)),
            Err(GateRefusal::AdminOnly { action, why }) => {
                return Err(match spec.refusals {
                    RefusalShape::OkFalse => Error::Refused {
                        action: action.to_owned(),
                        refusal: why.to_owned(),
                    },
                    RefusalShape::ToolError => Error::Forbidden(why.to_owned()),
                });
            }
        }
        if let Some(observer) = &service.observer {
            observer.entered(spec.name);
        }
        let answer = T::run(super::Areas::of(service), caller, parsed, confirmer).await?;
        super::to_json(answer)
    })
}

use super::{agents, checkmarks, documents, improve, jobs, maintenance, repo};

/// Every served tool: the reference's 32 in its order, then the sister design's three, then
/// a backup on demand (the reference runs one only over HTTP).
pub static REGISTRY: [ToolEntry; 36] = [
    entry::<documents::List>(),
    entry::<documents::Read>(),
    entry::<documents::Brief>(),
    entry::<documents::Backlinks>(),
    entry::<documents::Find>(),
    entry::<documents::Search>(),
    entry::<documents::Namespaces>(),
    entry::<documents::History>(),
    entry::<documents::Write>(),
    entry::<documents::Delete>(),
    entry::<documents::Move>(),
    entry::<documents::Restore>(),
    entry::<maintenance::Lint>(),
    entry::<maintenance::RegisterNamespace>(),
    entry::<maintenance::UpdateNamespace>(),
    entry::<repo::ListRepoTree>(),
    entry::<repo::ReadRepoFile>(),
    entry::<repo::SearchCode>(),
    entry::<repo::RepoRefs>(),
    entry::<repo::RepoHistory>(),
    entry::<repo::CiStatus>(),
    entry::<repo::WriteRepoFile>(),
    entry::<repo::CreateBranch>(),
    entry::<repo::OpenPr>(),
    entry::<repo::DeleteRepoFile>(),
    entry::<repo::ManagePr>(),
    entry::<repo::DeleteBranch>(),
    entry::<repo::CiDispatch>(),
    entry::<jobs::Jobs>(),
    entry::<improve::ImproveRun>(),
    entry::<improve::ImproveStatus>(),
    entry::<agents::Agents>(),
    entry::<checkmarks::Checkpoint>(),
    entry::<checkmarks::Checkmarks>(),
    entry::<checkmarks::Shared>(),
    entry::<maintenance::Backup>(),
];

/// The entry named `name`.
pub fn lookup(name: &str) -> Option<&'static ToolEntry> {
    REGISTRY.iter().find(|e| e.spec.name == name)
}

/// The spec of the tool named `name`.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    lookup(name).map(|e| &e.spec)
}

/// Every input schema, built once.
fn schemas() -> &'static [Arc<Map<String, Value>>] {
    static SCHEMAS: OnceLock<Vec<Arc<Map<String, Value>>>> = OnceLock::new();
    SCHEMAS.get_or_init(|| REGISTRY.iter().map(|e| Arc::new((e.schema)())).collect())
}

impl ToolEntry {
    /// Its MCP input schema.
    pub fn input_schema(&self) -> Arc<Map<String, Value>> {
        let index = REGISTRY
            .iter()
            .position(|e| std::ptr::eq(e, self))
            .unwrap_or_default();
        schemas()[index].clone()
    }
}

/// Whether the tool's arguments have a `namespace` field (the Worker reads it off the input
/// schema, so a narrowed caller omitting it is refused for exactly the tools that take one).
fn takes_namespace(name: &str) -> bool {
    REGISTRY
        .iter()
        .position(|e| e.spec.name == name)
        .and_then(|i| schemas()[i].get("properties"))
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key("namespace"))
}

/// A tool as `tools/list` shows it.
#[derive(Clone, Debug)]
pub struct ToolListing {
    /// The registered spec.
    pub spec: &'static ToolSpec,
    /// The JSON Schema of its arguments.
    pub input_schema: Arc<Map<String, Value>>,
    /// Its annotations.
    pub annotations: Annotations,
    /// Its output schema.
    pub output_schema: &'static OutputSchema,
}

/// Told when a call passed the one check and enters its handler (metrics, tests).
pub trait CallObserver: Send + Sync {
    /// `tool`'s handler is about to run.
    fn entered(&self, tool: &'static str);
}

impl Service {
    /// The tools `caller` may see, in registry order, with their schemas.
    pub fn tools_for(&self, caller: &Caller) -> Vec<ToolListing> {
        REGISTRY
            .iter()
            .zip(schemas())
            .zip(output_schemas())
            .filter(|((e, _), _)| visible_to(caller, &e.spec))
            .map(|((e, schema), output)| ToolListing {
                spec: &e.spec,
                input_schema: schema.clone(),
                annotations: e.spec.annotations(),
                output_schema: output,
            })
            .collect()
    }

    /// Calls `tool` for `caller`: parse and bound the arguments, run the one scope check with
    /// the tool's requirement from the registry, then the handler. `confirmer` asks a human
    /// when a destructive call lacks `confirm: true`. A domain refusal of a tool that answers
    /// them as `{ok:false, action, refusal}` is such an answer, not an error.
    pub async fn call_tool(
        &self,
        caller: &Caller,
        tool: &str,
        args: Value,
        confirmer: &dyn Confirmer,
    ) -> Result<Value> {
        let Some(entry) = lookup(tool) else {
            return Err(Error::Invalid(format!("unknown tool: {tool}")));
        };
        match (entry.invoke)(self, caller, args, confirmer).await {
            Err(Error::Refused { action, refusal }) => super::to_json(RefusedAnswer {
                ok: false,
                action,
                refusal,
            }),
            other => other,
        }
    }
}
