//! The preflight a run passes before it prunes or mirrors anything (reference 10.4): the
//! store has documents, and the full-text index finds a document it holds. A store that
//! fails it is dumped but never pruned, so a broken or emptied store cannot take its history
//! with it.

use schemars::JsonSchema;
use serde::Serialize;

/// What the preflight found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Preflight {
    /// Documents in the store.
    pub documents: u64,
    /// `ok`, `no match for …`, `error: …` or `skipped: …`.
    pub fts: String,
}

impl Preflight {
    /// Why pruning is refused, if it is: `documents-empty` or `fts-probe-failed: …`.
    pub fn prune_refusal(&self) -> Option<String> {
        if self.documents == 0 {
            return Some("documents-empty".to_owned());
        }
        if self.fts != "ok" {
            return Some(format!("fts-probe-failed: {}", self.fts));
        }
        None
    }
}

/// The word a probe searches for in a document: its longest word of letters and digits (at
/// least three characters; the rarest a cheap rule can find), from the title, else the
/// first part of the body.
pub fn probe_term(title: Option<&str>, body: Option<&str>) -> Option<String> {
    let longest = |text: &str| {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 3)
            .max_by_key(|w| w.chars().count())
            .map(str::to_owned)
    };
    title.and_then(longest).or_else(|| {
        body.map(|b| {
            let end = b.char_indices().nth(2_000).map_or(b.len(), |(i, _)| i);
            &b[..end]
        })
        .and_then(longest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruning_needs_documents_and_a_working_index() {
        let ok = Preflight {
            documents: 3,
            fts: "ok".into(),
        };
        assert_eq!(ok.prune_refusal(), None);
        let empty = Preflight {
            documents: 0,
            fts: "skipped: no documents".into(),
        };
        assert_eq!(empty.prune_refusal().as_deref(), Some("documents-empty"));
        let broken = Preflight {
            documents: 3,
            fts: "no match for 'lease'".into(),
        };
        assert_eq!(
            broken.prune_refusal().as_deref(),
            Some("fts-probe-failed: no match for 'lease'")
        );
    }

    #[test]
    fn the_probe_takes_the_longest_word() {
        assert_eq!(
            probe_term(Some("The conventions of it"), Some("x")).as_deref(),
            Some("conventions")
        );
        assert_eq!(
            probe_term(None, Some("a bb ccc dddd")).as_deref(),
            Some("dddd")
        );
        assert_eq!(probe_term(Some("a b"), Some("")), None);
        assert_eq!(probe_term(None, None), None);
    }
}
