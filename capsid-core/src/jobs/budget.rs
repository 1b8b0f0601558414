//! Monthly budgets per namespace (issue 37): what a namespace may spend on agent sessions in
//! a calendar month (UTC), measured from the costs its drivers report with each finished
//! job. A claim in a namespace at or over its budget is refused and the job stays queued;
//! the owner is told once a month when a namespace reaches 80% and once at 100%.
//!
//! Pure: the service reads the budget, the default and the month's spend, and asks here.

use serde::Serialize;

use crate::time::Timestamp;

/// The shares of a budget at which the owner is told, in percent, in order.
pub const ALERT_PERCENTS: [u8; 2] = [80, 100];

/// A namespace's budget and spend for one month.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct BudgetState {
    /// The namespace.
    pub namespace: String,
    /// `YYYY-MM` (UTC).
    pub month: String,
    /// Dollars spent this month: the sum of its finished jobs' reported costs.
    pub spent_usd: f64,
    /// The monthly budget that applies, if any.
    pub budget_usd: Option<f64>,
    /// Where the budget comes from: `namespace`, `default` or `none`.
    pub source: &'static str,
}

impl BudgetState {
    /// The state from a namespace's own budget, the server's default and the spend.
    pub fn new(
        namespace: &str,
        now: Timestamp,
        own: Option<f64>,
        default: Option<f64>,
        spent_usd: f64,
    ) -> Self {
        let (budget_usd, source) = match (own, default) {
            (Some(b), _) => (Some(b), "namespace"),
            (None, Some(b)) => (Some(b), "default"),
            (None, None) => (None, "none"),
        };
        BudgetState {
            namespace: namespace.to_owned(),
            month: now.month(),
            spent_usd,
            budget_usd,
            source,
        }
    }

    /// Whether the month's spend has reached the budget.
    pub fn exhausted(&self) -> bool {
        self.budget_usd.is_some_and(|b| self.spent_usd >= b)
    }

    /// Why a claim in this namespace is refused, when it is.
    pub fn claim_refusal(&self) -> Option<String> {
        self.refusal("claimed", "queued")
    }

    /// Why a resume in the namespace is refused (a resumed job is another paid session), when
    /// its spend reached its budget; the job stays blocked.
    pub fn resume_refusal(&self) -> Option<String> {
        self.refusal("resumed into another paid session", "blocked")
    }

    /// The refusal at the budget: no job there is `what` until the month ends or the budget is
    /// raised, and the job stays `stays`.
    fn refusal(&self, what: &str, stays: &str) -> Option<String> {
        let budget = self.budget_usd.filter(|_| self.exhausted())?;
        Some(format!(
            "namespace '{ns}' has spent {spent} of its monthly budget of {budget} in {month} (UTC), so no job there is {what} until the month ends or the budget is raised; the job stays {stays}. The admin raises it with: capsid namespaces update {ns} --monthly-budget-usd <dollars>",
            ns = self.namespace,
            spent = usd(self.spent_usd),
            budget = usd(budget),
            month = self.month,
        ))
    }

    /// The alert shares the spend has reached. The service sends each once a month through
    /// the replay cache, so asking after every costed finish cannot miss a share when two
    /// jobs finish at once (neither alone would have "crossed" it) nor send one twice.
    pub fn reached(&self) -> Vec<u8> {
        let Some(budget) = self.budget_usd else {
            return Vec::new();
        };
        ALERT_PERCENTS
            .into_iter()
            .filter(|p| self.spent_usd >= budget * f64::from(*p) / 100.0)
            .collect()
    }
}

/// The first instant of `now`'s month (UTC): spend is summed from here.
pub fn month_start(now: Timestamp) -> Timestamp {
    Timestamp::parse(&format!("{}-01T00:00:00.000Z", now.month())).unwrap_or(now)
}

/// Dollars as people write them: `$1.50`.
pub fn usd(x: f64) -> String {
    format!("${x:.2}")
}

/// A budget as given to `update_namespace`: a finite number of zero or more.
pub fn parse_budget(x: f64) -> Result<f64, String> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(format!(
            "monthly_budget_usd must be a number of US dollars, zero or more (0 stops every claim), not {x}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("timestamp")
    }

    #[test]
    fn the_month_starts_at_midnight_utc_on_the_first() {
        assert_eq!(
            month_start(at("2026-12-31T23:59:59.999Z")),
            at("2026-12-01T00:00:00.000Z")
        );
        assert_eq!(
            month_start(at("2027-01-01T00:00:00.000Z")),
            at("2027-01-01T00:00:00.000Z")
        );
    }

    #[test]
    fn the_namespace_budget_wins_over_the_default() {
        let now = at("2026-12-04T10:00:00.000Z");
        let own = BudgetState::new("alpha", now, Some(1.0), Some(50.0), 0.0);
        assert_eq!((own.budget_usd, own.source), (Some(1.0), "namespace"));
        let default = BudgetState::new("alpha", now, None, Some(50.0), 0.0);
        assert_eq!(
            (default.budget_usd, default.source),
            (Some(50.0), "default")
        );
        let none = BudgetState::new("alpha", now, None, None, 1e9);
        assert_eq!((none.budget_usd, none.exhausted()), (None, false));
        assert_eq!(none.claim_refusal(), None);
    }

    #[test]
    fn a_claim_is_refused_at_the_budget_naming_it_the_spend_and_the_month() {
        let now = at("2026-12-04T10:00:00.000Z");
        let under = BudgetState::new("alpha", now, Some(1.0), None, 0.99);
        assert_eq!(under.claim_refusal(), None);
        let at_budget = BudgetState::new("alpha", now, Some(1.0), None, 1.0);
        let why = at_budget.claim_refusal().expect("refused at the budget");
        for part in ["'alpha'", "$1.00", "2026-12", "stays queued"] {
            assert!(why.contains(part), "{part} in {why}");
        }
        let zero = BudgetState::new("alpha", now, Some(0.0), None, 0.0);
        assert!(zero.claim_refusal().is_some(), "a zero budget stops claims");
    }

    #[test]
    fn a_resume_is_refused_at_the_budget_as_a_claim_is_and_the_job_stays_blocked() {
        let now = at("2026-12-04T10:00:00.000Z");
        let under = BudgetState::new("alpha", now, Some(1.0), None, 0.99);
        assert_eq!(under.resume_refusal(), None);
        let none = BudgetState::new("alpha", now, None, None, 1e9);
        assert_eq!(none.resume_refusal(), None);
        let zero = BudgetState::new("alpha", now, Some(0.0), None, 0.0);
        let why = zero
            .resume_refusal()
            .expect("a zero budget resumes nothing");
        for part in ["'alpha'", "$0.00", "2026-12", "stays blocked", "resumed"] {
            assert!(why.contains(part), "{part} in {why}");
        }
        let over = BudgetState::new("alpha", now, Some(1.0), None, 1.5);
        assert!(over.resume_refusal().unwrap_or_default().contains("$1.50"));
    }

    #[test]
    fn the_shares_reached_are_those_at_or_under_the_spend() {
        let now = at("2026-12-04T10:00:00.000Z");
        let s = |spent| BudgetState::new("alpha", now, Some(10.0), None, spent);
        assert_eq!(s(7.9).reached(), Vec::<u8>::new());
        assert_eq!(s(8.0).reached(), vec![80]);
        assert_eq!(s(9.99).reached(), vec![80]);
        assert_eq!(s(10.0).reached(), vec![80, 100]);
        let none = BudgetState::new("alpha", now, None, None, 1e9);
        assert_eq!(none.reached(), Vec::<u8>::new());
    }

    #[test]
    fn a_budget_is_dollars_of_zero_or_more() {
        assert_eq!(parse_budget(2.5), Ok(2.5));
        assert_eq!(parse_budget(0.0), Ok(0.0));
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(
                parse_budget(bad)
                    .unwrap_err()
                    .contains("monthly_budget_usd")
            );
        }
    }
}
