//! The closed vocabularies of the memory model (reference 4.2, 4.4): document types,
//! statuses and link types, validated on write so an off-schema value cannot silently
//! escape the lint loop.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A value outside one of the document vocabularies.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KindError {
    /// `type` is not one of the 14 document types.
    #[error(
        "unknown type '{0}'; valid types: {list}. Session logs and handoffs are 'episodic'.",
        list = join(DocType::ALL.iter().map(|t| t.as_str()))
    )]
    UnknownType(String),
    /// `status` is not one of the 6 statuses.
    #[error(
        "unknown status '{0}'; valid statuses: {list}. Status does not control lint visibility; only the archive/ path prefix does.",
        list = join(DocStatus::ALL.iter().map(|s| s.as_str()))
    )]
    UnknownStatus(String),
    /// A link's `type` is not one of the 5 link types.
    #[error(
        "unknown link type '{0}'; valid link types: {list}",
        list = join(LinkType::ALL.iter().map(|l| l.as_str()))
    )]
    UnknownLinkType(String),
}

fn join<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

macro_rules! vocabulary {
    (
        $(#[$doc:meta])* $name:ident, $error:ident,
        { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)+ }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every value, in the reference's order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The stored spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// Reads the stored spelling (exact, case-sensitive), or refuses listing the
            /// valid values.
            pub fn parse(value: &str) -> Result<Self, KindError> {
                match value {
                    $($text => Ok($name::$variant),)+
                    other => Err(KindError::$error(other.to_owned())),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary!(
    /// What a document is (14 types). Defaults to `note`.
    DocType, UnknownType,
    {
        /// The namespace's core document.
        Core => "core",
        /// A compiled wiki concept.
        Concept => "concept",
        /// Semantic memory.
        Semantic => "semantic",
        /// A plain note (the default).
        Note => "note",
        /// A ruling.
        Decision => "decision",
        /// A specification.
        Spec => "spec",
        /// A task; open until status `closed`.
        Task => "task",
        /// A protocol.
        Protocol => "protocol",
        /// A publishable post.
        Post => "post",
        /// A session log or handoff: raw material for consolidation.
        Episodic => "episodic",
        /// Procedural memory.
        Procedural => "procedural",
        /// Source material: raw material for consolidation.
        Source => "source",
        /// An MCP prompt template.
        Prompt => "prompt",
        /// Reference material (truth reports among them).
        Reference => "reference",
    }
);

vocabulary!(
    /// A document's editorial state (6 statuses). Defaults to `published`. Status never
    /// decides what the lint loop sees; only the `archive/` prefix does.
    DocStatus, UnknownStatus,
    {
        /// Being written.
        Draft => "draft",
        /// Ready for use.
        Ready => "ready",
        /// In force.
        Active => "active",
        /// Published (the default).
        Published => "published",
        /// Replaced by another document.
        Superseded => "superseded",
        /// Finished; the only status any query filters on (open tasks in `brief`).
        Closed => "closed",
    }
);

vocabulary!(
    /// A typed, directional edge between documents (5 types).
    LinkType, UnknownLinkType,
    {
        /// The source rules over the target.
        Governs => "governs",
        /// The source cites the target.
        References => "references",
        /// The source supersedes the target.
        Supersedes => "supersedes",
        /// The source replaces the target.
        Replaces => "replaces",
        /// The source depends on the target.
        DependsOn => "depends-on",
    }
);

impl Default for DocType {
    /// `note`, what a write without a type stores.
    fn default() -> Self {
        DocType::Note
    }
}

impl Default for DocStatus {
    /// `published`, what a write without a status stores.
    fn default() -> Self {
        DocStatus::Published
    }
}

impl DocType {
    /// Raw material the consolidation loop compiles and `lint finalize` archives.
    pub fn is_consumable(self) -> bool {
        matches!(self, DocType::Episodic | DocType::Source)
    }

    /// The compiled wiki `lint gather` returns (and stubs first when over budget).
    pub fn is_wiki(self) -> bool {
        matches!(self, DocType::Concept | DocType::Decision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabularies_have_the_reference_sizes_and_defaults() {
        assert_eq!(DocType::ALL.len(), 14);
        assert_eq!(DocStatus::ALL.len(), 6);
        assert_eq!(LinkType::ALL.len(), 5);
        assert_eq!(DocType::default(), DocType::Note);
        assert_eq!(DocStatus::default(), DocStatus::Published);
    }

    #[test]
    fn every_value_round_trips_through_its_spelling() {
        for t in DocType::ALL {
            assert_eq!(DocType::parse(t.as_str()), Ok(*t));
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        for s in DocStatus::ALL {
            assert_eq!(DocStatus::parse(s.as_str()), Ok(*s));
        }
        for l in LinkType::ALL {
            assert_eq!(LinkType::parse(l.as_str()), Ok(*l));
        }
        assert_eq!(LinkType::DependsOn.as_str(), "depends-on");
    }

    #[test]
    fn refusals_list_the_valid_values_and_hint_episodic() {
        let err = DocType::parse("session").unwrap_err().to_string();
        assert!(
            err.starts_with("unknown type 'session'; valid types: core, concept, semantic,"),
            "{err}"
        );
        assert!(err.contains("reference."), "{err}");
        assert!(err.contains("'episodic'"), "{err}");

        let err = DocStatus::parse("Published").unwrap_err().to_string();
        assert!(err.contains("unknown status 'Published'"), "{err}");
        assert!(
            err.contains("draft, ready, active, published, superseded, closed"),
            "{err}"
        );
        assert!(err.contains("archive/"), "{err}");

        let err = LinkType::parse("depends_on").unwrap_err().to_string();
        assert!(
            err.contains("governs, references, supersedes, replaces, depends-on"),
            "{err}"
        );
    }

    #[test]
    fn consumable_and_wiki_types() {
        let consumable: Vec<_> = DocType::ALL.iter().filter(|t| t.is_consumable()).collect();
        assert_eq!(consumable, [&DocType::Episodic, &DocType::Source]);
        let wiki: Vec<_> = DocType::ALL.iter().filter(|t| t.is_wiki()).collect();
        assert_eq!(wiki, [&DocType::Concept, &DocType::Decision]);
    }
}
