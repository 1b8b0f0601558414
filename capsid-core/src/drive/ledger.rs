//! What a job's model calls cost, as the metered proxy counts them (issue 49): money as whole
//! micro-dollars, the price table (shipped defaults, the owner's overrides, an unknown model at
//! the table's highest rates and flagged, never at zero), a call's usage priced, and the per-job
//! cap checked **before** each call: the call's worst case is reserved against what is left,
//! and settled to what the upstream reported when its answer ends.
//!
//! The worst case of a call is its input tokens at the dearest input rate the model has
//! (uncached, or written to the cache) plus its `max_tokens` of output. The proxy first counts
//! the input from the request's size ([`tokens_in`]: [`BYTES_PER_TOKEN`] bytes a token, the
//! vendors' own rule of thumb); when that estimate does not fit in what is left, it asks the
//! upstream to count the input exactly and reserves again with that count. The output bound is
//! exact, because the vendor stops at `max_tokens`.
//! When what is left cannot pay for the requested `max_tokens`, the call goes out with a
//! smaller `max_tokens` that it can pay for (the vendor enforces it), and it is refused only
//! when even [`MIN_OUTPUT_TOKENS`] do not fit.
//!
//! Pure: the proxy (`capsid-box`) carries the bytes and asks these functions.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

/// A sum of money in whole micro-dollars (one millionth of a US dollar). Integer, so a ledger
/// sums exactly and two reservations never race on a rounding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd(u64);

impl Usd {
    /// Nothing.
    pub const ZERO: Usd = Usd(0);

    /// `micros` micro-dollars.
    pub const fn from_micros(micros: u64) -> Usd {
        Usd(micros)
    }

    /// The amount in micro-dollars.
    pub const fn micros(self) -> u64 {
        self.0
    }

    /// `dollars`, rounded to the nearest micro-dollar; `None` for a negative, infinite or
    /// NaN amount, or one over a trillion dollars.
    pub fn from_dollars(dollars: f64) -> Option<Usd> {
        if !dollars.is_finite() || !(0.0..=1e12).contains(&dollars) {
            return None;
        }
        Some(Usd((dollars * 1_000_000.0).round() as u64))
    }

    /// The amount in dollars (for JSON and display).
    pub fn dollars(self) -> f64 {
        self.0 as f64 / 1_000_000.0
    }

    /// `self + other`, saturating.
    pub const fn plus(self, other: Usd) -> Usd {
        Usd(self.0.saturating_add(other.0))
    }

    /// `self - other`, or nothing when `other` is more.
    pub const fn minus(self, other: Usd) -> Usd {
        Usd(self.0.saturating_sub(other.0))
    }
}

/// On the wire a sum is dollars, as the Worker's columns are (`1.5`).
impl serde::Serialize for Usd {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.dollars())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Usd, D::Error> {
        let dollars = f64::deserialize(deserializer)?;
        Usd::from_dollars(dollars).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "a sum of US dollars must be zero or more, not {dollars}"
            ))
        })
    }
}

impl fmt::Display for Usd {
    /// `$0.0123`: four decimals, the precision a person reads a session's cost in.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${:.4}", self.dollars())
    }
}

/// The token counts of one model call, as the upstream reported them, in the four classes the
/// vendors price apart. OpenAI's Responses API counts cached input inside `input_tokens`; its
/// reader moves them to `cache_read_tokens`, so the four never overlap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens read uncached.
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
}

impl Usage {
    /// Every token of the call.
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_write_tokens)
            .saturating_add(self.cache_read_tokens)
    }
}

/// What one model charges, in micro-dollars per million tokens (so `3_000_000` is $3 per
/// million tokens), for each class of token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelPrice {
    /// Uncached input.
    pub input: u64,
    /// Output.
    pub output: u64,
    /// Input written to the prompt cache.
    pub cache_write: u64,
    /// Input read from the prompt cache.
    pub cache_read: u64,
}

/// Micro-dollars per million tokens from dollars per million tokens.
const fn per_mtok(dollars_times_100: u64) -> u64 {
    dollars_times_100 * 10_000
}

impl ModelPrice {
    /// An Anthropic price: cache writes at 1.25x input, cache reads at 0.1x.
    const fn anthropic(input_cents: u64, output_cents: u64) -> ModelPrice {
        ModelPrice {
            input: per_mtok(input_cents),
            output: per_mtok(output_cents),
            cache_write: per_mtok(input_cents) / 4 * 5,
            cache_read: per_mtok(input_cents) / 10,
        }
    }

    /// An OpenAI price: no charge of its own for cache writes (they are input), cached reads
    /// at the given rate.
    const fn openai(input_cents: u64, cached_mills: u64, output_cents: u64) -> ModelPrice {
        ModelPrice {
            input: per_mtok(input_cents),
            output: per_mtok(output_cents),
            cache_write: per_mtok(input_cents),
            cache_read: cached_mills * 1_000,
        }
    }

    /// What `usage` costs at this price, rounded up to the next micro-dollar (a ledger never
    /// undercounts).
    pub fn cost(&self, usage: &Usage) -> Usd {
        let sum = u128::from(usage.input_tokens) * u128::from(self.input)
            + u128::from(usage.output_tokens) * u128::from(self.output)
            + u128::from(usage.cache_write_tokens) * u128::from(self.cache_write)
            + u128::from(usage.cache_read_tokens) * u128::from(self.cache_read);
        let micros = sum.div_ceil(1_000_000);
        Usd(u64::try_from(micros).unwrap_or(u64::MAX))
    }

    /// The dearest rate an input token can be charged at (uncached or written to the cache).
    pub fn dearest_input(&self) -> u64 {
        self.input.max(self.cache_write).max(self.cache_read)
    }

    /// The higher of each rate of `self` and `other`.
    fn max(self, other: ModelPrice) -> ModelPrice {
        ModelPrice {
            input: self.input.max(other.input),
            output: self.output.max(other.output),
            cache_write: self.cache_write.max(other.cache_write),
            cache_read: self.cache_read.max(other.cache_read),
        }
    }
}

/// The shipped price table: the current Anthropic and OpenAI models, USD per million tokens as
/// each vendor lists them. An owner overrides or extends it ([`PriceTable::with_overrides`]).
pub const DEFAULT_PRICES: &[(&str, ModelPrice)] = &[
    ("claude-opus-5", ModelPrice::anthropic(1500, 7500)),
    ("claude-sonnet-5", ModelPrice::anthropic(300, 1500)),
    ("claude-opus-4-8", ModelPrice::anthropic(500, 2500)),
    ("claude-opus-4-5", ModelPrice::anthropic(500, 2500)),
    ("claude-opus-4-1", ModelPrice::anthropic(1500, 7500)),
    ("claude-opus-4", ModelPrice::anthropic(1500, 7500)),
    ("claude-sonnet-4-5", ModelPrice::anthropic(300, 1500)),
    ("claude-sonnet-4", ModelPrice::anthropic(300, 1500)),
    ("claude-haiku-4-5", ModelPrice::anthropic(100, 500)),
    ("claude-3-5-haiku", ModelPrice::anthropic(80, 400)),
    ("gpt-5", ModelPrice::openai(125, 125, 1000)),
    ("gpt-5-codex", ModelPrice::openai(125, 125, 1000)),
    ("gpt-5-mini", ModelPrice::openai(25, 25, 200)),
    ("gpt-5-nano", ModelPrice::openai(5, 5, 40)),
    ("gpt-4.1", ModelPrice::openai(200, 500, 800)),
];

/// A model's price as the table gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priced {
    /// The rates.
    pub price: ModelPrice,
    /// Whether the table lists the model (else it is priced at the table's highest rates, and
    /// the ledger flags its calls).
    pub known: bool,
}

/// Why an owner's price table was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PriceError {
    /// Not the expected JSON.
    #[error(
        "the price table is not valid: {0} (expected {{\"<model>\": {{\"input\": 3.0, \"output\": 15.0, \"cache_write\": 3.75, \"cache_read\": 0.3}}}}, USD per million tokens)"
    )]
    Shape(String),
    /// A rate that is negative, infinite or absurd.
    #[error(
        "the price table's {field} for {model} is {value}: a rate is a number of USD per million tokens from 0 to 1000000"
    )]
    Rate {
        /// The model.
        model: String,
        /// The field.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// An empty model name.
    #[error("the price table names a model with an empty name")]
    EmptyModel,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RateDoc {
    input: f64,
    output: f64,
    cache_write: Option<f64>,
    cache_read: Option<f64>,
}

/// The table every call is priced with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriceTable {
    models: BTreeMap<String, ModelPrice>,
}

impl Default for PriceTable {
    fn default() -> Self {
        PriceTable {
            models: DEFAULT_PRICES
                .iter()
                .map(|(m, p)| ((*m).to_owned(), *p))
                .collect(),
        }
    }
}

impl PriceTable {
    /// The shipped table with `json`'s entries over it: an object from model name to its
    /// rates in USD per million tokens (`input` and `output`, and optionally `cache_write`,
    /// default 1.25x input, and `cache_read`, default 0.1x input). Unknown fields are refused.
    pub fn with_overrides(json: &str) -> Result<PriceTable, PriceError> {
        let doc: BTreeMap<String, RateDoc> =
            serde_json::from_str(json).map_err(|e| PriceError::Shape(e.to_string()))?;
        let mut table = PriceTable::default();
        for (model, rates) in doc {
            let model = model.trim().to_owned();
            if model.is_empty() {
                return Err(PriceError::EmptyModel);
            }
            let rate = |field: &'static str, value: f64| -> Result<u64, PriceError> {
                if !value.is_finite() || !(0.0..=1_000_000.0).contains(&value) {
                    return Err(PriceError::Rate {
                        model: model.clone(),
                        field,
                        value,
                    });
                }
                Ok((value * 1_000_000.0).round() as u64)
            };
            let input = rate("input", rates.input)?;
            let price = ModelPrice {
                input,
                output: rate("output", rates.output)?,
                cache_write: match rates.cache_write {
                    Some(v) => rate("cache_write", v)?,
                    None => input / 4 * 5,
                },
                cache_read: match rates.cache_read {
                    Some(v) => rate("cache_read", v)?,
                    None => input / 10,
                },
            };
            table.models.insert(model, price);
        }
        Ok(table)
    }

    /// The price of `model`: its entry; else the entry a dated snapshot id names
    /// (`claude-sonnet-4-5-20250929`, `gpt-5-2025-08-07`); else the table's highest rates,
    /// flagged unknown (an unlisted model is never guessed into a cheaper family).
    pub fn price(&self, model: &str) -> Priced {
        let model = model.trim();
        if let Some(p) = self
            .models
            .get(model)
            .or_else(|| self.models.get(undated(model)))
        {
            return Priced {
                price: *p,
                known: true,
            };
        }
        Priced {
            price: self.dearest(),
            known: false,
        }
    }

    /// The highest of each rate in the table.
    pub fn dearest(&self) -> ModelPrice {
        self.models
            .values()
            .copied()
            .reduce(ModelPrice::max)
            .unwrap_or(ModelPrice {
                input: 0,
                output: 0,
                cache_write: 0,
                cache_read: 0,
            })
    }

    /// The models the table lists, with their rates.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &ModelPrice)> {
        self.models.iter().map(|(m, p)| (m.as_str(), p))
    }
}

/// `model` without a trailing date: `-YYYYMMDD` (Anthropic) or `-YYYY-MM-DD` (OpenAI).
fn undated(model: &str) -> &str {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((base, date)) = model.rsplit_once('-')
        && date.len() == 8
        && digits(date)
    {
        return base;
    }
    let parts: Vec<&str> = model.rsplitn(4, '-').collect();
    if let [d, m, y, base] = parts[..]
        && y.len() == 4
        && m.len() == 2
        && d.len() == 2
        && digits(y)
        && digits(m)
        && digits(d)
    {
        return base;
    }
    model
}

/// How many bytes of request one input token is counted as, for a call's worst case.
pub const BYTES_PER_TOKEN: u64 = 4;

/// The fewest output tokens a call is let out with: below this the answer cannot hold a tool
/// call, and the call is refused instead.
pub const MIN_OUTPUT_TOKENS: u64 = 256;

/// What the proxy may do with a call, given what is left of the job's cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// Forward the call with this `max_tokens` (the requested one, or a smaller one that the
    /// rest of the cap pays for), holding `held` until the call settles.
    Forward {
        /// The `max_tokens` the call goes out with.
        max_tokens: u64,
        /// What is held against the cap for it.
        held: Usd,
    },
    /// The call does not fit: even its input and [`MIN_OUTPUT_TOKENS`] of output would pass
    /// the cap.
    Refuse {
        /// The least the call could cost.
        needs: Usd,
        /// What is left of the cap.
        left: Usd,
    },
}

/// The input tokens a request of `request_bytes` bytes is estimated to hold.
pub fn tokens_in(request_bytes: u64) -> u64 {
    request_bytes.div_ceil(BYTES_PER_TOKEN)
}

/// The worst case of a call of `input_tokens` asking for `max_tokens` of output, at `price`.
pub fn worst_case(price: &ModelPrice, input_tokens: u64, max_tokens: u64) -> Usd {
    let sum = u128::from(input_tokens) * u128::from(price.dearest_input())
        + u128::from(max_tokens) * u128::from(price.output);
    Usd(u64::try_from(sum.div_ceil(1_000_000)).unwrap_or(u64::MAX))
}

/// Whether a call of `input_tokens` asking for `max_tokens` of output fits in `left`, and with
/// what `max_tokens` it goes out.
pub fn reserve(price: &ModelPrice, input_tokens: u64, max_tokens: u64, left: Usd) -> Reservation {
    let full = worst_case(price, input_tokens, max_tokens);
    if full <= left {
        return Reservation::Forward {
            max_tokens,
            held: full,
        };
    }
    let floor = max_tokens.min(MIN_OUTPUT_TOKENS);
    let least = worst_case(price, input_tokens, floor);
    if least > left {
        return Reservation::Refuse { needs: least, left };
    }
    // The most output the rest pays for, between the floor and the request.
    let input = worst_case(price, input_tokens, 0);
    let spare = u128::from(left.minus(input).micros()) * 1_000_000;
    let affordable = match price.output {
        0 => max_tokens,
        rate => u64::try_from(spare / u128::from(rate)).unwrap_or(u64::MAX),
    };
    let max_tokens = affordable.clamp(floor, max_tokens);
    Reservation::Forward {
        max_tokens,
        held: worst_case(price, input_tokens, max_tokens),
    }
}

/// One job's account at the proxy: its cap, what settled calls spent, and what calls in flight
/// hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Account {
    /// The job's cap (`None`: no cap).
    pub cap: Option<Usd>,
    /// What settled calls cost.
    pub spent: Usd,
    /// What calls in flight hold.
    pub held: Usd,
}

impl Account {
    /// What is left for a new call: the cap less what is spent and held (everything, with no
    /// cap).
    pub fn left(&self) -> Usd {
        match self.cap {
            Some(cap) => cap.minus(self.spent.plus(self.held)),
            None => Usd(u64::MAX),
        }
    }

    /// Reserves a call against the account: on `Forward` its hold is added.
    pub fn reserve(
        &mut self,
        price: &ModelPrice,
        input_tokens: u64,
        max_tokens: u64,
    ) -> Reservation {
        let r = reserve(price, input_tokens, max_tokens, self.left());
        if let Reservation::Forward { held, .. } = r {
            self.held = self.held.plus(held);
        }
        r
    }

    /// Settles a call that held `held` and cost `cost`: the hold is released, the cost spent.
    pub fn settle(&mut self, held: Usd, cost: Usd) {
        self.held = self.held.minus(held);
        self.spent = self.spent.plus(cost);
    }

    /// Raises (or sets) the cap to `cap`.
    pub fn raise(&mut self, cap: Usd) {
        self.cap = Some(cap);
    }
}

/// Whether the agent's own figure and the proxy's differ by more than 5% of the larger (then
/// the job shows both).
pub fn reported_differs(counted: Usd, reported: Usd) -> bool {
    let (hi, lo) = if counted >= reported {
        (counted, reported)
    } else {
        (reported, counted)
    };
    u128::from(hi.minus(lo).micros()) * 100 > u128::from(hi.micros()) * 5
}

#[cfg(test)]
mod tests;
