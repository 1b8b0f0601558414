//! capsid-store-sql: the SQL Capsid's two stores share, written once.
//!
//! The SQLite and Postgres adapters (`capsid-store-sqlite`, `capsid-store-postgres`) each
//! implement [`Engine`]: their connections, their way of running a unit of work in one
//! transaction (SQLite's group commit on one writer; Postgres's retried transaction), and
//! their error translation. Everything else a port method does (its statements, binding,
//! row mapping, the audit row of a change) is here, once, as a function over any engine;
//! [`sql_ports!`] implements the ports those functions cover for an adapter's store type.
//! Statements use `$n` placeholders, which both drivers read; a value is one of four
//! kinds ([`Stmt`]), and a row is read by column name ([`Row`]).
//!
//! Ports moved here whole, one at a time, each with a trait of what still differs by engine
//! where something does: [`AgentStore`](capsid_core::ports::AgentStore),
//! [`AuditLog`](capsid_core::ports::AuditLog),
//! [`BackupStore`](capsid_core::ports::BackupStore) (what differs: each adapter's
//! [`backup::BackupEngine`]),
//! [`CheckmarkStore`](capsid_core::ports::CheckmarkStore),
//! [`CiStore`](capsid_core::ports::CiStore),
//! [`ImproveStore`](capsid_core::ports::ImproveStore),
//! [`IntakeStore`](capsid_core::ports::IntakeStore) (new, written here once),
//! [`LeaderLease`](capsid_core::ports::LeaderLease),
//! [`NamespaceStore`](capsid_core::ports::NamespaceStore),
//! [`OAuthStore`](capsid_core::ports::OAuthStore),
//! [`ReviewStore`](capsid_core::ports::ReviewStore),
//! [`RunStore`](capsid_core::ports::RunStore),
//! [`SettingsStore`](capsid_core::ports::SettingsStore),
//! [`SkillSourceStore`](capsid_core::ports::SkillSourceStore),
//! [`SkillStore`](capsid_core::ports::SkillStore),
//! [`StoreGauges`](capsid_core::ports::StoreGauges),
//! [`StoreHealth`](capsid_core::ports::StoreHealth) (what differs: each adapter's
//! [`health::HealthEngine`]),
//! [`DocumentStore`](capsid_core::ports::DocumentStore) (what differs: each adapter's
//! [`documents::DocumentEngine`]: search, globbing, SQLite's read cache, the packet's
//! snapshot and selections, the writes) and [`JobStore`](capsid_core::ports::JobStore) (what
//! differs: each adapter's [`jobs::JobEngine`]: posts, claims, transitions, the lease sweep).

#![forbid(unsafe_code)]

pub mod agents;
pub mod audit;
pub mod ci;
mod engine;
mod exec;
pub mod gauges;
pub mod intake;
pub mod namespaces;
pub mod reviews;
mod row;
pub mod settings;
mod stmt;

pub mod abstraction;
pub mod backup;
pub mod checkmarks;
mod conflict;
pub mod documents;
pub mod doors;
pub mod health;
pub mod improve;
pub mod jobs;
pub mod oauth;
pub mod runs;
pub mod spend;

pub use engine::{Engine, MAX_ATTEMPTS, Tx, TxError, TxResult, always, finish, read_all, unit};
pub use exec::{Exec, Fetch};
pub use row::{Row, all};
pub use stmt::{Arg, Kind, Stmt, ToArg};

/// Implements, for the adapter's store type `$store` (an [`Engine`]), every port whose SQL
/// lives in this crate, each method calling its function here. The core's types are
/// imported once, in an anonymous `const` block that scopes them to the impls.
#[macro_export]
macro_rules! sql_ports {
    ($store:ty) => {
        const _: () = {
            use capsid_core::backup::retention::PruneCutoffs;
            use capsid_core::backup::tables::TableSpec;
            use capsid_core::checkmarks::CiStatus;
            use capsid_core::docs::document::{Document, DocumentSummary};
            use capsid_core::jobs::outcome::OutcomeRow;
            use capsid_core::jobs::{Job, JobStatus};
            use capsid_core::ports::{
                Advance, Advanced, AgentGaugeRow, AgentRow, AgentStore, AttemptRow, AuditEntry,
                AuditFilter, AuditLog, AuditRow, Backlinks, BackupStore, CheckmarkStore,
                CheckmarkTransition, CheckmarkView, CheckpointAuditFn, CiStore, ClaimOutcome,
                ClaimRequest, CodeRow, ConsoleSessionRow, DocFilter, DocWithActor, DocumentStore,
                DocumentWrite, DumpSink, EdgeTuple, ImproveRunTotals, ImproveStore, IntakeChange,
                IntakeIssueRow, IntakeStore, JobCounts, JobFilter, JobGaugeRow, JobStore,
                JobTransition, LeaderLease, LedgerSpendRow, LogEntryRow, LoginStateRow, MirrorFn,
                NamespaceBudget, NamespaceRow, NamespaceSpend, NamespaceStore, NewAgent,
                NewAttempt, NewCheckpoint, NewGrant, NewIntakeIssue, NewJob, NewReview, NewRun,
                NewToken, OAuthClientRow, OAuthStore, Packet, PacketRows, PendingCi, PoolUsage,
                Proposed, ProposedSkill, Pruned, Redemption, ReviewRow, ReviewStore, Rotation,
                RowSource, RunOpened, RunRow, RunStore, RunUpdate, ScoreRow, SearchHit,
                SettingChange, SettingsStore, SharedEntry, SkillEditRow, SkillEvaluationRow,
                SkillFailureRow, SkillOfferRow, SkillRow, SkillSource, SkillSourceStore,
                SkillStore, StatusCount, StoreGauges, StoreHealth, StoreResult, SweepAuditFn,
                TokenRow, TransferError, VersionRow, VersionSummary, WriteGuard, WriteReceipt,
            };
            use capsid_core::time::Timestamp;

            #[async_trait::async_trait]
            impl AgentStore for $store {
                async fn agent_by_key_hash(&self, key_hash: &str) -> StoreResult<Option<AgentRow>> {
                    $crate::Engine::agent_by_key_hash_cached(self, key_hash).await
                }
                async fn agent_by_name(&self, name: &str) -> StoreResult<Option<AgentRow>> {
                    $crate::agents::agent_by_name(self, name).await
                }
                async fn agents(&self) -> StoreResult<Vec<AgentRow>> {
                    $crate::agents::agents(self).await
                }
                async fn touch_agent(&self, id: &str, at: Timestamp) -> StoreResult<()> {
                    $crate::agents::touch_agent(self, id, at).await
                }
                async fn mint_agent(
                    &self,
                    agent: NewAgent,
                    audit: AuditEntry,
                ) -> StoreResult<AgentRow> {
                    $crate::agents::mint_agent(self, agent, audit).await
                }
                async fn revoke_agent(
                    &self,
                    id: &str,
                    at: Timestamp,
                    audit: AuditEntry,
                ) -> StoreResult<Option<AgentRow>> {
                    $crate::agents::revoke_agent(self, id, at, audit).await
                }
                async fn rescope_agent(
                    &self,
                    id: &str,
                    expected_scopes: &str,
                    scopes: &str,
                    audit: AuditEntry,
                ) -> StoreResult<Option<AgentRow>> {
                    $crate::agents::rescope_agent(self, id, expected_scopes, scopes, audit).await
                }
            }

            #[async_trait::async_trait]
            impl AuditLog for $store {
                async fn append_audit(&self, entry: AuditEntry) -> StoreResult<()> {
                    $crate::audit::append_audit(self, entry).await
                }
                async fn recent_audit(
                    &self,
                    filter: &AuditFilter,
                    limit: usize,
                ) -> StoreResult<Vec<AuditRow>> {
                    $crate::audit::recent_audit(self, filter, limit).await
                }
                async fn newest_audit(
                    &self,
                    action: &str,
                    namespace: &str,
                    path: &str,
                ) -> StoreResult<Option<AuditRow>> {
                    $crate::audit::newest_audit(self, action, namespace, path).await
                }
            }

            #[async_trait::async_trait]
            impl CiStore for $store {
                async fn pending_ci(&self, limit: usize) -> StoreResult<Vec<PendingCi>> {
                    $crate::ci::pending_ci(self, limit).await
                }
                async fn record_ci(
                    &self,
                    id: i64,
                    status: CiStatus,
                    at: Timestamp,
                    audit: Option<AuditEntry>,
                ) -> StoreResult<bool> {
                    $crate::ci::record_ci(self, id, status, at, audit).await
                }
            }

            #[async_trait::async_trait]
            impl NamespaceStore for $store {
                async fn namespaces(&self) -> StoreResult<Vec<NamespaceRow>> {
                    $crate::namespaces::namespaces(self).await
                }
                async fn namespace(&self, name: &str) -> StoreResult<Option<NamespaceRow>> {
                    $crate::namespaces::namespace(self, name).await
                }
                async fn namespace_exists(&self, name: &str) -> StoreResult<bool> {
                    $crate::namespaces::namespace_exists(self, name).await
                }
                async fn register_namespace(
                    &self,
                    name: &str,
                    repos_json: &str,
                    at: Timestamp,
                    audit: AuditEntry,
                ) -> StoreResult<()> {
                    $crate::namespaces::register_namespace(self, name, repos_json, at, audit).await
                }
                async fn update_namespace(
                    &self,
                    name: &str,
                    repos_json: &str,
                    audit: AuditEntry,
                ) -> StoreResult<Option<String>> {
                    $crate::namespaces::update_namespace(self, name, repos_json, audit).await
                }
                async fn set_namespace_runner(
                    &self,
                    name: &str,
                    runner_json: Option<String>,
                    audit: AuditEntry,
                ) -> StoreResult<Option<String>> {
                    $crate::namespaces::set_namespace_runner(self, name, runner_json, audit).await
                }
                async fn set_namespace_budget(
                    &self,
                    name: &str,
                    budget_usd: Option<f64>,
                    audit: AuditEntry,
                ) -> StoreResult<Option<f64>> {
                    $crate::namespaces::set_namespace_budget(self, name, budget_usd, audit).await
                }
                async fn spend_since(&self, since: Timestamp) -> StoreResult<Vec<NamespaceSpend>> {
                    $crate::namespaces::spend_since(self, since).await
                }
                async fn namespace_budget(
                    &self,
                    name: &str,
                    since: Timestamp,
                ) -> StoreResult<Option<NamespaceBudget>> {
                    $crate::namespaces::namespace_budget(self, name, since).await
                }
                async fn namespace_runner(&self, name: &str) -> StoreResult<Option<String>> {
                    $crate::namespaces::namespace_runner(self, name).await
                }
            }

            #[async_trait::async_trait]
            impl SettingsStore for $store {
                async fn setting(&self, key: &str, now: Timestamp) -> StoreResult<Option<String>> {
                    $crate::settings::setting(self, key, now).await
                }
                async fn put_setting(
                    &self,
                    key: &str,
                    value: &str,
                    expires_at: Option<Timestamp>,
                ) -> StoreResult<()> {
                    $crate::settings::put_setting(self, key, value, expires_at).await
                }
                async fn delete_setting(&self, key: &str) -> StoreResult<()> {
                    $crate::settings::delete_setting(self, key).await
                }
                async fn compare_and_set_setting(
                    &self,
                    key: &str,
                    expected: Option<&str>,
                    new: Option<&str>,
                    expires_at: Option<Timestamp>,
                    now: Timestamp,
                ) -> StoreResult<bool> {
                    $crate::settings::compare_and_set_setting(
                        self, key, expected, new, expires_at, now,
                    )
                    .await
                }
                async fn change_settings(
                    &self,
                    changes: &[SettingChange],
                    audit: AuditEntry,
                    now: Timestamp,
                ) -> StoreResult<bool> {
                    $crate::settings::change_settings_audited(
                        self,
                        changes,
                        std::slice::from_ref(&audit),
                        now,
                    )
                    .await
                }
                async fn change_settings_audited(
                    &self,
                    changes: &[SettingChange],
                    audits: &[AuditEntry],
                    now: Timestamp,
                ) -> StoreResult<bool> {
                    $crate::settings::change_settings_audited(self, changes, audits, now).await
                }
                async fn claim_nonce(
                    &self,
                    scope: &str,
                    jti: &str,
                    at: Timestamp,
                ) -> StoreResult<bool> {
                    $crate::settings::claim_nonce(self, scope, jti, at).await
                }
            }

            #[async_trait::async_trait]
            impl LeaderLease for $store {
                async fn acquire_lease(
                    &self,
                    name: &str,
                    holder: &str,
                    now: Timestamp,
                    until: Timestamp,
                ) -> StoreResult<bool> {
                    $crate::settings::acquire_lease(self, name, holder, now, until).await
                }
                async fn release_lease(&self, name: &str, holder: &str) -> StoreResult<()> {
                    $crate::settings::release_lease(self, name, holder).await
                }
            }

            #[async_trait::async_trait]
            impl StoreGauges for $store {
                async fn job_gauges(&self, now: Timestamp) -> StoreResult<Vec<JobGaugeRow>> {
                    $crate::gauges::job_gauges(self, now).await
                }
                async fn agent_gauges(&self) -> StoreResult<Vec<AgentGaugeRow>> {
                    $crate::gauges::agent_gauges(self).await
                }
                async fn ledger_spend_by_status(
                    &self,
                    status: JobStatus,
                ) -> StoreResult<Vec<LedgerSpendRow>> {
                    $crate::gauges::ledger_spend_by_status(self, status).await
                }
                fn pool_usage(&self) -> Vec<PoolUsage> {
                    $crate::Engine::pool_usage(self)
                }
            }

            #[async_trait::async_trait]
            impl IntakeStore for $store {
                async fn record_intake(
                    &self,
                    issue: NewIntakeIssue,
                    audit: AuditEntry,
                ) -> StoreResult<bool> {
                    $crate::intake::record_intake(self, issue, audit).await
                }
                async fn intake_issue(
                    &self,
                    repo: &str,
                    number: u64,
                ) -> StoreResult<Option<IntakeIssueRow>> {
                    $crate::intake::intake_issue(self, repo, number).await
                }
                async fn open_intake(&self, limit: usize) -> StoreResult<Vec<IntakeIssueRow>> {
                    $crate::intake::open_intake(self, limit).await
                }
                async fn update_intake(
                    &self,
                    repo: &str,
                    number: u64,
                    change: IntakeChange,
                    at: Timestamp,
                    audit: Option<AuditEntry>,
                ) -> StoreResult<bool> {
                    $crate::intake::update_intake(self, repo, number, change, at, audit).await
                }
            }

            #[async_trait::async_trait]
            impl ReviewStore for $store {
                async fn record_review(
                    &self,
                    review: NewReview,
                    audit: AuditEntry,
                ) -> StoreResult<()> {
                    $crate::reviews::record_review(self, review, audit).await
                }
                async fn reviews(
                    &self,
                    repo: &str,
                    number: u64,
                    limit: usize,
                ) -> StoreResult<Vec<ReviewRow>> {
                    $crate::reviews::reviews(self, repo, number, limit).await
                }
                async fn head_reviews(
                    &self,
                    namespace: &str,
                    head_sha: &str,
                    limit: usize,
                ) -> StoreResult<Vec<ReviewRow>> {
                    $crate::reviews::head_reviews(self, namespace, head_sha, limit).await
                }
            }

            #[async_trait::async_trait]
            impl CheckmarkStore for $store {
                async fn checkpoint(
                    &self,
                    checkpoint: NewCheckpoint,
                    audit: CheckpointAuditFn,
                ) -> StoreResult<CheckmarkView> {
                    $crate::checkmarks::checkpoint(self, checkpoint, audit).await
                }
                async fn checkmark(
                    &self,
                    namespace: &str,
                    agent: &str,
                ) -> StoreResult<Option<CheckmarkView>> {
                    $crate::checkmarks::checkmark(self, namespace, agent).await
                }
                async fn checkmarks(
                    &self,
                    namespace: &str,
                    limit: usize,
                ) -> StoreResult<Vec<CheckmarkView>> {
                    $crate::checkmarks::checkmarks(self, namespace, limit).await
                }
                async fn log_entries(
                    &self,
                    namespace: &str,
                    agent: &str,
                    before: Option<i64>,
                    limit: usize,
                ) -> StoreResult<Vec<LogEntryRow>> {
                    $crate::checkmarks::log_entries(self, namespace, agent, before, limit).await
                }
                async fn global_entries(
                    &self,
                    namespace: Option<&str>,
                    before: Option<i64>,
                    limit: usize,
                ) -> StoreResult<Vec<LogEntryRow>> {
                    $crate::checkmarks::global_entries(self, namespace, before, limit).await
                }
                async fn log_entry(
                    &self,
                    namespace: &str,
                    id: i64,
                ) -> StoreResult<Option<LogEntryRow>> {
                    $crate::checkmarks::log_entry(self, namespace, id).await
                }
                async fn promote_entry(
                    &self,
                    namespace: &str,
                    id: i64,
                    audit: AuditEntry,
                ) -> StoreResult<Option<LogEntryRow>> {
                    $crate::checkmarks::promote_entry(self, namespace, id, audit).await
                }
                async fn transition_checkmark(
                    &self,
                    transition: CheckmarkTransition,
                ) -> StoreResult<Option<CheckmarkView>> {
                    $crate::checkmarks::transition_checkmark(self, transition).await
                }
                async fn shared_entry(&self, key: &str) -> StoreResult<Option<SharedEntry>> {
                    $crate::checkmarks::shared_entry(self, key).await
                }
                async fn shared_entries(&self, limit: usize) -> StoreResult<Vec<SharedEntry>> {
                    $crate::checkmarks::shared_entries(self, limit).await
                }
                async fn set_shared(
                    &self,
                    entry: SharedEntry,
                    audit: AuditEntry,
                ) -> StoreResult<Option<SharedEntry>> {
                    $crate::checkmarks::set_shared(self, entry, audit).await
                }
                async fn delete_shared(
                    &self,
                    key: &str,
                    audit: AuditEntry,
                ) -> StoreResult<Option<SharedEntry>> {
                    $crate::checkmarks::delete_shared(self, key, audit).await
                }
            }

            #[async_trait::async_trait]
            impl ImproveStore for $store {
                async fn run_totals(
                    &self,
                    since: Option<Timestamp>,
                ) -> StoreResult<Vec<ImproveRunTotals>> {
                    $crate::improve::run_totals(self, since).await
                }
            }

            #[async_trait::async_trait]
            impl SkillStore for $store {
                async fn insert_skill(
                    &self,
                    skill: SkillRow,
                    at: Timestamp,
                    audit: AuditEntry,
                ) -> StoreResult<()> {
                    $crate::improve::insert_skill(self, skill, at, audit).await
                }
                async fn skills(&self, status: Option<&str>) -> StoreResult<Vec<SkillRow>> {
                    $crate::improve::skills(self, status).await
                }
                async fn skills_in(&self, statuses: &[&str]) -> StoreResult<Vec<SkillRow>> {
                    $crate::improve::skills_in(self, statuses).await
                }
                async fn record_evaluation(
                    &self,
                    evaluation: SkillEvaluationRow,
                    audit: AuditEntry,
                ) -> StoreResult<()> {
                    $crate::improve::record_evaluation(self, evaluation, audit).await
                }
                async fn evaluations(&self, skill: &str) -> StoreResult<Vec<SkillEvaluationRow>> {
                    $crate::improve::evaluations(self, skill).await
                }
                async fn set_skill_status(
                    &self,
                    skill: &str,
                    from: &str,
                    to: &str,
                    at: Timestamp,
                    audit: AuditEntry,
                ) -> StoreResult<bool> {
                    $crate::improve::set_skill_status(self, skill, from, to, at, audit).await
                }
                async fn skill(&self, id: &str) -> StoreResult<Option<SkillRow>> {
                    $crate::improve::skill_by_id(self, id).await
                }
                async fn skill_declared(
                    &self,
                    id: &str,
                ) -> StoreResult<Option<capsid_core::ports::SkillDeclared>> {
                    $crate::improve::skill_declared(self, id).await
                }
                async fn record_skill_edit(
                    &self,
                    edit: SkillEditRow,
                    audit: AuditEntry,
                ) -> StoreResult<()> {
                    $crate::improve::record_skill_edit(self, edit, audit).await
                }
                async fn accept_skill_edit(
                    &self,
                    edit: SkillEditRow,
                    body: DocumentWrite,
                    audit: AuditEntry,
                ) -> StoreResult<bool> {
                    $crate::improve::accept_skill_edit(self, edit, body, audit).await
                }
                async fn skill_edits(
                    &self,
                    skill: &str,
                    limit: usize,
                ) -> StoreResult<Vec<SkillEditRow>> {
                    $crate::improve::skill_edits(self, skill, limit).await
                }
                async fn record_skill_failure(
                    &self,
                    failure: SkillFailureRow,
                    audit: AuditEntry,
                ) -> StoreResult<()> {
                    $crate::improve::record_skill_failure(self, failure, audit).await
                }
                async fn skill_failures(
                    &self,
                    skill: &str,
                    limit: usize,
                ) -> StoreResult<Vec<SkillFailureRow>> {
                    $crate::improve::skill_failures(self, skill, limit).await
                }
                async fn credit_skill(
                    &self,
                    skill: &str,
                    win: bool,
                    audit: AuditEntry,
                ) -> StoreResult<bool> {
                    $crate::improve::credit_skill(self, skill, win, audit).await
                }
                async fn last_evaluation(
                    &self,
                    namespace: &str,
                ) -> StoreResult<Option<SkillEvaluationRow>> {
                    $crate::improve::last_evaluation(self, namespace).await
                }
                async fn skill_offers(
                    &self,
                    namespace: &str,
                    limit: usize,
                ) -> StoreResult<Vec<SkillOfferRow>> {
                    $crate::improve::skill_offers(self, namespace, limit).await
                }
            }

            #[async_trait::async_trait]
            impl RunStore for $store {
                async fn open_run(&self, run: NewRun, audit: AuditEntry) -> StoreResult<RunOpened> {
                    $crate::runs::open_run(self, run, audit).await
                }
                async fn add_attempt(
                    &self,
                    attempt: NewAttempt,
                    run: RunUpdate,
                    audit: AuditEntry,
                ) -> StoreResult<Advanced> {
                    $crate::runs::add_attempt(self, attempt, run, audit).await
                }
                async fn advance(&self, advance: Advance) -> StoreResult<Advanced> {
                    $crate::runs::advance(self, advance).await
                }
                async fn run(&self, id: &str) -> StoreResult<Option<RunRow>> {
                    $crate::runs::run(self, id).await
                }
                async fn live_run(&self, namespace: &str) -> StoreResult<Option<RunRow>> {
                    $crate::runs::live_run(self, namespace).await
                }
                async fn runs(
                    &self,
                    namespace: Option<&str>,
                    limit: usize,
                ) -> StoreResult<Vec<RunRow>> {
                    $crate::runs::runs(self, namespace, limit).await
                }
                async fn attempt(&self, id: &str) -> StoreResult<Option<AttemptRow>> {
                    $crate::runs::attempt(self, id).await
                }
                async fn attempts(&self, run_id: &str) -> StoreResult<Vec<AttemptRow>> {
                    $crate::runs::attempts(self, run_id).await
                }
                async fn scores(
                    &self,
                    run_id: &str,
                    attempt_id: Option<&str>,
                ) -> StoreResult<Vec<ScoreRow>> {
                    $crate::runs::scores(self, run_id, attempt_id).await
                }
            }

            #[async_trait::async_trait]
            impl SkillSourceStore for $store {
                async fn kept_attempt_sources(
                    &self,
                    kept_status: &str,
                    spent_prefix: &str,
                    only: Option<&str>,
                    limit: usize,
                ) -> StoreResult<Vec<SkillSource>> {
                    $crate::abstraction::kept_attempt_sources(
                        self,
                        kept_status,
                        spent_prefix,
                        only,
                        limit,
                    )
                    .await
                }
                async fn verified_job_sources(
                    &self,
                    done_status: &str,
                    verdict: &str,
                    spent_prefix: &str,
                    only: Option<&str>,
                    limit: usize,
                ) -> StoreResult<Vec<SkillSource>> {
                    $crate::abstraction::verified_job_sources(
                        self,
                        done_status,
                        verdict,
                        spent_prefix,
                        only,
                        limit,
                    )
                    .await
                }
                async fn insert_proposed_skill(
                    &self,
                    proposal: ProposedSkill,
                ) -> StoreResult<Proposed> {
                    $crate::abstraction::insert_proposed_skill(self, proposal).await
                }
            }

            #[async_trait::async_trait]
            impl OAuthStore for $store {
                async fn insert_client(&self, client: OAuthClientRow) -> StoreResult<()> {
                    $crate::oauth::insert_client(self, client).await
                }
                async fn client(
                    &self,
                    client_id: &str,
                    now: Timestamp,
                ) -> StoreResult<Option<OAuthClientRow>> {
                    $crate::oauth::client_of(self, client_id, now).await
                }
                async fn bump_counter(
                    &self,
                    key: &str,
                    now: Timestamp,
                    expires_at: Timestamp,
                ) -> StoreResult<u64> {
                    $crate::oauth::bump_counter(self, key, now, expires_at).await
                }
                async fn put_login_state(&self, state: LoginStateRow) -> StoreResult<()> {
                    $crate::oauth::put_login_state(self, state).await
                }
                async fn login_state(
                    &self,
                    state_hash: &str,
                    purpose: &str,
                    now: Timestamp,
                ) -> StoreResult<Option<LoginStateRow>> {
                    $crate::oauth::login_state(self, state_hash, purpose, now).await
                }
                async fn take_login_state(
                    &self,
                    state_hash: &str,
                    purpose: &str,
                    now: Timestamp,
                ) -> StoreResult<Option<LoginStateRow>> {
                    $crate::oauth::take_login_state(self, state_hash, purpose, now).await
                }
                async fn approve_client(
                    &self,
                    tag: &str,
                    client_id: &str,
                    at: Timestamp,
                    expires_at: Timestamp,
                ) -> StoreResult<()> {
                    $crate::oauth::approve_client(self, tag, client_id, at, expires_at).await
                }
                async fn approval(&self, tag: &str, now: Timestamp) -> StoreResult<bool> {
                    $crate::oauth::approval(self, tag, now).await
                }
                async fn insert_code(&self, code: CodeRow) -> StoreResult<()> {
                    $crate::oauth::insert_code(self, code).await
                }
                async fn code(&self, code_hash: &str) -> StoreResult<Option<CodeRow>> {
                    $crate::oauth::code_of(self, code_hash).await
                }
                async fn redeem_code(
                    &self,
                    code_hash: &str,
                    now: Timestamp,
                    grant: NewGrant,
                    tokens: Vec<NewToken>,
                    client_expires_at: Timestamp,
                ) -> StoreResult<Redemption> {
                    $crate::oauth::redeem_code(
                        self,
                        code_hash,
                        now,
                        grant,
                        tokens,
                        client_expires_at,
                    )
                    .await
                }
                async fn token(&self, token_hash: &str) -> StoreResult<Option<TokenRow>> {
                    $crate::oauth::token_of(self, token_hash).await
                }
                async fn rotate_refresh(
                    &self,
                    token_hash: &str,
                    now: Timestamp,
                    tokens: Vec<NewToken>,
                    client_expires_at: Timestamp,
                ) -> StoreResult<Rotation> {
                    $crate::oauth::rotate_refresh(self, token_hash, now, tokens, client_expires_at)
                        .await
                }
                async fn revoke_grant(&self, grant_id: &str, now: Timestamp) -> StoreResult<()> {
                    $crate::oauth::revoke_grant(self, grant_id, now).await
                }
                async fn revoke_all_grants(
                    &self,
                    now: Timestamp,
                    audit_of: &(dyn Fn(u64) -> AuditEntry + Send + Sync),
                ) -> StoreResult<u64> {
                    $crate::oauth::revoke_all_grants(self, now, audit_of).await
                }
                async fn insert_console_session(
                    &self,
                    session: ConsoleSessionRow,
                ) -> StoreResult<()> {
                    $crate::oauth::insert_console_session(self, session).await
                }
                async fn console_session(
                    &self,
                    session_hash: &str,
                    now: Timestamp,
                ) -> StoreResult<Option<ConsoleSessionRow>> {
                    $crate::oauth::console_session(self, session_hash, now).await
                }
                async fn end_console_session(
                    &self,
                    session_hash: &str,
                    now: Timestamp,
                ) -> StoreResult<bool> {
                    $crate::oauth::end_console_session(self, session_hash, now).await
                }
                async fn end_console_sessions(&self, now: Timestamp) -> StoreResult<u64> {
                    $crate::oauth::end_console_sessions(self, now).await
                }
                async fn purge_expired_oauth(&self, now: Timestamp) -> StoreResult<u64> {
                    $crate::oauth::purge_expired_oauth(self, now).await
                }
            }

            #[async_trait::async_trait]
            impl BackupStore for $store {
                fn engine(&self) -> &'static str {
                    <$store as $crate::backup::BackupEngine>::NAME
                }
                async fn export_tables(
                    &self,
                    tables: &[&'static TableSpec],
                    page_rows: usize,
                    sink: &mut dyn DumpSink,
                ) -> Result<(), TransferError> {
                    $crate::backup::export_tables(self, tables, page_rows, sink).await
                }
                async fn count_rows(&self, tables: &[&'static TableSpec]) -> StoreResult<Vec<u64>> {
                    $crate::backup::count_rows(self, tables).await
                }
                async fn import_tables(
                    &self,
                    source: &mut dyn RowSource,
                ) -> Result<u64, TransferError> {
                    $crate::backup::import_tables(self, source).await
                }
                async fn prune_history(&self, cutoffs: PruneCutoffs) -> StoreResult<Pruned> {
                    $crate::backup::prune_history(self, cutoffs).await
                }
            }

            #[async_trait::async_trait]
            impl StoreHealth for $store {
                async fn ping(&self) -> StoreResult<()> {
                    $crate::health::ping(self).await
                }
                async fn fts_probe(&self, term: &str) -> StoreResult<u64> {
                    $crate::health::HealthEngine::fts_probe(self, term).await
                }
                async fn schema_version(&self) -> StoreResult<Option<String>> {
                    $crate::health::schema_version(self).await
                }
                fn newest_migration(&self) -> Option<String> {
                    $crate::health::newest_migration(self)
                }
                async fn outage_cause(&self) -> Option<String> {
                    $crate::health::HealthEngine::outage_cause(self).await
                }
                async fn limitations(&self) -> StoreResult<Vec<String>> {
                    $crate::health::HealthEngine::limitations(self).await
                }
            }

            #[async_trait::async_trait]
            impl DocumentStore for $store {
                async fn document(
                    &self,
                    namespace: &str,
                    path: &str,
                ) -> StoreResult<Option<Document>> {
                    $crate::documents::document(self, namespace, path).await
                }
                async fn last_actor(
                    &self,
                    namespace: &str,
                    path: &str,
                ) -> StoreResult<Option<String>> {
                    $crate::documents::last_actor(self, namespace, path).await
                }
                async fn document_with_actor(
                    &self,
                    namespace: &str,
                    path: &str,
                ) -> StoreResult<Option<DocWithActor>> {
                    $crate::documents::DocumentEngine::document_with_actor(self, namespace, path)
                        .await
                }
                async fn list_documents(
                    &self,
                    filter: &DocFilter,
                    limit: usize,
                ) -> StoreResult<Vec<DocumentSummary>> {
                    $crate::documents::list_documents(self, filter, limit).await
                }
                async fn find_documents(
                    &self,
                    namespace: Option<&str>,
                    glob: &str,
                    limit: usize,
                ) -> StoreResult<Vec<DocumentSummary>> {
                    $crate::documents::DocumentEngine::find_documents(self, namespace, glob, limit)
                        .await
                }
                async fn search_documents(
                    &self,
                    query: &str,
                    namespace: Option<&str>,
                    doc_type: Option<&str>,
                    limit: usize,
                ) -> StoreResult<Vec<SearchHit>> {
                    $crate::documents::DocumentEngine::search_documents(
                        self, query, namespace, doc_type, limit,
                    )
                    .await
                }
                async fn versions(
                    &self,
                    namespace: &str,
                    path: &str,
                    limit: usize,
                ) -> StoreResult<Vec<VersionSummary>> {
                    $crate::documents::versions(self, namespace, path, limit).await
                }
                async fn version(
                    &self,
                    id: i64,
                    namespace: &str,
                    path: &str,
                ) -> StoreResult<Option<VersionRow>> {
                    $crate::documents::version(self, id, namespace, path).await
                }
                async fn backlinks(&self, namespace: &str, path: &str) -> StoreResult<Backlinks> {
                    $crate::documents::backlinks(self, namespace, path).await
                }
                async fn documents_exist(
                    &self,
                    refs: &[(String, String)],
                ) -> StoreResult<Vec<bool>> {
                    $crate::documents::DocumentEngine::documents_exist(self, refs).await
                }
                async fn read_packet(&self, packet: &Packet) -> StoreResult<PacketRows> {
                    $crate::documents::DocumentEngine::read_packet(self, packet).await
                }
                async fn page_documents(
                    &self,
                    namespaces: Option<&[String]>,
                    doc_type: Option<&str>,
                    after: Option<(&str, &str)>,
                    limit: usize,
                ) -> StoreResult<Vec<DocumentSummary>> {
                    $crate::documents::page_documents(self, namespaces, doc_type, after, limit)
                        .await
                }
                async fn write_document(
                    &self,
                    write: DocumentWrite,
                    guard: WriteGuard,
                    audit: Vec<AuditEntry>,
                ) -> StoreResult<WriteReceipt> {
                    $crate::documents::DocumentEngine::write_document(self, write, guard, audit)
                        .await
                }
                async fn delete_document(
                    &self,
                    namespace: &str,
                    path: &str,
                    expected_body: Option<&str>,
                    audit: AuditEntry,
                ) -> StoreResult<Vec<EdgeTuple>> {
                    $crate::documents::DocumentEngine::delete_document(
                        self,
                        namespace,
                        path,
                        expected_body,
                        audit,
                    )
                    .await
                }
                async fn move_document(
                    &self,
                    namespace: &str,
                    from: &str,
                    to: &str,
                    expected_body: Option<&str>,
                    at: Timestamp,
                    audit: AuditEntry,
                ) -> StoreResult<u64> {
                    $crate::documents::DocumentEngine::move_document(
                        self,
                        namespace,
                        from,
                        to,
                        expected_body,
                        at,
                        audit,
                    )
                    .await
                }
                async fn archive_documents(
                    &self,
                    namespace: &str,
                    moves: &[(String, String)],
                    at: Timestamp,
                    audit: AuditEntry,
                ) -> StoreResult<u64> {
                    $crate::documents::DocumentEngine::archive_documents(
                        self, namespace, moves, at, audit,
                    )
                    .await
                }
            }

            #[async_trait::async_trait]
            impl JobStore for $store {
                async fn post_job(
                    &self,
                    job: NewJob,
                    audit: AuditEntry,
                    mirror: MirrorFn,
                ) -> StoreResult<Job> {
                    $crate::jobs::JobEngine::post_job(self, job, audit, mirror).await
                }
                async fn job(&self, id: &str) -> StoreResult<Option<Job>> {
                    $crate::jobs::one_job(self, $crate::jobs::JOB, id).await
                }
                async fn held_job(&self, actor: &str) -> StoreResult<Option<Job>> {
                    $crate::jobs::one_job(self, $crate::jobs::HELD, actor).await
                }
                async fn set_job_cap(
                    &self,
                    id: &str,
                    cap: capsid_core::drive::ledger::Usd,
                    at: Timestamp,
                    audit: AuditEntry,
                ) -> StoreResult<Option<Job>> {
                    $crate::jobs::set_job_cap(self, id, cap, at, audit).await
                }
                async fn month_spend(
                    &self,
                    job: &Job,
                    since: Timestamp,
                ) -> StoreResult<capsid_core::ports::MonthSpend> {
                    $crate::jobs::read_month_spend(self, job, since).await
                }
                async fn live_leases(
                    &self,
                    namespace: &str,
                    now: Timestamp,
                ) -> StoreResult<Vec<capsid_core::jobs::paths::LiveLease>> {
                    $crate::jobs::read_live_leases(self, namespace, now).await
                }
                async fn record_calls(
                    &self,
                    job: &Job,
                    agent: &str,
                    calls: &[capsid_core::jobs::spend::LedgerCall],
                    at: Timestamp,
                ) -> StoreResult<u64> {
                    $crate::spend::record_calls(self, job, agent, calls, at).await
                }
                async fn job_calls(
                    &self,
                    job_id: &str,
                ) -> StoreResult<Vec<capsid_core::jobs::spend::LedgerCall>> {
                    $crate::spend::job_calls(self, job_id).await
                }
                async fn record_doors(
                    &self,
                    job: &Job,
                    agent: &str,
                    records: &[capsid_core::jobs::doors::DoorRecord],
                    at: Timestamp,
                ) -> StoreResult<u64> {
                    $crate::doors::record_doors(self, job, agent, records, at).await
                }
                async fn job_doors(
                    &self,
                    job_id: &str,
                ) -> StoreResult<Vec<capsid_core::jobs::doors::DoorRecord>> {
                    $crate::doors::job_doors(self, job_id).await
                }
                async fn recent_doors(
                    &self,
                    limit: usize,
                ) -> StoreResult<Vec<(String, capsid_core::jobs::doors::DoorRecord)>> {
                    $crate::doors::recent_doors(self, limit).await
                }
                async fn open_job_spend(
                    &self,
                ) -> StoreResult<Vec<(String, capsid_core::drive::ledger::Usd)>> {
                    $crate::spend::open_job_spend(self).await
                }
                async fn jobs(&self, filter: &JobFilter, limit: usize) -> StoreResult<Vec<Job>> {
                    $crate::jobs::jobs(self, filter, limit).await
                }
                async fn job_counts(
                    &self,
                    namespace: &str,
                    day_start: Timestamp,
                ) -> StoreResult<JobCounts> {
                    $crate::jobs::job_counts(self, namespace, day_start).await
                }
                async fn job_status_counts(&self) -> StoreResult<Vec<StatusCount>> {
                    $crate::jobs::job_status_counts(self).await
                }
                async fn claim_job(&self, request: ClaimRequest<'_>) -> StoreResult<ClaimOutcome> {
                    $crate::jobs::JobEngine::claim_job(self, request).await
                }
                async fn transition_job(
                    &self,
                    transition: JobTransition,
                ) -> StoreResult<Option<Job>> {
                    $crate::jobs::JobEngine::transition_job(self, transition).await
                }
                async fn sweep_expired_leases(
                    &self,
                    now: Timestamp,
                    audit: &SweepAuditFn,
                    mirror: MirrorFn,
                ) -> StoreResult<Vec<Job>> {
                    $crate::jobs::JobEngine::sweep_expired_leases(self, now, audit, mirror).await
                }
                async fn outcomes(&self, agent: Option<&str>) -> StoreResult<Vec<OutcomeRow>> {
                    $crate::jobs::outcomes(self, agent).await
                }
            }
        };
    };
}
