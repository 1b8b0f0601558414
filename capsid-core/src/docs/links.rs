//! Typed links between documents (reference 4.4): parsing `write`'s `links` JSON, and the
//! edge rows `backlinks`, `brief` and `lint` answer with.

use serde::{Serialize, Serializer};
use serde_json::Value;
use thiserror::Error;

use super::bounds;
use super::kinds::LinkType;
use crate::paths::{DocPath, Namespace, js_len};

/// One outgoing edge a `write` asserts: from the written document to `to_ns/to_path`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Link {
    /// The edge type.
    #[serde(rename = "type")]
    pub link_type: LinkType,
    /// Target namespace (defaults to the writing document's).
    #[serde(serialize_with = "as_str")]
    pub to_ns: Namespace,
    /// Target document path.
    #[serde(serialize_with = "as_str")]
    pub to_path: DocPath,
}

fn as_str<S: Serializer, T: AsRef<str>>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(value.as_ref())
}

/// Why a `links` value was refused. Entry errors name the entry's index and field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LinkError {
    /// The text is longer than [`bounds::LINKS_JSON`].
    #[error("links is {len} characters long; the limit is {max}", max = bounds::LINKS_JSON)]
    TooLong {
        /// Its length in UTF-16 code units.
        len: usize,
    },
    /// The text is not JSON.
    #[error("invalid links JSON: {0}")]
    InvalidJson(String),
    /// The JSON is not an array.
    #[error("links must be a JSON array of {{ type, to_path, to_ns? }} edges (use [] to clear)")]
    NotAnArray,
    /// An entry is not an object.
    #[error("links[{index}] must be an object {{ type, to_path, to_ns? }} (got {got})")]
    NotAnObject {
        /// Entry position.
        index: usize,
        /// The entry as sent.
        got: String,
    },
    /// An entry's `type` is missing or not a link type.
    #[error("links[{index}].type must be one of {valid} (got {got})", valid = link_type_list())]
    BadType {
        /// Entry position.
        index: usize,
        /// The value as sent.
        got: String,
    },
    /// An entry's `to_path` is missing, blank or not a valid document path.
    #[error("links[{index}].to_path: {problem}")]
    BadPath {
        /// Entry position.
        index: usize,
        /// The rule it broke.
        problem: String,
    },
    /// An entry's `to_ns` is not a string or not a valid namespace name.
    #[error("links[{index}].to_ns: {problem}")]
    BadNamespace {
        /// Entry position.
        index: usize,
        /// The rule it broke.
        problem: String,
    },
}

fn link_type_list() -> String {
    LinkType::ALL
        .iter()
        .map(|l| l.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `write`'s `links` parameter: a JSON array of `{type, to_path, to_ns?}`.
///
/// `to_ns` defaults to `writing_namespace` when absent, null or blank; `to_path` and `to_ns`
/// are trimmed, then held to the document path and namespace rules. `[]` parses to no edges,
/// which clears the document's outgoing edges. Repeated edges collapse to their first
/// occurrence, so the count reported to the caller and audited is the number of edges the
/// store keeps (it inserts with `INSERT OR IGNORE` on the edge's unique key).
pub fn parse_links(json_text: &str, writing_namespace: &Namespace) -> Result<Vec<Link>, LinkError> {
    let len = js_len(json_text);
    if len > bounds::LINKS_JSON {
        return Err(LinkError::TooLong { len });
    }
    let parsed: Value =
        serde_json::from_str(json_text).map_err(|e| LinkError::InvalidJson(e.to_string()))?;
    let Value::Array(entries) = parsed else {
        return Err(LinkError::NotAnArray);
    };
    let mut links: Vec<Link> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let link = parse_entry(index, entry, writing_namespace)?;
        if !links.contains(&link) {
            links.push(link);
        }
    }
    Ok(links)
}

fn parse_entry(
    index: usize,
    entry: &Value,
    writing_namespace: &Namespace,
) -> Result<Link, LinkError> {
    let Value::Object(fields) = entry else {
        return Err(LinkError::NotAnObject {
            index,
            got: entry.to_string(),
        });
    };
    let link_type = match fields.get("type") {
        Some(Value::String(text)) => LinkType::parse(text).ok(),
        _ => None,
    }
    .ok_or_else(|| LinkError::BadType {
        index,
        got: fields
            .get("type")
            .map_or_else(|| "nothing".to_owned(), Value::to_string),
    })?;
    let to_path = match fields.get("to_path") {
        Some(Value::String(text)) if !text.trim().is_empty() => DocPath::parse(text.trim())
            .map_err(|problem| LinkError::BadPath {
                index,
                problem: without_field(problem, "path: "),
            })?,
        Some(Value::String(_)) => {
            return Err(LinkError::BadPath {
                index,
                problem: "to_path is blank".into(),
            });
        }
        _ => {
            return Err(LinkError::BadPath {
                index,
                problem: "each link needs a to_path string".into(),
            });
        }
    };
    let to_ns = match fields.get("to_ns") {
        None | Some(Value::Null) => writing_namespace.clone(),
        Some(Value::String(text)) if text.trim().is_empty() => writing_namespace.clone(),
        Some(Value::String(text)) => {
            Namespace::parse(text.trim()).map_err(|problem| LinkError::BadNamespace {
                index,
                problem: without_field(problem, "namespace: "),
            })?
        }
        Some(other) => {
            return Err(LinkError::BadNamespace {
                index,
                problem: format!("to_ns must be a namespace name (got {other})"),
            });
        }
    };
    Ok(Link {
        link_type,
        to_ns,
        to_path,
    })
}

/// The newtype parsers prefix their own field name; the entry errors name theirs.
fn without_field(problem: String, prefix: &str) -> String {
    problem
        .strip_prefix(prefix)
        .map_or_else(|| problem.clone(), str::to_owned)
}

/// A stored edge, both ends named.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
pub struct Edge {
    /// Source namespace.
    pub from_ns: String,
    /// Source path.
    pub from_path: String,
    /// Edge type as stored.
    #[serde(rename = "type")]
    pub link_type: String,
    /// Target namespace.
    pub to_ns: String,
    /// Target path.
    pub to_path: String,
}

/// An edge seen from its source: `{type, to_ns, to_path}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
pub struct OutgoingLink {
    /// Edge type as stored.
    #[serde(rename = "type")]
    pub link_type: String,
    /// Target namespace.
    pub to_ns: String,
    /// Target path.
    pub to_path: String,
}

/// An edge seen from its target: `{type, from_ns, from_path}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
pub struct IncomingLink {
    /// Edge type as stored.
    #[serde(rename = "type")]
    pub link_type: String,
    /// Source namespace.
    pub from_ns: String,
    /// Source path.
    pub from_path: String,
}

/// The edges touching one document, each side sorted by type, namespace, path (the order
/// `backlinks` and `brief` answer in).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EdgesOf {
    /// Edges declared on the document.
    pub outgoing: Vec<OutgoingLink>,
    /// Edges from other documents to it.
    pub incoming: Vec<IncomingLink>,
}

impl EdgesOf {
    /// Splits the stored edges touching `namespace/path` into both views, sorted. An edge
    /// from the document to itself appears on both sides, as the two queries return it.
    pub fn of(namespace: &str, path: &str, edges: &[Edge]) -> Self {
        let mut outgoing: Vec<OutgoingLink> = edges
            .iter()
            .filter(|e| e.from_ns == namespace && e.from_path == path)
            .map(|e| OutgoingLink {
                link_type: e.link_type.clone(),
                to_ns: e.to_ns.clone(),
                to_path: e.to_path.clone(),
            })
            .collect();
        let mut incoming: Vec<IncomingLink> = edges
            .iter()
            .filter(|e| e.to_ns == namespace && e.to_path == path)
            .map(|e| IncomingLink {
                link_type: e.link_type.clone(),
                from_ns: e.from_ns.clone(),
                from_path: e.from_path.clone(),
            })
            .collect();
        outgoing.sort();
        incoming.sort();
        Self { outgoing, incoming }
    }
}

/// An edge with an endpoint that no longer exists, as `lint` reports it. The missing flags
/// serialize as `0`/`1`, the Worker's SQL integers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DanglingEdge {
    /// The edge.
    #[serde(flatten)]
    pub edge: Edge,
    /// The source document is gone.
    #[serde(serialize_with = "as_flag")]
    #[schemars(schema_with = "crate::schema::zero_or_one")]
    pub source_missing: bool,
    /// The target document is gone.
    #[serde(serialize_with = "as_flag")]
    #[schemars(schema_with = "crate::schema::zero_or_one")]
    pub target_missing: bool,
}

fn as_flag<S: Serializer>(value: &bool, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u8(u8::from(*value))
}

/// The `write` warning for new edges whose targets do not exist (`targets` as `ns/path`).
/// The edges are still written: a target may be about to be created.
pub fn dangling_targets_warning(targets: &[String]) -> Option<String> {
    if targets.is_empty() {
        return None;
    }
    Some(format!(
        "{} link target(s) do not exist as Capsid documents: {}. The edge was still written. This is fine \
         if the target is about to be created; otherwise it is a dangling edge and the lint loop will report it.",
        targets.len(),
        targets.join(", ")
    ))
}

/// The note a `write` adds for link targets in namespaces the caller may not name: they
/// were not looked up, so it says the same whether they exist or not.
pub fn unchecked_targets_warning(targets: &[String]) -> Option<String> {
    if targets.is_empty() {
        return None;
    }
    Some(format!(
        "{} link target(s) are in namespaces outside this caller's scope, so whether they exist was not checked: {}. The edge was still written.",
        targets.len(),
        targets.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ns(name: &str) -> Namespace {
        Namespace::parse(name).unwrap()
    }

    #[test]
    fn links_parse_with_defaults_and_trimming() {
        let links = parse_links(
            r#"[{"type":"references","to_path":" decisions.md "},
                {"type":"depends-on","to_path":"a/b.md","to_ns":"capsid"},
                {"type":"governs","to_path":"x.md","to_ns":"  "},
                {"type":"governs","to_path":"y.md","to_ns":null}]"#,
            &ns("recova"),
        )
        .unwrap();
        let seen: Vec<_> = links
            .iter()
            .map(|l| (l.link_type, l.to_ns.as_str(), l.to_path.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                (LinkType::References, "recova", "decisions.md"),
                (LinkType::DependsOn, "capsid", "a/b.md"),
                (LinkType::Governs, "recova", "x.md"),
                (LinkType::Governs, "recova", "y.md"),
            ]
        );
        let wire = serde_json::to_value(&links[1]).unwrap();
        assert_eq!(
            wire,
            serde_json::json!({"type": "depends-on", "to_ns": "capsid", "to_path": "a/b.md"})
        );
    }

    #[test]
    fn empty_array_clears_and_duplicates_collapse() {
        assert_eq!(parse_links("[]", &ns("n")).unwrap(), vec![]);
        let links = parse_links(
            r#"[{"type":"references","to_path":"a.md"},{"type":"references","to_path":"a.md","to_ns":"n"},
                {"type":"governs","to_path":"a.md"}]"#,
            &ns("n"),
        )
        .unwrap();
        assert_eq!(links.len(), 2);
        assert_eq!(links[0].link_type, LinkType::References);
        assert_eq!(links[1].link_type, LinkType::Governs);
    }

    #[test]
    fn refusals_name_the_entry_and_field() {
        let n = ns("n");
        let cases: [(&str, &str); 11] = [
            ("not json", "invalid links JSON"),
            (r#"{"type":"governs"}"#, "must be a JSON array"),
            ("[1]", "links[0] must be an object"),
            (
                r#"[{"to_path":"a.md"}]"#,
                "links[0].type must be one of governs, references",
            ),
            (r#"[{"type":"cites","to_path":"a.md"}]"#, "(got \"cites\")"),
            (
                r#"[{"type":"governs","to_path":"a.md"},{"type":"governs"}]"#,
                "links[1].to_path",
            ),
            (
                r#"[{"type":"governs","to_path":"   "}]"#,
                "links[0].to_path: to_path is blank",
            ),
            (
                r#"[{"type":"governs","to_path":"../x"}]"#,
                "links[0].to_path: path must not contain '..'",
            ),
            (r#"[{"type":"governs","to_path":"a//b"}]"#, "'//'"),
            (
                r#"[{"type":"governs","to_path":"a.md","to_ns":"a/b"}]"#,
                "links[0].to_ns",
            ),
            (
                r#"[{"type":"governs","to_path":"a.md","to_ns":5}]"#,
                "links[0].to_ns: to_ns must be",
            ),
        ];
        for (input, cue) in cases {
            let err = parse_links(input, &n).unwrap_err().to_string();
            assert!(err.contains(cue), "{input}: {err}");
        }
    }

    #[test]
    fn the_text_is_bounded_before_it_is_parsed() {
        let long = format!("[{}]", " ".repeat(bounds::LINKS_JSON));
        assert_eq!(
            parse_links(&long, &ns("n")),
            Err(LinkError::TooLong {
                len: bounds::LINKS_JSON + 2
            })
        );
    }

    #[test]
    fn edges_of_split_and_sort_both_sides() {
        let edge = |f: &str, t: &str, ty: &str| Edge {
            from_ns: "n".into(),
            from_path: f.into(),
            link_type: ty.into(),
            to_ns: "n".into(),
            to_path: t.into(),
        };
        let edges = [
            edge("core.md", "b.md", "references"),
            edge("a.md", "core.md", "governs"),
            edge("core.md", "a.md", "governs"),
            edge("x.md", "y.md", "governs"),
        ];
        let view = EdgesOf::of("n", "core.md", &edges);
        let out: Vec<_> = view
            .outgoing
            .iter()
            .map(|l| (l.link_type.as_str(), l.to_path.as_str()))
            .collect();
        assert_eq!(out, [("governs", "a.md"), ("references", "b.md")]);
        assert_eq!(view.incoming.len(), 1);
        assert_eq!(view.incoming[0].from_path, "a.md");
    }

    #[test]
    fn dangling_edges_serialize_flags_as_integers() {
        let d = DanglingEdge {
            edge: Edge {
                from_ns: "n".into(),
                from_path: "a".into(),
                link_type: "governs".into(),
                to_ns: "n".into(),
                to_path: "b".into(),
            },
            source_missing: false,
            target_missing: true,
        };
        let v = serde_json::to_value(d).unwrap();
        assert_eq!(v["source_missing"], 0);
        assert_eq!(v["target_missing"], 1);
        assert_eq!(v["type"], "governs");
        assert!(dangling_targets_warning(&[]).is_none());
        let w = dangling_targets_warning(&["n/a.md".into(), "m/b.md".into()]).unwrap();
        assert!(
            w.starts_with("2 link target(s) do not exist as Capsid documents: n/a.md, m/b.md."),
            "{w}"
        );
    }

    proptest! {
        #[test]
        fn parsed_links_are_distinct_and_never_more_than_entries(
            picks in proptest::collection::vec((0usize..5, 0usize..3, proptest::option::of(0usize..2)), 0..12)
        ) {
            let paths = ["a.md", "b/c.md", "d.md"];
            let entries: Vec<Value> = picks.iter().map(|(t, p, n)| {
                let mut e = serde_json::json!({"type": LinkType::ALL[*t].as_str(), "to_path": paths[*p]});
                if let Some(n) = n { e["to_ns"] = Value::from(["n", "other"][*n]); }
                e
            }).collect();
            let links = parse_links(&Value::Array(entries).to_string(), &ns("n")).unwrap();
            prop_assert!(links.len() <= picks.len());
            for (i, a) in links.iter().enumerate() {
                prop_assert!(!links[i + 1..].contains(a));
            }
        }
    }
}
