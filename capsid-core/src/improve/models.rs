//! The models the loop's `api` mode asks, by stage (reference 8.1), the settings that
//! override them, and the estimated cost of a completion from its token counts.
//!
//! A stored override that is unset, blank or not a model id falls back to the stage's
//! default, and a model the price table does not know is priced as the dearest it does know,
//! so a typo in a setting can neither stop the loop nor make the budget cap undercount.

use crate::improve::keys;
use crate::ports::ModelUsage;

/// A stage of the loop that asks a model. The reference's `triage` stage is not one: the
/// attempt model chooses what to attempt from the scores document, the run's history and the
/// tree in the same call that writes the change (ARCHITECTURE.md says why).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The reward-hacking monitor's reading of an attempt's change (`improve::monitor`).
    Monitor,
    /// Writes an attempt.
    Attempt,
    /// Abstracts a kept attempt into a skill.
    Abstract,
    /// The weekly meta-loop.
    Meta,
}

/// USD per million tokens of one model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    /// Per million prompt tokens.
    pub input_per_mtok: f64,
    /// Per million answer tokens.
    pub output_per_mtok: f64,
}

/// The Haiku tier.
pub const HAIKU: &str = "claude-haiku-4-5";
/// The Sonnet tier.
pub const SONNET: &str = "claude-sonnet-5";
/// The Opus tier.
pub const OPUS: &str = "claude-opus-5";

/// What each known model costs. The dearest entry prices every model not listed.
pub const PRICES: [(&str, Price); 3] = [
    (
        HAIKU,
        Price {
            input_per_mtok: 1.0,
            output_per_mtok: 5.0,
        },
    ),
    (
        SONNET,
        Price {
            input_per_mtok: 3.0,
            output_per_mtok: 15.0,
        },
    ),
    (
        OPUS,
        Price {
            input_per_mtok: 15.0,
            output_per_mtok: 75.0,
        },
    ),
];

/// The longest model id a setting may hold.
pub const MODEL_ID_MAX: usize = 64;

impl Stage {
    /// Every stage, in the loop's order.
    pub const ALL: [Stage; 4] = [Stage::Attempt, Stage::Monitor, Stage::Abstract, Stage::Meta];

    /// The stage's name, as its settings key spells it.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Monitor => "monitor",
            Stage::Attempt => "attempt",
            Stage::Abstract => "abstract",
            Stage::Meta => "meta",
        }
    }

    /// The model the stage asks when no setting overrides it.
    pub fn default_model(self) -> &'static str {
        match self {
            Stage::Monitor => HAIKU,
            Stage::Attempt => SONNET,
            Stage::Abstract | Stage::Meta => OPUS,
        }
    }

    /// The settings key that overrides the stage's model (`improve:model:<stage>`).
    pub fn setting_key(self) -> String {
        keys::model_key(self)
    }
}

/// Whether `id` is a model id: `^[a-z0-9][a-z0-9.-]{0,63}$`.
pub fn is_model_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    let Some(first) = bytes.first() else {
        return false;
    };
    let plain = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    bytes.len() <= MODEL_ID_MAX
        && plain(first)
        && bytes[1..]
            .iter()
            .all(|b| plain(b) || *b == b'.' || *b == b'-')
}

/// The model `stage` asks: the stored `setting` (trimmed) when it is a model id, else the
/// stage's default.
pub fn model_for(stage: Stage, setting: Option<&str>) -> String {
    setting
        .map(str::trim)
        .filter(|id| is_model_id(id))
        .unwrap_or(stage.default_model())
        .to_owned()
}

/// The price of `model`: its table entry, the entry of the model a dated snapshot id
/// (`<model>-YYYYMMDD`, as the API reports it) names, or else the dearest entry.
pub fn price_of(model: &str) -> Price {
    let base = match model.rsplit_once('-') {
        Some((base, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => model,
    };
    PRICES
        .iter()
        .find(|(name, _)| *name == model || *name == base)
        .map_or_else(dearest, |(_, price)| *price)
}

fn dearest() -> Price {
    let mut top = PRICES[0].1;
    for (_, price) in &PRICES[1..] {
        top.input_per_mtok = top.input_per_mtok.max(price.input_per_mtok);
        top.output_per_mtok = top.output_per_mtok.max(price.output_per_mtok);
    }
    top
}

/// The estimated cost in USD of a completion by `model` that used `usage`.
pub fn estimate_usd(model: &str, usage: ModelUsage) -> f64 {
    let price = price_of(model);
    // u64 → f64 rounds above 2^53 but stays monotone, finite and non-negative.
    (usage.input_tokens as f64 * price.input_per_mtok
        + usage.output_tokens as f64 * price.output_per_mtok)
        / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn usage(input_tokens: u64, output_tokens: u64) -> ModelUsage {
        ModelUsage {
            input_tokens,
            output_tokens,
        }
    }

    #[test]
    fn each_stage_has_the_reference_default_and_its_own_key() {
        let table: Vec<(&str, &str, String)> = Stage::ALL
            .iter()
            .map(|s| (s.name(), s.default_model(), s.setting_key()))
            .collect();
        assert_eq!(
            table,
            vec![
                (
                    "attempt",
                    "claude-sonnet-5",
                    "improve:model:attempt".to_owned()
                ),
                (
                    "monitor",
                    "claude-haiku-4-5",
                    "improve:model:monitor".to_owned()
                ),
                (
                    "abstract",
                    "claude-opus-5",
                    "improve:model:abstract".to_owned()
                ),
                ("meta", "claude-opus-5", "improve:model:meta".to_owned()),
            ]
        );
    }

    #[test]
    fn a_valid_setting_overrides_the_default() {
        assert_eq!(
            model_for(Stage::Attempt, Some("claude-opus-4-1")),
            "claude-opus-4-1"
        );
        assert_eq!(
            model_for(Stage::Monitor, Some("  claude-3.5-haiku\n")),
            "claude-3.5-haiku"
        );
        assert_eq!(model_for(Stage::Meta, Some("9")), "9");
    }

    #[test]
    fn unset_blank_or_invalid_settings_fall_back_to_the_default() {
        let long = format!("a{}", "b".repeat(MODEL_ID_MAX));
        let at_limit = format!("a{}", "b".repeat(MODEL_ID_MAX - 1));
        assert_eq!(model_for(Stage::Attempt, Some(&at_limit)), at_limit);
        for bad in [
            None,
            Some(""),
            Some("   "),
            Some("Claude-Sonnet-5"),
            Some("-claude"),
            Some(".claude"),
            Some("claude sonnet"),
            Some("claude_sonnet"),
            Some("claude/../../x"),
            Some("\"claude-sonnet-5\""),
            Some("claude-é"),
            Some(long.as_str()),
        ] {
            assert_eq!(
                model_for(Stage::Attempt, bad),
                "claude-sonnet-5",
                "setting {bad:?}"
            );
            assert_eq!(
                model_for(Stage::Monitor, bad),
                "claude-haiku-4-5",
                "setting {bad:?}"
            );
        }
    }

    #[test]
    fn known_models_cost_their_table_price() {
        let million = usage(1_000_000, 1_000_000);
        assert_eq!(estimate_usd("claude-haiku-4-5", million), 6.0);
        assert_eq!(estimate_usd("claude-sonnet-5", million), 18.0);
        assert_eq!(estimate_usd("claude-opus-5", million), 90.0);
        assert_eq!(estimate_usd("claude-sonnet-5", usage(2_000, 500)), 0.0135);
        assert_eq!(estimate_usd("claude-haiku-4-5", usage(0, 0)), 0.0);
    }

    #[test]
    fn a_dated_snapshot_costs_its_model_and_anything_unknown_the_dearest() {
        let u = usage(1_000_000, 0);
        assert_eq!(estimate_usd("claude-haiku-4-5-20251001", u), 1.0);
        assert_eq!(estimate_usd("claude-sonnet-5-20260301", u), 3.0);
        for unknown in [
            "claude-haiku-4-5-2025100",
            "claude-haiku-4-5-latest",
            "claude-haiku",
            "gpt-9",
            "",
        ] {
            assert_eq!(estimate_usd(unknown, u), 15.0, "{unknown:?}");
            assert_eq!(estimate_usd(unknown, usage(0, 1_000_000)), 75.0);
        }
    }

    fn any_model() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(HAIKU.to_owned()),
            Just(SONNET.to_owned()),
            Just(OPUS.to_owned()),
            "[a-z0-9.-]{0,70}",
        ]
    }

    proptest! {
        #[test]
        fn cost_is_finite_non_negative_and_monotone_in_tokens(
            model in any_model(),
            input in any::<u64>(),
            output in any::<u64>(),
            more_in in any::<u64>(),
            more_out in any::<u64>(),
        ) {
            let base = estimate_usd(&model, usage(input, output));
            prop_assert!(base.is_finite() && base >= 0.0, "{base}");
            let bigger = usage(input.saturating_add(more_in), output.saturating_add(more_out));
            let after = estimate_usd(&model, bigger);
            prop_assert!(after.is_finite() && after >= base, "{base} then {after}");
        }

        #[test]
        fn no_model_costs_more_than_the_dearest_or_less_than_nothing(
            model in any_model(),
            input in 0u64..10_000_000_000,
            output in 0u64..10_000_000_000,
        ) {
            let u = usage(input, output);
            let cost = estimate_usd(&model, u);
            prop_assert!(cost <= estimate_usd("not-a-listed-model", u));
            prop_assert!(cost >= estimate_usd(HAIKU, u));
        }

        #[test]
        fn model_for_returns_a_model_id_for_any_setting(raw in proptest::option::of(".{0,80}")) {
            for stage in Stage::ALL {
                let id = model_for(stage, raw.as_deref());
                prop_assert!(is_model_id(&id), "{id:?}");
            }
        }
    }
}
