//! MCP resources and prompts over documents: `capsid://{namespace}/{+path}` with keyset
//! pagination, and documents of type `prompt` with `{{variable}}` arguments. Only namespaces
//! the caller may read are listed or served.

use super::DocumentsCx;
use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::docs::prompts::{
    parse_prompt_name, prompt_description, prompt_name, prompt_variables, render_prompt,
};
use crate::error::{Error, Result};
use crate::scope::Axis;

use crate::tools::{Call, GateRefusal, gate_call};

/// Resources per `resources/list` page.
pub const RESOURCE_PAGE: usize = 500;
/// Prompts listed at most.
pub const PROMPTS_MAX: usize = 200;
/// The resource URI scheme.
pub const SCHEME: &str = "capsid://";
/// The one resource template.
pub const RESOURCE_TEMPLATE: &str = "capsid://{namespace}/{+path}";

/// One listed resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceListing {
    /// `capsid://ns/path`.
    pub uri: String,
    /// `ns/path`.
    pub name: String,
    /// The document's title.
    pub title: Option<String>,
}

/// One page of resources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePage {
    /// The resources.
    pub resources: Vec<ResourceListing>,
    /// Cursor of the next page.
    pub next_cursor: Option<String>,
}

/// One prompt argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptArgument {
    /// The `{{variable}}` name.
    pub name: String,
}

/// One listed prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptListing {
    /// `ns/path-without-.md`.
    pub name: String,
    /// From the title.
    pub description: Option<String>,
    /// Every variable, all required.
    pub arguments: Vec<PromptArgument>,
}

/// A rendered prompt: its description, and the body as an embedded resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedPrompt {
    /// From the title.
    pub description: Option<String>,
    /// The document's URI.
    pub uri: String,
    /// The body with every placeholder filled.
    pub text: String,
}

fn encode_cursor(ns: &str, path: &str) -> String {
    URL_SAFE_NO_PAD.encode(json!({ "n": ns, "p": path }).to_string())
}

fn decode_cursor(cursor: &str) -> Option<(String, String)> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor.trim_end_matches('=')).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    Some((
        v.get("n")?.as_str()?.to_owned(),
        v.get("p")?.as_str()?.to_owned(),
    ))
}

/// Splits `capsid://ns/path`.
pub fn parse_resource_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (ns, path) = rest.split_once('/')?;
    (!ns.is_empty() && !path.is_empty()).then_some((ns, path))
}

/// What a completion request completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionRef<'a> {
    /// The `capsid://{namespace}/{+path}` template, or a concrete `capsid://` URI (whose
    /// namespace then fills the template's).
    Resource(&'a str),
    /// A prompt, by name.
    Prompt(&'a str),
}

impl DocumentsCx<'_> {
    /// The one check for every surface that reads documents (resources, prompts, completions):
    /// the `read` tool's requirement through the same `gate_call` a `read` call passes, with
    /// `namespace` when the surface names one.
    pub fn check_read(&self, caller: &Caller, namespace: Option<&str>) -> Result<()> {
        let spec = crate::service::registry::spec("read")
            .ok_or_else(|| Error::Internal("the read tool is not registered".into()))?;
        let call = Call {
            namespace,
            ..Call::default()
        };
        gate_call(caller, spec, &call).map_err(|refusal| match refusal {
            GateRefusal::Scope(r) => Error::Denied(r),
            GateRefusal::AdminOnly { why, .. } => Error::Forbidden(why.to_owned()),
        })
    }

    /// The namespaces `caller` may read: `None` when it may not read at all, `Some(None)` for
    /// all of them.
    fn readable(&self, caller: &Caller) -> Option<Option<Vec<String>>> {
        self.check_read(caller, None).ok()?;
        Some(match &caller.scopes.namespaces {
            Axis::All => None,
            Axis::Only(list) => Some(list.clone()),
        })
    }

    fn may_read(&self, caller: &Caller, ns: &str) -> bool {
        self.check_read(caller, Some(ns)).is_ok()
    }

    /// `resources/list`: documents of readable namespaces by (namespace, path), 500 a page.
    pub async fn list_resources(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<ResourcePage> {
        let after = match cursor {
            None => None,
            Some(c) => Some(
                decode_cursor(c).ok_or_else(|| Error::Invalid(format!("invalid cursor: {c}")))?,
            ),
        };
        let Some(namespaces) = self.readable(caller) else {
            return Ok(ResourcePage {
                resources: Vec::new(),
                next_cursor: None,
            });
        };
        let rows = self
            .docs
            .page_documents(
                namespaces.as_deref(),
                None,
                after.as_ref().map(|(n, p)| (n.as_str(), p.as_str())),
                RESOURCE_PAGE + 1,
            )
            .await?;
        let more = rows.len() > RESOURCE_PAGE;
        let rows = &rows[..rows.len().min(RESOURCE_PAGE)];
        let next_cursor = more
            .then(|| rows.last().map(|d| encode_cursor(&d.namespace, &d.path)))
            .flatten();
        let resources = rows
            .iter()
            .map(|d| ResourceListing {
                uri: format!("{SCHEME}{}/{}", d.namespace, d.path),
                name: format!("{}/{}", d.namespace, d.path),
                title: d.title.clone(),
            })
            .collect();
        Ok(ResourcePage {
            resources,
            next_cursor,
        })
    }

    /// `resources/read`: the document body.
    pub async fn read_resource(&self, caller: &Caller, uri: &str) -> Result<String> {
        let not_found = || Error::NotFound(format!("not found: {uri}"));
        let (ns, path) = parse_resource_uri(uri).ok_or_else(not_found)?;
        self.check_read(caller, Some(ns))?;
        let doc = self.docs.document(ns, path).await?.ok_or_else(not_found)?;
        Ok(doc.body.unwrap_or_default())
    }

    /// `completion/complete`: values for `argument` starting with `value`. For the resource
    /// template, namespace names and document paths the caller may read (`namespace` from the
    /// request's context or the concrete URI); a prompt's arguments are free text, so a prompt
    /// the caller may read completes to nothing. Refused like `read` for a caller that may not
    /// read.
    pub async fn complete(
        &self,
        caller: &Caller,
        reference: CompletionRef<'_>,
        argument: &str,
        value: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<String>> {
        let namespace = match reference {
            CompletionRef::Prompt(name) => {
                let (ns, _) = parse_prompt_name(name)
                    .ok_or_else(|| Error::Invalid(crate::docs::prompts::bad_prompt_name(name)))?;
                self.check_read(caller, Some(ns))?;
                return Ok(Vec::new());
            }
            CompletionRef::Resource(RESOURCE_TEMPLATE) => namespace,
            CompletionRef::Resource(uri) => match parse_resource_uri(uri) {
                Some((ns, _)) => Some(ns),
                None => return Err(Error::Invalid(format!("not a capsid:// resource: {uri}"))),
            },
        };
        self.check_read(caller, namespace)?;
        let mut out = Vec::new();
        match argument {
            "namespace" => {
                for row in self.namespaces.namespaces().await? {
                    if self.may_read(caller, &row.namespace) && row.namespace.starts_with(value) {
                        out.push(row.namespace);
                    }
                }
            }
            "path" => {
                let Some(ns) = namespace else {
                    return Ok(out);
                };
                let glob = format!("{}*", value.replace(['*', '?', '['], ""));
                for d in self.docs.find_documents(Some(ns), &glob, 100).await? {
                    out.push(d.path);
                }
            }
            _ => {}
        }
        out.truncate(100);
        Ok(out)
    }

    /// `resources/templates/list`: the one template, to a caller that may read.
    pub fn resource_templates(&self, caller: &Caller) -> Vec<&'static str> {
        if self.readable(caller).is_some() {
            vec![RESOURCE_TEMPLATE]
        } else {
            Vec::new()
        }
    }

    /// `prompts/list`: documents of type `prompt` in readable namespaces.
    pub async fn list_prompts(&self, caller: &Caller) -> Result<Vec<PromptListing>> {
        let Some(namespaces) = self.readable(caller) else {
            return Ok(Vec::new());
        };
        let rows = self
            .docs
            .page_documents(namespaces.as_deref(), Some("prompt"), None, PROMPTS_MAX)
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let body = self
                .docs
                .document(&row.namespace, &row.path)
                .await?
                .and_then(|d| d.body)
                .unwrap_or_default();
            out.push(PromptListing {
                name: prompt_name(&row.namespace, &row.path),
                description: prompt_description(row.title.as_deref()),
                arguments: prompt_variables(&body)
                    .into_iter()
                    .map(|name| PromptArgument { name })
                    .collect(),
            });
        }
        Ok(out)
    }

    /// `prompts/get`: the prompt's body with every placeholder filled, as an embedded resource.
    pub async fn get_prompt(
        &self,
        caller: &Caller,
        name: &str,
        args: &BTreeMap<String, String>,
    ) -> Result<RenderedPrompt> {
        let (ns, stem) = parse_prompt_name(name)
            .ok_or_else(|| Error::Invalid(crate::docs::prompts::bad_prompt_name(name)))?;
        let missing = || Error::NotFound(format!("no prompt named {name}"));
        self.check_read(caller, Some(ns))?;
        let mut doc = None;
        for path in [format!("{stem}.md"), stem.to_owned()] {
            if let Some(d) = self
                .docs
                .document(ns, &path)
                .await?
                .filter(|d| d.doc_type == "prompt")
            {
                doc = Some(d);
                break;
            }
        }
        let doc = doc.ok_or_else(missing)?;
        let text = render_prompt(doc.body_text(), args)
            .map_err(|m| Error::Invalid(format!("prompt {name}: {m}")))?;
        Ok(RenderedPrompt {
            description: prompt_description(doc.title.as_deref()),
            uri: format!("{SCHEME}{}/{}", doc.namespace, doc.path),
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_bad_ones_are_refused() {
        let c = encode_cursor("alpha", "notes/ü.md");
        assert_eq!(
            decode_cursor(&c),
            Some(("alpha".into(), "notes/ü.md".into()))
        );
        assert_eq!(decode_cursor("!!!"), None);
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("[1]")), None);
    }

    #[test]
    fn resource_uris() {
        assert_eq!(
            parse_resource_uri("capsid://alpha/notes/a.md"),
            Some(("alpha", "notes/a.md"))
        );
        assert_eq!(parse_resource_uri("capsid://alpha/"), None);
        assert_eq!(parse_resource_uri("file:///etc/passwd"), None);
    }
}
