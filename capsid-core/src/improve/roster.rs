//! The loop's vocabulary (reference 8.1, 8.2): the closed roster, the mode switch, the
//! experimental run conditions, and the driver lease length.

use std::fmt;

use crate::time::HOUR_MS;

/// The namespaces the loop may touch. A closed list: nothing joins by merely existing.
pub const ROSTER: [&str; 5] = ["capsid", "dustinedwards", "foxhound", "foxing", "germomics"];

/// How long the subscription-mode driver lease (`improve:driver:<ns>`) lives.
pub const DRIVER_LEASE_MS: i64 = 6 * HOUR_MS;

/// Whether `namespace` is on the roster (exact spelling).
pub fn on_roster(namespace: &str) -> bool {
    ROSTER.contains(&namespace)
}

/// Refusals of the loop's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RosterError {
    /// A namespace the loop was asked to touch is not on the roster.
    #[error("namespace '{namespace}' is not on the improve roster ({})", ROSTER.join(", "))]
    OffRoster {
        /// The namespace as asked.
        namespace: String,
    },
    /// `condition` named something other than the three conditions.
    #[error(
        "condition '{value}' is not one of full, no-memory, no-transfer; an unrecognised condition is refused, not defaulted"
    )]
    UnknownCondition {
        /// The value as given.
        value: String,
    },
}

/// Refuses a namespace that is not on the roster.
pub fn require_roster(namespace: &str) -> Result<(), RosterError> {
    if on_roster(namespace) {
        Ok(())
    } else {
        Err(RosterError::OffRoster {
            namespace: namespace.to_owned(),
        })
    }
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
    fn roster_is_closed_and_exact() {
        for ns in ["capsid", "dustinedwards", "foxhound", "foxing", "germomics"] {
            assert!(on_roster(ns), "{ns}");
            assert_eq!(require_roster(ns), Ok(()));
        }
        for ns in ["recova", "Capsid", " capsid", "", "capsid2"] {
            assert!(!on_roster(ns), "{ns:?}");
        }
        let refusal = require_roster("recova").unwrap_err().to_string();
        assert!(
            refusal.contains("'recova'") && refusal.contains("not on the improve roster"),
            "{refusal}"
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
