//! Monthly budgets per namespace (issue 37): what a namespace may spend on agent sessions in
//! a calendar month (UTC), measured from the costs its drivers report with each finished
//! job. A claim in a namespace at or over its budget is refused and the job stays queued;
//! the owner is told once a month when a namespace reaches 80% and once at 100%.
//!
//! Pure: the service reads the budget, the default and the month's spend, and asks here.

use serde::Serialize;

use crate::drive::ledger::Usd;
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

    /// Whether a claim of `job` with the cap `cap` fits the month, `holding` being what the
    /// namespace's other running jobs reserve (each its cap): the spend, what is reserved and
    /// the new cap together stay within the budget. A job without a cap reserves nothing and
    /// is held only by [`BudgetState::claim_refusal`]. The refusal names the budget, the
    /// spend, what is reserved and by which jobs; the job stays queued.
    pub fn claim_fits(
        &self,
        job: &str,
        cap: Option<Usd>,
        holding: &[(String, Usd)],
    ) -> Result<(), String> {
        self.fits(job, cap, holding, "claimed", "queued")
    }

    /// [`BudgetState::claim_fits`] for a resume, which starts another paid session under the
    /// job's cap; the job stays blocked.
    pub fn resume_fits(
        &self,
        job: &str,
        cap: Option<Usd>,
        holding: &[(String, Usd)],
    ) -> Result<(), String> {
        self.fits(job, cap, holding, "resumed", "blocked")
    }

    fn fits(
        &self,
        job: &str,
        cap: Option<Usd>,
        holding: &[(String, Usd)],
        what: &str,
        stays: &str,
    ) -> Result<(), String> {
        if let Some(why) = self.refusal(what, stays) {
            return Err(why);
        }
        let (Some(budget), Some(cap)) = (self.budget_usd, cap) else {
            return Ok(());
        };
        let budget = Usd::from_dollars(budget).unwrap_or(Usd::ZERO);
        let spent = Usd::from_dollars(self.spent_usd).unwrap_or(Usd::ZERO);
        let reserved = holding.iter().fold(Usd::ZERO, |sum, (_, c)| sum.plus(*c));
        let left = budget.minus(spent).minus(reserved);
        if cap <= left {
            return Ok(());
        }
        let by = if holding.is_empty() {
            "no job".to_owned()
        } else {
            let mut named: Vec<String> = holding
                .iter()
                .take(HOLDERS_NAMED)
                .map(|(id, c)| format!("{id} {}", usd(c.dollars())))
                .collect();
            if holding.len() > HOLDERS_NAMED {
                named.push(format!("and {} more", holding.len() - HOLDERS_NAMED));
            }
            named.join(", ")
        };
        Err(format!(
            "namespace '{ns}' cannot reserve {job}'s cap of {cap} in {month} (UTC): its monthly budget is {budget}, {spent} is spent and {reserved} is reserved by the jobs running there ({by}), which leaves {left}. So {job} is not {what} now; it stays {stays} until a running job finishes, the budget is raised (capsid namespaces update {ns} --monthly-budget-usd <dollars>) or the job's max_cost_usd is lower.",
            ns = self.namespace,
            cap = usd(cap.dollars()),
            month = self.month,
            budget = usd(budget.dollars()),
            spent = usd(spent.dollars()),
            reserved = usd(reserved.dollars()),
            left = usd(left.dollars()),
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

/// How many of the jobs holding a reservation a refusal names.
const HOLDERS_NAMED: usize = 5;

/// A job's cap as given to `jobs post`: dollars above zero.
pub fn parse_job_cap(x: f64) -> Result<Usd, String> {
    match Usd::from_dollars(x) {
        Some(cap) if cap > Usd::ZERO => Ok(cap),
        _ => Err(format!(
            "max_cost_usd must be a number of US dollars above zero (what one run of the job may spend on its model), not {x}"
        )),
    }
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

    fn cents(c: u64) -> Usd {
        Usd::from_micros(c * 10_000)
    }

    #[test]
    fn a_cap_fits_while_spend_reservations_and_cap_stay_within_the_budget() {
        let now = at("2026-12-04T10:00:00.000Z");
        let state = BudgetState::new("alpha", now, Some(3.0), None, 0.5);
        let two = vec![
            ("job_a".to_owned(), cents(100)),
            ("job_b".to_owned(), cents(100)),
        ];
        // $0.50 spent + $2.00 reserved + $0.50 = $3.00: exactly the budget fits.
        assert_eq!(state.claim_fits("job_c", Some(cents(50)), &two), Ok(()));
        let why = state
            .claim_fits("job_c", Some(cents(51)), &two)
            .expect_err("a cent over");
        for part in [
            "'alpha'",
            "job_c",
            "$0.51",
            "$3.00",
            "$0.50 is spent",
            "$2.00 is reserved",
            "job_a $1.00, job_b $1.00",
            "leaves $0.50",
            "stays queued",
            "2026-12",
        ] {
            assert!(why.contains(part), "{part} in {why}");
        }
        // Without a cap a job reserves nothing; without a budget nothing is held.
        assert_eq!(state.claim_fits("job_c", None, &two), Ok(()));
        let free = BudgetState::new("alpha", now, None, None, 1e6);
        assert_eq!(
            free.claim_fits("job_c", Some(cents(1_000_000)), &two),
            Ok(())
        );
        // A spent month refuses even a job without a cap, with the month's own refusal.
        let spent = BudgetState::new("alpha", now, Some(3.0), None, 3.0);
        assert_eq!(
            spent.claim_fits("job_c", None, &[]),
            Err(spent.claim_refusal().unwrap_or_default())
        );
        // Reservations over the budget leave nothing, not a wrapped sum.
        let over = vec![("job_a".to_owned(), cents(500))];
        let why = state
            .claim_fits("job_c", Some(cents(1)), &over)
            .expect_err("nothing is left");
        assert!(why.contains("leaves $0.00"), "{why}");
    }

    #[test]
    fn a_resume_reserves_as_a_claim_does_and_leaves_the_job_blocked() {
        let now = at("2026-12-04T10:00:00.000Z");
        let state = BudgetState::new("alpha", now, Some(1.0), None, 0.0);
        let holding = vec![("job_a".to_owned(), cents(60))];
        assert_eq!(
            state.resume_fits("job_b", Some(cents(40)), &holding),
            Ok(())
        );
        let why = state
            .resume_fits("job_b", Some(cents(41)), &holding)
            .expect_err("over");
        assert!(
            why.contains("stays blocked") && why.contains("not resumed"),
            "{why}"
        );
    }

    #[test]
    fn a_refusal_names_five_holders_and_counts_the_rest() {
        let now = at("2026-12-04T10:00:00.000Z");
        let state = BudgetState::new("alpha", now, Some(1.0), None, 0.0);
        let holding: Vec<(String, Usd)> = (0..7).map(|i| (format!("job_{i}"), cents(10))).collect();
        let why = state
            .claim_fits("job_x", Some(cents(40)), &holding)
            .expect_err("$0.70 reserved, $0.30 left");
        assert!(why.contains("job_4 $0.10, and 2 more"), "{why}");
        assert!(!why.contains("job_5"), "{why}");
        let six: Vec<(String, Usd)> = holding[..5].to_vec();
        let why = state
            .claim_fits("job_x", Some(cents(60)), &six)
            .expect_err("$0.50 reserved, $0.50 left");
        assert!(!why.contains("more"), "{why}");
    }

    #[test]
    fn a_job_cap_is_dollars_above_zero() {
        assert_eq!(parse_job_cap(0.05), Ok(cents(5)));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e13] {
            assert!(
                parse_job_cap(bad).unwrap_err().contains("max_cost_usd"),
                "{bad}"
            );
        }
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
