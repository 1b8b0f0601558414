//! The run port: runs and attempts of the improve loop. Opening a run meets the partial unique
//! index `improve_runs_one_active`; every transition is `UPDATE ... WHERE id = $n AND status =
//! $m RETURNING id` inside the unit (on Postgres a second writer waits for the first and then
//! matches no row), and a miss rolls the unit back as [`Advanced::Lost`].

use capsid_core::improve::machine::{AttemptStatus, RunStatus, RunTally};
use capsid_core::ports::{
    Advance, Advanced, AttemptRow, AttemptUpdate, AuditEntry, NewAttempt, NewRun, RunOpened,
    RunRow, RunUpdate, ScoreRow, StoreResult,
};

use crate::conflict::{conflict_or, unique_violation};
use crate::engine::in_unit;
use crate::engine::{Engine, TxError, TxResult, read_all};
use crate::exec::Exec;
use crate::row::Row;
use crate::stmt::{Arg, Stmt, ToArg};

/// The columns a [`RunRow`] is read from.
macro_rules! run_columns {
    () => {
        "id, namespace, mode, started, finished, attempts, kept, reverts, cost_usd, ci_minutes, \
         status, consecutive_reverts, current_attempt, base_sha, pr_url, note, condition, advanced_at"
    };
}
const RUNS: &str = concat!("SELECT ", run_columns!(), " FROM improve_runs");
const ATTEMPTS: &str = "SELECT id, namespace, run_id, status, change_summary, diff_ref, branch, \
     head_sha, base_sha, lineage_parent, skill_id, score_before, score_after, reason, anchors_json, \
     secondary_json, flag_reason, dispatched_at, ts FROM improve_attempts";
const OPEN_RUN: &str = concat!(
    "INSERT INTO improve_runs (id, namespace, mode, started, status, condition, base_sha, \
     advanced_at) VALUES ($1, $2, $3, $4, 'opening', $5, $6, $4) RETURNING ",
    run_columns!()
);
const INSERT_ATTEMPT: &str = "INSERT INTO improve_attempts (id, namespace, run_id, change_summary, \
     diff_ref, branch, base_sha, lineage_parent, skill_id, status, ts) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10)";
const INSERT_SCORE: &str = "INSERT INTO improve_scores (namespace, metric, value, run_id, \
     attempt_id, ts) VALUES ($1, $2, $3, $4, $5, $6)";
const PUT_SETTING: &str = "INSERT INTO settings (key, value, expires_at) VALUES ($1, $2, NULL) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = NULL";
const SCORES: &str = "SELECT namespace, run_id, attempt_id, metric, value, ts FROM improve_scores \
     WHERE run_id = $1 AND attempt_id IS NOT DISTINCT FROM $2 ORDER BY metric, id";

fn counter(row: &Row, column: &str) -> Result<u32, sqlx::Error> {
    Ok(u32::try_from(row.int(column)?).unwrap_or(0))
}

fn run_row(row: &Row) -> Result<RunRow, sqlx::Error> {
    Ok(RunRow {
        id: row.text("id")?,
        namespace: row.text("namespace")?,
        mode: row.text("mode")?,
        started: row.time("started")?,
        finished: row.opt_time("finished")?,
        status: row.word("status", RunStatus::parse)?,
        tally: RunTally {
            attempts: counter(row, "attempts")?,
            kept: counter(row, "kept")?,
            reverts: counter(row, "reverts")?,
            consecutive_reverts: counter(row, "consecutive_reverts")?,
        },
        cost_usd: row.real("cost_usd")?,
        ci_minutes: row.real("ci_minutes")?,
        current_attempt: row.opt_text("current_attempt")?,
        base_sha: row.opt_text("base_sha")?,
        pr_url: row.opt_text("pr_url")?,
        note: row.opt_text("note")?,
        condition: row.text("condition")?,
        advanced_at: row.time("advanced_at")?,
    })
}

fn attempt_row(row: &Row) -> Result<AttemptRow, sqlx::Error> {
    Ok(AttemptRow {
        id: row.text("id")?,
        namespace: row.text("namespace")?,
        run_id: row.text("run_id")?,
        status: row.word("status", AttemptStatus::parse)?,
        change_summary: row.opt_text("change_summary")?,
        diff_ref: row.opt_text("diff_ref")?,
        branch: row.opt_text("branch")?,
        head_sha: row.opt_text("head_sha")?,
        base_sha: row.opt_text("base_sha")?,
        lineage_parent: row.opt_text("lineage_parent")?,
        skill_id: row.opt_text("skill_id")?,
        score_before: row.opt_real("score_before")?,
        score_after: row.opt_real("score_after")?,
        reason: row.opt_text("reason")?,
        anchors_json: row.opt_text("anchors_json")?,
        secondary_json: row.opt_text("secondary_json")?,
        flag_reason: row.opt_text("flag_reason")?,
        dispatched_at: row.opt_time("dispatched_at")?,
        ts: row.time("ts")?,
    })
}

fn score_row(row: &Row) -> Result<ScoreRow, sqlx::Error> {
    Ok(ScoreRow {
        namespace: row.text("namespace")?,
        run_id: row.text("run_id")?,
        attempt_id: row.opt_text("attempt_id")?,
        metric: row.text("metric")?,
        value: row.opt_real("value")?,
        ts: row.time("ts")?,
    })
}

/// A keyed `UPDATE ... RETURNING id` under construction: each term numbers its own
/// placeholder as it is added.
struct Keyed {
    table: &'static str,
    set: Vec<String>,
    when: Vec<String>,
    args: Vec<Arg>,
}

impl Keyed {
    fn new(table: &'static str, id: &str, from: &'static str, to: &'static str) -> Keyed {
        let mut k = Keyed {
            table,
            set: Vec::new(),
            when: Vec::new(),
            args: Vec::new(),
        };
        k.when("id", id);
        k.when("status", from);
        k.set("status", to);
        k
    }

    fn term(&mut self, column: &str, op: &str, value: impl ToArg) -> String {
        self.args.push(value.to_arg());
        format!("{column} = {op}${}", self.args.len())
    }

    fn set(&mut self, column: &str, value: impl ToArg) {
        let term = self.term(column, "", value);
        self.set.push(term);
    }

    /// Sets `column` when `value` is `Some`.
    fn set_some(&mut self, column: &str, value: Option<impl ToArg>) {
        if let Some(v) = value {
            self.set(column, v);
        }
    }

    fn add(&mut self, column: &str, value: f64) {
        let term = self.term(column, &format!("{column} + "), value);
        self.set.push(term);
    }

    fn when(&mut self, column: &str, value: impl ToArg) {
        let term = self.term(column, "", value);
        self.when.push(term);
    }

    fn tally(&mut self, tally: &RunTally, each: fn(&mut Keyed, &str, i64)) {
        each(self, "attempts", i64::from(tally.attempts));
        each(self, "kept", i64::from(tally.kept));
        each(self, "reverts", i64::from(tally.reverts));
        each(
            self,
            "consecutive_reverts",
            i64::from(tally.consecutive_reverts),
        );
    }

    /// Runs the update in `tx`; whether it matched.
    async fn apply(self, tx: &mut dyn Exec) -> Result<bool, sqlx::Error> {
        let sql = format!(
            "UPDATE {} SET {} WHERE {} RETURNING id",
            self.table,
            self.set.join(", "),
            self.when.join(" AND ")
        );
        let stmt = Stmt {
            sql: sql.into(),
            args: self.args,
        };
        Ok(tx.fetch_optional(stmt).await?.is_some())
    }
}

/// The keyed update of a run; whether it matched.
async fn update_run(tx: &mut dyn Exec, u: &RunUpdate) -> Result<bool, sqlx::Error> {
    let mut k = Keyed::new("improve_runs", &u.id, u.from.as_str(), u.to.as_str());
    k.set("advanced_at", u.at);
    k.add("ci_minutes", u.add_ci_minutes);
    k.add("cost_usd", u.add_cost_usd);
    if let Some(tally) = &u.tally {
        k.tally(tally, |k, c, v| k.set(c, v));
    }
    if u.current_attempt.changes() {
        k.set("current_attempt", u.current_attempt.stored());
    }
    if u.note.changes() {
        k.set("note", u.note.stored());
    }
    k.set_some("finished", u.finished);
    if let Some(before) = &u.tally_before {
        k.tally(before, |k, c, v| k.when(c, v));
    }
    k.apply(tx).await
}

/// The keyed update of an attempt; whether it matched.
async fn update_attempt(tx: &mut dyn Exec, u: &AttemptUpdate) -> Result<bool, sqlx::Error> {
    let to = u.step.to;
    let mut k = Keyed::new("improve_attempts", &u.id, u.step.from.as_str(), to.as_str());
    k.set("kept", to == AttemptStatus::Kept);
    k.set("flagged", to == AttemptStatus::Flagged);
    if u.head_sha.changes() {
        k.set("head_sha", u.head_sha.stored());
    }
    k.set_some("dispatched_at", u.dispatched_at);
    k.set_some("score_before", u.score_before);
    k.set_some("score_after", u.score_after);
    if u.reason.changes() {
        k.set("reason", u.reason.stored());
    }
    k.set_some("anchors_json", u.anchors_json.as_ref());
    k.set_some("secondary_json", u.secondary_json.as_ref());
    k.set_some("flag_reason", u.flag_reason.as_ref());
    k.apply(tx).await
}

fn applied(a: &Advanced) -> bool {
    *a == Advanced::Applied
}

/// `RunStore::open_run`: `LiveRunExists` (nothing written) when the namespace has a live run.
pub async fn open_run(
    engine: &impl Engine,
    run: NewRun,
    audit: AuditEntry,
) -> StoreResult<RunOpened> {
    let (run, audit) = (&run, &audit);
    in_unit!(
        engine,
        |o: &RunOpened| matches!(o, RunOpened::Opened(_)),
        |tx| async {
            let stmt = Stmt::new(OPEN_RUN)
                .bind(&run.id)
                .bind(&run.namespace)
                .bind(&run.mode)
                .bind(run.started)
                .bind(&run.condition)
                .bind(run.base_sha.as_ref());
            let row = match tx.fetch_optional(stmt).await {
                // The partial index on the namespace (`improve_runs_one_active`), not the id.
                Err(e)
                    if unique_violation(&e)
                        .is_some_and(|s| s.contains("one_active") || s.contains("namespace")) =>
                {
                    return Ok(RunOpened::LiveRunExists);
                }
                Err(e) => {
                    return Err(conflict_or(e, |_| {
                        format!("a run with id '{}' already exists", run.id)
                    }));
                }
                Ok(row) => row.ok_or(sqlx::Error::RowNotFound)?,
            };
            let opened = run_row(&row)?;
            crate::audit::insert(&mut *tx, audit).await?;
            Ok(RunOpened::Opened(Box::new(opened)))
        }
        .await
    )
}

/// `RunStore::add_attempt`: the run's keyed update, the attempt, the audit row; `Lost`
/// (nothing written) when the run moved on.
pub async fn add_attempt(
    engine: &impl Engine,
    attempt: NewAttempt,
    run: RunUpdate,
    audit: AuditEntry,
) -> StoreResult<Advanced> {
    let (a, run, audit) = (&attempt, &run, &audit);
    in_unit!(engine, applied, |tx| async {
        if !update_run(&mut *tx, run).await? {
            return Ok(Advanced::Lost);
        }
        let stmt = Stmt::new(INSERT_ATTEMPT)
            .bind(&a.id)
            .bind(&a.namespace)
            .bind(&a.run_id)
            .bind(a.change_summary.as_ref())
            .bind(a.diff_ref.as_ref())
            .bind(&a.branch)
            .bind(a.base_sha.as_ref())
            .bind(a.lineage_parent.as_ref())
            .bind(a.skill_id.as_ref())
            .bind(a.ts);
        tx.execute(stmt).await.map_err(|e| {
            conflict_or(e, |_| {
                format!("an attempt with id '{}' already exists", a.id)
            })
        })?;
        crate::audit::insert(&mut *tx, audit).await?;
        Ok(Advanced::Applied)
    }
    .await)
}

/// `RunStore::advance`: every part applies, with every audit row, or nothing does.
pub async fn advance(engine: &impl Engine, advance: Advance) -> StoreResult<Advanced> {
    let advance = &advance;
    in_unit!(engine, applied, |tx| advance_on(&mut *tx, advance).await)
}

async fn advance_on(tx: &mut dyn Exec, advance: &Advance) -> TxResult<Advanced> {
    if let Some(u) = &advance.attempt
        && !update_attempt(tx, u).await?
    {
        return Ok(Advanced::Lost);
    }
    if let Some(u) = &advance.run
        && !update_run(tx, u).await?
    {
        return Ok(Advanced::Lost);
    }
    for s in &advance.scores {
        let stmt = Stmt::new(INSERT_SCORE)
            .bind(&s.namespace)
            .bind(&s.metric)
            .bind(s.value)
            .bind(&s.run_id)
            .bind(s.attempt_id.as_ref())
            .bind(s.ts);
        tx.execute(stmt).await?;
    }
    if let Some((key, value)) = &advance.setting {
        tx.execute(Stmt::new(PUT_SETTING).bind(key).bind(value))
            .await?;
    }
    for audit in &advance.audits {
        crate::audit::insert(tx, audit)
            .await
            .map_err(TxError::from)?;
    }
    Ok(Advanced::Applied)
}

/// `RunStore::run`.
pub async fn run(engine: &impl Engine, id: &str) -> StoreResult<Option<RunRow>> {
    let stmt = Stmt::new(format!("{RUNS} WHERE id = $1")).bind(id);
    Ok(read_all(engine, stmt, run_row).await?.pop())
}

/// `RunStore::live_run`: the namespace's run not `done` or `paused`.
pub async fn live_run(engine: &impl Engine, namespace: &str) -> StoreResult<Option<RunRow>> {
    let sql = format!("{RUNS} WHERE namespace = $1 AND status NOT IN ('done', 'paused')");
    Ok(read_all(engine, Stmt::new(sql).bind(namespace), run_row)
        .await?
        .pop())
}

/// `RunStore::runs`: newest first.
pub async fn runs(
    engine: &impl Engine,
    namespace: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<RunRow>> {
    let stmt = match namespace {
        Some(ns) => Stmt::new(format!(
            "{RUNS} WHERE namespace = $1 ORDER BY started DESC, id DESC LIMIT $2"
        ))
        .bind(ns),
        None => Stmt::new(format!("{RUNS} ORDER BY started DESC, id DESC LIMIT $1")),
    };
    read_all(engine, stmt.bind(limit), run_row).await
}

/// `RunStore::attempt`.
pub async fn attempt(engine: &impl Engine, id: &str) -> StoreResult<Option<AttemptRow>> {
    let stmt = Stmt::new(format!("{ATTEMPTS} WHERE id = $1")).bind(id);
    Ok(read_all(engine, stmt, attempt_row).await?.pop())
}

/// `RunStore::attempts`: a run's attempts, oldest first.
pub async fn attempts(engine: &impl Engine, run_id: &str) -> StoreResult<Vec<AttemptRow>> {
    let stmt = Stmt::new(format!("{ATTEMPTS} WHERE run_id = $1 ORDER BY ts, id")).bind(run_id);
    read_all(engine, stmt, attempt_row).await
}

/// `RunStore::scores`: a run's scores, or one attempt's (`None`: the run's own).
pub async fn scores(
    engine: &impl Engine,
    run_id: &str,
    attempt_id: Option<&str>,
) -> StoreResult<Vec<ScoreRow>> {
    read_all(
        engine,
        Stmt::new(SCORES).bind(run_id).bind(attempt_id),
        score_row,
    )
    .await
}
