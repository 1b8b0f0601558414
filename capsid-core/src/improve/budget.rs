//! Monthly budget caps (reference 8.4): the `improve:budget` setting, the over-cap stop, and
//! the watcher's early warning.
//!
//! A cap the store does not hold (unset, unreadable, malformed, not a positive number) falls
//! back to its default rather than to no cap, so a settings outage never uncaps the loop.

use serde_json::{Map, Value};

/// The Actions-minutes cap that applies when none is stored.
pub const DEFAULT_ACTIONS_MINUTES_MONTH: f64 = 300.0;
/// The model-spend cap (USD) that applies when none is stored.
pub const DEFAULT_MODEL_USD_MONTH: f64 = 50.0;
/// The fraction of a cap at which the watcher speaks up, before the cap stops the loop.
pub const WARN_FRACTION: f64 = 0.8;

/// The stored caps. `None` means "not stored": the default applies.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BudgetCaps {
    /// Monthly GitHub Actions minutes.
    pub actions_minutes_month: Option<f64>,
    /// Monthly model spend in USD (an estimate from token counts).
    pub model_usd_month: Option<f64>,
}

/// What the loop has spent this month (`SUM(ci_minutes)`, `SUM(cost_usd)` over runs started
/// this month).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MonthSpend {
    /// Actions minutes.
    pub ci_minutes: f64,
    /// Model spend in USD.
    pub cost_usd: f64,
}

/// Refusals of a budget update.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// A cap that is not a finite number above zero.
    #[error("{field} must be a positive number, got {value}")]
    NotPositive {
        /// `actions_minutes_month` or `model_usd_month`.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// An update that names neither cap.
    #[error("a budget update needs actions_minutes_month or model_usd_month")]
    Empty,
}

fn positive(value: Option<&Value>) -> Option<f64> {
    value
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v > 0.0)
}

impl BudgetCaps {
    /// Reads the stored setting. Each field is read on its own: a partial or partly invalid
    /// value keeps what it names correctly, and the rest is left to the defaults.
    pub fn from_setting(raw: Option<&str>) -> BudgetCaps {
        let Some(Value::Object(map)) = raw.and_then(|r| serde_json::from_str::<Value>(r).ok())
        else {
            return BudgetCaps::default();
        };
        BudgetCaps {
            actions_minutes_month: positive(map.get("actions_minutes_month")),
            model_usd_month: positive(map.get("model_usd_month")),
        }
    }

    /// The setting value to store: JSON with only the caps that are set.
    pub fn to_setting(&self) -> String {
        let mut map = Map::new();
        for (field, cap) in [
            ("actions_minutes_month", self.actions_minutes_month),
            ("model_usd_month", self.model_usd_month),
        ] {
            if let Some(number) = cap.and_then(serde_json::Number::from_f64) {
                map.insert(field.to_owned(), Value::Number(number));
            }
        }
        Value::Object(map).to_string()
    }

    /// Applies an `improve_run budget` update on top of `self`: each given cap must be a finite
    /// number above zero; an omitted cap keeps its stored value.
    pub fn updated(
        &self,
        actions_minutes_month: Option<f64>,
        model_usd_month: Option<f64>,
    ) -> Result<BudgetCaps, BudgetError> {
        if actions_minutes_month.is_none() && model_usd_month.is_none() {
            return Err(BudgetError::Empty);
        }
        let check = |field: &'static str, value: Option<f64>| match value {
            Some(v) if !(v.is_finite() && v > 0.0) => {
                Err(BudgetError::NotPositive { field, value: v })
            }
            _ => Ok(value),
        };
        Ok(BudgetCaps {
            actions_minutes_month: check("actions_minutes_month", actions_minutes_month)?
                .or(self.actions_minutes_month),
            model_usd_month: check("model_usd_month", model_usd_month)?.or(self.model_usd_month),
        })
    }

    /// The Actions-minutes cap in force.
    pub fn actions_minutes_cap(&self) -> f64 {
        self.actions_minutes_month
            .unwrap_or(DEFAULT_ACTIONS_MINUTES_MONTH)
    }

    /// The model-spend cap in force.
    pub fn model_usd_cap(&self) -> f64 {
        self.model_usd_month.unwrap_or(DEFAULT_MODEL_USD_MONTH)
    }
}

/// Why the loop stops for the month, naming each cap exceeded, or `None` within budget.
/// A cap is exceeded when spend is strictly above it.
pub fn over_cap(caps: &BudgetCaps, spend: &MonthSpend) -> Option<String> {
    let (minutes_cap, usd_cap) = (caps.actions_minutes_cap(), caps.model_usd_cap());
    let mut over = Vec::new();
    if spend.ci_minutes > minutes_cap {
        over.push(format!(
            "{:.1} of {minutes_cap} Actions minutes (actions_minutes_month)",
            spend.ci_minutes
        ));
    }
    if spend.cost_usd > usd_cap {
        over.push(format!(
            "${:.2} of ${usd_cap} model spend (model_usd_month)",
            spend.cost_usd
        ));
    }
    (!over.is_empty()).then(|| {
        format!(
            "budget exceeded: {}. Raise the caps in improve:budget or wait for the month to turn.",
            over.join(", ")
        )
    })
}

/// The caps at or above [`WARN_FRACTION`] of their limit, by field name, for the watcher.
pub fn caps_near_limit(caps: &BudgetCaps, spend: &MonthSpend) -> Vec<&'static str> {
    [
        ("model_usd_month", spend.cost_usd, caps.model_usd_cap()),
        (
            "actions_minutes_month",
            spend.ci_minutes,
            caps.actions_minutes_cap(),
        ),
    ]
    .into_iter()
    .filter(|(_, spent, cap)| *cap > 0.0 && spent / cap >= WARN_FRACTION)
    .map(|(field, _, _)| field)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_caps_are_read_field_by_field() {
        let table = [
            (None, BudgetCaps::default()),
            (Some("not json"), BudgetCaps::default()),
            (Some("[1,2]"), BudgetCaps::default()),
            (
                Some(r#"{"actions_minutes_month":120,"model_usd_month":"9"}"#),
                BudgetCaps {
                    actions_minutes_month: Some(120.0),
                    model_usd_month: None,
                },
            ),
            (
                Some(r#"{"actions_minutes_month":-5,"model_usd_month":12.5,"month":"2026-09"}"#),
                BudgetCaps {
                    actions_minutes_month: None,
                    model_usd_month: Some(12.5),
                },
            ),
            (
                Some(r#"{"actions_minutes_month":0}"#),
                BudgetCaps::default(),
            ),
        ];
        for (raw, want) in table {
            assert_eq!(BudgetCaps::from_setting(raw), want, "{raw:?}");
        }
        assert_eq!(
            BudgetCaps::default().actions_minutes_cap(),
            DEFAULT_ACTIONS_MINUTES_MONTH
        );
        assert_eq!(
            BudgetCaps::default().model_usd_cap(),
            DEFAULT_MODEL_USD_MONTH
        );
    }

    #[test]
    fn setting_round_trips() {
        for caps in [
            BudgetCaps::default(),
            BudgetCaps {
                actions_minutes_month: Some(90.5),
                model_usd_month: None,
            },
            BudgetCaps {
                actions_minutes_month: Some(1.0),
                model_usd_month: Some(0.25),
            },
        ] {
            assert_eq!(BudgetCaps::from_setting(Some(&caps.to_setting())), caps);
        }
    }

    #[test]
    fn updates_take_positive_numbers_only() {
        let stored = BudgetCaps {
            actions_minutes_month: Some(100.0),
            model_usd_month: Some(20.0),
        };
        assert_eq!(
            stored.updated(None, Some(35.0)),
            Ok(BudgetCaps {
                actions_minutes_month: Some(100.0),
                model_usd_month: Some(35.0)
            })
        );
        assert_eq!(stored.updated(None, None), Err(BudgetError::Empty));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = stored.updated(Some(bad), Some(10.0)).unwrap_err();
            assert!(
                err.to_string()
                    .contains("actions_minutes_month must be a positive number"),
                "{err}"
            );
        }
    }

    #[test]
    fn over_cap_names_each_cap_exceeded_and_equality_is_within() {
        let caps = BudgetCaps {
            actions_minutes_month: Some(100.0),
            model_usd_month: Some(10.0),
        };
        let at = MonthSpend {
            ci_minutes: 100.0,
            cost_usd: 10.0,
        };
        assert_eq!(over_cap(&caps, &at), None);
        let minutes = over_cap(
            &caps,
            &MonthSpend {
                ci_minutes: 100.5,
                cost_usd: 1.0,
            },
        )
        .unwrap_or_default();
        assert!(
            minutes.contains("actions_minutes_month") && !minutes.contains("model_usd_month"),
            "{minutes}"
        );
        let both = over_cap(
            &caps,
            &MonthSpend {
                ci_minutes: 101.0,
                cost_usd: 10.01,
            },
        )
        .unwrap_or_default();
        assert!(
            both.contains("actions_minutes_month") && both.contains("model_usd_month"),
            "{both}"
        );
        let defaults = over_cap(
            &BudgetCaps::default(),
            &MonthSpend {
                ci_minutes: 0.0,
                cost_usd: 50.5,
            },
        );
        assert!(
            defaults.is_some_and(|r| r.contains("$50.50 of $50")),
            "an unset cap is the default, not no cap"
        );
    }

    #[test]
    fn the_watcher_warns_from_eighty_percent() {
        let caps = BudgetCaps {
            actions_minutes_month: Some(100.0),
            model_usd_month: Some(10.0),
        };
        assert!(
            caps_near_limit(
                &caps,
                &MonthSpend {
                    ci_minutes: 79.9,
                    cost_usd: 7.99
                }
            )
            .is_empty()
        );
        assert_eq!(
            caps_near_limit(
                &caps,
                &MonthSpend {
                    ci_minutes: 80.0,
                    cost_usd: 1.0
                }
            ),
            vec!["actions_minutes_month"]
        );
        assert_eq!(
            caps_near_limit(
                &caps,
                &MonthSpend {
                    ci_minutes: 120.0,
                    cost_usd: 9.0
                }
            ),
            vec!["model_usd_month", "actions_minutes_month"]
        );
    }
}
