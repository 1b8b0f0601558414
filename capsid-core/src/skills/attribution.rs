//! Outcome attribution (reference 9): a skill earns credit only when it was used and the
//! verifier reported on the work itself.

use std::fmt;

/// Why a run ended, as the verifier (not the driver) reports it.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum RunSignal {
    /// The verifier confirmed the work.
    VerifiedSuccess,
    /// The verifier found the work wrong.
    VerifiedFailure,
    /// The run succeeded without following the offered skill.
    Improvised,
    /// The run died on the environment, not on the work.
    EnvironmentFailure,
}

impl RunSignal {
    /// All signals.
    pub const ALL: [RunSignal; 4] = [
        RunSignal::VerifiedSuccess,
        RunSignal::VerifiedFailure,
        RunSignal::Improvised,
        RunSignal::EnvironmentFailure,
    ];

    /// The wire value.
    pub fn name(self) -> &'static str {
        match self {
            RunSignal::VerifiedSuccess => "verified-success",
            RunSignal::VerifiedFailure => "verified-failure",
            RunSignal::Improvised => "improvised",
            RunSignal::EnvironmentFailure => "environment-failure",
        }
    }

    /// The signal named exactly `value`.
    pub fn parse(value: &str) -> Option<RunSignal> {
        RunSignal::ALL.into_iter().find(|s| s.name() == value)
    }
}

impl fmt::Display for RunSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one run earns one offered skill.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Credit {
    /// Used, and the verifier reported success.
    Win,
    /// Used, and the verifier reported failure.
    Loss,
    /// Nothing: unused, improvised, or an environment failure.
    None,
}

/// The credit a skill earns from a run: only a used skill with a verified outcome moves.
/// Charging a loss for an outage would retire skills for being present during it.
pub fn attribute(used: bool, signal: RunSignal) -> Credit {
    match (used, signal) {
        (true, RunSignal::VerifiedSuccess) => Credit::Win,
        (true, RunSignal::VerifiedFailure) => Credit::Loss,
        _ => Credit::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribution_table() {
        let table = [
            (true, RunSignal::VerifiedSuccess, Credit::Win),
            (true, RunSignal::VerifiedFailure, Credit::Loss),
            (true, RunSignal::Improvised, Credit::None),
            (true, RunSignal::EnvironmentFailure, Credit::None),
            (false, RunSignal::VerifiedSuccess, Credit::None),
            (false, RunSignal::VerifiedFailure, Credit::None),
            (false, RunSignal::Improvised, Credit::None),
            (false, RunSignal::EnvironmentFailure, Credit::None),
        ];
        for (used, signal, want) in table {
            assert_eq!(attribute(used, signal), want, "used={used} {signal}");
        }
    }

    #[test]
    fn signals_round_trip_their_wire_names() {
        for s in RunSignal::ALL {
            assert_eq!(RunSignal::parse(s.name()), Some(s));
            assert_eq!(
                serde_json::to_value(s).ok(),
                Some(serde_json::Value::from(s.name()))
            );
        }
        assert_eq!(RunSignal::parse("verified_success"), None);
    }
}
