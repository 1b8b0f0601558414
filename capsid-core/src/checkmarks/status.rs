//! The four vocabularies of checkmarks and log entries, each stored as its wire spelling: an
//! agent's status, a gate's result (tests, build), an entry's visibility and its CI verdict.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in the vocabulary's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and wire spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value spelled exactly `text`, if any.
            pub fn parse(text: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|v| v.as_str() == text)
            }

            /// The vocabulary as a refusal lists it.
            pub fn listed() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
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
    /// Where an agent stands, as its checkmark says.
    AgentStatus {
        /// Working; nothing is needed from a human.
        Working => "working",
        /// Stopped on a question only a human can answer.
        PausedForInput => "paused_for_input",
        /// Stopped on something a human must do (a gate, a credential, a push).
        Blocked => "blocked",
        /// Finished, with a passing test run to show for it.
        Done => "done",
    }
);

vocabulary!(
    /// What a gate (the test run, the build check) last said.
    GateStatus {
        /// It passed.
        Pass => "pass",
        /// It failed.
        Fail => "fail",
        /// Not run, or not reported.
        Unknown => "unknown",
        /// Skipped on purpose: a clean tree with nothing shipped (a scout).
        Skipped => "skipped",
    }
);

vocabulary!(
    /// Who may read a log entry.
    Visibility {
        /// Readers of its namespace.
        Project => "project",
        /// Every reader, from any namespace (the shared feed).
        Global => "global",
    }
);

vocabulary!(
    /// The CI verdict of the commit a log entry pushed.
    CiStatus {
        /// Nothing was pushed.
        NotApplicable => "not_applicable",
        /// Pushed; CI has not answered yet.
        Pending => "pending",
        /// CI passed.
        Pass => "pass",
        /// CI failed.
        Fail => "fail",
    }
);

impl AgentStatus {
    /// Whether the agent waits on a human (and so must say what it needs).
    pub fn waits_on_a_human(self) -> bool {
        matches!(self, AgentStatus::PausedForInput | AgentStatus::Blocked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vocabulary_round_trips_its_spelling() {
        for s in AgentStatus::ALL {
            assert_eq!(AgentStatus::parse(s.as_str()), Some(*s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for s in GateStatus::ALL {
            assert_eq!(GateStatus::parse(s.as_str()), Some(*s));
        }
        for s in Visibility::ALL {
            assert_eq!(Visibility::parse(s.as_str()), Some(*s));
        }
        for s in CiStatus::ALL {
            assert_eq!(CiStatus::parse(s.as_str()), Some(*s));
        }
        assert_eq!(AgentStatus::parse("Working"), None);
        assert_eq!(AgentStatus::parse("finished"), None);
        assert_eq!(
            AgentStatus::listed(),
            "working, paused_for_input, blocked, done"
        );
        assert_eq!(GateStatus::listed(), "pass, fail, unknown, skipped");
        let err = serde_json::from_value::<AgentStatus>(serde_json::json!("finished"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("paused_for_input"), "{err}");
    }

    #[test]
    fn only_paused_and_blocked_wait_on_a_human() {
        let waiting: Vec<_> = AgentStatus::ALL
            .iter()
            .filter(|s| s.waits_on_a_human())
            .collect();
        assert_eq!(
            waiting,
            [&AgentStatus::PausedForInput, &AgentStatus::Blocked]
        );
    }
}
