//! The job ledger (issue 49): one row per model call the driver's model door forwarded for a
//! job, as the door priced it from the upstream's own usage. A job's cost, its cost per model
//! and per session, and a namespace's month of spend are sums of these rows; what the agent
//! (or its evidence) says it cost is kept beside them, never instead of them.
//!
//! A job no door metered (an agent that completes its own job with `cost_usd` evidence) gets
//! one `reported` row when its outcome is recorded, so its namespace's budget still sees what
//! it spent.
//!
//! Pure: the service validates and sums; the stores keep the rows.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::drive::ledger::{Usage, Usd, reported_differs};
use crate::time::Timestamp;

/// At most this many calls in one `jobs meter`.
pub const METER_CALLS_MAX: usize = 100;
/// At most this many rows of one job are read back (a job's record, its total).
pub const JOB_CALLS_MAX: usize = 20_000;
/// The longest call id, model name or session id a row keeps.
pub const CALL_TEXT_MAX: usize = 200;

/// How a call was priced.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Priced {
    /// At the price table's rates for the model.
    Table,
    /// The table does not list the model: at its highest rates (flagged on the job).
    Highest,
    /// No door counted it: the cost a finished job's evidence reported.
    Reported,
}

impl Priced {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Priced::Table => "table",
            Priced::Highest => "highest",
            Priced::Reported => "reported",
        }
    }

    /// From the stored spelling.
    pub fn parse(text: &str) -> Option<Priced> {
        match text {
            "table" => Some(Priced::Table),
            "highest" => Some(Priced::Highest),
            "reported" => Some(Priced::Reported),
            _ => None,
        }
    }
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallEnded {
    /// The upstream's answer ended normally.
    Completed,
    /// The upstream answered with an error status.
    UpstreamError,
    /// The stream broke before its end; what was used until then is settled.
    Broken,
    /// Not a call: a finished job's reported cost.
    Reported,
}

impl CallEnded {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CallEnded::Completed => "completed",
            CallEnded::UpstreamError => "upstream_error",
            CallEnded::Broken => "broken",
            CallEnded::Reported => "reported",
        }
    }

    /// From the stored spelling.
    pub fn parse(text: &str) -> Option<CallEnded> {
        match text {
            "completed" => Some(CallEnded::Completed),
            "upstream_error" => Some(CallEnded::UpstreamError),
            "broken" => Some(CallEnded::Broken),
            "reported" => Some(CallEnded::Reported),
            _ => None,
        }
    }
}

/// One row of the ledger.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerCall {
    /// The door's id for the call (a call sent twice is kept once).
    pub call_id: String,
    /// The session it came from, when the request said (Claude Code's `metadata.user_id`).
    pub session: Option<String>,
    /// The model that answered (else the one asked for).
    pub model: String,
    /// The tokens the upstream reported.
    pub usage: Usage,
    /// What the door priced them at.
    pub cost: Usd,
    /// How it was priced.
    pub priced: Priced,
    /// How it ended.
    pub ended: CallEnded,
    /// When the call reached the door.
    pub started_at: Timestamp,
    /// When its answer ended.
    pub ended_at: Timestamp,
}

impl LedgerCall {
    /// The row that stands for a job no door metered: the cost its evidence reported.
    pub fn reported(job_id: &str, cost: Usd, at: Timestamp) -> LedgerCall {
        LedgerCall {
            call_id: format!("reported_{job_id}"),
            session: None,
            model: "reported".into(),
            usage: Usage::default(),
            cost,
            priced: Priced::Reported,
            ended: CallEnded::Reported,
            started_at: at,
            ended_at: at,
        }
    }
}

/// Why a call a driver sent is refused (the whole `meter` changes nothing).
pub fn check_call(call: &LedgerCall) -> Result<(), String> {
    let id = &call.call_id;
    if id.is_empty()
        || id.len() > 64
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "call_id {id:?}: 1 to 64 letters, digits, '_' or '-' (the door's id for the call)"
        ));
    }
    if id.starts_with("reported_") {
        return Err(format!(
            "call_id {id:?}: the reported_ prefix is the server's own (a job's reported cost)"
        ));
    }
    let text_ok = |t: &str| {
        !t.is_empty() && t.chars().count() <= CALL_TEXT_MAX && !t.chars().any(char::is_control)
    };
    if !text_ok(&call.model) {
        return Err(format!(
            "call {id}: model must be 1 to {CALL_TEXT_MAX} characters without control characters"
        ));
    }
    if let Some(s) = &call.session
        && !text_ok(s)
    {
        return Err(format!(
            "call {id}: session must be 1 to {CALL_TEXT_MAX} characters without control characters"
        ));
    }
    if call.priced == Priced::Reported || call.ended == CallEnded::Reported {
        return Err(format!(
            "call {id}: priced and ended 'reported' are the server's own (a job's reported cost), not a door's"
        ));
    }
    if call.ended_at < call.started_at {
        return Err(format!("call {id}: ended_at is before started_at"));
    }
    Ok(())
}

/// What one model (or one session) of a job cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SpendLine {
    /// Calls counted.
    pub calls: u64,
    /// Their cost.
    #[serde(rename = "cost_usd")]
    #[schemars(with = "f64")]
    pub cost: Usd,
    /// Input tokens read uncached.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Tokens read from the prompt cache.
    pub cache_read_tokens: u64,
}

impl SpendLine {
    fn add(&mut self, call: &LedgerCall) {
        self.calls += 1;
        self.cost = self.cost.plus(call.cost);
        self.input_tokens = self.input_tokens.saturating_add(call.usage.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(call.usage.output_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(call.usage.cache_write_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(call.usage.cache_read_tokens);
    }
}

/// A job's ledger summed: what a job's record and the console show.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct JobSpend {
    /// Everything the job's calls cost.
    #[serde(rename = "cost_usd")]
    #[schemars(with = "f64")]
    pub total: Usd,
    /// The calls a door counted (a reported row is not one).
    pub calls: u64,
    /// Whether the total is only what the job's evidence reported (no door metered it).
    pub reported_only: bool,
    /// Per model.
    pub by_model: BTreeMap<String, SpendLine>,
    /// Per session (calls whose request named none are under `""`).
    pub by_session: BTreeMap<String, SpendLine>,
    /// Models the price table does not list (priced at its highest rates).
    pub unpriced_models: Vec<String>,
    /// Calls whose stream broke or whose upstream answered with an error.
    pub failed_calls: u64,
}

impl JobSpend {
    /// The sum of `calls`.
    pub fn of(calls: &[LedgerCall]) -> JobSpend {
        let mut s = JobSpend::default();
        let mut unpriced = std::collections::BTreeSet::new();
        for c in calls {
            s.total = s.total.plus(c.cost);
            if c.priced == Priced::Reported {
                continue;
            }
            s.calls += 1;
            s.by_model.entry(c.model.clone()).or_default().add(c);
            s.by_session
                .entry(c.session.clone().unwrap_or_default())
                .or_default()
                .add(c);
            if c.priced == Priced::Highest {
                unpriced.insert(c.model.clone());
            }
            if matches!(c.ended, CallEnded::UpstreamError | CallEnded::Broken) {
                s.failed_calls += 1;
            }
        }
        s.reported_only = s.calls == 0 && !calls.is_empty();
        s.unpriced_models = unpriced.into_iter().collect();
        s
    }

    /// Whether a door metered any of the job's calls (then its cost is the ledger's, whatever
    /// the evidence says).
    pub fn metered(&self) -> bool {
        self.calls > 0
    }

    /// The note on a finished job's outcome when its evidence reported a cost more than 5%
    /// away from the ledger's count.
    pub fn reported_note(&self, reported: Option<f64>) -> Option<String> {
        let reported = Usd::from_dollars(reported?)?;
        (self.metered() && reported_differs(self.total, reported)).then(|| {
            format!(
                "cost_usd is the model door's count, {} over {} call(s); the evidence reported {}, which differs by more than 5%",
                self.total, self.calls, reported
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, model: &str, session: Option<&str>, micros: u64) -> LedgerCall {
        LedgerCall {
            call_id: id.into(),
            session: session.map(str::to_owned),
            model: model.into(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                cache_write_tokens: 2,
                cache_read_tokens: 1,
            },
            cost: Usd::from_micros(micros),
            priced: Priced::Table,
            ended: CallEnded::Completed,
            started_at: Timestamp::from_millis(1_000),
            ended_at: Timestamp::from_millis(2_000),
        }
    }

    #[test]
    fn a_jobs_spend_sums_its_calls_per_model_and_per_session() {
        let mut unknown = call("c3", "mystery-1", None, 7);
        unknown.priced = Priced::Highest;
        unknown.ended = CallEnded::Broken;
        let calls = vec![
            call("c1", "claude-sonnet-5", Some("s1"), 100),
            call("c2", "claude-haiku-4-5", Some("s1"), 20),
            unknown,
            call("c4", "claude-sonnet-5", Some("s2"), 300),
        ];
        let s = JobSpend::of(&calls);
        assert_eq!(s.total, Usd::from_micros(427));
        assert_eq!(s.calls, 4);
        assert!(s.metered() && !s.reported_only);
        assert_eq!(s.by_model["claude-sonnet-5"].cost, Usd::from_micros(400));
        assert_eq!(s.by_model["claude-sonnet-5"].calls, 2);
        assert_eq!(s.by_model["claude-sonnet-5"].input_tokens, 20);
        assert_eq!(s.by_model["claude-sonnet-5"].cache_read_tokens, 2);
        assert_eq!(s.by_session["s1"].cost, Usd::from_micros(120));
        assert_eq!(s.by_session["s2"].calls, 1);
        assert_eq!(s.by_session[""].cost, Usd::from_micros(7));
        assert_eq!(s.unpriced_models, vec!["mystery-1".to_owned()]);
        assert_eq!(s.failed_calls, 1);
    }

    #[test]
    fn a_reported_row_counts_in_the_total_but_is_no_metered_call() {
        let s = JobSpend::of(&[LedgerCall::reported(
            "job_1",
            Usd::from_micros(5_000),
            Timestamp::from_millis(1),
        )]);
        assert_eq!(s.total, Usd::from_micros(5_000));
        assert_eq!(s.calls, 0);
        assert!(s.reported_only && !s.metered());
        assert!(s.by_model.is_empty());
        assert_eq!(JobSpend::of(&[]), JobSpend::default());
        assert!(!JobSpend::of(&[]).reported_only);
    }

    #[test]
    fn the_evidence_is_named_beside_the_ledger_only_when_it_differs_by_more_than_five_percent() {
        let s = JobSpend::of(&[call("c1", "m", None, 1_000_000)]);
        assert_eq!(s.reported_note(Some(1.04)), None);
        assert_eq!(s.reported_note(None), None);
        let note = s.reported_note(Some(0.0)).expect("a note");
        assert!(
            note.contains("$1.0000") && note.contains("$0.0000"),
            "{note}"
        );
        // Nothing metered: the evidence is the only figure, nothing to set beside it.
        assert_eq!(JobSpend::default().reported_note(Some(3.0)), None);
    }

    #[test]
    fn a_call_a_driver_sends_is_checked_field_by_field() {
        assert_eq!(check_call(&call("c_1-A", "m", Some("s"), 1)), Ok(()));
        let bad = |f: &dyn Fn(&mut LedgerCall)| {
            let mut c = call("c1", "m", None, 1);
            f(&mut c);
            check_call(&c).expect_err("refused")
        };
        assert!(bad(&|c| c.call_id = String::new()).contains("call_id"));
        assert!(bad(&|c| c.call_id = "a b".into()).contains("call_id"));
        assert!(bad(&|c| c.call_id = "x".repeat(65)).contains("call_id"));
        assert!(bad(&|c| c.call_id = "reported_job_1".into()).contains("reported_"));
        assert!(bad(&|c| c.model = String::new()).contains("model"));
        assert!(bad(&|c| c.model = "m\n".into()).contains("model"));
        assert!(bad(&|c| c.model = "m".repeat(CALL_TEXT_MAX + 1)).contains("model"));
        assert!(bad(&|c| c.session = Some("\u{7}".into())).contains("session"));
        assert!(bad(&|c| c.priced = Priced::Reported).contains("reported"));
        assert!(bad(&|c| c.ended = CallEnded::Reported).contains("reported"));
        assert!(bad(&|c| c.ended_at = Timestamp::from_millis(999)).contains("before started_at"));
        // Exactly at the bounds passes.
        let mut edge = call(&"x".repeat(64), &"m".repeat(CALL_TEXT_MAX), None, 0);
        edge.ended_at = edge.started_at;
        assert_eq!(check_call(&edge), Ok(()));
    }

    #[test]
    fn stored_spellings_read_back() {
        for p in [Priced::Table, Priced::Highest, Priced::Reported] {
            assert_eq!(Priced::parse(p.as_str()), Some(p));
        }
        for e in [
            CallEnded::Completed,
            CallEnded::UpstreamError,
            CallEnded::Broken,
            CallEnded::Reported,
        ] {
            assert_eq!(CallEnded::parse(e.as_str()), Some(e));
        }
        assert_eq!(Priced::parse("free"), None);
        assert_eq!(CallEnded::parse(""), None);
    }
}
