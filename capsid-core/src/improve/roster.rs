//! The loop's vocabulary (reference 8.1, 8.2): the roster (a setting the admin edits, empty
//! until then), the mode switch, the experimental run conditions,
//! and the driver lease length.

use std::fmt;

use crate::time::HOUR_MS;

/// The most namespaces the roster holds (every tick walks each of them).
pub const ROSTER_MAX: usize = 64;

/// How long the subscription-mode driver lease (`improve:driver:<ns>`) lives.
pub const DRIVER_LEASE_MS: i64 = 6 * HOUR_MS;

/// The namespaces that may take part in autonomy and the loop, in the order they joined.
/// Nothing joins by merely existing: the admin adds it (`improve_run` action `roster`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roster {
    namespaces: Vec<String>,
    /// Why the stored value was not read, when it was not (the roster is then empty).
    pub unreadable: Option<String>,
}

/// Empty: a fresh install names no one's projects; the admin adds its own
/// (`capsid improve roster add`).
impl Default for Roster {
    fn default() -> Roster {
        Roster {
            namespaces: Vec::new(),
            unreadable: None,
        }
    }
}

impl Roster {
    /// The roster a stored `improve:roster` value means: unset is empty; a value
    /// that is not a JSON array of valid namespace names is an empty roster (fail closed:
    /// nothing takes part until the admin rewrites it), with the reason kept.
    pub fn from_setting(raw: Option<&str>) -> Roster {
        let Some(raw) = raw else {
            return Roster::default();
        };
        let closed = |why: String| Roster {
            namespaces: Vec::new(),
            unreadable: Some(why),
        };
        let list: Vec<String> = match serde_json::from_str(raw) {
            Ok(list) => list,
            Err(e) => {
                return closed(format!(
                    "the stored roster is not a JSON array of names ({e}); nothing is on it"
                ));
            }
        };
        let mut roster = Roster {
            namespaces: Vec::new(),
            unreadable: None,
        };
        for ns in list {
            if let Err(e) = crate::paths::Namespace::parse(ns.as_str()) {
                return closed(format!(
                    "the stored roster holds a bad name ({e}); nothing is on it"
                ));
            }
            if !roster.contains(&ns) {
                roster.namespaces.push(ns);
            }
        }
        roster.namespaces.truncate(ROSTER_MAX);
        roster
    }

    /// The value `improve:roster` stores.
    pub fn to_setting(&self) -> String {
        serde_json::to_string(&self.namespaces).unwrap_or_else(|_| "[]".into())
    }

    /// The namespaces, in order.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }

    /// Whether `namespace` is on it (exact spelling).
    pub fn contains(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|n| n == namespace)
    }

    /// The roster with `namespace` added (a name already on it changes nothing).
    pub fn with(&self, namespace: &str) -> Result<Roster, RosterError> {
        crate::paths::Namespace::parse(namespace).map_err(|why| RosterError::BadName { why })?;
        let mut next = Roster {
            namespaces: self.namespaces.clone(),
            unreadable: None,
        };
        if !next.contains(namespace) {
            if next.namespaces.len() >= ROSTER_MAX {
                return Err(RosterError::Full);
            }
            next.namespaces.push(namespace.to_owned());
        }
        Ok(next)
    }

    /// The roster without `namespace` (a name not on it changes nothing).
    pub fn without(&self, namespace: &str) -> Roster {
        Roster {
            namespaces: self
                .namespaces
                .iter()
                .filter(|n| *n != namespace)
                .cloned()
                .collect(),
            unreadable: None,
        }
    }

    /// Refuses a namespace that is not on it.
    pub fn require(&self, namespace: &str) -> Result<(), RosterError> {
        if self.contains(namespace) {
            Ok(())
        } else {
            Err(RosterError::OffRoster {
                namespace: namespace.to_owned(),
                roster: self.namespaces.join(", "),
            })
        }
    }
}

/// Refusals of the loop's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RosterError {
    /// A namespace the loop was asked to touch is not on the roster.
    #[error("namespace '{namespace}' is not on the improve roster ({roster})")]
    OffRoster {
        /// The namespace as asked.
        namespace: String,
        /// The roster, comma-separated.
        roster: String,
    },
    /// A name that is no namespace.
    #[error("roster: {why}")]
    BadName {
        /// Which rule it breaks.
        why: String,
    },
    /// The roster holds [`ROSTER_MAX`] names already.
    #[error("roster: the roster holds {ROSTER_MAX} namespaces already; remove one first")]
    Full,
    /// `condition` named something other than the three conditions.
    #[error(
        "condition '{value}' is not one of full, no-memory, no-transfer; an unrecognised condition is refused, not defaulted"
    )]
    UnknownCondition {
        /// The value as given.
        value: String,
    },
}

/// The loop's mode (`improve_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImproveMode {
    /// The loop does nothing. The default.
    Off,
    /// The server writes signed task documents that a local session executes.
    Subscription,
    /// The server calls the model itself.
    Api,
}

impl ImproveMode {
    /// All modes, in the tool's enum order.
    pub const ALL: [ImproveMode; 3] = [
        ImproveMode::Off,
        ImproveMode::Subscription,
        ImproveMode::Api,
    ];

    /// The wire value.
    pub fn name(self) -> &'static str {
        match self {
            ImproveMode::Off => "off",
            ImproveMode::Subscription => "subscription",
            ImproveMode::Api => "api",
        }
    }

    /// The mode named exactly `value` (the tool's `value` enum).
    pub fn parse(value: &str) -> Option<ImproveMode> {
        ImproveMode::ALL.into_iter().find(|m| m.name() == value)
    }

    /// The mode a stored setting means: trimmed and lower-cased; unset (`None`), unreadable
    /// (the caller passes `None`) and unrecognised values all mean `Off`, because wrongly
    /// running costs five repos machine-authored branches and wrongly idling costs a night.
    pub fn from_setting(raw: Option<&str>) -> ImproveMode {
        raw.and_then(|v| ImproveMode::parse(&v.trim().to_lowercase()))
            .unwrap_or(ImproveMode::Off)
    }
}

impl fmt::Display for ImproveMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The experimental condition a run executes under, recorded on the run and its audit rows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum RunCondition {
    /// Everything on.
    #[default]
    Full,
    /// Base selection gets no lineage history.
    NoMemory,
    /// No cross-project skill is offered.
    NoTransfer,
}

impl RunCondition {
    /// All conditions.
    pub const ALL: [RunCondition; 3] = [
        RunCondition::Full,
        RunCondition::NoMemory,
        RunCondition::NoTransfer,
    ];

    /// The wire value.
    pub fn name(self) -> &'static str {
        match self {
            RunCondition::Full => "full",
            RunCondition::NoMemory => "no-memory",
            RunCondition::NoTransfer => "no-transfer",
        }
    }

    /// The condition named exactly `value`; anything else is refused rather than defaulted.
    pub fn parse(value: &str) -> Result<RunCondition, RosterError> {
        RunCondition::ALL
            .into_iter()
            .find(|c| c.name() == value)
            .ok_or_else(|| RosterError::UnknownCondition {
                value: value.to_owned(),
            })
    }

    /// Whether base selection may read lineage history.
    pub fn uses_memory(self) -> bool {
        self != RunCondition::NoMemory
    }

    /// Whether cross-project skills may be offered.
    pub fn offers_transfer(self) -> bool {
        self != RunCondition::NoTransfer
    }
}

impl fmt::Display for RunCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_roster_is_empty_and_names_no_one() {
        let fresh = Roster::default();
        assert!(fresh.namespaces().is_empty());
        for ns in ["capsid", "homepage", "atlas", "orchard", "borealis"] {
            assert!(!fresh.contains(ns), "{ns}");
        }
        let refusal = fresh.require("recova").unwrap_err().to_string();
        assert!(
            refusal.contains("'recova'") && refusal.contains("not on the improve roster"),
            "{refusal}"
        );
        let r = Roster::from_setting(Some(r#"["capsid"]"#));
        for ns in ["Capsid", " capsid", "", "capsid2"] {
            assert!(!r.contains(ns), "exact spelling: {ns:?}");
        }
        assert!(r.contains("capsid"));
    }

    #[test]
    fn the_roster_setting_is_read_fail_closed_and_edited_exactly() {
        assert_eq!(Roster::from_setting(None), Roster::default());
        assert!(Roster::from_setting(None).namespaces().is_empty());
        let r = Roster::from_setting(Some(r#"["alpha","beta","alpha"]"#));
        assert_eq!(r.namespaces(), ["alpha", "beta"]);
        assert!(r.unreadable.is_none());
        for bad in ["not json", r#"{"a":1}"#, r#"["a/b"]"#, r#"[1]"#] {
            let r = Roster::from_setting(Some(bad));
            assert!(r.namespaces().is_empty(), "{bad}");
            assert!(r.unreadable.is_some(), "{bad}");
        }
        let r = Roster::from_setting(Some("[]"));
        let r = r
            .with("alpha")
            .unwrap()
            .with("alpha")
            .unwrap()
            .with("beta")
            .unwrap();
        assert_eq!(r.to_setting(), r#"["alpha","beta"]"#);
        assert_eq!(r.without("alpha").namespaces(), ["beta"]);
        assert_eq!(r.without("zeta"), r);
        assert!(matches!(r.with("not/ok"), Err(RosterError::BadName { .. })));
        let err = r.require("gamma").unwrap_err().to_string();
        assert!(
            err.contains("'gamma'") && err.contains("alpha, beta"),
            "{err}"
        );
        let mut full = Roster::from_setting(Some("[]"));
        for i in 0..ROSTER_MAX {
            full = full.with(&format!("ns{i}")).unwrap();
        }
        assert_eq!(full.with("one-more"), Err(RosterError::Full));
        assert!(
            full.with("ns0").is_ok(),
            "a name already on it changes nothing"
        );
    }

    #[test]
    fn a_mode_setting_means_off_unless_it_names_a_mode() {
        let table = [
            (None, ImproveMode::Off),
            (Some("api"), ImproveMode::Api),
            (Some("  Subscription \n"), ImproveMode::Subscription),
            (Some("OFF"), ImproveMode::Off),
            (Some("on"), ImproveMode::Off),
            (Some(""), ImproveMode::Off),
            (Some("api,subscription"), ImproveMode::Off),
        ];
        for (raw, want) in table {
            assert_eq!(ImproveMode::from_setting(raw), want, "{raw:?}");
        }
        assert_eq!(ImproveMode::parse("API"), None, "the tool's enum is exact");
    }

    #[test]
    fn conditions_parse_exactly_and_each_switches_something() {
        assert_eq!(RunCondition::parse("full"), Ok(RunCondition::Full));
        assert_eq!(RunCondition::parse("no-memory"), Ok(RunCondition::NoMemory));
        assert_eq!(
            RunCondition::parse("no-transfer"),
            Ok(RunCondition::NoTransfer)
        );
        for bad in ["", "Full", "no_memory", "none"] {
            let err = RunCondition::parse(bad).unwrap_err();
            assert!(err.to_string().contains(&format!("'{bad}'")), "{err}");
        }
        assert!(RunCondition::Full.uses_memory() && RunCondition::Full.offers_transfer());
        assert!(!RunCondition::NoMemory.uses_memory() && RunCondition::NoMemory.offers_transfer());
        assert!(
            RunCondition::NoTransfer.uses_memory() && !RunCondition::NoTransfer.offers_transfer()
        );
        assert_eq!(RunCondition::default(), RunCondition::Full);
    }
}
