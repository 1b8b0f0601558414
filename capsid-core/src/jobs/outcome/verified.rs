//! Which outcome fields the server checked itself, stored as JSON beside the counts.
//!
//! Written with all five keys so a reader of the raw row need not know that an absent key
//! means "not verified". Read fail-safe: corrupt JSON, or any value but `true`, counts as
//! not verified, which withholds a rate rather than inventing one.

use serde::Serialize;
use serde_json::Value;

/// The five verifiable fields of an outcome row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VerifiedFields {
    /// `prs_opened` came from GitHub.
    pub prs_opened: bool,
    /// `prs_merged` came from GitHub.
    pub prs_merged: bool,
    /// `commits` came from GitHub.
    pub commits: bool,
    /// `files_changed` came from GitHub.
    pub files_changed: bool,
    /// `ci_green` was decided from finished CI runs.
    pub ci_green: bool,
}

impl VerifiedFields {
    /// The stored JSON text, keys in the Worker's order.
    pub fn to_json(&self) -> String {
        format!(
            r#"{{"prs_opened":{},"prs_merged":{},"commits":{},"files_changed":{},"ci_green":{}}}"#,
            self.prs_opened, self.prs_merged, self.commits, self.files_changed, self.ci_green
        )
    }

    /// Reads a stored `verified` text; anything unreadable is "nothing verified".
    pub fn parse(stored: &str) -> VerifiedFields {
        let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(stored) else {
            return VerifiedFields::default();
        };
        let checked = |key: &str| fields.get(key) == Some(&Value::Bool(true));
        VerifiedFields {
            prs_opened: checked("prs_opened"),
            prs_merged: checked("prs_merged"),
            commits: checked("commits"),
            files_changed: checked("files_changed"),
            ci_green: checked("ci_green"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn writes_all_five_keys() {
        assert_eq!(
            VerifiedFields::default().to_json(),
            r#"{"prs_opened":false,"prs_merged":false,"commits":false,"files_changed":false,"ci_green":false}"#
        );
        let all = VerifiedFields {
            prs_opened: true,
            prs_merged: true,
            commits: true,
            files_changed: true,
            ci_green: true,
        };
        assert_eq!(serde_json::to_string(&all).unwrap(), all.to_json());
    }

    #[test]
    fn reads_fail_safe() {
        let nothing = VerifiedFields::default();
        for stored in [
            "",
            "{",
            "null",
            "[true]",
            "true",
            r#"{"prs_opened":"true"}"#,
            r#"{"prs_opened":1}"#,
        ] {
            assert_eq!(VerifiedFields::parse(stored), nothing, "{stored}");
        }
        let some = VerifiedFields::parse(r#"{"prs_opened":true,"ci_green":true,"extra":true}"#);
        assert_eq!(
            some,
            VerifiedFields {
                prs_opened: true,
                ci_green: true,
                ..nothing
            }
        );
    }

    proptest! {
        #[test]
        fn round_trips(a in any::<bool>(), b in any::<bool>(), c in any::<bool>(), d in any::<bool>(), e in any::<bool>()) {
            let v = VerifiedFields { prs_opened: a, prs_merged: b, commits: c, files_changed: d, ci_green: e };
            prop_assert_eq!(VerifiedFields::parse(&v.to_json()), v);
        }
    }
}
